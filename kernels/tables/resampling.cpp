#include "kernels/tables/resampling.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "kernels/bootstrap/replicates.h"
#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"
#include "kernels/risk/loglinear.h"

namespace sdc::tables {
namespace {

__extension__ using UnsignedWide = unsigned __int128;

// Counts and totals stay below 2^53: the samplers take them as doubles, exactly.
constexpr std::int64_t kMaxTotal = std::int64_t{1} << 53;
// Sums of M tables stay below 2^62, so 2T + M never overflows when rounding T/M.
constexpr std::int64_t kMaxSum = std::int64_t{1} << 62;

// Subtrees at least this wide split over threads; their draws are keyed by node id either way.
constexpr std::uint64_t kParallelCells = std::uint64_t{1} << 14;
constexpr std::size_t kChunkCells = std::size_t{1} << 16;
constexpr std::int64_t kTrialsPerChunk = 4096;

constexpr std::uint64_t kCompensationDraw = 1;
constexpr std::uint64_t kSliceTag = std::uint64_t{1} << 63;
constexpr std::uint64_t kPriorDraw = std::uint64_t{1} << 62;
constexpr std::uint64_t kGenerationTag = std::uint64_t{1} << 63;

// ---- exact comparison for the quality bounds ---------------------------------------------------------

/// An unsigned integer of 640 bits: enough for d²·n·2^L against (M·m)²·x·(n − x)·2^R below.
class WideUnsigned {
 public:
  explicit WideUnsigned(std::uint64_t value) { limbs_[0] = value; }

  WideUnsigned& multiply(std::uint64_t factor) {
    UnsignedWide carry = 0;
    for (auto& limb : limbs_) {
      const UnsignedWide product = static_cast<UnsignedWide>(limb) * factor + carry;
      limb = static_cast<std::uint64_t>(product);
      carry = product >> 64U;
    }
    SDC_CHECK(carry == 0, "quality bound comparison stays within 640 bits");
    return *this;
  }

  WideUnsigned& shift_left(unsigned bits) {
    const unsigned words = bits / 64;
    const unsigned rest = bits % 64;
    SDC_CHECK(words < kLimbs, "quality bound comparison stays within 640 bits");
    for (std::size_t i = kLimbs; i-- > 0;) {
      std::uint64_t value = 0;
      if (i >= words) {
        value = limbs_[i - words] << rest;
        if (rest != 0 && i > words) value |= limbs_[i - words - 1] >> (64 - rest);
      }
      limbs_[i] = value;
    }
    return *this;
  }

  bool operator<(const WideUnsigned& other) const {
    for (std::size_t i = kLimbs; i-- > 0;) {
      if (limbs_[i] != other.limbs_[i]) return limbs_[i] < other.limbs_[i];
    }
    return false;
  }

 private:
  static constexpr std::size_t kLimbs = 10;
  std::array<std::uint64_t, kLimbs> limbs_{};
};

/// The variance of one cell as the exact rational a·b/den: x(n − x)/n for a table of n, x in the large-n
/// limit (a = x, b = den = 1).
struct Variance {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::uint64_t den = 1;
};

/// d < scale·S·sqrt(q) decided exactly: d²·den < (scale·m)²·a·b·2^(2e) with S = m·2^e, m an integer.
bool deviation_admissible(std::uint64_t d, const Variance& q, double s, std::uint64_t scale) {
  if (d == 0) return true;
  int exponent = 0;
  const double fraction = std::frexp(s, &exponent);
  const auto mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));
  const int e = exponent - 53;
  WideUnsigned left(d);
  left.multiply(d).multiply(q.den);
  WideUnsigned right(mantissa);
  right.multiply(mantissa).multiply(scale).multiply(scale).multiply(q.a).multiply(q.b);
  if (e < 0) left.shift_left(static_cast<unsigned>(-2 * e));
  if (e > 0) right.shift_left(static_cast<unsigned>(2 * e));
  return left < right;
}

/// The largest integer d >= 0 with d < scale·S·sqrt(q), for q > 0 (capped at 2^62). Long double gives t
/// to about 2^-60 relative; only a t within 1e-15 relative of an integer is decided exactly.
std::uint64_t largest_deviation(const Variance& q, double s, std::uint64_t scale) {
  const long double t =
      static_cast<long double>(scale) * static_cast<long double>(s) *
      std::sqrt(static_cast<long double>(q.a) * static_cast<long double>(q.b) / static_cast<long double>(q.den));
  constexpr auto kCap = static_cast<std::uint64_t>(kMaxSum);
  if (t < 0.5L) return 0;
  if (t >= static_cast<long double>(kCap)) return kCap;
  const long double whole = std::floor(t);
  const long double fraction = t - whole;
  const long double margin = 1e-15L * t;
  auto d = static_cast<std::uint64_t>(whole);
  if (fraction > margin && fraction < 1.0L - margin) return d;
  while (d > 0 && !deviation_admissible(d, q, s, scale)) --d;
  while (d < kCap && deviation_admissible(d + 1, q, s, scale)) ++d;
  return d;
}

