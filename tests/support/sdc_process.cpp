#include "tests/support/sdc_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace sdc::testing {
namespace {

/// Starts `argv` (argv[0] searched on PATH) with this process's environment plus `environment`,
/// standard input from /dev/null and standard output and error to the given files.
pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& environment,
            const std::string& out_path, const std::string& err_path) {
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const auto eq = text.find('=');
    if (eq != std::string::npos) env[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& [key, value] : environment) env[key] = value;
  std::vector<std::string> env_text;
  for (const auto& [key, value] : env) env_text.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, c_args[0], &actions, nullptr, c_args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot start " + argv.at(0) + ": " + std::strerror(spawned));
  return pid;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& environment) {
  // Capture through files rather than pipes so that a chatty child can never block on a full pipe.
  TempDir capture;
  const auto out_path = capture / "stdout";
  const auto err_path = capture / "stderr";
  const pid_t pid = spawn(argv, environment, out_path.string(), err_path.string());
  ProcessResult result;
  result.exit_code = wait_for(pid);
  result.out = read_text(out_path);
  result.err = read_text(err_path);
  return result;
}

ProcessResult run_sdc(const std::vector<std::string>& args, const std::map<std::string, std::string>& environment) {
  std::vector<std::string> argv{sdc_executable().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, environment);
}

int start_sdc(const std::vector<std::string>& args) {
  std::vector<std::string> argv{sdc_executable().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn(argv, {}, "/dev/null", "/dev/null");
}

int wait_for(int pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::map<std::string, std::string> mpi_environment(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> environment{
      {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
      {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
      {"OMP_WAIT_POLICY", "passive"},
      // mpirun maps the node with hwloc too (distributed/comm.cpp says why its GL component goes).
      {"HWLOC_COMPONENTS", "-gl"}};
  for (const auto& [key, value] : extra) environment[key] = value;
  return environment;
}

bool mpirun_available() { return run_process({"mpirun", "--version"}, mpi_environment()).exit_code == 0; }

ProcessResult run_sdc_mpi(int ranks, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& extra) {
  std::vector<std::string> argv{"mpirun",    "-n",   std::to_string(ranks),    "--oversubscribe",
                                "--bind-to", "none", sdc_executable().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, mpi_environment(extra));
}

std::string digest_of(const std::filesystem::path& file) {
  const auto result = run_sdc({"info", file.string(), "--digest", "--json"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  if (result.exit_code != 0) return {};
  return nlohmann::json::parse(result.out).at("content_digest").get<std::string>();
}

std::filesystem::path sdc_executable() { return std::filesystem::path(SDC_BINARY_DIR) / "engine" / "sdc"; }

std::filesystem::path source_path(const std::string& relative) {
  return std::filesystem::path(SDC_SOURCE_DIR) / relative;
}

std::filesystem::path shared_data(const std::string& name) {
  const auto path = std::filesystem::path(SDC_SHARED_DATA_DIR) / name;
  std::error_code ec;
  return std::filesystem::exists(path, ec) ? path : std::filesystem::path();
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "sdc-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> TempDir::entries() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path_))
    names.push_back(entry.path().filename().string());
  return names;
}

std::string validate_report(const std::filesystem::path& report) {
  const std::string script =
      "import glob, json, os, sys\n"
      "import jsonschema\n"
      "schema = json.load(open(sys.argv[1]))\n"
      "store = {}\n"
      "for part in [schema] + [json.load(open(f)) for f in sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "
      "'report-schema', '*.json')))]:\n"
      "    jsonschema.Draft202012Validator.check_schema(part)\n"
      "    store[part['$id']] = part\n"
      "resolver = jsonschema.RefResolver(base_uri=schema['$id'], referrer=schema, store=store)\n"
      "errors = sorted(jsonschema.Draft202012Validator(schema, "
      "resolver=resolver).iter_errors(json.load(open(sys.argv[2]))), key=str)\n"
      "for e in errors: print(list(e.absolute_path), e.message)\n"
      "sys.exit(1 if errors else 0)\n";
  // Debian's python modules live with /usr/bin/python3, whatever python3 comes first on PATH.
  const auto result =
      run_process({"/usr/bin/python3", "-c", script, source_path("docs/report-schema.json").string(), report.string()});
  if (result.exit_code == 0) return {};
  return "report " + report.string() + " does not match docs/report-schema.json:\n" + result.out + result.err;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<std::vector<std::string>> read_csv_fields(const std::filesystem::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(read_text(path));
  std::string line;
  while (std::getline(in, line)) {
    // Quoted fields as `sdc export` writes them: "[0,5)", a doubled quote for a quote.
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        fields.emplace_back();
      } else {
        fields.back() += c;
      }
    }
    rows.push_back(fields);
  }
  return rows;
}

std::vector<std::string> csv_column(const std::vector<std::vector<std::string>>& rows, const std::string& name) {
  const auto& header = rows.at(0);
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) {
    ADD_FAILURE() << "the CSV has no column '" << name << "'";
    return {};
  }
  const auto index = static_cast<std::size_t>(it - header.begin());
  std::vector<std::string> values;
  for (std::size_t r = 1; r < rows.size(); ++r) values.push_back(rows[r].at(index));
  return values;
}

std::vector<double> csv_numbers(const std::vector<std::vector<std::string>>& rows, const std::string& name) {
  std::vector<double> values;
  for (const auto& field : csv_column(rows, name)) values.push_back(std::stod(field));
  return values;
}

void print_digest(const std::string& label, const std::string& digest) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name =
      test == nullptr ? label : std::string(test->test_suite_name()) + "." + test->name() + "/" + label;
  std::printf("[content digest] %s: %s\n", name.c_str(), digest.c_str());
  std::fflush(stdout);
  ::testing::Test::RecordProperty("content_digest_" + label, digest);
}

}  // namespace sdc::testing
