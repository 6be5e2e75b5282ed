#include "io/atomic_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>

#include "kernels/core/error.h"

namespace sdc::io {
namespace {

// A signal handler may only touch lock-free state, so live temporary paths sit in a fixed table of
// C strings, each with an atomic state: a slot is claimed, filled, then published as live.
constexpr int kMaxLiveOutputs = 64;
constexpr std::size_t kMaxPathBytes = 4096;
enum SlotState : int { kFree = 0, kClaimed = 1, kLive = 2 };
struct LiveOutputSlot {
  std::atomic<int> state{kFree};
  std::array<char, kMaxPathBytes> path{};
};
std::array<LiveOutputSlot, kMaxLiveOutputs> g_live_outputs;

int register_live_output(const std::filesystem::path& path) {
  const std::string text = path.string();
  if (text.size() >= kMaxPathBytes) return -1;
  for (int i = 0; i < kMaxLiveOutputs; ++i) {
    auto& slot = g_live_outputs[static_cast<std::size_t>(i)];
    int expected = kFree;
    if (!slot.state.compare_exchange_strong(expected, kClaimed)) continue;
    std::memcpy(slot.path.data(), text.c_str(), text.size() + 1);
    slot.state.store(kLive);
    return i;
  }
  return -1;
}

void unregister_live_output(int slot) {
  if (slot >= 0) g_live_outputs[static_cast<std::size_t>(slot)].state.store(kFree);
}

extern "C" void remove_live_outputs_and_reraise(int signal_number) {
  for (auto& slot : g_live_outputs)
    if (slot.state.load() == kLive) ::unlink(slot.path.data());
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

std::string errno_text(int error) { return std::strerror(error); }

// Not touched by signal handlers: committed outputs are complete files, which an interrupted run
// keeps (only its temporary files are removed).
std::mutex g_committed_mutex;
std::vector<std::filesystem::path> g_committed;
std::vector<std::filesystem::path> g_made_directories;

void record_committed(const std::filesystem::path& path) {
  std::lock_guard lock(g_committed_mutex);
  g_committed.push_back(path);
}

/// Removes `.NAME.PID.partial` siblings left by runs that were killed (SIGKILL cannot be caught) and
/// whose process no longer exists, so that an interrupted run leaves no lasting debris.
void remove_stale_partials(const std::filesystem::path& directory, const std::string& name) {
  const std::string prefix = "." + name + ".";
  const std::string suffix = ".partial";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() <= prefix.size() + suffix.size() || file.rfind(prefix, 0) != 0 ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string pid_text = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

FilePermissions parse_permissions(std::string_view text) {
  const auto bad = [&]() {
    return UsageError("--permissions '" + std::string(text) +
                      "': expected an octal mode with read/write bits only that keeps the owner's read and write, "
                      "such as 0600 or 0640");
  };
  if (text.empty() || text.size() > 4) throw bad();
  mode_t mode = 0;
  for (char c : text) {
    if (c < '0' || c > '7') throw bad();
    mode = static_cast<mode_t>(mode * 8U + static_cast<mode_t>(c - '0'));
  }
  if ((mode & ~static_cast<mode_t>(0666)) != 0 || (mode & 0600) != 0600) throw bad();
  return FilePermissions{mode};
}

std::string to_string(FilePermissions permissions) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "%04o", static_cast<unsigned>(permissions.mode));
  return buffer;
}

AtomicOutput::AtomicOutput(std::filesystem::path final_path, FilePermissions permissions)
    : final_path_(std::move(final_path)), permissions_(permissions) {
  if (final_path_.empty() || !final_path_.has_filename())
    throw UsageError("output path '" + final_path_.string() + "' does not name a file");
  ensure_output_is_not_a_directory(final_path_);
  const std::filesystem::path directory = final_path_.has_parent_path() ? final_path_.parent_path() : ".";
  temp_path_ = directory / ("." + final_path_.filename().string() + "." + std::to_string(::getpid()) + ".partial");
  remove_stale_partials(directory, final_path_.filename().string());

  const int fd = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions_.mode);
  if (fd < 0) {
    const int error = errno;
    throw IoError(final_path_.string() + ": cannot create output in directory '" + directory.string() +
                  "': " + errno_text(error));
  }
  // The umask may have removed bits the user asked for; the mode is set explicitly.
  ::fchmod(fd, permissions_.mode);
  ::close(fd);
  registry_slot_ = register_live_output(temp_path_);
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) ::unlink(temp_path_.c_str());
  unregister_live_output(registry_slot_);
}

