#include "kernels/swapping/rank_swap.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <system_error>

#include "kernels/core/error.h"

namespace sdc::swapping {
namespace {

constexpr double kFloatMax = static_cast<double>(std::numeric_limits<float>::max());

/// A non-missing value at its place in the sorted order, with the record it goes back to.
struct Entry {
  double value = 0.0;
  std::int64_t row_id = 0;
  std::size_t record = 0;
};

void check_percent(const char* name, double percent) {
  if (!(percent >= 0.0 && percent <= 100.0))
    throw ParameterError(std::string("rank swapping: ") + name + " must lie in [0, 100]");
}

}  // namespace

void check_rank_swap_options(const RankSwapOptions& options) {
  check_percent("the top percent", options.top_percent);
  check_percent("the bottom percent", options.bottom_percent);
  const int windows = static_cast<int>(options.window_fraction.has_value()) + static_cast<int>(options.r0.has_value()) +
                      static_cast<int>(options.k0.has_value());
  if (windows > 1)
    throw ParameterError("rank swapping: give at most one of the window fraction, R0 and K0 (none: R0 = 0.95)");
  // The reference holds all three as floats: a value beyond the float range would become infinite.
  if (options.window_fraction && !(*options.window_fraction > 0.0 && *options.window_fraction <= kFloatMax))
    throw ParameterError("rank swapping: the window fraction must be above 0 and finite in single precision");
  if (options.r0 && !(*options.r0 >= 0.0 && *options.r0 <= 1.0))
    throw ParameterError("rank swapping: R0 must lie in [0, 1]");
  if (options.k0 && !(*options.k0 > 0.0 && *options.k0 <= kFloatMax))
    throw ParameterError("rank swapping: K0 must be above 0 and finite in single precision");
}

std::int64_t rank_swap_coded_count(std::int64_t n, double percent) {
  // ratio = float(percent) · 0.01f clamped to [0, 1]: every step in single precision, as the reference
  // (0.01f < 0.01 makes 5 % of 100 values 4).
  const float ratio = std::clamp(static_cast<float>(percent) * 0.01f, 0.0f, 1.0f);
  const float product = static_cast<float>(n) * ratio;
  return std::min(n, static_cast<std::int64_t>(product));
}

float rank_swap_window_fraction(const RankSwapOptions& options, const RankSwapSums& sums, std::int64_t free_count,
                                double top_value, double bottom_value) {
  const auto count = static_cast<double>(free_count);
  const double mean = free_count > 0 ? sums.free / count : 0.0;
  const double mean_square = mean * mean;
  const float variance =
      free_count > 0 ? std::max(0.0f, static_cast<float>(sums.free_squares / count - mean_square)) : 0.0f;
  const double delta = std::fabs(bottom_value - top_value);
  if (options.window_fraction) return static_cast<float>(*options.window_fraction);
  if (options.k0) {
    // sqrt(8/3)·K0 in single precision, then |μ|/Δ in double, rounded to float: the reference's types.
    const float scale = std::sqrt(8.0f / 3.0f) * static_cast<float>(*options.k0);
    return delta != 0.0 ? static_cast<float>(static_cast<double>(scale) * std::fabs(mean) / delta) : 0.0f;
  }
  const float r0 = static_cast<float>(options.r0.value_or(0.95));
  const float spread = std::sqrt(2.0f * variance * (1.0f - r0));
  return delta != 0.0 ? static_cast<float>(static_cast<double>(spread) / delta) : 0.0f;
}

namespace {

/// The sorted, coded values of one variable and the window its scan uses.
struct Prepared {
  std::vector<Entry> sorted;  ///< non-missing values, descending; equal values: larger row id first
  std::int64_t top = 0;
  std::int64_t bottom = 0;
  std::int64_t first_free = 0;  ///< the values left after coding are sorted[first_free, first_free + free_count)
  std::int64_t free_count = 0;  ///< N_u
  float p = 0.0f;
};

/// Steps 1–5 of §1: sort, top and bottom coding, the moments of the values left, the window fraction.
Prepared prepare(std::span<const double> values, std::span<const std::int64_t> row_ids,
                 const RankSwapOptions& options) {
  Prepared out;
  out.sorted.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    if (std::isinf(values[i]))
      throw InvalidInput("rank swapping: the value of row id " + std::to_string(row_ids[i]) +
                         " is infinite; only finite values and missing values (NaN) can be swapped");
    out.sorted.push_back({values[i], row_ids[i], i});
  }
  std::sort(out.sorted.begin(), out.sorted.end(), [](const Entry& a, const Entry& b) {
    return a.value > b.value || (a.value == b.value && a.row_id > b.row_id);
  });
  auto& v = out.sorted;
  const auto n = static_cast<std::int64_t>(v.size());
  if (n == 0) return out;
  auto at = [&](std::int64_t position) -> double& { return v[static_cast<std::size_t>(position)].value; };