/// Bounds on the sum T of `tables` counts of a cell with x = count out of n = total (validated).
QualityInterval sum_interval(std::int64_t count, std::int64_t total, double s, std::int64_t tables) {
  QualityInterval interval;
  const std::int64_t center = tables * count;
  interval.lower = center;
  interval.upper = center;
  if (count == 0 || count == total) return interval;
  const auto x = static_cast<std::uint64_t>(count);
  const auto n = static_cast<std::uint64_t>(total);
  interval.sd = static_cast<double>(
      std::sqrt(static_cast<long double>(x) * static_cast<long double>(n - x) / static_cast<long double>(n)));
  const auto deviation =
      static_cast<std::int64_t>(largest_deviation({x, n - x, n}, s, static_cast<std::uint64_t>(tables)));
  interval.lower = std::max<std::int64_t>(0, center - deviation);
  interval.upper = std::min(center + deviation, tables * total);
  return interval;
}

void check_s(double s, const char* method) {
  if (!(s > 0.0) || !std::isfinite(s)) throw ParameterError(std::string(method) + ": S must be positive and finite");
}

void check_tables(std::int64_t tables, const char* method) {
  if (tables < 1) throw ParameterError(std::string(method) + ": M (tables averaged) must be at least 1");
}

// ---- log-factorials without cancellation --------------------------------------------------------------

constexpr std::size_t kLogFactorialTableSize = 256;

const std::array<double, kLogFactorialTableSize>& log_factorial_table() {
  static const auto table = [] {
    std::array<double, kLogFactorialTableSize> values{};
    long double sum = 0.0L;
    for (std::size_t k = 1; k < values.size(); ++k) {
      sum += std::log(static_cast<long double>(k));
      values[k] = static_cast<double>(sum);
    }
    return values;
  }();
  return table;
}

/// The tail of Stirling's series, 1/(12k) − 1/(360k³) + 1/(1260k⁵) − 1/(1680k⁷): below 1e-20 of error
/// for k >= 256.
double stirling_tail(double k) {
  const double inverse = 1.0 / k;
  const double inverse2 = inverse * inverse;
  return inverse * (1.0 / 12.0 - inverse2 * (1.0 / 360.0 - inverse2 * (1.0 / 1260.0 - inverse2 / 1680.0)));
}

double log_factorial(std::uint64_t k) {
  if (k < kLogFactorialTableSize) return log_factorial_table()[k];
  constexpr double kHalfLogTwoPi = 0.91893853320467274178032973640562;
  const auto x = static_cast<double>(k);
  return (x + 0.5) * std::log(x) - x + kHalfLogTwoPi + stirling_tail(x);
}

/// ln a! − ln b!. For large a and b the Stirling terms are differenced analytically,
/// (b + ½)·log1p((a − b)/b) + (a − b)·ln a − (a − b) + tail(a) − tail(b), so the error is relative to the
/// difference, not to ln a! (which for a = 10^10 carries an absolute error of 3e-5).
double log_factorial_difference(std::uint64_t a, std::uint64_t b) {
  if (a == b) return 0.0;
  if (a < b) return -log_factorial_difference(b, a);
  if (a < kLogFactorialTableSize) return log_factorial_table()[a] - log_factorial_table()[b];
  const std::uint64_t steps = a - b;
  if (steps <= 16) {
    double sum = 0.0;
    for (std::uint64_t i = b + 1; i <= a; ++i) sum += std::log(static_cast<double>(i));
    return sum;
  }
  if (b < kLogFactorialTableSize) return log_factorial(a) - log_factorial_table()[b];
  const auto x = static_cast<double>(a);
  const auto y = static_cast<double>(b);
  const auto d = static_cast<double>(steps);
  return (y + 0.5) * std::log1p(d / y) + d * std::log(x) - d + stirling_tail(x) - stirling_tail(y);
}

// ---- hypergeometric sampler ---------------------------------------------------------------------------

constexpr std::uint64_t kInversionSupport = 10;

/// Inversion by sequential search from 0 with the ratio recurrence of the probability function; draws
/// k <= W/2 from W with A <= W/2 successes and min(k, A) < kInversionSupport, so P(0) >= 2^-10.
std::uint64_t hypergeometric_inversion(CounterWords& words, std::uint64_t k, std::uint64_t A, std::uint64_t W) {
  const std::uint64_t support = std::min(k, A);
  const std::uint64_t other = std::max(k, A);
  // P(0) = C(W − A, k) / C(W, k) = Π_{i < min(k, A)} (W − max(k, A) − i) / (W − i): symmetric in k and A.
  double probability = 1.0;
  for (std::uint64_t i = 0; i < support; ++i) {
    probability *= static_cast<double>(W - other - i) / static_cast<double>(W - i);
  }
  const std::uint64_t fill = W - A - k;
  double u = words.next_uniform();
  std::uint64_t y = 0;
  while (y < support && u >= probability) {
    u -= probability;
    probability *= static_cast<double>(A - y) * static_cast<double>(k - y) /
                   (static_cast<double>(y + 1) * static_cast<double>(fill + y + 1));
    ++y;
  }
  return y;
}

