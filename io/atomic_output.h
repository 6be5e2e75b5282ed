#pragma once
// Outputs appear whole or not at all. Every file sdc-engine writes (data, reports, logs, seeds) is
// created under a hidden temporary name beside its final path, owner-only unless the user asks
// otherwise, and renamed over the final path only when complete. A run that fails, or is stopped by
// SIGINT, SIGTERM or SIGHUP, removes its temporary files; a run killed by SIGKILL leaves at most a
// hidden `.NAME.PID.partial` file, never a truncated output under the final name, and the next run
// writing NAME removes such files once their process is gone.

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace sdc::io {

/// File mode of outputs: read/write bits only; the owner always keeps read and write.
struct FilePermissions {
  mode_t mode = 0600;
};

/// Parses an octal mode such as "600", "0640" or "0644". Throws UsageError otherwise.
FilePermissions parse_permissions(std::string_view text);
std::string to_string(FilePermissions permissions);  // "0640"

class AtomicOutput {
 public:
  /// Creates the temporary file (exclusively, with `permissions`). Throws IoError naming the final path
  /// when its directory does not exist or is not writable.
  AtomicOutput(std::filesystem::path final_path, FilePermissions permissions);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  /// The file to write; it exists (empty) from construction on.
  const std::filesystem::path& temp_path() const noexcept { return temp_path_; }
  const std::filesystem::path& final_path() const noexcept { return final_path_; }

  /// Flushes the temporary file to disk, sets its mode and renames it over the final path.
  void commit();

 private:
  std::filesystem::path final_path_;
  std::filesystem::path temp_path_;
  FilePermissions permissions_;
  int registry_slot_ = -1;
  bool committed_ = false;
};

// ---- a run's outputs: all or nothing ------------------------------------------------------------
// Every output committed by this process is recorded until the run keeps it. A run that fails after
// committing some outputs (its report cannot be written, a later phase fails) removes them, so that a
// failed run leaves nothing; a job keeps each step's outputs once the step is complete (they are
// checkpoints: --resume reuses them).

/// Outputs this process committed and has not kept, oldest first.
std::vector<std::filesystem::path> committed_outputs();
/// The outputs committed so far stay even if the run fails later.
void keep_committed_outputs();
/// Removes the outputs committed and not kept (and directories made by create_output_directories()
/// that are then empty), newest first. Never throws.
void remove_committed_outputs() noexcept;

/// Writes `content` to `path` atomically (reports, schemas, seed files).
void write_file_atomically(const std::filesystem::path& path, std::string_view content, FilePermissions permissions);

/// Writes `path` atomically from a stream that `write` fills: for text outputs streamed as they are
/// made (matrices, equation lists, p-tables), which need not fit in memory.
void write_stream_atomically(const std::filesystem::path& path, FilePermissions permissions,
                             const std::function<void(std::ostream&)>& write);

/// Throws IoError naming `output` when its directory does not exist or is not writable: called before
/// long work, so that a run fails at once rather than after it.
void ensure_output_directory_writable(const std::filesystem::path& output);

/// Creates `directory` and any missing parents, each with `permissions` plus the search bit wherever
/// it grants reading (0600 gives 0700, 0640 gives 0750), whatever the umask. Existing directories
/// are left as they are. Throws IoError naming the directory that cannot be made.
void create_output_directories(const std::filesystem::path& directory, FilePermissions permissions);

/// Throws IoError naming `output` when it is an existing directory.
void ensure_output_is_not_a_directory(const std::filesystem::path& output);

/// Installs handlers that remove live temporary files on SIGINT, SIGTERM and SIGHUP, then re-raise.
void install_output_cleanup_handlers();

}  // namespace sdc::io
