#include "io/timestamp.h"

#include <cstdlib>
#include <ctime>

namespace sdc::io {

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0')
    now = static_cast<std::time_t>(std::strtoll(epoch, nullptr, 10));
  std::tm parts{};
  gmtime_r(&now, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buffer;
}

}  // namespace sdc::io
