#include "io/seed.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "io/sha256.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

constexpr std::size_t kMaxSeedFileBytes = 256;

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string read_seed_file(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO named as the seed file is refused below instead of blocking the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    throw IoError(path.string() + ": cannot open seed file: " + std::strerror(error));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw InvalidInput(path.string() + ": seed file is not a regular file");
  }
  if ((info.st_mode & 077) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw InvalidInput(path.string() + ": seed file has mode " + mode +
                       " and is readable or writable by others; a seed reproduces every random draw, so it must be "
                       "owner-only (chmod 600 " +
                       path.string() + ")");
  }
  std::string content(kMaxSeedFileBytes + 1, '\0');
  const ssize_t count = ::read(fd, content.data(), content.size());
  ::close(fd);
  if (count < 0) throw IoError(path.string() + ": cannot read seed file");
  if (static_cast<std::size_t>(count) > kMaxSeedFileBytes)
    throw InvalidInput(path.string() + ": seed file is longer than a seed (expected one integer)");
  content.resize(static_cast<std::size_t>(count));
  return content;
}

}  // namespace

std::string Seed::fingerprint() const {
  Sha256 hash;
  hash.update_field("sdc-engine seed fingerprint v1");
  hash.update_u64(value);
  return hash.hex_digest();
}

Seed parse_seed(const std::string& text, const std::string& where) {
  const std::string body = trim(text);
  const bool hex = body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X');
  const char* first = body.data() + (hex ? 2 : 0);
  const char* last = body.data() + body.size();
  Seed seed;
  const auto [end, error] = std::from_chars(first, last, seed.value, hex ? 16 : 10);
  if (body.empty() || error != std::errc() || end != last)
    throw InvalidInput(where + ": a seed is one unsigned 64-bit integer, decimal or 0x-prefixed hex");
  return seed;
}

std::optional<Seed> load_seed(const std::optional<std::filesystem::path>& seed_file) {
  if (seed_file) return parse_seed(read_seed_file(*seed_file), seed_file->string());
  if (const char* text = std::getenv(kSeedEnvironmentVariable); text != nullptr)
    return parse_seed(text, std::string("environment variable ") + kSeedEnvironmentVariable);
  return std::nullopt;
}

Seed require_seed(const std::optional<std::filesystem::path>& seed_file, const std::string& method) {
  auto seed = load_seed(seed_file);
  if (!seed)
    throw UsageError(method + " draws random numbers and needs a seed: give --seed-file FILE or set " +
                     kSeedEnvironmentVariable + " (make one with `sdc generate seed --output FILE`)");
  return *seed;
}

Seed write_new_seed_file(const std::filesystem::path& path) {
  Seed seed;
  std::size_t filled = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(&seed.value);
  while (filled < sizeof seed.value) {
    const ssize_t count = ::getrandom(bytes + filled, sizeof seed.value - filled, 0);
    if (count < 0) {
      if (errno == EINTR) continue;
      throw IoError(std::string("cannot draw a seed from the operating system: ") + std::strerror(errno));
    }
    filled += static_cast<std::size_t>(count);
  }
  write_file_atomically(path, std::to_string(seed.value) + "\n", FilePermissions{0600});
  return seed;
}

}  // namespace sdc::io
