#include "engine/logging.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

constexpr const char* kPattern = "[%Y-%m-%d %H:%M:%S.%e] [%l] %v";

/// Appends to a descriptor opened and checked here: spdlog's file sinks open the path again by
/// name, which would follow a link swapped in after the checks.
class DescriptorSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit DescriptorSink(int fd) : fd_(fd) {}
  ~DescriptorSink() override { ::close(fd_); }
  DescriptorSink(const DescriptorSink&) = delete;
  DescriptorSink& operator=(const DescriptorSink&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    const char* data = formatted.data();
    std::size_t left = formatted.size();
    while (left > 0) {
      const ssize_t written = ::write(fd_, data, left);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) return;  // a full disk must not end the run; the log says less
      data += written;
      left -= static_cast<std::size_t>(written);
    }
  }
  void flush_() override {}

 private:
  int fd_;
};

/// Whether `text` starts as a line of this log does: "[YYYY-MM-DD ".
bool starts_like_a_log_line(const char* text, std::size_t size) {
  constexpr std::string_view kShape = "[0000-00-00 ";
  if (size < kShape.size()) return false;
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = kShape[i] == '0';
    if (digit ? !std::isdigit(static_cast<unsigned char>(text[i])) : text[i] != kShape[i]) return false;
  }
  return true;
}

}  // namespace

void configure_logging(const std::string& level) {
  const auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    throw UsageError("--log-level '" + level + "': expected trace, debug, info, warn, error, critical or off");
  auto logger = std::make_shared<spdlog::logger>("sdc", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern(kPattern);
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

void add_log_file(const std::filesystem::path& log_file, io::FilePermissions permissions) {
  const std::string named = "--log-file '" + log_file.string() + "'";
  // O_NOFOLLOW: a link is refused, never appended through; O_NONBLOCK: a FIFO is refused, not waited on.
  const int fd = ::open(log_file.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
                        permissions.mode);
  if (fd < 0) {
    const int error = errno;
    if (error == ELOOP) throw UsageError(named + " is a symbolic link; a log is never written through a link");
    throw IoError(log_file.string() + ": cannot create log file: " + std::strerror(error));
  }
  const auto refuse = [&](const std::string& why) {
    ::close(fd);
    throw UsageError(named + " " + why + "; name a new file or an earlier log of sdc");
  };
  struct stat info {};
  if (::fstat(fd, &info) != 0) refuse("cannot be examined");
  if (!S_ISREG(info.st_mode)) refuse("is not a regular file");
  if (info.st_nlink != 1) refuse("has other names (hard links)");
  if (info.st_uid != ::geteuid()) refuse("belongs to another user");
  if (info.st_size > 0) {
    char head[16];
    const ssize_t count = ::pread(fd, head, sizeof head, 0);
    if (count < 0 || !starts_like_a_log_line(head, static_cast<std::size_t>(count)))
      refuse("already exists and is not a log of sdc");
  } else {
    // The umask may have removed bits the user asked for; a new log gets exactly --permissions.
    ::fchmod(fd, permissions.mode);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  auto sink = std::make_shared<DescriptorSink>(fd);
  sink->set_pattern(kPattern);
  spdlog::default_logger_raw()->sinks().push_back(std::move(sink));
}

}  // namespace sdc::engine