/// HRUA (Stadlober 1989) for k <= W/2 draws from W with A <= W/2 successes. The ratio-of-uniforms hat
/// with h = 2·sqrt(2/e)·c + 3 − 2·sqrt(3/e) around the exact mode covers every point of the (log-concave)
/// distribution, so accepting on 2 ln U <= ln f(K) − ln f(mode) is exact; the support is not truncated.
std::uint64_t hypergeometric_hrua(CounterWords& words, std::uint64_t k, std::uint64_t A, std::uint64_t W) {
  constexpr double kD1 = 1.7155277699214135;  // 2·sqrt(2/e)
  constexpr double kD2 = 0.8989161620588988;  // 3 − 2·sqrt(3/e)
  const double population = static_cast<double>(W);
  const double draws = static_cast<double>(k);
  const double p = static_cast<double>(A) / population;
  const double q = static_cast<double>(W - A) / population;
  const double a = draws * p + 0.5;
  const double variance = (population - draws) * draws * p * q / (population - 1.0);
  const double c = std::sqrt(variance + 0.5);
  const double h = kD1 * c + kD2;
  // The mode ⌊(k + 1)(A + 1)/(W + 2)⌋ in integers: a mode off by one would put mass above the hat.
  const auto mode = static_cast<std::uint64_t>((static_cast<UnsignedWide>(k + 1) * (A + 1)) / (W + 2));
  const std::uint64_t fill = W - A - k;
  const double end = static_cast<double>(std::min(k, A)) + 1.0;
  while (true) {
    const double u = 1.0 - words.next_uniform();  // (0, 1]
    const double v = words.next_uniform();
    const double x = a + h * (v - 0.5) / u;
    if (!(x >= 0.0 && x < end)) continue;
    const auto K = static_cast<std::uint64_t>(x);
    const double T = log_factorial_difference(mode, K) + log_factorial_difference(A - mode, A - K) +
                     log_factorial_difference(k - mode, k - K) + log_factorial_difference(fill + mode, fill + K);
    if (u * (4.0 - u) - 3.0 <= T) return K;  // 2 ln u <= u(4 − u) − 3
    if (u * (u - T) >= 1.0) continue;        // 2 ln u >= u − 1/u
    if (2.0 * std::log(u) <= T) return K;
  }
}

// ---- the fixed tree over cells ------------------------------------------------------------------------

/// Walks the tree over positions [lo, hi) holding `units`: split(node, units, left weight, node weight)
/// gives the left child's units, leaf(position, units) receives each cell's (non-zero) units. Large
/// subtrees run in parallel; each node's draw depends on its id and units alone.
template <class Split, class Leaf>
void walk_tree(std::span<const std::int64_t> prefix, std::uint64_t node, std::uint64_t lo, std::uint64_t hi,
               std::int64_t units, const Split& split, const Leaf& leaf) {
  if (units == 0) return;
  if (hi - lo == 1) {
    leaf(lo, units);
    return;
  }
  const std::uint64_t mid = lo + (hi - lo + 1) / 2;
  const std::int64_t left_units = split(node, units, prefix[mid] - prefix[lo], prefix[hi] - prefix[lo]);
  const auto left = [&] { walk_tree(prefix, 2 * node, lo, mid, left_units, split, leaf); };
  const auto right = [&] { walk_tree(prefix, 2 * node + 1, mid, hi, units - left_units, split, leaf); };
  if (hi - lo >= kParallelCells) {
    tbb::parallel_invoke(left, right);
  } else {
    left();
    right();
  }
}

/// prefix[i] = w(0) + ... + w(i − 1) for i = 0..size: chunk sums in parallel, then the chunk offsets.
template <class Weight>
std::vector<std::int64_t> prefix_sums(std::size_t size, const Weight& weight) {
  std::vector<std::int64_t> prefix(size + 1, 0);
  const std::size_t chunks = (size + kChunkCells - 1) / kChunkCells;
  std::vector<std::int64_t> offsets(chunks, 0);
  tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t chunk) {
    const std::size_t end = std::min(size, (chunk + 1) * kChunkCells);
    std::int64_t running = 0;
    for (std::size_t i = chunk * kChunkCells; i < end; ++i) {
      running += weight(i);
      prefix[i + 1] = running;
    }
    offsets[chunk] = running;
  });
  std::int64_t offset = 0;
  for (auto& chunk_offset : offsets) offset += std::exchange(chunk_offset, offset);
  tbb::parallel_for(std::size_t{1}, chunks, [&](std::size_t chunk) {
    const std::size_t end = std::min(size, (chunk + 1) * kChunkCells);
    for (std::size_t i = chunk * kChunkCells; i < end; ++i) prefix[i + 1] += offsets[chunk];
  });
  return prefix;
}

