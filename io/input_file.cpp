#include "io/input_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernels/core/error.h"

namespace sdc::io {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

InputFile::InputFile(const std::filesystem::path& path, std::string_view what) : path_(path), what_(what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) {
    const int error = errno;
    throw IoError(path.string() + ": cannot open " + what_ + ": " + std::strerror(error));
  }
  if (::fstat(fd_, &status_) != 0) {
    const int error = errno;
    ::close(fd_);
    throw IoError(path.string() + ": cannot read " + what_ + ": " + std::strerror(error));
  }
  if (!S_ISREG(status_.st_mode)) {
    ::close(fd_);
    throw IoError(path.string() + ": cannot open " + what_ + ": it is " + kind_of(status_.st_mode) +
                  ", not a regular file");
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::read_all(std::size_t max_bytes) {
  if (size() > max_bytes)
    throw InvalidInput(path_.string() + ": " + what_ + " is larger than " + std::to_string(max_bytes) + " bytes");
  std::string content(size(), '\0');
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t count = ::read(fd_, content.data() + done, content.size() - done);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) {
      const int error = errno;
      throw IoError(path_.string() + ": cannot read " + what_ + ": " + std::strerror(error));
    }
    if (count == 0) break;  // the file shrank while being read
    done += static_cast<std::size_t>(count);
  }
  content.resize(done);
  return content;
}

void check_input_file(const std::filesystem::path& path, std::string_view what) { InputFile file(path, what); }

std::string read_input_file(const std::filesystem::path& path, std::string_view what, std::size_t max_bytes) {
  return InputFile(path, what).read_all(max_bytes);
}

}  // namespace sdc::io
