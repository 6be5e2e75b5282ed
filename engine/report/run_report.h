#pragma once
// The JSON run report (docs/report-schema.json). Commands fill it step by step; it is written
// atomically at the end of a successful run, so a failed run leaves no report.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "engine/run_context.h"
#include "engine/step.h"

namespace sdc::engine {

/// A JSON number, or null for NaN and the infinities, which JSON cannot hold.
nlohmann::json number_or_null(double value);

inline constexpr int kReportSchemaVersion = 1;

struct StepRecord {
  std::string method;
  nlohmann::json parameters = nlohmann::json::object();
  nlohmann::json results = nlohmann::json::object();
  std::vector<std::string> warnings;
  double seconds = 0.0;
};

/// Seconds from `start` to now.
double seconds_since(std::chrono::steady_clock::time_point start);

/// Measures a step's wall time from construction to stop() into the step's record.
class StepTimer {
 public:
  explicit StepTimer(StepRecord& step) : step_(step), start_(std::chrono::steady_clock::now()) {}
  void stop();

 private:
  StepRecord& step_;
  std::chrono::steady_clock::time_point start_;
};

class RunReport {
 public:
  explicit RunReport(const RunContext& context);

  /// Records an input the run read, by the name of its flag or key ("input", "external", "masked").
  void add_input(std::string name, const std::filesystem::path& path, std::int64_t rows, std::string digest);
  void set_seed_fingerprint(std::string fingerprint);
  void add_output(const std::filesystem::path& path, OutputKind kind);
  /// The returned reference stays valid until the next add_step.
  StepRecord& add_step(std::string method);

  /// `peak_memory_bytes` holds one entry per rank; without MPI, this process's peak.
  nlohmann::json to_json(const std::vector<std::int64_t>& peak_memory_bytes) const;
  /// Collective: gathers every rank's peak memory; the coordinator writes the report to `path`, when
  /// given, with the run's --permissions (or hands it to the job that runs this command).
  void write(const distributed::Communicator& comm, const std::optional<std::filesystem::path>& path) const;

 private:
  RunContext context_;
  std::string started_utc_;
  nlohmann::json inputs_ = nlohmann::json::array();
  nlohmann::json seed_fingerprint_ = nullptr;
  nlohmann::json outputs_ = nlohmann::json::array();
  std::vector<StepRecord> steps_;
};

/// Peak resident memory of this process so far (getrusage), in bytes.
std::int64_t peak_memory_bytes();

}  // namespace sdc::engine
