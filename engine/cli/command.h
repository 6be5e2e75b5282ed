#pragma once
// A subcommand of `sdc`. The registry (registry.cpp) lists them explicitly; `main` parses the command
// line with CLI11, applies the global options and runs the step of the chosen command. Flag names
// equal the keys of the job file, so every method reads the same in both (docs/cli.md).

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/flags.h"
#include "engine/path_flags.h"
#include "engine/run_context.h"
#include "engine/step.h"
#include "io/atomic_output.h"
#include "io/hdf5_table.h"
#include "io/path_safety.h"
#include "kernels/core/table.h"

namespace sdc::engine {

/// A command declares the flags of one method (or utility) into the options of its step, and
/// hands the step to whoever runs it: `main`, or a job (through engine/cli/method_catalog.h).
class Command {
 public:
  virtual ~Command() = default;
  /// Adds the subcommand, its flags and its help to `parent`; returns it.
  virtual CLI::App* add_to(CLI::App& parent) = 0;
  /// The step the parsed flags describe, ready to run; it lives as long as the command.
  virtual Step& step() = 0;
  /// The files the run reads and writes, with the flags that name them (after the flags are parsed).
  virtual std::vector<io::PathUse> path_uses() { return paths_.uses(); }

 protected:
  PathFlags paths_;
};

/// A utility command (import, export, info, generate) that is its own step.
class CommandStep : public Command, public Step {
 public:
  Step& step() override { return *this; }
};

std::vector<std::unique_ptr<Command>> make_commands();

}  // namespace sdc::engine
