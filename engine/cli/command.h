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
#include "kernels/core/table.h"

namespace sdc::engine {

/// Options every subcommand accepts, before or after its name.
struct GlobalOptions {
  int threads = 0;  ///< 0 = one per core
  std::string log_level = "info";
  std::optional<std::filesystem::path> log_file;
  std::string permissions = "0600";
  bool progress = false;
};

/// What a running command knows about its invocation.
struct RunContext {
  std::vector<std::string> argv;  ///< the whole command line, for reports and provenance
  int threads = 1;                ///< the effective thread count
  int ranks = 1;
  io::FilePermissions permissions;
  bool progress = false;  ///< --progress: report progress even when stderr is not a terminal

  /// Set by `sdc run`: a command's report goes here (the job writes one report for all its steps)
  /// instead of to its --report file.
  std::function<void(const nlohmann::json&)> report_sink;

  std::string command_line() const;  ///< argv joined by spaces, arguments with spaces quoted
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
};

std::vector<std::unique_ptr<Command>> make_commands();

// ---- flag helpers shared by all commands, so that the same flag is spelt and documented once ----

/// `--input/-i FILE` (and, when `positional`, a bare FILE). Required.
void add_input_option(CLI::App& app, std::filesystem::path& input, bool positional = true);
/// `--output/-o FILE`. Required.
void add_output_option(CLI::App& app, std::filesystem::path& output);
/// `--report FILE.json`. Optional.
void add_report_option(CLI::App& app, std::optional<std::filesystem::path>& report);
/// `--seed-file FILE`: the seed of every random draw; else the SDC_SEED environment variable.
void add_seed_option(CLI::App& app, std::optional<std::filesystem::path>& seed_file);
/// A comma-separated variable list, e.g. `--keys a,b,c`.
CLI::Option* add_variable_list_option(CLI::App& app, const std::string& flag, std::vector<std::string>& names,
                                      const std::string& help);

/// Write options of a command's data output: its --filters (default when absent) and the run's
/// --permissions.
io::Hdf5WriteOptions data_output_options(const RunContext& context, const std::optional<std::string>& filters);

/// Accepts a whole number >= `minimum`, with a message that says so (CLI11's own names the type's range).
CLI::Validator whole_number_at_least(std::int64_t minimum);

/// "native" or "compat" — for every method that has a reference-compatible mode.
enum class Mode { kNative, kCompat };
void add_mode_option(CLI::App& app, Mode& mode);

}  // namespace sdc::engine
