#include "kernels/core/error.h"

namespace sdc {

void throw_error(ExitCode code, const std::string& message) {
  switch (code) {
    case ExitCode::kUsage:
      throw UsageError(message);
    case ExitCode::kInvalidInput:
      throw InvalidInput(message);
    case ExitCode::kInvalidJob:
      throw InvalidJob(message);
    case ExitCode::kIo:
      throw IoError(message);
    case ExitCode::kOk:
    case ExitCode::kInternal:
      break;
  }
  throw InternalError(message);
}

void throw_check_failure(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(std::string("internal error at ") + file + ":" + std::to_string(line) + ": check '" + condition +
                      "' failed" + (message.empty() ? "" : ": " + message));
}

}  // namespace sdc