/// The table's total; InvalidInput naming the smallest cell id with a negative count, ParameterError
/// for a total of 2^53 or more.
std::int64_t validated_total(std::span<const std::int64_t> counts, const char* method) {
  struct Scan {
    UnsignedWide total = 0;
    std::size_t first_negative = std::numeric_limits<std::size_t>::max();
  };
  const Scan scan = tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, counts.size(), kChunkCells), Scan{},
      [&](const tbb::blocked_range<std::size_t>& range, Scan partial) {
        for (std::size_t i = range.begin(); i < range.end(); ++i) {
          if (counts[i] < 0) {
            partial.first_negative = std::min(partial.first_negative, i);
          } else {
            partial.total += static_cast<std::uint64_t>(counts[i]);
          }
        }
        return partial;
      },
      [](Scan x, const Scan& y) {
        x.total += y.total;
        x.first_negative = std::min(x.first_negative, y.first_negative);
        return x;
      });
  if (scan.first_negative != std::numeric_limits<std::size_t>::max()) {
    throw InvalidInput(std::string(method) + ": cell " + std::to_string(scan.first_negative) + " has a negative count");
  }
  if (scan.total >= static_cast<UnsignedWide>(kMaxTotal)) {
    throw ParameterError(std::string(method) + ": the table's total reaches 2^53");
  }
  return static_cast<std::int64_t>(scan.total);
}

/// Integer sum of f(i) over [0, size), on the threads of the current arena.
template <class Term>
std::int64_t parallel_count(std::size_t size, const Term& term) {
  return tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, size, kChunkCells), std::int64_t{0},
      [&](const tbb::blocked_range<std::size_t>& range, std::int64_t sum) {
        for (std::size_t i = range.begin(); i < range.end(); ++i) sum += term(i);
        return sum;
      },
      [](std::int64_t x, std::int64_t y) { return x + y; });
}

/// Cells of one slice in row-major order: the whole table, or the cells with code `slice` of the
/// preserved dimension (stride = the product of the dimensions after it).
struct SliceLayout {
  std::size_t size = 0;    ///< cells per slice
  std::size_t stride = 1;  ///< product of the dimensions after the preserved one
  std::size_t codes = 1;   ///< codes of the preserved dimension (1: the whole table)

  std::size_t cell(std::size_t slice, std::size_t position) const {
    return (position / stride) * (codes * stride) + slice * stride + position % stride;
  }
};

SliceLayout slice_layout(std::size_t cells, const CellPerturbationOptions& options) {
  std::vector<std::int64_t> dimensions = options.dimensions;
  if (dimensions.empty()) dimensions.push_back(static_cast<std::int64_t>(cells));
  UnsignedWide product = 1;
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    if (dimensions[d] < 0) {
      throw ParameterError("cell perturbation: dimension " + std::to_string(d) + " has a negative size");
    }
    product *= static_cast<std::uint64_t>(dimensions[d]);
    if (product > cells) break;
  }
  if (product != cells) {
    throw ParameterError("cell perturbation: the dimensions' product differs from the number of cells (" +
                         std::to_string(cells) + ")");
  }
  SliceLayout layout;
  layout.size = cells;
  if (!options.preserved_dimension) return layout;
  const std::size_t kept = *options.preserved_dimension;
  if (kept >= dimensions.size()) {
    throw ParameterError("cell perturbation: the preserved dimension " + std::to_string(kept) +
                         " is outside the table's " + std::to_string(dimensions.size()) + " dimensions");
  }
  layout.codes = static_cast<std::size_t>(dimensions[kept]);
  for (std::size_t d = kept + 1; d < dimensions.size(); ++d) layout.stride *= static_cast<std::size_t>(dimensions[d]);
  layout.size = layout.codes == 0 ? 0 : cells / layout.codes;
  return layout;
}

/// The compensation split of slice `slice`: node `node` gives Hypergeometric(units; left, node weight)
/// of its units to its left child.
struct CompensationSplit {
  const RecordRng& rng;
  std::uint64_t slice = 0;

  std::int64_t operator()(std::uint64_t node, std::int64_t units, std::int64_t left, std::int64_t whole) const {
    return hypergeometric_draw(rng, {node, kCompensationDraw, kSliceTag | slice, 0}, units, left, whole);
  }
};

/// The counts of one slice after the perturbation stage, and what it took.
struct SliceStage {
  std::int64_t total = 0;      ///< n_s
  std::int64_t perturbed = 0;  ///< n'_s
  std::int64_t cells = 0;
  std::int64_t draws = 0;
};

