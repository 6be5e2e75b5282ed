#pragma once
// Test support: run the `sdc` executable as a user would and inspect what it did.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sdc::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// Runs build/.../sdc with `args`; `environment` entries are added to (or override) the current one.
ProcessResult run_sdc(const std::vector<std::string>& args, const std::map<std::string, std::string>& environment = {});

/// Runs any program (argv[0] is searched on PATH).
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& environment = {});

/// Starts sdc in the background (output discarded); returns its process id.
int start_sdc(const std::vector<std::string>& args);
/// Waits for a process started by start_sdc; returns its exit code (128 + signal when killed).
int wait_for(int pid);

/// The environment mpirun needs here (running as root is allowed; passive waiting), plus `extra`.
std::map<std::string, std::string> mpi_environment(const std::map<std::string, std::string>& extra = {});
/// Whether mpirun can be started.
bool mpirun_available();
/// Runs sdc under `mpirun -n ranks --oversubscribe --bind-to none`.
ProcessResult run_sdc_mpi(int ranks, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& extra = {});
/// The content digest `sdc info --digest` gives for `file` (a test failure when info fails).
std::string digest_of(const std::filesystem::path& file);
/// Prints "[content digest] <test name>/<label>: <digest>" and records it as a test property, so that
/// refactorings can show the outputs they leave unchanged (the same line before and after).
void print_digest(const std::string& label, const std::string& digest);

/// Path of the sdc executable under test.
std::filesystem::path sdc_executable();
/// Source-tree paths: tests/data/..., docs/...
std::filesystem::path source_path(const std::string& relative);
/// ../shared/data/<name>; empty when the shared folder is absent (callers GTEST_SKIP()).
std::filesystem::path shared_data(const std::string& name);

/// A fresh directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  /// Names of every entry in the directory (to assert that a failed run left nothing behind).
  std::vector<std::string> entries() const;

 private:
  std::filesystem::path path_;
};

/// Validates a report against docs/report-schema.json and the methods' schemas it refers to in
/// docs/report-schema/ (with Debian's python3-jsonschema, resolving every $ref locally).
/// Returns the validator's complaint, or an empty string when the report is valid.
std::string validate_report(const std::filesystem::path& report);

std::string read_text(const std::filesystem::path& path);
void write_text(const std::filesystem::path& path, const std::string& text);
/// The rows of a CSV as fields: split at commas outside double quotes, a doubled quote inside them read as
/// one (as `sdc export` writes them); a trailing comma gives an empty last field.
std::vector<std::vector<std::string>> read_csv_fields(const std::filesystem::path& path);
/// The fields of column `name` (looked up in the header, rows[0]) of every later row; a test failure
/// naming the column, and an empty vector, when the header lacks it.
std::vector<std::string> csv_column(const std::vector<std::vector<std::string>>& rows, const std::string& name);
/// csv_column read as numbers (std::stod of each field).
std::vector<double> csv_numbers(const std::vector<std::vector<std::string>>& rows, const std::string& name);

}  // namespace sdc::testing
