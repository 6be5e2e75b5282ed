#pragma once
// Logging through spdlog. Logs describe the run (steps, counts, rates, paths) and never print
// record-level values; error messages follow the same rule (docs/exit-codes.md).

#include <filesystem>
#include <string>

#include "io/atomic_output.h"

namespace sdc::engine {

/// Sets up the default logger on stderr at `level`. Throws UsageError for an unknown level.
void configure_logging(const std::string& level);

/// Adds `log_file` to the default logger, appended to. The file is opened without following a link
/// and must be new (created with `permissions`) or a log this user already owns: a regular file
/// with one name whose first line is a log line. Anything else is refused with a UsageError naming
/// it (an input, a link, a FIFO, a file of another format); IoError when it cannot be opened.
void add_log_file(const std::filesystem::path& log_file, io::FilePermissions permissions);

}  // namespace sdc::engine