double poisson_pmf(std::int64_t value, double mean) {
  return std::exp(static_cast<double>(value) * std::log(mean) - mean -
                  log_factorial(static_cast<std::uint64_t>(value)));
}

}  // namespace

// ---- quality condition --------------------------------------------------------------------------------

QualityInterval quality_interval(std::int64_t count, std::int64_t total, double s) {
  return averaged_quality_interval(count, total, s, 1);
}

QualityInterval averaged_quality_interval(std::int64_t count, std::int64_t total, double s, std::int64_t tables) {
  check_s(s, "quality condition");
  check_tables(tables, "quality condition");
  if (count < 0 || count > total) throw ParameterError("quality condition: the count must lie in [0, total]");
  if (total >= kMaxTotal) throw ParameterError("quality condition: the total reaches 2^53");
  if (total > 0 && tables > (kMaxSum - 1) / total) throw ParameterError("quality condition: M·n reaches 2^62");
  return sum_interval(count, total, s, tables);
}

// ---- Heer's bootstrap ---------------------------------------------------------------------------------

BootstrapTree::BootstrapTree(std::span<const std::int64_t> counts) {
  validated_total(counts, "heer bootstrap");
  prefix_ = prefix_sums(counts.size(), [&](std::size_t i) { return counts[i]; });
}

void BootstrapTree::add_table(std::uint64_t seed, std::uint64_t replicate, std::uint64_t attempt,
                              std::span<std::int64_t> sums) const {
  SDC_CHECK(sums.size() == cells(), "one sum per cell");
  if (cells() == 0) return;
  const RecordRng rng(seed, StepId::kTableBootstrap);
  const auto split = [&](std::uint64_t node, std::int64_t units, std::int64_t left, std::int64_t whole) {
    const double p = static_cast<double>(left) / static_cast<double>(whole);
    return static_cast<std::int64_t>(
        binomial_draw(rng, {node, 0, replicate, attempt}, static_cast<std::uint64_t>(units), p));
  };
  walk_tree(prefix_, 1, 0, cells(), total(), split,
            [&](std::uint64_t position, std::int64_t units) { sums[position] += units; });
}

std::int64_t BootstrapTree::cell_count(std::uint64_t seed, std::uint64_t replicate, std::uint64_t attempt,
                                       std::size_t cell) const {
  SDC_CHECK(cell < cells(), "cell inside the table");
  const RecordRng rng(seed, StepId::kTableBootstrap);
  std::uint64_t node = 1;
  std::uint64_t lo = 0;
  std::uint64_t hi = cells();
  std::int64_t units = total();
  while (hi - lo > 1 && units > 0) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    const double p = static_cast<double>(prefix_[mid] - prefix_[lo]) / static_cast<double>(prefix_[hi] - prefix_[lo]);
    const auto left = static_cast<std::int64_t>(
        binomial_draw(rng, {node, 0, replicate, attempt}, static_cast<std::uint64_t>(units), p));
    if (cell < mid) {
      node = 2 * node;
      hi = mid;
      units = left;
    } else {
      node = 2 * node + 1;
      lo = mid;
      units -= left;
    }
  }
  return units;
}

HeerBootstrapResult heer_bootstrap(std::span<const std::int64_t> counts, const HeerBootstrapOptions& options) {
  check_s(options.s, "heer bootstrap");
  check_tables(options.tables, "heer bootstrap");
  if (options.max_attempts < 1) throw ParameterError("heer bootstrap: max_attempts must be at least 1");
  const BootstrapTree tree(counts);
  const std::int64_t n = tree.total();
  const std::int64_t M = options.tables;
  if (n > 0 && M > (kMaxSum - 1) / n) throw ParameterError("heer bootstrap: M·n reaches 2^62");

  HeerBootstrapResult result;
  result.s = options.s;
  result.tables = M;
  result.original_total = n;
  std::vector<std::int64_t> sums(counts.size());
  for (std::int64_t attempt = 0; attempt < options.max_attempts; ++attempt) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, sums.size(), kChunkCells), [&](const auto& range) {
      std::fill(sums.begin() + static_cast<std::ptrdiff_t>(range.begin()),
                sums.begin() + static_cast<std::ptrdiff_t>(range.end()), 0);
    });
    for (std::int64_t m = 0; m < M; ++m) {
      tree.add_table(options.seed, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(attempt), sums);
    }
    const std::int64_t violations = parallel_count(sums.size(), [&](std::size_t i) -> std::int64_t {
      if (counts[i] == 0) return 0;
      const QualityInterval bounds = sum_interval(counts[i], n, options.s, M);
      return sums[i] < bounds.lower || sums[i] > bounds.upper ? 1 : 0;
    });
    if (violations != 0) continue;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, sums.size(), kChunkCells), [&](const auto& range) {
      for (std::size_t i = range.begin(); i < range.end(); ++i) sums[i] = (2 * sums[i] + M) / (2 * M);
    });
    result.attempts = attempt + 1;
    result.acceptance_rate = 1.0 / static_cast<double>(result.attempts);
    result.released_total = parallel_count(sums.size(), [&](std::size_t i) { return sums[i]; });
    result.released = std::move(sums);
    return result;
  }
  throw ParameterError("no table met the quality condition in " + std::to_string(options.max_attempts) +
                       " attempts; raise S or M");
}

