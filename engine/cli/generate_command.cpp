// `sdc generate <what>`: things sdc-engine makes from nothing but a seed: `seed` (a new seed file) and
// `census` (a synthetic census or household sample, docs/generator.md).

#include <spdlog/spdlog.h>

#include <mutex>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "distributed/comm.h"
#include "distributed/partition.h"
#include "engine/checkpoint.h"
#include "engine/cli/commands.h"
#include "engine/partitioned_table.h"
#include "engine/progress.h"
#include "engine/report/run_report.h"
#include "engine/table_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/generate/census.h"

namespace sdc::engine {
namespace {

struct CensusFlags {
  std::int64_t households = 0;
  std::optional<double> sample_fraction;
  std::optional<std::filesystem::path> seed_file;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::string filters = "shuffle,deflate=1";
};

/// Collective. Pass 1 of the generator: every rank counts an even share of the household blocks, and
/// every rank receives all counts (a few dozen bytes per 4096 households).
generate::CensusLayout distributed_layout(const distributed::Communicator& comm,
                                          const generate::CensusGenerator& generator) {
  const auto mine = distributed::even_split(generator.block_count(), comm.rank(), comm.size());
  const auto counts = generator.count_blocks(mine.first, mine.count);
  const auto parts = comm.all_gather_bytes(std::as_bytes(std::span(counts)));
  std::vector<generate::BlockCounts> all;
  all.reserve(static_cast<std::size_t>(generator.block_count()));
  for (const auto& part : parts) {
    const std::size_t n = part.size() / sizeof(generate::BlockCounts);
    const std::size_t old_size = all.size();
    all.resize(old_size + n);
    std::memcpy(all.data() + old_size, part.data(), n * sizeof(generate::BlockCounts));
  }
  SDC_CHECK(static_cast<std::int64_t>(all.size()) == generator.block_count(), "every block counted once");
  return generate::CensusLayout(std::move(all));
}

/// Rank r's rows: the even split of the rows, each boundary moved to the nearest chunk boundary, so
/// that every rank writes whole chunks and write_partitioned moves no rows between ranks.
distributed::RowRange chunk_aligned_rows(std::int64_t rows, std::int64_t chunk_rows, int rank, int ranks) {
  const auto boundary = [&](int r) {
    if (r >= ranks) return rows;
    const std::int64_t even = distributed::even_split(rows, r, ranks).first;
    return std::min(rows, (even + chunk_rows / 2) / chunk_rows * chunk_rows);
  };
  const std::int64_t first = boundary(rank);
  return {first, boundary(rank + 1) - first};
}

class GenerateCommand final : public CommandStep {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* generate = parent.add_subcommand("generate", "generate seeds and synthetic census data");
    generate->require_subcommand(1);
    seed_ = generate->add_subcommand(
        "seed", "write a new random 64-bit seed to an owner-only file (the file is the key to every random draw)");
    add_output_option(*seed_, paths_, seed_output_);
    add_report_option(*seed_, paths_, seed_report_);
    seed_->add_flag("--force", seed_force_,
                    "replace an existing seed file (every release made with the old seed becomes irreproducible)");

    census_ = generate->add_subcommand(
        "census",
        "a synthetic census (or household sample) of persons in households in a 4-level geography "
        "(docs/generator.md)");
    census_->add_option("--households", census_flags_.households, "households of the census, numbered 1..N")
        ->required()
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("N");
    census_
        ->add_option("--sample-fraction", census_flags_.sample_fraction,
                     "draw a household sample of this expected fraction (0 < F <= 1), stratified by nuts2, "
                     "with design weights; without it, the full census (weight 1)")
        ->type_name("F");
    add_seed_option(*census_, paths_, census_flags_.seed_file);
    add_output_option(*census_, paths_, census_flags_.output);
    add_report_option(*census_, paths_, census_flags_.report);
    add_filters_option(*census_, census_flags_.filters);
    return generate;
  }

  void run(const RunContext& context) override {
    if (seed_->parsed()) run_seed(context);
    if (census_->parsed()) run_census(context);
  }

  /// For `sdc run`: a generated census replaces whatever a job held before.
  bool keeps_input_variables() const override { return census_ == nullptr || !census_->parsed(); }
  bool needs_seed() const override { return census_ != nullptr && census_->parsed(); }
  OutputKind output_kind() const override {
    return seed_ != nullptr && seed_->parsed() ? OutputKind::kSeed : OutputKind::kData;
  }
  std::vector<VariableInfo> added_variables() const override {
    if (census_ == nullptr || !census_->parsed()) return {};
    try {
      return generate::CensusGenerator({.seed = 0, .households = census_flags_.households}).variables();
    } catch (const UsageError&) {
      return {};  // the step itself reports the bad flag
    }
  }