  // Top coding, then bottom coding of what the top coding left: in this order, as the reference, so
  // overlapping codings (t + b > N) give its values too. The sums run down the sorted order, as there.
  out.top = rank_swap_coded_count(n, options.top_percent);
  out.bottom = rank_swap_coded_count(n, options.bottom_percent);
  RankSwapSums sums;
  const double top_value = at(out.top > 0 ? out.top - 1 : 0);
  if (out.top > 0) {
    for (std::int64_t j = 0; j < out.top; ++j) sums.top += at(j);
    const double mean = sums.top / static_cast<double>(out.top);
    for (std::int64_t j = 0; j < out.top; ++j) at(j) = mean;
  }
  const std::int64_t bottom_start = n - out.bottom;
  const double bottom_value = at(out.bottom > 0 ? bottom_start : n - 1);
  if (out.bottom > 0) {
    for (std::int64_t j = bottom_start; j < n; ++j) sums.bottom += at(j);
    // The reference tests the sum, not the count: a zero sum gives +0.0 where sum / b would be −0.0.
    const double mean = sums.bottom != 0.0 ? sums.bottom / static_cast<double>(out.bottom) : 0.0;
    for (std::int64_t j = bottom_start; j < n; ++j) at(j) = mean;
  }
  out.first_free = out.top;
  out.free_count = std::max<std::int64_t>(0, bottom_start - out.top);

  for (std::int64_t j = out.first_free; j < out.first_free + out.free_count; ++j) {
    sums.free += at(j);
    const double square = at(j) * at(j);  // its own statement: never fused into a multiply-add
    sums.free_squares += square;
  }
  out.p = rank_swap_window_fraction(options, sums, out.free_count, top_value, bottom_value);
  return out;
}

/// The free positions 0…n−1 of the scan as a Fenwick tree of 0/1: prefix counts and the k-th free
/// position in O(log n).
class FreePositions {
 public:
  explicit FreePositions(std::int64_t n) : tree_(static_cast<std::size_t>(n) + 1, 1) {
    // Linear build: each node passes its count to its parent.
    for (std::size_t i = 1; i < tree_.size(); ++i) {
      const std::size_t parent = i + (i & (~i + 1));
      if (parent < tree_.size()) tree_[parent] += tree_[i];
    }
    top_bit_ = 1;
    while (top_bit_ * 2 < tree_.size()) top_bit_ *= 2;
  }

  /// Free positions among 0…position (inclusive).
  std::int64_t count_through(std::int64_t position) const {
    std::int64_t total = 0;
    for (auto i = static_cast<std::size_t>(position) + 1; i > 0; i &= i - 1) total += tree_[i];
    return total;
  }

  /// The position of the rank-th free position (rank 1 = the first), found by descending the tree.
  std::int64_t find(std::int64_t rank) const {
    std::size_t at = 0;
    for (std::size_t step = top_bit_; step > 0; step /= 2) {
      if (at + step < tree_.size() && tree_[at + step] < rank) {
        at += step;
        rank -= tree_[at];
      }
    }
    return static_cast<std::int64_t>(at);  // 1-based node at + 1 is position at
  }

  void take(std::int64_t position) {
    for (auto i = static_cast<std::size_t>(position) + 1; i < tree_.size(); i += i & (~i + 1)) --tree_[i];
  }

 private:
  std::vector<std::int64_t> tree_;  ///< 1-based
  std::size_t top_bit_ = 1;
};

/// Partner selection by prefix counts (rank_swap).
class TreeChooser {
 public:
  explicit TreeChooser(std::int64_t n) : free_(n) {}