// ---- cell perturbation with compensation --------------------------------------------------------------

CellPerturbationResult perturb_cells(std::span<const std::int64_t> counts, const CellPerturbationOptions& options) {
  check_s(options.s, "cell perturbation");
  if (options.max_redraws < 1) throw ParameterError("cell perturbation: max_redraws must be at least 1");
  const std::int64_t n = validated_total(counts, "cell perturbation");
  const SliceLayout layout = slice_layout(counts.size(), options);
  const RecordRng rng(options.seed, StepId::kTableCellPerturbation);
  const double s = options.s;

  CellPerturbationResult result;
  result.s = s;
  result.original_total = n;
  result.released.assign(counts.size(), 0);
  auto& released = result.released;
  std::vector<SliceStage> stages(layout.size == 0 ? 0 : layout.codes);
  std::atomic<std::size_t> first_failure{std::numeric_limits<std::size_t>::max()};

  tbb::parallel_for(std::size_t{0}, stages.size(), [&](std::size_t slice) {
    SliceStage& stage = stages[slice];
    stage.total = parallel_count(layout.size, [&](std::size_t i) { return counts[layout.cell(slice, i)]; });
    const std::int64_t slice_total = stage.total;
    struct Tally {
      std::int64_t perturbed = 0;
      std::int64_t cells = 0;
      std::int64_t draws = 0;
    };
    const Tally tally = tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, layout.size, kChunkCells), Tally{},
        [&](const tbb::blocked_range<std::size_t>& range, Tally partial) {
          for (std::size_t i = range.begin(); i < range.end(); ++i) {
            const std::size_t cell = layout.cell(slice, i);
            const std::int64_t x = counts[cell];
            if (x == 0) continue;
            const QualityInterval bounds = sum_interval(x, slice_total, s, 1);
            const double p = static_cast<double>(x) / static_cast<double>(slice_total);
            std::int64_t value = -1;
            for (std::int64_t redraw = 0; redraw < options.max_redraws; ++redraw) {
              ++partial.draws;
              const auto draw = static_cast<std::int64_t>(binomial_draw(
                  rng, {cell, 0, 0, static_cast<std::uint64_t>(redraw)}, static_cast<std::uint64_t>(slice_total), p));
              if (draw >= bounds.lower && draw <= bounds.upper) {
                value = draw;
                break;
              }
            }
            if (value < 0) {
              std::size_t seen = first_failure.load();
              while (cell < seen && !first_failure.compare_exchange_weak(seen, cell)) {
              }
              value = x;  // the run fails; keep the slice's arithmetic within its bounds meanwhile
            }
            released[cell] = value;
            partial.perturbed += value;
            ++partial.cells;
          }
          return partial;
        },
        [](Tally x, const Tally& y) {
          x.perturbed += y.perturbed;
          x.cells += y.cells;
          x.draws += y.draws;
          return x;
        });
    stage.perturbed = tally.perturbed;
    stage.cells = tally.cells;
    stage.draws = tally.draws;
    if (stage.perturbed == stage.total) return;

    // Compensation: |n' − n| counter units drawn without replacement, i.e. the sequential picks with
    // probability proportional to the counters, as one multivariate hypergeometric split.
    const bool remove = stage.perturbed > stage.total;
    const std::int64_t units = remove ? stage.perturbed - stage.total : stage.total - stage.perturbed;
    const auto prefix = prefix_sums(layout.size, [&](std::size_t i) -> std::int64_t {
      const std::size_t cell = layout.cell(slice, i);
      if (counts[cell] == 0) return 0;
      const QualityInterval bounds = sum_interval(counts[cell], slice_total, s, 1);
      return remove ? released[cell] - bounds.lower : bounds.upper - released[cell];
    });
    SDC_CHECK(prefix.back() >= units, "compensation is feasible: sum of lower <= n <= sum of upper");
    walk_tree(prefix, 1, 0, layout.size, units, CompensationSplit{rng, slice},
              [&](std::uint64_t position, std::int64_t taken) {
                released[layout.cell(slice, position)] += remove ? -taken : taken;
              });
  });

  if (first_failure.load() != std::numeric_limits<std::size_t>::max()) {
    throw ParameterError("cell perturbation: cell " + std::to_string(first_failure.load()) + " met no value in " +
                         std::to_string(options.max_redraws) + " draws of the quality condition; raise S");
  }
  for (const SliceStage& stage : stages) {
    result.perturbed_total += stage.perturbed;
    result.perturbed_cells += stage.cells;
    result.draws += stage.draws;
    if (stage.perturbed > stage.total) result.units_removed += stage.perturbed - stage.total;
    if (stage.perturbed < stage.total) result.units_added += stage.total - stage.perturbed;
  }
  if (result.draws > 0) {
    result.acceptance_rate = static_cast<double>(result.perturbed_cells) / static_cast<double>(result.draws);
  }
  return result;
}

