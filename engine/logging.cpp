#include "engine/logging.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::engine {

void configure_logging(const std::string& level, const std::optional<std::filesystem::path>& log_file,
                       io::FilePermissions permissions) {
  const auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    throw UsageError("--log-level '" + level + "': expected trace, debug, info, warn, error, critical or off");

  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_sink_mt>()};
  if (log_file) {
    // spdlog would create the file with the umask's mode; it is created here, owner-only, first.
    const int fd = ::open(log_file->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, permissions.mode);
    if (fd < 0) {
      const int error = errno;
      throw IoError(log_file->string() + ": cannot create log file: " + std::strerror(error));
    }
    ::fchmod(fd, permissions.mode);
    ::close(fd);
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file->string(), false));
  }
  auto logger = std::make_shared<spdlog::logger>("sdc", sinks.begin(), sinks.end());
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace sdc::engine