  /// The number of free positions k with j < k < r; j itself is free.
  std::int64_t candidates(std::int64_t j, std::int64_t r) {
    before_ = free_.count_through(j);
    return free_.count_through(r - 1) - before_;
  }
  std::int64_t candidate(std::int64_t index) const { return free_.find(before_ + index + 1); }
  void take(std::int64_t position) { free_.take(position); }

 private:
  FreePositions free_;
  std::int64_t before_ = 0;
};

/// Partner selection by listing the window (rank_swap_by_scan), as the reference.
class ScanChooser {
 public:
  explicit ScanChooser(std::int64_t n) : taken_(static_cast<std::size_t>(n), 0) {}

  std::int64_t candidates(std::int64_t j, std::int64_t r) {
    list_.clear();
    for (std::int64_t k = j + 1; k < r; ++k)
      if (taken_[static_cast<std::size_t>(k)] == 0) list_.push_back(k);
    return static_cast<std::int64_t>(list_.size());
  }
  std::int64_t candidate(std::int64_t index) const { return list_[static_cast<std::size_t>(index)]; }
  void take(std::int64_t position) { taken_[static_cast<std::size_t>(position)] = 1; }

 private:
  std::vector<std::uint8_t> taken_;
  std::vector<std::int64_t> list_;
};

/// Step 6 of §1 over the values left (`free` in sorted order); returns the pairs swapped.
template <class Chooser>
std::int64_t scan(std::span<Entry> free, float p, RankSwapDraws& draws) {
  const auto n = static_cast<std::int64_t>(free.size());
  Chooser chooser(n);
  std::vector<std::uint8_t> taken(free.size(), 0);
  std::int64_t pairs = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const auto sj = static_cast<std::size_t>(j);
    if (taken[sj] != 0) continue;
    const std::int64_t r = rank_swap_window_end(j, n, p);
    if (r <= j + 1) continue;
    const std::int64_t count = chooser.candidates(j, r);
    if (count == 0) continue;
    const std::int64_t partner = chooser.candidate(draws.pick(count, free[sj].row_id));
    const auto sp = static_cast<std::size_t>(partner);
    std::swap(free[sj].value, free[sp].value);
    taken[sj] = taken[sp] = 1;
    chooser.take(j);
    chooser.take(partner);
    ++pairs;
  }
  return pairs;
}

template <class Chooser>
std::vector<double> swap_variable(std::span<const double> values, std::span<const std::int64_t> row_ids,
                                  const RankSwapOptions& options, RankSwapDraws& draws, RankSwapSummary* summary) {
  SDC_CHECK(values.size() == row_ids.size(), "rank swapping needs one row id per value");
  SDC_CHECK(draws.mode() == options.mode, "rank swapping draws of the options' mode");
  check_rank_swap_options(options);
  Prepared prepared = prepare(values, row_ids, options);
  const std::span<Entry> free =
      std::span<Entry>(prepared.sorted)
          .subspan(static_cast<std::size_t>(prepared.first_free), static_cast<std::size_t>(prepared.free_count));
  const std::int64_t pairs = scan<Chooser>(free, prepared.p, draws);

  std::vector<double> out(values.begin(), values.end());  // missing values stay where they are
  for (const Entry& entry : prepared.sorted) out[entry.record] = entry.value;
  if (summary != nullptr) {
    const auto n = static_cast<std::int64_t>(prepared.sorted.size());
    summary->records = static_cast<std::int64_t>(values.size());
    summary->missing = summary->records - n;
    summary->top_coded = prepared.top;
    summary->bottom_coded = prepared.bottom;
    summary->swapped_pairs = pairs;
    summary->window_fraction = rank_swap_reported_fraction(prepared.p);
    summary->window_positions = rank_swap_window_end(0, prepared.free_count, prepared.p);
  }
  return out;
}

}  // namespace

std::int64_t rank_swap_window_end(std::int64_t j, std::int64_t free_count, float p) {
  const float width = static_cast<float>(free_count) * p;  // its own statement: never fused into an FMA
  const float reach = static_cast<float>(j) + width;
  // Saturates where the reference's conversion to int would overflow.
  if (!(reach < 0x1.0p62f)) return free_count;
  return std::min(free_count, static_cast<std::int64_t>(reach));
}

