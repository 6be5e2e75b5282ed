#pragma once
// Every input is opened here: read-only, and only when it is a regular file. A FIFO, a device or a
// socket named as an input would block `open` forever or feed endless bytes; it is opened without
// blocking, recognised and refused with an error naming the file, before anything is read.

#include <sys/stat.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace sdc::io {

/// An open input: a regular file, read-only, blocking reads (the descriptor is closed with it).
class InputFile {
 public:
  /// Throws IoError naming `path` and `what` ("input", "job file", "schema", ...) when the file cannot
  /// be opened, or when it is a directory, a FIFO, a device or a socket.
  InputFile(const std::filesystem::path& path, std::string_view what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int descriptor() const noexcept { return fd_; }
  const struct stat& status() const noexcept { return status_; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(status_.st_size); }

  /// The whole content. Throws InvalidInput when it is longer than `max_bytes`.
  std::string read_all(std::size_t max_bytes);

 private:
  std::filesystem::path path_;
  std::string what_;
  int fd_ = -1;
  struct stat status_ {};
};

/// Throws as InputFile does when `path` is not a regular file that can be opened for reading: for
/// readers that open the file by name themselves (HDF5).
void check_input_file(const std::filesystem::path& path, std::string_view what);

/// The content of a small text input (job files, schemas, matrices): as InputFile::read_all().
std::string read_input_file(const std::filesystem::path& path, std::string_view what, std::size_t max_bytes);

/// Text inputs larger than this are refused (a job, a schema or a matrix is a few kilobytes).
inline constexpr std::size_t kMaxTextInputBytes = std::size_t{64} << 20;

}  // namespace sdc::io
