#include "kernels/core/error.h"

namespace sdc {

void throw_check_failure(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(std::string("internal error at ") + file + ":" + std::to_string(line) + ": check '" +
                      condition + "' failed" + (message.empty() ? "" : ": " + message));
}

}  // namespace sdc