// ---- samplers -----------------------------------------------------------------------------------------

std::int64_t hypergeometric_draw(const RecordRng& rng, const DrawCounter& base, std::int64_t draws,
                                 std::int64_t successes, std::int64_t population) {
  if (draws < 0 || successes < 0 || draws > population || successes > population || population >= kMaxTotal) {
    throw ParameterError("hypergeometric draw: draws and successes must lie in [0, population], population < 2^53");
  }
  if (draws == 0 || successes == 0) return 0;
  if (successes == population) return draws;
  if (draws == population) return successes;
  const auto W = static_cast<std::uint64_t>(population);
  // Symmetries: the draws' complement, and successes <-> failures, leave k, A <= W/2 (so k + A <= W).
  const auto original_draws = static_cast<std::uint64_t>(draws);
  const auto original_successes = static_cast<std::uint64_t>(successes);
  const std::uint64_t k = std::min(original_draws, W - original_draws);
  const std::uint64_t A = std::min(original_successes, W - original_successes);
  CounterWords words(rng, base, &DrawCounter::attempt);
  std::uint64_t y = std::min(k, A) < kInversionSupport ? hypergeometric_inversion(words, k, A, W)
                                                       : hypergeometric_hrua(words, k, A, W);
  if (A != original_successes) y = k - y;
  if (k != original_draws) y = original_successes - y;
  return static_cast<std::int64_t>(y);
}

std::vector<std::int64_t> multivariate_hypergeometric_split(std::uint64_t seed, std::uint64_t slice,
                                                            std::span<const std::int64_t> weights, std::int64_t units) {
  for (const std::int64_t weight : weights) {
    if (weight < 0) throw ParameterError("multivariate hypergeometric split: a negative weight");
  }
  const auto prefix = prefix_sums(weights.size(), [&](std::size_t i) { return weights[i]; });
  if (prefix.back() >= kMaxTotal) throw ParameterError("multivariate hypergeometric split: weights reach 2^53");
  if (units < 0 || units > prefix.back()) {
    throw ParameterError("multivariate hypergeometric split: units must lie in [0, sum of weights]");
  }
  std::vector<std::int64_t> out(weights.size(), 0);
  if (weights.empty()) return out;
  const RecordRng rng(seed, StepId::kTableCellPerturbation);
  walk_tree(prefix, 1, 0, weights.size(), units, CompensationSplit{rng, slice},
            [&](std::uint64_t position, std::int64_t taken) { out[position] = taken; });
  return out;
}

// ---- Table 1 ------------------------------------------------------------------------------------------

std::array<double, 3> heer_exact_disclosure(double s, std::int64_t tables, std::int64_t max_count) {
  check_s(s, "exact disclosure");
  check_tables(tables, "exact disclosure");
  if (max_count < 1) throw ParameterError("exact disclosure: the prior needs at least the count 1");
  if (tables > (kMaxSum - 1) / max_count)
    throw ParameterError("exact disclosure: M times the prior's maximum is too large");
  std::array<double, 3> numerator{};
  std::array<ExactSum, 3> denominator;
  const auto M = static_cast<std::uint64_t>(tables);
  for (std::int64_t x = 1; x <= max_count; ++x) {
    const std::int64_t center = tables * x;
    const auto deviation = static_cast<std::int64_t>(largest_deviation({static_cast<std::uint64_t>(x), 1, 1}, s, M));
    const double mean = static_cast<double>(center);
    ExactSum accepted;
    std::array<ExactSum, 3> release;
    for (std::int64_t sum = std::max<std::int64_t>(0, center - deviation); sum <= center + deviation; ++sum) {
      const double probability = poisson_pmf(sum, mean);
      accepted.add(probability);
      const std::int64_t value = (2 * sum + tables) / (2 * tables);
      if (value >= 1 && value <= 3) release[static_cast<std::size_t>(value - 1)].add(probability);
    }
    for (std::size_t k = 0; k < 3; ++k) {
      const double conditional = release[k].value() / accepted.value();
      denominator[k].add(conditional);
      if (x == static_cast<std::int64_t>(k) + 1) numerator[k] = conditional;
    }
  }
  std::array<double, 3> posterior{};
  for (std::size_t k = 0; k < 3; ++k) posterior[k] = numerator[k] / denominator[k].value();
  return posterior;
}