 private:
  void run_seed(const RunContext& context) {
    std::error_code error;
    if (!seed_force_ &&
        std::filesystem::symlink_status(seed_output_, error).type() != std::filesystem::file_type::not_found)
      throw UsageError("--output '" + seed_output_.string() +
                       "' already exists: a seed is the key to every release made with it, and replacing it makes them "
                       "irreproducible; give --force to replace it");
    RunReport report(context);
    StepRecord& step = report.add_step("generate seed");
    StepTimer timer(step);
    const io::Seed seed = io::write_new_seed_file(seed_output_);
    timer.stop();
    report.set_seed_fingerprint(seed.fingerprint());
    report.add_output(seed_output_, OutputKind::kSeed);
    step.results["seed_fingerprint"] = seed.fingerprint();
    spdlog::info("wrote a new seed to {} (fingerprint {})", seed_output_.string(), seed.fingerprint());
    report.write(distributed::Communicator::world(), seed_report_);
  }

  void run_census(const RunContext& context) {
    const CensusFlags& flags = census_flags_;
    const auto comm = distributed::Communicator::world();
    if (flags.sample_fraction && !(*flags.sample_fraction > 0.0 && *flags.sample_fraction <= 1.0))
      throw UsageError("--sample-fraction must lie in (0, 1] (run 'sdc generate census --help')");
    const io::Seed seed = io::require_seed(flags.seed_file, "generate census");
    io::Hdf5WriteOptions write_options = data_output_options(context, flags.filters);

    RunReport report(context);
    StepRecord& step = report.add_step("generate census");
    StepTimer timer(step);
    step.parameters = {
        {"households", flags.households},
        {"sample-fraction", flags.sample_fraction ? nlohmann::json(*flags.sample_fraction) : nlohmann::json(nullptr)}};
    const std::vector<StepId> draws{StepId::kGenerateHousehold,        StepId::kGenerateSample,
                                    StepId::kGeneratePersonDemography, StepId::kGeneratePersonEducation,
                                    StepId::kGeneratePersonIncome,     StepId::kGenerateCitizenshipAreas};
    write_options.provenance = io::make_provenance(context.command_line(), "");
    write_options.provenance.step_fingerprint =
        step_fingerprint({"", "generate census", step.parameters, draws, seed.fingerprint(), {}});

    const auto start = std::chrono::steady_clock::now();
    const generate::CensusGenerator generator(
        {.seed = seed.value, .households = flags.households, .sample_fraction = flags.sample_fraction.value_or(1.0)});
    const generate::CensusLayout layout = distributed_layout(comm, generator);
    const auto range = chunk_aligned_rows(layout.rows(), write_options.chunk_rows, comm.rank(), comm.size());
    // Progress counts the coordinator's rows: every rank generates an equal share at the same pace.
    Progress progress("generate census", range.count, progress_wanted(comm.is_coordinator(), context.progress));
    std::mutex progress_mutex;
    Table part = generator.generate_rows(layout, range.first, range.count, [&](std::int64_t done) {
      if (std::unique_lock lock(progress_mutex, std::try_to_lock); lock.owns_lock()) progress.update(done);
    });
    progress.finish();
    const double generate_seconds = seconds_since(start);

    step.results = {{"households", flags.households},
                    {"persons", layout.persons()},
                    {"sample_households", layout.sample_households()},
                    {"sample_persons", layout.rows()},
                    {"lau2_areas", generator.geography().lau2_count}};
    write_options.provenance.step_results = step.results.dump();
    const auto write_start = std::chrono::steady_clock::now();
    write_partitioned(comm, std::move(part), flags.output, write_options);
    const double write_seconds = seconds_since(write_start);
    timer.stop();
    step.results["generate_seconds"] = generate_seconds;
    step.results["write_seconds"] = write_seconds;
    step.results["persons_per_second"] = step.seconds > 0 ? static_cast<double>(layout.rows()) / step.seconds : 0.0;

    report.set_seed_fingerprint(seed.fingerprint());
    report.add_output(flags.output, OutputKind::kData);
    report.write(comm, flags.report);
    if (!comm.is_coordinator()) return;
    spdlog::info(
        "generate census: {} households, {} persons; {} rows ({} households) written in {:.1f} s "
        "({:.0f} persons/s; generation {:.1f} s, write {:.1f} s)",
        flags.households, layout.persons(), layout.rows(), layout.sample_households(), step.seconds,
        step.results["persons_per_second"].get<double>(), generate_seconds, write_seconds);
  }

  CLI::App* seed_ = nullptr;
  std::filesystem::path seed_output_;
  bool seed_force_ = false;
  std::optional<std::filesystem::path> seed_report_;

  CLI::App* census_ = nullptr;
  CensusFlags census_flags_;
};

}  // namespace

std::unique_ptr<Command> make_generate_command() { return std::make_unique<GenerateCommand>(); }

}  // namespace sdc::engine
