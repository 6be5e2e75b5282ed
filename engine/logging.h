#pragma once
// Logging through spdlog. Logs describe the run (steps, counts, rates, paths) and never print
// record-level values; error messages follow the same rule (docs/exit-codes.md).

#include <filesystem>
#include <optional>
#include <string>

#include "io/atomic_output.h"

namespace sdc::engine {

/// Sets up the default logger: stderr, plus `log_file` (appended to, created with `permissions`).
/// Throws UsageError for an unknown level, IoError when the log file cannot be created.
void configure_logging(const std::string& level, const std::optional<std::filesystem::path>& log_file,
                       io::FilePermissions permissions);

}  // namespace sdc::engine