std::array<std::array<double, 9>, 3> heer_table1_analytic() {
  std::array<std::array<double, 9>, 3> table{};
  for (std::size_t m = 0; m < kTable1Tables.size(); ++m) {
    for (std::size_t j = 0; j < kTable1S.size(); ++j) {
      const auto column = heer_exact_disclosure(kTable1S[j], kTable1Tables[m]);
      for (std::size_t k = 0; k < 3; ++k) table[k][3 * m + j] = column[k];
    }
  }
  return table;
}

ExactDisclosureSimulation simulate_exact_disclosure(DisclosureMethod method, double s, std::int64_t tables,
                                                    std::int64_t draws, std::uint64_t seed) {
  check_s(s, "exact disclosure simulation");
  check_tables(tables, "exact disclosure simulation");
  if (method == DisclosureMethod::kCell && tables != 1) {
    throw ParameterError("exact disclosure simulation: the cell method does not average tables (M must be 1)");
  }
  if (draws < 1) throw ParameterError("exact disclosure simulation: draws must be at least 1");
  if (tables > (kMaxSum - 1) / kDisclosurePriorMax) {
    throw ParameterError("exact disclosure simulation: M is too large");
  }
  const RecordRng rng(
      seed, method == DisclosureMethod::kBootstrap ? StepId::kTableBootstrap : StepId::kTableCellPerturbation);
  const auto M = static_cast<std::uint64_t>(tables);
  std::array<std::int64_t, kDisclosurePriorMax + 1> lower{};
  std::array<std::int64_t, kDisclosurePriorMax + 1> upper{};
  for (std::int64_t x = 1; x <= kDisclosurePriorMax; ++x) {
    const auto deviation = static_cast<std::int64_t>(largest_deviation({static_cast<std::uint64_t>(x), 1, 1}, s, M));
    lower[static_cast<std::size_t>(x)] = std::max<std::int64_t>(0, tables * x - deviation);
    upper[static_cast<std::size_t>(x)] = tables * x + deviation;
  }

  struct Tally {
    std::array<std::int64_t, 3> released{};
    std::array<std::int64_t, 3> exact{};
    std::int64_t attempts = 0;
    std::int64_t first_failure = std::numeric_limits<std::int64_t>::max();
  };
  const Tally tally = tbb::parallel_reduce(
      tbb::blocked_range<std::int64_t>(0, draws, kTrialsPerChunk), Tally{},
      [&](const tbb::blocked_range<std::int64_t>& range, Tally partial) {
        for (std::int64_t trial = range.begin(); trial < range.end(); ++trial) {
          const auto unit = static_cast<std::uint64_t>(trial);
          const auto x =
              1 + static_cast<std::int64_t>(index_from_bits(rng.bits({unit, kPriorDraw, 0, 0})[0],
                                                            static_cast<std::uint64_t>(kDisclosurePriorMax)));
          const auto mean = static_cast<double>(x);
          std::int64_t sum = -1;
          for (std::int64_t attempt = 0; attempt < kDefaultMaxAttempts; ++attempt) {
            ++partial.attempts;
            std::int64_t candidate = 0;
            for (std::uint64_t m = 0; m < M; ++m) {
              candidate += poisson_draw(rng, {unit, kGenerationTag | static_cast<std::uint64_t>(attempt), m, 0}, mean);
            }
            if (candidate >= lower[static_cast<std::size_t>(x)] && candidate <= upper[static_cast<std::size_t>(x)]) {
              sum = candidate;
              break;
            }
          }
          if (sum < 0) {
            partial.first_failure = std::min(partial.first_failure, trial);
            continue;
          }
          const std::int64_t value = (2 * sum + tables) / (2 * tables);
          if (value < 1 || value > 3) continue;
          const auto k = static_cast<std::size_t>(value - 1);
          ++partial.released[k];
          if (x == value) ++partial.exact[k];
        }
        return partial;
      },
      [](Tally a, const Tally& b) {
        for (std::size_t k = 0; k < 3; ++k) {
          a.released[k] += b.released[k];
          a.exact[k] += b.exact[k];
        }
        a.attempts += b.attempts;
        a.first_failure = std::min(a.first_failure, b.first_failure);
        return a;
      });
  if (tally.first_failure != std::numeric_limits<std::int64_t>::max()) {
    throw ParameterError("exact disclosure simulation: trial " + std::to_string(tally.first_failure) +
                         " met no value in " + std::to_string(kDefaultMaxAttempts) + " generations; raise S");
  }
  ExactDisclosureSimulation result;
  result.released = tally.released;
  result.exact = tally.exact;
  result.trials = draws;
  result.attempts = tally.attempts;
  result.acceptance_rate = static_cast<double>(draws) / static_cast<double>(tally.attempts);
  for (std::size_t k = 0; k < 3; ++k) {
    result.probability[k] = tally.released[k] == 0
                                ? std::numeric_limits<double>::quiet_NaN()
                                : static_cast<double>(tally.exact[k]) / static_cast<double>(tally.released[k]);
  }
  return result;
}

}  // namespace sdc::tables
