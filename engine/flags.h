#pragma once
// Flag declaration helpers shared by the commands (engine/cli/) and by the measures of `sdc risk`, so
// that every flag is spelt, bounded and documented once, and every flag that names a file declares
// it (engine/path_flags.h).

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/path_flags.h"
#include "engine/run_context.h"

namespace sdc::engine {

/// `--input/-i FILE` (and, when `positional`, a bare FILE). Required; declared read.
void add_input_option(CLI::App& app, PathFlags& paths, std::filesystem::path& input, bool positional = true);
/// `--output/-o FILE`. Required; declared written.
void add_output_option(CLI::App& app, PathFlags& paths, std::filesystem::path& output);
/// `--masked FILE`: the masked file a comparison step reads beside its original `--input`. Required;
/// declared read.
void add_masked_option(CLI::App& app, PathFlags& paths, std::filesystem::path& masked);
/// `--id VAR`: the identifier variable that must be equal, row by row, in the original and the
/// masked file (default: the original's first variable of role identifier that both hold).
void add_id_option(CLI::App& app, std::optional<std::string>& id);
/// `--report FILE.json`. Optional; declared written.
void add_report_option(CLI::App& app, PathFlags& paths, std::optional<std::filesystem::path>& report);
/// `--filters F`: the HDF5 filters of a step's data output (docs/format.md).
void add_filters_option(CLI::App& app, std::string& filters);
/// `--resume`, and the output's checkpoint (<output>.checkpoint.json) declared written: a step that
/// skips itself when `output` was made from the same input, parameters (and seed, when `seeded`).
void add_resume_flag(CLI::App& app, PathFlags& paths, const std::filesystem::path& output, bool& resume, bool seeded);
/// `--seed-file FILE`: the seed of every random draw; else the SDC_SEED environment variable. Declared read.
void add_seed_option(CLI::App& app, PathFlags& paths, std::optional<std::filesystem::path>& seed_file);
/// A comma-separated variable list, e.g. `--keys a,b,c`. A variable given twice is an error
/// (repeated_list_items).
CLI::Option* add_variable_list_option(CLI::App& app, const std::string& flag, std::vector<std::string>& names,
                                      const std::string& help);

/// A flag given once per list, e.g. `--similar hsize --similar hsize,htype`: each occurrence is one
/// comma-separated list, kept whole. In a job, the key's list items become one flag each
/// (is_repeatable_list_option).
CLI::Option* add_repeatable_list_option(CLI::App& app, const std::string& flag, std::vector<std::string>& lists,
                                        const std::string& help);
bool is_repeatable_list_option(const CLI::Option& option);

/// The items of a flag's value separated by `separator`, each trimmed of blanks; a trailing separator
/// gives a last, empty item (so that "a," is seen as naming an empty variable); "" gives none.
std::vector<std::string> split_list(const std::string& text, char separator);

/// The two sides of a `VAR=VALUE` entry of `flag`. UsageError "<flag>: expected <form>, got '<entry>'"
/// when either side is empty or there is no '='.
std::pair<std::string, std::string> split_variable_entry(const std::string& flag, const std::string& entry,
                                                         const std::string& form);

/// The variables of `VAR=VALUE` entries, in order (an entry without '=' is taken whole).
std::vector<std::string> entry_variables(const std::vector<std::string>& entries);

/// The items joined by `separator`: "a,b" from {"a", "b"} and ",".
std::string join_list(const std::vector<std::string>& items, const char* separator);

/// One message for each variable named twice in a variable list of `app` or of its parsed
/// subcommands ("--keys: variable 'lau2' is given twice"), after parsing: a repeated key would
/// silently change results (SUDA2 would count its MSUs twice).
std::vector<std::string> repeated_list_items(const CLI::App& app);

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

/// `--mode native|compat`, for every method that has a reference-compatible mode.
void add_mode_option(CLI::App& app, Mode& mode);

}  // namespace sdc::engine
