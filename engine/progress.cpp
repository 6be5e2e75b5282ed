#include "engine/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace sdc::engine {
namespace {

std::string count_text(double value) {
  char buffer[32];
  if (value >= 1e9)
    std::snprintf(buffer, sizeof buffer, "%.2fG", value / 1e9);
  else if (value >= 1e6)
    std::snprintf(buffer, sizeof buffer, "%.2fM", value / 1e6);
  else if (value >= 1e4)
    std::snprintf(buffer, sizeof buffer, "%.0fk", value / 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  return buffer;
}

std::string duration_text(double seconds) {
  const auto total = static_cast<long>(std::lround(seconds));
  char buffer[32];
  if (total >= 3600)
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld", total / 60, total % 60);
  return buffer;
}

}  // namespace

Progress::Progress(std::string what, std::int64_t total, bool enabled)
    : what_(std::move(what)),
      total_(total),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

Progress::~Progress() { finish(); }

std::string Progress::describe(std::int64_t done, std::int64_t total, double seconds) {
  const double rate = seconds > 0.0 ? static_cast<double>(done) / seconds : 0.0;
  std::string text = count_text(static_cast<double>(done)) + "/" + count_text(static_cast<double>(total)) +
                     " records (" + std::to_string(total > 0 ? done * 100 / total : 100) + "%) in " +
                     duration_text(seconds);
  if (rate > 0.0) {
    text += ", " + count_text(rate) + "/s";
    if (done < total) text += ", " + duration_text(static_cast<double>(total - done) / rate) + " left";
  }
  return text;
}

void Progress::update(std::int64_t done) {
  if (!enabled_ || finished_ || done == last_printed_) return;
  const auto now = std::chrono::steady_clock::now();
  if (printed_ && now - last_print_ < std::chrono::milliseconds(500) && done < total_) return;
  last_print_ = now;
  last_printed_ = done;
  printed_ = true;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r%s: %s\033[K", what_.c_str(), describe(done, total_, seconds).c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (finished_) return;
  if (enabled_) update(total_);
  if (printed_) std::fprintf(stderr, "\n");
  finished_ = true;
}

bool progress_wanted(bool is_coordinator, bool forced) { return is_coordinator && (forced || ::isatty(2) == 1); }

}  // namespace sdc::engine
