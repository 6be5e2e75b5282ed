#include "engine/report/run_report.h"

#include <sys/resource.h>

#include <cmath>

#include "io/timestamp.h"
#include "sdc/version.h"

namespace sdc::engine {

nlohmann::json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void StepTimer::stop() {
  step_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

RunReport::RunReport(const RunContext& context) : context_(context), started_utc_(io::utc_timestamp()) {}

void RunReport::add_input(std::string name, const std::filesystem::path& path, std::int64_t rows, std::string digest) {
  inputs_.push_back(
      {{"name", std::move(name)}, {"path", path.string()}, {"rows", rows}, {"digest", std::move(digest)}});
}

void RunReport::set_seed_fingerprint(std::string fingerprint) { seed_fingerprint_ = std::move(fingerprint); }

void RunReport::add_output(const std::filesystem::path& path, OutputKind kind) {
  outputs_.push_back({{"path", path.string()}, {"kind", to_string(kind)}});
}

StepRecord& RunReport::add_step(std::string method) {
  StepRecord step;
  step.method = std::move(method);
  steps_.push_back(std::move(step));
  return steps_.back();
}

nlohmann::json RunReport::to_json(const std::vector<std::int64_t>& peak_memory) const {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : steps_) {
    steps.push_back({{"method", step.method},
                     {"parameters", step.parameters},
                     {"results", step.results},
                     {"warnings", step.warnings},
                     {"seconds", step.seconds}});
  }
  return {
      {"report_schema_version", kReportSchemaVersion},
      {"tool", {{"name", kToolName}, {"version", kToolVersion}}},
      {"command", context_.argv},
      {"started_utc", started_utc_},
      {"finished_utc", io::utc_timestamp()},
      {"ranks", context_.ranks},
      {"threads", context_.threads},
      {"seed_fingerprint", seed_fingerprint_},
      {"inputs", inputs_},
      {"outputs", outputs_},
      {"steps", steps},
      {"peak_memory_bytes", peak_memory},
  };
}

void RunReport::write(const distributed::Communicator& comm, const std::optional<std::filesystem::path>& path) const {
  const auto peaks = comm.all_gather(peak_memory_bytes());
  if (!comm.is_coordinator() || !path) return;
  if (context_.report_sink) {
    context_.report_sink(to_json(peaks));
    return;
  }
  io::write_file_atomically(*path, to_json(peaks).dump(2) + "\n", context_.permissions);
}

std::int64_t peak_memory_bytes() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace sdc::engine
