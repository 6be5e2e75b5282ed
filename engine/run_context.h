#pragma once
// What every step knows about the run it is part of: the invocation, the ranks and threads, the
// permissions of what it writes, the report's small-count rule, and the files the run reads and
// writes. Set once by `main` (or for each step of a job) before anything runs.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/atomic_output.h"
#include "io/hdf5_table.h"
#include "io/path_safety.h"

namespace sdc::engine {

/// Options every subcommand accepts, before or after its name.
struct GlobalOptions {
  int threads = 0;  ///< 0 = one per core
  std::string log_level = "info";
  std::optional<std::filesystem::path> log_file;
  std::string permissions = "0600";
  bool progress = false;
  std::int64_t report_min_count = 3;
  std::string derived_filters = "shuffle";
};

/// What a running step knows about its invocation.
struct RunContext {
  std::vector<std::string> argv;  ///< the whole command line, for reports and provenance
  int threads = 1;                ///< the effective thread count
  int ranks = 1;
  io::FilePermissions permissions;
  bool progress = false;  ///< --progress: report progress even when stderr is not a terminal
  /// --report-min-count: reports show a positive count of the original data below this as "< N",
  /// and print no label carried by fewer records (engine/report/small_counts.h).
  std::int64_t report_min_count = 3;
  /// --derived-filters: the HDF5 filters of the columns a step computes and appends to its output
  /// (io::Hdf5WriteOptions::derived).
  io::Hdf5Filters derived_filters = io::kDerivedFilters;
  /// The files the run reads and writes (set before it runs): a masked output's provenance names
  /// them by their base names only.
  std::vector<io::PathUse> paths;

  /// Set by `sdc run`: a step's report goes here (the job writes one report for all its steps)
  /// instead of to its --report file.
  std::function<void(const nlohmann::json&)> report_sink;

  std::string command_line() const;  ///< argv joined by spaces, arguments with spaces quoted
  /// command_line() with every path of `paths` replaced by its base name: for a masked output,
  /// which must not reveal where the original data live.
  std::string release_safe_command_line() const;
};

/// "native" or "compat" — for every method that has a reference-compatible mode.
enum class Mode { kNative, kCompat };

}  // namespace sdc::engine
