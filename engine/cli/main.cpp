// The `sdc` executable: parses the command line, applies the global options, runs one command, and
// is the only place that catches errors: each error type leaves with its exit code
// (docs/exit-codes.md) after its message is printed once.

#include <spdlog/spdlog.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <optional>

#include "distributed/comm.h"
#include "engine/cli/command.h"
#include "engine/logging.h"
#include "io/atomic_output.h"
#include "io/path_safety.h"
#include "kernels/core/error.h"
#include "sdc/version.h"

namespace {

int fail(sdc::ExitCode code, const std::string& message) {
  // A failed run leaves nothing: outputs it committed before failing go too.
  sdc::io::remove_committed_outputs();
  if (spdlog::default_logger_raw() != nullptr) spdlog::default_logger_raw()->flush();
  std::fprintf(stderr, "sdc: error: %s\n", message.c_str());
  return static_cast<int>(code);
}

// On a job of several ranks, a failing rank must not return to a collective where the others wait:
// it names itself and ends the whole job with its exit code.
int fail_job(const sdc::distributed::Communicator& comm, sdc::ExitCode code, const std::string& message) {
  if (comm.size() == 1) return fail(code, message);
  fail(code, "rank " + std::to_string(comm.rank()) + ": " + message);
  std::fflush(stderr);
  sdc::distributed::abort_job(static_cast<int>(code));
}

// CLI11 reports a mistyped command as "a subcommand is required", and an unknown flag after a
// command as whatever else is missing: name the word at fault instead. Walks the command line as
// CLI11 does: options belong to the current command or, by fallthrough, to a command above it.
std::string unknown_word_message(const CLI::App& root, int argc, char** argv) {
  std::vector<const CLI::App*> chain{&root};
  const auto find_option = [&](const std::string& name) -> const CLI::Option* {
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      if (const auto* option = (*it)->get_option_no_throw(name)) return option;
    return nullptr;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("-", 0) == 0) {
      if (arg == "--help" || arg == "-h" || arg == "--version") continue;
      const auto* option = find_option(arg.substr(0, arg.find('=')));
      if (option == nullptr) {
        const std::string where = chain.size() > 1 ? " for 'sdc " + chain.back()->get_name() + "'" : "";
        return "unknown option '" + arg + "'" + where;
      }
      if (option->get_type_size() != 0 && arg.find('=') == std::string::npos) ++i;
      continue;
    }
    const CLI::App* current = chain.back();
    const auto subcommands = current->get_subcommands([](const CLI::App*) { return true; });
    if (subcommands.empty()) continue;  // a positional argument of the current command
    std::string known;
    const CLI::App* next = nullptr;
    for (const auto* sub : subcommands) {
      if (sub->get_name() == arg) next = sub;
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (next == nullptr)
      return "unknown command '" + arg + "'; the commands" +
             (chain.size() > 1 ? " of 'sdc " + current->get_name() + "'" : std::string()) + " are " + known;
    chain.push_back(next);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sdc;
  io::install_output_cleanup_handlers();
  distributed::MpiRuntime mpi(argc, argv);
  const auto comm = distributed::Communicator::world();

  CLI::App app{"sdc-engine: statistical disclosure control of census-scale microdata", "sdc"};
  app.set_version_flag("--version", std::string(kToolName) + " " + kToolVersion);
  app.require_subcommand(1);

  engine::GlobalOptions global;
  app.add_option("--threads", global.threads, "worker threads per process (0 = one per core)")
      ->check(engine::whole_number_in(0, engine::kMaxThreads));
  app.add_option("--log-level", global.log_level, "trace, debug, info, warn, error, critical or off");
  app.add_option("--log-file", global.log_file, "also write the log to FILE (owner-only unless --permissions)");
  app.add_flag("--progress", global.progress,
               "report progress of long steps on stderr even when it is not a terminal (a terminal always gets it)");
  app.add_option("--report-min-count", global.report_min_count,
                 "reports show a positive count of the original data below N as '< N' and print no label carried by "
                 "fewer records (default 3; 1 shows every count)")
      ->check(engine::whole_number_in(1, engine::kMaxCount))
      ->type_name("N");
  app.add_option("--derived-filters", global.derived_filters,
                 "HDF5 filters of the continuous columns a step computes and appends (fk, risks): none, "
                 "shuffle, deflate=N or shuffle,deflate=N (default shuffle: written at memory speed, about 4 "
                 "times larger than with deflate; docs/format.md)")
      ->type_name("FILTERS");
  app.add_option("--permissions", global.permissions,
                 "octal mode of outputs, reports and logs (default 0600: census microdata are confidential)");

  std::map<CLI::App*, engine::Command*> commands;
  auto registry = engine::make_commands();
  for (auto& command : registry) {
    CLI::App* sub = command->add_to(app);
    sub->fallthrough();
    commands[sub] = command.get();
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same command line; one message (or help text) is enough.
    if (comm.rank() != 0)
      return e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success) ? 0 : static_cast<int>(ExitCode::kUsage);
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    if (const auto unknown = unknown_word_message(app, argc, argv); !unknown.empty())
      return fail(ExitCode::kUsage, unknown + " (run 'sdc --help')");
    return fail(ExitCode::kUsage, std::string(e.what()) + " (run 'sdc --help' or 'sdc COMMAND --help')");
  }

  if (const auto repeated = engine::repeated_list_items(app); !repeated.empty()) {
    if (comm.rank() != 0) return static_cast<int>(ExitCode::kUsage);
    return fail(ExitCode::kUsage, repeated.front());
  }

  try {
    engine::RunContext context;
    context.argv.assign(argv, argv + argc);
    context.ranks = comm.size();
    context.progress = global.progress;
    context.report_min_count = global.report_min_count;
    context.permissions = io::parse_permissions(global.permissions);
    context.derived_filters = io::parse_filters(global.derived_filters);
    engine::configure_logging(global.log_level);
    // Progress and summaries come from the coordinator; other ranks speak only of problems.
    if (!comm.is_coordinator() && spdlog::get_level() < spdlog::level::warn) spdlog::set_level(spdlog::level::warn);

    const int threads = global.threads > 0 ? global.threads : tbb::info::default_concurrency();
    tbb::global_control thread_limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    context.threads = threads;

    for (auto& [sub, command] : commands) {
      if (sub->parsed()) {
        // One rule for every command and job, before anything is opened for writing.
        std::vector<io::PathUse> paths = command->path_uses();
        if (global.log_file)
          paths.push_back({"--log-file", *global.log_file, io::PathAccess::kWrite, io::kWholeRunStage});
        io::check_path_safety(paths);
        // Outputs that cannot be written fail now, not after the work: a single command's directories
        // must exist (a job makes its output directory).
        for (const io::PathUse& use : paths) {
          if (use.access != io::PathAccess::kWrite) continue;
          io::ensure_output_is_not_a_directory(use.path);
          if (use.stage == 0) io::ensure_output_directory_writable(use.path);
        }
        if (global.log_file && comm.is_coordinator()) engine::add_log_file(*global.log_file, context.permissions);
        context.paths = std::move(paths);
        command->step().run(context);
        spdlog::default_logger_raw()->flush();
        return static_cast<int>(ExitCode::kOk);
      }
    }
    return fail(ExitCode::kUsage, "no command given (run 'sdc --help')");
  } catch (const Error& e) {
    return fail_job(comm, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return fail_job(comm, ExitCode::kInternal, "out of memory (see docs/memory.md for the memory each step needs)");
  } catch (const std::exception& e) {
    return fail_job(comm, ExitCode::kInternal, std::string("internal error: ") + e.what());
  }
}
