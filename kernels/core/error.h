#pragma once
// The error types of sdc-engine. Each type fixes one process exit code (docs/exit-codes.md);
// `main` is the only place that catches them all. Messages name the file, variable, row or key at
// fault but never a record-level value: census microdata are confidential.

#include <stdexcept>
#include <string>

namespace sdc {

enum class ExitCode : int {
  kOk = 0,
  kUsage = 2,         ///< command line: unknown flag, missing argument, bad flag value
  kInvalidInput = 3,  ///< an input file is malformed or violates the data model
  kInvalidJob = 4,    ///< a job file or its parameters are inconsistent
  kIo = 5,            ///< the operating system refused: missing file, permissions, disk full
  kInternal = 70,     ///< a bug: an invariant of sdc-engine itself failed
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ExitCode::kUsage, message) {}
};

class InvalidInput : public Error {
 public:
  explicit InvalidInput(const std::string& message) : Error(ExitCode::kInvalidInput, message) {}
};

class InvalidJob : public Error {
 public:
  explicit InvalidJob(const std::string& message) : Error(ExitCode::kInvalidJob, message) {}
};

class IoError : public Error {
 public:
  explicit IoError(const std::string& message) : Error(ExitCode::kIo, message) {}
};

/// A kernel cannot apply its parameters to the data: a model grid too large to index, a generator
/// naming no key, a negative radius. Kernels throw this (or InvalidInput, InternalError), never a
/// command-line category: the engine step that chose the parameters maps it to the error of its
/// flags where it can name them (the log-linear measure makes a bad model a usage error of
/// --loglinear-model); otherwise it ends the run as a job error (exit 4).
class ParameterError : public Error {
 public:
  explicit ParameterError(const std::string& message) : Error(ExitCode::kInvalidJob, message) {}
};

class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(ExitCode::kInternal, message) {}
};

/// Throws the error type of `code` (an error sent from another rank keeps its type).
[[noreturn]] void throw_error(ExitCode code, const std::string& message);

[[noreturn]] void throw_check_failure(const char* condition, const char* file, int line, const std::string& message);

}  // namespace sdc

/// Always-on invariant check: a failure is a bug in sdc-engine, reported as an InternalError.
#define SDC_CHECK(condition, message)                                                        \
  do {                                                                                       \
    if (!(condition)) ::sdc::throw_check_failure(#condition, __FILE__, __LINE__, (message)); \
  } while (false)
