#pragma once
// One rule for every command and job: a run never writes a file it reads, and never writes one file
// twice. Every path a run writes (outputs, reports, logs, saved schemas) is compared with every path
// it reads (data, external files, seeds, jobs, schemas, matrices) and with the others it writes,
// before anything runs. Paths are compared by the file they name, not by their spelling: by device
// and inode after resolving links, and for a file not there yet by its directory's device and
// inode and its name.

#include <climits>
#include <filesystem>
#include <string>
#include <vector>

namespace sdc::io {

enum class PathAccess { kRead, kWrite };

/// A path a run uses, with the flag (or job key) that names it.
struct PathUse {
  std::string flag;  ///< as the user wrote it: "--report", "step 2 (pram) --output", "--log-file"
  std::filesystem::path path;
  PathAccess access = PathAccess::kRead;
  /// When in the run the file is used, for jobs, whose steps read what earlier steps wrote: a write
  /// clashes with the reads of its own and of earlier stages. A single command is one stage.
  int stage = 0;
};

/// The stage of what is written throughout a run and read by none of it: the log and a job's report.
inline constexpr int kWholeRunStage = INT_MAX;

/// One message per clash among `uses`, each naming both flags and both paths.
std::vector<std::string> path_clashes(const std::vector<PathUse>& uses);

/// Throws UsageError listing every clash, when there is one.
void check_path_safety(const std::vector<PathUse>& uses);

}  // namespace sdc::io
