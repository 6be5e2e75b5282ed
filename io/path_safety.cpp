#include "io/path_safety.h"

#include <sys/stat.h>

#include "kernels/core/error.h"

namespace sdc::io {
namespace {

/// The file a path names: its device and inode when it exists; otherwise its directory's and its
/// name (two spellings of a file not yet written name the same directory entry); and for a file in
/// a directory not made yet (a job's output directory), its absolute path with `.`, `..` and the
/// links of the existing part resolved.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  std::string name;  ///< empty when the file exists
  bool operator==(const FileIdentity&) const = default;
};

FileIdentity identify(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) return FileIdentity{info.st_dev, info.st_ino, {}};
  const std::filesystem::path directory = path.has_parent_path() ? path.parent_path() : ".";
  if (path.has_filename() && ::stat(directory.c_str(), &info) == 0)
    return FileIdentity{info.st_dev, info.st_ino, path.filename().string()};
  std::error_code error;
  const std::filesystem::path resolved =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path, error), error);
  return FileIdentity{0, 0, (error ? path.lexically_normal() : resolved).string()};
}

std::string named(const PathUse& use) { return use.flag + " '" + use.path.string() + "'"; }

}  // namespace

std::vector<std::string> path_clashes(const std::vector<PathUse>& uses) {
  std::vector<FileIdentity> identities;
  identities.reserve(uses.size());
  for (const PathUse& use : uses) identities.push_back(identify(use.path));

  std::vector<std::string> clashes;
  for (std::size_t i = 0; i < uses.size(); ++i) {
    for (std::size_t j = i + 1; j < uses.size(); ++j) {
      if (!(identities[i] == identities[j])) continue;
      const PathUse& a = uses[i];
      const PathUse& b = uses[j];
      const bool a_writes = a.access == PathAccess::kWrite;
      const bool b_writes = b.access == PathAccess::kWrite;
      if (a_writes && b_writes) {
        clashes.push_back(named(a) + " and " + named(b) + " name the same file: each output needs a path of its own");
      } else if (a_writes != b_writes) {
        const PathUse& written = a_writes ? a : b;
        const PathUse& read = a_writes ? b : a;
        if (read.stage <= written.stage)
          clashes.push_back(named(written) + " is the file of " + named(read) +
                            ": a run never writes a file it reads; choose another path");
      }
    }
  }
  return clashes;
}

void check_path_safety(const std::vector<PathUse>& uses) {
  const std::vector<std::string> clashes = path_clashes(uses);
  if (clashes.empty()) return;
  std::string message = clashes.front();
  for (std::size_t i = 1; i < clashes.size(); ++i) message += "; " + clashes[i];
  throw UsageError(message);
}

}  // namespace sdc::io