void AtomicOutput::commit() {
  SDC_CHECK(!committed_, "AtomicOutput committed twice");
  const int fd = ::open(temp_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    throw IoError(final_path_.string() + ": temporary output vanished before it was complete: " + errno_text(error));
  }
  const bool synced = ::fsync(fd) == 0;
  const int sync_error = errno;
  ::fchmod(fd, permissions_.mode);
  ::close(fd);
  if (!synced) throw IoError(final_path_.string() + ": cannot flush output to disk: " + errno_text(sync_error));
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    const int error = errno;
    throw IoError(final_path_.string() + ": cannot move completed output into place: " + errno_text(error));
  }
  committed_ = true;
  record_committed(final_path_);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content, FilePermissions permissions) {
  AtomicOutput output(path, permissions);
  std::FILE* file = std::fopen(output.temp_path().c_str(), "wb");
  if (file == nullptr) {
    const int error = errno;
    throw IoError(path.string() + ": cannot write: " + errno_text(error));
  }
  const bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) throw IoError(path.string() + ": cannot write (disk full?)");
  output.commit();
}

void write_stream_atomically(const std::filesystem::path& path, FilePermissions permissions,
                             const std::function<void(std::ostream&)>& write) {
  AtomicOutput output(path, permissions);
  std::ofstream out(output.temp_path(), std::ios::binary);
  if (!out) throw IoError(path.string() + ": cannot write");
  write(out);
  out.close();
  if (!out) throw IoError(path.string() + ": cannot write (disk full?)");
  output.commit();
}

void ensure_output_directory_writable(const std::filesystem::path& output) {
  const std::filesystem::path directory = output.has_parent_path() ? output.parent_path() : ".";
  if (::access(directory.c_str(), W_OK | X_OK) != 0) {
    const int error = errno;
    throw IoError(output.string() + ": cannot create output in directory '" + directory.string() +
                  "': " + errno_text(error));
  }
}

void create_output_directories(const std::filesystem::path& directory, FilePermissions permissions) {
  const mode_t mode = permissions.mode | ((permissions.mode & 0444) >> 2);
  std::filesystem::path made;
  for (const auto& part : directory.lexically_normal()) {
    made /= part;
    if (part.empty() || part == "/" || part == "." || part == "..") continue;
    if (::mkdir(made.c_str(), mode) == 0) {
      ::chmod(made.c_str(), mode);  // the umask may have removed bits
      std::lock_guard lock(g_committed_mutex);
      g_made_directories.push_back(made);
      continue;
    }
    const int error = errno;
    std::error_code ec;
    if (error == EEXIST && std::filesystem::is_directory(made, ec)) continue;
    throw IoError(made.string() + ": cannot create output directory: " + errno_text(error));
  }
}

void ensure_output_is_not_a_directory(const std::filesystem::path& output) {
  std::error_code ec;
  if (std::filesystem::is_directory(output, ec))
    throw IoError(output.string() + ": cannot write output: it is a directory");
}

std::vector<std::filesystem::path> committed_outputs() {
  std::lock_guard lock(g_committed_mutex);
  return g_committed;
}

void keep_committed_outputs() {
  std::lock_guard lock(g_committed_mutex);
  g_committed.clear();
  g_made_directories.clear();
}

void remove_committed_outputs() noexcept {
  std::lock_guard lock(g_committed_mutex);
  for (auto it = g_committed.rbegin(); it != g_committed.rend(); ++it) ::unlink(it->c_str());
  for (auto it = g_made_directories.rbegin(); it != g_made_directories.rend(); ++it) ::rmdir(it->c_str());
  g_committed.clear();
  g_made_directories.clear();
}

void install_output_cleanup_handlers() {
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction action {};
    action.sa_handler = remove_live_outputs_and_reraise;
    sigemptyset(&action.sa_mask);
    action.sa_flags = static_cast<int>(SA_RESETHAND);
    ::sigaction(signal_number, &action, nullptr);
  }
}

}  // namespace sdc::io