double rank_swap_reported_fraction(float p) {
  // 0.2f reports 0.2, not 0.20000000298023224, and the decimal still rounds back to the float the scan used.
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, p);
  SDC_CHECK(written.ec == std::errc(), "a float fits 32 characters");
  double out = 0.0;
  const auto read = std::from_chars(text, written.ptr, out);
  SDC_CHECK(read.ec == std::errc(), "a float's shortest decimal form reads back as a double");
  return out;
}

SegmentScan rank_swap_scan_segment(std::int64_t first, std::span<const std::int64_t> row_ids, std::int64_t free_count,
                                   float p, std::span<const std::int64_t> taken_before, RankSwapDraws& draws) {
  SegmentScan out;
  const auto length = static_cast<std::int64_t>(row_ids.size());
  const std::int64_t end = first + length;
  // The tree spans the segment and the window of its last position: no partner lies further.
  const std::int64_t reach = length == 0 ? end : std::max(end, rank_swap_window_end(end - 1, free_count, p));
  TreeChooser chooser(reach - first);
  std::vector<std::uint8_t> taken(static_cast<std::size_t>(length), 0);
  for (const std::int64_t position : taken_before) {
    if (position < first) continue;
    if (position >= reach) {
      out.taken_after.push_back(position);
      continue;
    }
    chooser.take(position - first);
    if (position < end)
      taken[static_cast<std::size_t>(position - first)] = 1;
    else
      out.taken_after.push_back(position);
  }
  for (std::int64_t j = first; j < end; ++j) {
    const auto sj = static_cast<std::size_t>(j - first);
    if (taken[sj] != 0) continue;
    const std::int64_t r = rank_swap_window_end(j, free_count, p);
    if (r <= j + 1) continue;
    const std::int64_t count = chooser.candidates(j - first, r - first);
    if (count == 0) continue;
    const std::int64_t partner = first + chooser.candidate(draws.pick(count, row_ids[sj]));
    taken[sj] = 1;
    chooser.take(j - first);
    chooser.take(partner - first);
    if (partner < end)
      taken[static_cast<std::size_t>(partner - first)] = 1;
    else
      out.taken_after.push_back(partner);
    out.pairs.emplace_back(j, partner);
  }
  std::sort(out.taken_after.begin(), out.taken_after.end());
  return out;
}

RankSwapDraws RankSwapDraws::compat(std::uint32_t taus88_seed) {
  return RankSwapDraws(RankSwapMode::kCompat, taus88_seed, 0, 0);
}

RankSwapDraws RankSwapDraws::native(std::uint64_t seed, std::uint64_t variable_position) {
  return RankSwapDraws(RankSwapMode::kNative, 0, seed, variable_position);
}

std::int64_t RankSwapDraws::pick(std::int64_t count, std::int64_t row_id) {
  SDC_CHECK(count >= 1, "a rank-swap draw among at least one candidate");
  ++draws_;
  if (mode_ == RankSwapMode::kCompat) {
    const std::int64_t index = taus88_.random(count);
    if (index < count) return index;
    ++clamped_;
    return count - 1;
  }
  const std::uint64_t word = philox_.bits(
      DrawCounter{.unit = static_cast<std::uint64_t>(row_id), .draw = variable_, .replicate = 0, .attempt = 0})[0];
  return static_cast<std::int64_t>(index_from_bits(word, static_cast<std::uint64_t>(count)));
}

std::vector<double> rank_swap(std::span<const double> values, std::span<const std::int64_t> row_ids,
                              const RankSwapOptions& options, RankSwapDraws& draws, RankSwapSummary* summary) {
  return swap_variable<TreeChooser>(values, row_ids, options, draws, summary);
}

std::vector<double> rank_swap_by_scan(std::span<const double> values, std::span<const std::int64_t> row_ids,
                                      const RankSwapOptions& options, RankSwapDraws& draws) {
  return swap_variable<ScanChooser>(values, row_ids, options, draws, nullptr);
}

}  // namespace sdc::swapping
