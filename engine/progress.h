#pragma once
// Progress of long steps on stderr: records done, rate and estimated time left, redrawn in place at
// most twice a second. Only the coordinator speaks, and only to a terminal unless --progress asks
// for it (batch logs stay clean). Never prints record-level values.

#include <chrono>
#include <cstdint>
#include <string>

namespace sdc::engine {

class Progress {
 public:
  /// `enabled`: whether this process reports (see progress_wanted()).
  Progress(std::string what, std::int64_t total, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// `done` records of `total` are complete.
  void update(std::int64_t done);
  /// Prints the final line (when anything was printed) and stops.
  void finish();

  /// "1.5M records in 0:03 (520k/s), 0:02 left" — the text of one update, for tests.
  static std::string describe(std::int64_t done, std::int64_t total, double seconds);

 private:
  std::string what_;
  std::int64_t total_;
  bool enabled_;
  bool printed_ = false;
  std::int64_t last_printed_ = -1;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
};

/// Progress is shown on the coordinator when stderr is a terminal, or when `forced` (--progress).
bool progress_wanted(bool is_coordinator, bool forced);

}  // namespace sdc::engine
