#pragma once
// A subcommand of `sdc`. The registry (registry.cpp) lists them explicitly; `main` parses the command
// line with CLI11, applies the global options and runs the chosen command. Flag names equal the keys
// of the job file, so every method reads the same in both (docs/cli.md).

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/atomic_output.h"
#include "io/hdf5_table.h"
#include "io/path_safety.h"
#include "kernels/core/table.h"

namespace sdc::engine {

/// Options every subcommand accepts, before or after its name.
struct GlobalOptions {
  int threads = 0;  ///< 0 = one per core
  std::string log_level = "info";
  std::optional<std::filesystem::path> log_file;
  std::string permissions = "0600";
  bool progress = false;
  std::int64_t report_min_count = 3;
};

/// What a running command knows about its invocation.
struct RunContext {
  std::vector<std::string> argv;  ///< the whole command line, for reports and provenance
  int threads = 1;                ///< the effective thread count
  int ranks = 1;
  io::FilePermissions permissions;
  bool progress = false;  ///< --progress: report progress even when stderr is not a terminal
  /// --report-min-count: reports show a positive count of the original data below this as "< N",
  /// and print no label carried by fewer records (engine/report/small_counts.h).
  std::int64_t report_min_count = 3;
  /// The files the run reads and writes (set before it runs): a masked output's provenance names
  /// them by their base names only.
  std::vector<io::PathUse> paths;

  /// Set by `sdc run`: a command's report goes here (the job writes one report for all its steps)
  /// instead of to its --report file.
  std::function<void(const nlohmann::json&)> report_sink;

  std::string command_line() const;  ///< argv joined by spaces, arguments with spaces quoted
  /// command_line() with every path of `paths` replaced by its base name: for a masked output,
  /// which must not reveal where the original data live.
  std::string release_safe_command_line() const;
};

/// The files a command's flags name, declared where the flags are added (the add_*_option helpers
/// below declare theirs), so that one rule, io/path_safety.h, checks every run's writes against its
/// reads before anything runs.
class PathFlags {
 public:
  using Values = std::function<std::vector<std::filesystem::path>()>;
  void declare(std::string flag, io::PathAccess access, Values values);
  void reads(std::string flag, const std::filesystem::path& value);
  void reads(std::string flag, const std::optional<std::filesystem::path>& value);
  void writes(std::string flag, const std::filesystem::path& value);
  void writes(std::string flag, const std::optional<std::filesystem::path>& value);
  /// The declared paths that are set (non-empty), in declaration order.
  std::vector<io::PathUse> uses() const;

 private:
  struct Declared {
    std::string flag;
    io::PathAccess access;
    Values values;
  };
  std::vector<Declared> declared_;
};

class Command {
 public:
  virtual ~Command() = default;
  /// Adds the subcommand, its flags and its help to `parent`; returns it.
  virtual CLI::App* add_to(CLI::App& parent) = 0;
  virtual void run(const RunContext& context) = 0;

  // ---- what `sdc run` checks before any step of a job runs (after the flags are parsed) ----

  /// Adds a problem for every variable the flags name that `available` lacks or has another type.
  virtual void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const {
    (void)available;
    (void)problems;
  }
  /// The variables of the command's output: its input's plus these (or only these when
  /// keeps_input_variables() is false).
  virtual std::vector<VariableInfo> added_variables() const { return {}; }
  virtual bool keeps_input_variables() const { return true; }
  /// Whether the command, with the flags parsed, draws random numbers (and so needs a seed): a job
  /// checks it before running anything.
  virtual bool needs_seed() const { return false; }

  /// The files the run reads and writes, with the flags that name them (after the flags are parsed).
  virtual std::vector<io::PathUse> path_uses() { return paths_.uses(); }

 protected:
  PathFlags paths_;
};

std::vector<std::unique_ptr<Command>> make_commands();

// ---- flag helpers shared by all commands, so that the same flag is spelt and documented once ----

/// `--input/-i FILE` (and, when `positional`, a bare FILE). Required; declared read.
void add_input_option(CLI::App& app, PathFlags& paths, std::filesystem::path& input, bool positional = true);
/// `--output/-o FILE`. Required; declared written.
void add_output_option(CLI::App& app, PathFlags& paths, std::filesystem::path& output);
/// `--report FILE.json`. Optional; declared written.
void add_report_option(CLI::App& app, PathFlags& paths, std::optional<std::filesystem::path>& report);
/// `--seed-file FILE`: the seed of every random draw; else the SDC_SEED environment variable. Declared read.
void add_seed_option(CLI::App& app, PathFlags& paths, std::optional<std::filesystem::path>& seed_file);
/// A comma-separated variable list, e.g. `--keys a,b,c`. A variable given twice is an error
/// (repeated_list_items).
CLI::Option* add_variable_list_option(CLI::App& app, const std::string& flag, std::vector<std::string>& names,
                                      const std::string& help);

/// One message for each variable named twice in a variable list of `app` or of its parsed
/// subcommands ("--keys: variable 'lau2' is given twice"), after parsing: a repeated key would
/// silently change results (SUDA2 would count its MSUs twice).
std::vector<std::string> repeated_list_items(const CLI::App& app);

/// Write options of a command's data output: its --filters (default when absent) and the run's
/// --permissions.
io::Hdf5WriteOptions data_output_options(const RunContext& context, const std::optional<std::string>& filters);

/// Accepts a whole number from `minimum` to `maximum`, with a message a person would write ("expected a
/// whole number from 2 to 100000, got '-1'"; CLI11's own names the type's range). Every count flag
/// has an upper bound, documented with the flag (docs/cli.md), so that no count reaches an
/// allocation unchecked.
CLI::Validator whole_number_in(std::int64_t minimum, std::int64_t maximum);

/// Worker threads per process: more than any machine's cores.
inline constexpr std::int64_t kMaxThreads = 1024;
/// Records, households, categories, k and l: beyond any census (a billion).
inline constexpr std::int64_t kMaxCount = 1'000'000'000;
/// Bootstrap replicates: every replicate is a pass over the data and keeps its results, and a
/// quantile of 100 000 replicates is already exact to far more digits than a risk figure carries.
inline constexpr std::int64_t kMaxBootstrapReplicates = 100'000;

/// "native" or "compat" — for every method that has a reference-compatible mode.
enum class Mode { kNative, kCompat };
void add_mode_option(CLI::App& app, Mode& mode);

}  // namespace sdc::engine
