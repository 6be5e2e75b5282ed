#include "kernels/bootstrap/replicates.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc {
namespace {

// round(2^53 · P(X <= k)) for X ~ Poisson(1), k = 0..17; P(X <= 18) rounds to 2^53.
constexpr std::array<std::uint64_t, 18> kPoisson1Thresholds{
    3313563428353948ULL, 6627126856707896ULL, 8283908570884870ULL, 8836169142277194ULL, 8974234285125276ULL,
    9001847313694892ULL, 9006449485123161ULL, 9007106938184342ULL, 9007189119816990ULL, 9007198251109507ULL,
    9007199164238758ULL, 9007199247250508ULL, 9007199254168154ULL, 9007199254700281ULL, 9007199254738290ULL,
    9007199254740824ULL, 9007199254740982ULL, 9007199254740991ULL};

// A leaf throws a draw onto unit floor(word · size / 2^64): the high half of a 64 x 64-bit product.
__extension__ using UnsignedWide = unsigned __int128;

constexpr std::uint64_t kMultinomialDrawTag = std::uint64_t{1} << 63;

// ln k! below kLogFactorialTableSize by summing logs (error a few ulps), Stirling's series above.
constexpr std::uint64_t kLogFactorialTableSize = 20;

const std::array<double, kLogFactorialTableSize>& log_factorial_table() {
  static const auto table = [] {
    std::array<double, kLogFactorialTableSize> values{};
    double sum = 0.0;
    for (std::size_t k = 1; k < values.size(); ++k) {
      sum += std::log(static_cast<double>(k));
      values[k] = sum;
    }
    return values;
  }();
  return table;
}

double log_factorial(double k) {
  if (k < static_cast<double>(kLogFactorialTableSize)) return log_factorial_table()[static_cast<std::size_t>(k)];
  constexpr double kHalfLogTwoPi = 0.91893853320467274178032973640562;
  const double inverse = 1.0 / k;
  const double inverse2 = inverse * inverse;
  const double series =
      inverse * (1.0 / 12.0 - inverse2 * (1.0 / 360.0 - inverse2 * (1.0 / 1260.0 - inverse2 / 1680.0)));
  return (k + 0.5) * std::log(k) - k + kHalfLogTwoPi + series;
}

/// (base)^exponent by repeated squaring: IEEE multiplications only.
double integer_power(double base, std::uint64_t exponent) {
  double result = 1.0;
  while (exponent != 0) {
    if ((exponent & 1U) != 0) result *= base;
    exponent >>= 1U;
    if (exponent != 0) base *= base;
  }
  return result;
}

// Inversion by sequential search; p <= 1/2 and n·p < 10, so (1 - p)^n >= e^-20 and the search is short.
std::uint64_t binomial_inversion(CounterWords& stream, std::uint64_t n, double p) {
  const double q = 1.0 - p;
  const double ratio = p / q;
  double probability = integer_power(q, n);
  double u = stream.next_uniform();
  std::uint64_t k = 0;
  while (u >= probability && k < n) {
    u -= probability;
    probability *= ratio * static_cast<double>(n - k) / static_cast<double>(k + 1);
    ++k;
    // Rounding can leave u above the remaining mass; the tail beyond an underflow has no mass.
    if (probability == 0.0) break;
  }
  return k;
}

// Hörmann (1993), algorithm BTRS; p <= 1/2 and n·p >= 10.
std::uint64_t binomial_btrs(CounterWords& stream, std::uint64_t trials, double p) {
  const double n = static_cast<double>(trials);
  const double q = 1.0 - p;
  const double spq = std::sqrt(n * p * q);
  const double b = 1.15 + 2.53 * spq;
  const double a = -0.0873 + 0.0248 * b + 0.01 * p;
  const double c = n * p + 0.5;
  const double v_r = 0.92 - 4.2 / b;
  const double alpha = (2.83 + 5.1 / b) * spq;
  const double log_odds = std::log(p / q);
  const double mode = std::floor((n + 1.0) * p);
  const double log_h = log_factorial(mode) + log_factorial(n - mode);
  while (true) {
    const double u = stream.next_uniform() - 0.5;
    double v = stream.next_uniform();
    const double us = 0.5 - std::fabs(u);
    if (us <= 0.0) continue;
    const double k = std::floor((2.0 * a / us + b) * u + c);
    if (k < 0.0 || k > n) continue;
    if (us >= 0.07 && v <= v_r) return static_cast<std::uint64_t>(k);
    v = std::log(v * alpha / (a / (us * us) + b));
    if (v <= log_h - log_factorial(k) - log_factorial(n - k) + (k - mode) * log_odds) {
      return static_cast<std::uint64_t>(k);
    }
  }
}

std::uint64_t binomial_from_stream(CounterWords& stream, std::uint64_t trials, double p) {
  if (trials == 0 || !(p > 0.0)) return 0;
  if (p >= 1.0) return trials;
  const bool complement = p > 0.5;
  const double small_p = complement ? 1.0 - p : p;
  const std::uint64_t k = static_cast<double>(trials) * small_p < 10.0 ? binomial_inversion(stream, trials, small_p)
                                                                       : binomial_btrs(stream, trials, small_p);
  return complement ? trials - k : k;
}

/// The multinomial tree of one stratum for one replicate.
struct StratumTree {
  const RecordRng& rng;
  std::uint64_t replicate = 0;
  std::uint64_t stratum = 0;
  std::uint64_t first_unit = 0;  ///< s_h
  std::uint64_t unit_count = 0;  ///< N_h

  std::uint64_t leaf_start(std::uint64_t leaf) const { return std::min(leaf * kMultinomialLeafUnits, unit_count); }

  CounterWords stream(std::uint64_t node) const {
    return CounterWords(rng, DrawCounter{node, kMultinomialDrawTag | (stratum << 32U), replicate, 0});
  }

  /// Writes the multiplicities of `units` (ascending, distinct, all inside the node) to `out`.
  void visit(std::uint64_t node, std::uint64_t leaf_lo, std::uint64_t leaf_hi, std::uint64_t draws,
             std::span<const std::uint64_t> units, std::span<std::uint32_t> out) const {
    if (units.empty()) return;
    if (draws == 0) {
      std::fill(out.begin(), out.end(), 0U);
      return;
    }
    if (leaf_hi - leaf_lo == 1) {
      visit_leaf(node, leaf_lo, draws, units, out);
      return;
    }
    const std::uint64_t leaf_mid = leaf_lo + (leaf_hi - leaf_lo + 1) / 2;
    const std::uint64_t node_units = leaf_start(leaf_hi) - leaf_start(leaf_lo);
    const std::uint64_t left_units = leaf_start(leaf_mid) - leaf_start(leaf_lo);
    CounterWords words = stream(node);
    const std::uint64_t left_draws =
        binomial_from_stream(words, draws, static_cast<double>(left_units) / static_cast<double>(node_units));
    const std::uint64_t boundary = first_unit + leaf_start(leaf_mid);
    const auto split = static_cast<std::size_t>(std::lower_bound(units.begin(), units.end(), boundary) - units.begin());
    visit(2 * node, leaf_lo, leaf_mid, left_draws, units.first(split), out.first(split));
    visit(2 * node + 1, leaf_mid, leaf_hi, draws - left_draws, units.subspan(split), out.subspan(split));
  }

  void visit_leaf(std::uint64_t node, std::uint64_t leaf, std::uint64_t draws, std::span<const std::uint64_t> units,
                  std::span<std::uint32_t> out) const {
    const std::uint64_t start = leaf_start(leaf);
    const std::uint64_t size = leaf_start(leaf + 1) - start;
    std::array<std::uint32_t, kMultinomialLeafUnits> counts{};
    CounterWords words = stream(node);
    for (std::uint64_t d = 0; d < draws; ++d) {
      const auto product = static_cast<UnsignedWide>(words.next_word()) * size;
      ++counts[static_cast<std::size_t>(product >> 64U)];
    }
    for (std::size_t i = 0; i < units.size(); ++i) out[i] = counts[units[i] - first_unit - start];
  }
};

/// Multiplicities of one replicate for ascending, distinct units.
void multinomial_replicate(const ReplicateDesign& design, const RecordRng& rng, std::uint64_t replicate,
                           std::span<const std::uint64_t> units, std::span<std::uint32_t> out) {
  const auto& offsets = design.stratum_offsets;
  std::size_t i = 0;
  while (i < units.size()) {
    const auto upper = std::upper_bound(offsets.begin(), offsets.end(), units[i]);
    if (upper == offsets.begin() || upper == offsets.end()) {
      throw InvalidInput("bootstrap: a unit id lies outside the strata of the multinomial design (stratum_offsets)");
    }
    const auto stratum = static_cast<std::size_t>(upper - offsets.begin()) - 1;
    const std::uint64_t end_unit = offsets[stratum + 1];
    const auto j = static_cast<std::size_t>(
        std::lower_bound(units.begin() + static_cast<std::ptrdiff_t>(i), units.end(), end_unit) - units.begin());
    const StratumTree tree{rng, replicate, stratum, offsets[stratum], end_unit - offsets[stratum]};
    const std::uint64_t draws = design.stratum_draws.empty() ? tree.unit_count : design.stratum_draws[stratum];
    const std::uint64_t leaves = (tree.unit_count + kMultinomialLeafUnits - 1) / kMultinomialLeafUnits;
    tree.visit(1, 0, leaves, draws, units.subspan(i, j - i), out.subspan(i, j - i));
    i = j;
  }
}

}  // namespace

std::uint32_t poisson1_from_bits(std::uint64_t bits) {
  const std::uint64_t x = bits >> 11U;
  std::uint32_t k = 0;
  while (k < kPoisson1Thresholds.size() && x >= kPoisson1Thresholds[k]) ++k;
  return k;
}

std::uint64_t binomial_draw(const RecordRng& rng, const DrawCounter& base, std::uint64_t trials, double p) {
  CounterWords stream(rng, base);
  return binomial_from_stream(stream, trials, p);
}

void validate_replicate_design(const ReplicateDesign& design) {
  if (design.scheme != ReplicateScheme::kMultinomial) return;
  const auto& offsets = design.stratum_offsets;
  if (offsets.size() < 2) throw ParameterError("bootstrap: stratum_offsets needs at least two entries (one stratum)");
  if (offsets.size() - 1 >= (std::size_t{1} << 31U)) throw ParameterError("bootstrap: more than 2^31 - 1 strata");
  for (std::size_t h = 0; h + 1 < offsets.size(); ++h) {
    if (offsets[h + 1] < offsets[h]) {
      throw ParameterError("bootstrap: stratum_offsets decrease at stratum " + std::to_string(h));
    }
  }
  if (!design.stratum_draws.empty() && design.stratum_draws.size() != offsets.size() - 1) {
    throw ParameterError("bootstrap: stratum_draws needs one entry per stratum (" + std::to_string(offsets.size() - 1) +
                         "), got " + std::to_string(design.stratum_draws.size()));
  }
  for (std::size_t h = 0; h + 1 < offsets.size(); ++h) {
    const std::uint64_t size = offsets[h + 1] - offsets[h];
    const std::uint64_t draws = design.stratum_draws.empty() ? size : design.stratum_draws[h];
    if (draws > 0 && size == 0) {
      throw ParameterError("bootstrap: stratum " + std::to_string(h) +
                           " has no units but stratum_draws asks for draws");
    }
    if (draws > std::numeric_limits<std::uint32_t>::max()) {
      throw ParameterError("bootstrap: stratum_draws of stratum " + std::to_string(h) + " exceeds 2^32 - 1");
    }
  }
}

void fill_multiplicities(const ReplicateDesign& design, std::uint64_t first_replicate, std::uint64_t end_replicate,
                         std::span<const std::uint64_t> units, std::span<std::uint32_t> out) {
  validate_replicate_design(design);
  SDC_CHECK(end_replicate >= first_replicate, "replicate range");
  const std::uint64_t replicates = end_replicate - first_replicate;
  SDC_CHECK(out.size() == replicates * units.size(), "one multiplicity per replicate and unit");
  if (units.empty() || replicates == 0) return;
  const RecordRng rng(design.seed, design.step);

  if (design.scheme == ReplicateScheme::kPoisson) {
    // One Philox block gives the four replicates 4q .. 4q + 3 of a unit (word b mod 4 of counter
    // (u, 0, q, 0)): a quarter of the generator calls of one block per draw, the same draws for any
    // replicate range.
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, units.size(), 4096), [&](const auto& range) {
      for (std::size_t i = range.begin(); i < range.end(); ++i) {
        std::uint64_t quad = ~std::uint64_t{0};
        RecordRng::Block words{};
        for (std::uint64_t r = 0; r < replicates; ++r) {
          const std::uint64_t b = first_replicate + r;
          if ((b >> 2) != quad) {
            quad = b >> 2;
            words = rng.bits({units[i], 0, quad, 0});
          }
          out[r * units.size() + i] = poisson1_from_bits(words[b & 3]);
        }
      }
    });
    return;
  }

  // Multinomial: the tree walk needs ascending, distinct units.
  const bool strictly_ascending = std::adjacent_find(units.begin(), units.end(), std::greater_equal<>()) == units.end();
  std::vector<std::uint64_t> distinct;
  std::vector<std::uint32_t> distinct_index;
  if (!strictly_ascending) {
    distinct.assign(units.begin(), units.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    distinct_index.resize(units.size());
    for (std::size_t i = 0; i < units.size(); ++i) {
      distinct_index[i] =
          static_cast<std::uint32_t>(std::lower_bound(distinct.begin(), distinct.end(), units[i]) - distinct.begin());
    }
  }
  const std::span<const std::uint64_t> walk_units =
      strictly_ascending ? units : std::span<const std::uint64_t>(distinct);
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, replicates, 1), [&](const auto& range) {
    std::vector<std::uint32_t> scratch(strictly_ascending ? 0 : walk_units.size());
    for (std::uint64_t r = range.begin(); r < range.end(); ++r) {
      const std::span<std::uint32_t> row = out.subspan(r * units.size(), units.size());
      if (strictly_ascending) {
        multinomial_replicate(design, rng, first_replicate + r, walk_units, row);
      } else {
        multinomial_replicate(design, rng, first_replicate + r, walk_units, scratch);
        for (std::size_t i = 0; i < units.size(); ++i) row[i] = scratch[distinct_index[i]];
      }
    }
  });
}

ReplicateSummary summarize_replicates(std::span<const double> replicates, double estimate, double alpha,
                                      const QuantileOptions& options) {
  ReplicateSummary summary;
  summary.estimate = estimate;
  summary.alpha = alpha;
  summary.quantile_type = options.type;
  summary.percentile = percentile_interval(replicates, alpha, options);
  summary.basic = basic_interval(replicates, estimate, alpha, options);
  summary.replicates = summary.percentile.replicates;
  summary.nan_replicates = summary.percentile.nan_replicates;
  if (static_cast<double>(summary.replicates) * (1.0 - alpha) >= 1.0) {
    summary.critical = bootstrap_critical_value(replicates, alpha);
  } else {
    summary.critical.value = std::numeric_limits<double>::quiet_NaN();
    summary.critical.replicates = summary.replicates;
  }

  ExactSum sum;
  for (double x : replicates) {
    if (!std::isnan(x)) sum.add(x);
  }
  const double count = static_cast<double>(summary.replicates);
  summary.mean = summary.replicates == 0 ? std::numeric_limits<double>::quiet_NaN() : sum.value() / count;
  ExactSum squares;
  for (double x : replicates) {
    if (std::isnan(x)) continue;
    const double deviation = x - summary.mean;
    squares.add(deviation * deviation);
  }
  summary.standard_error =
      summary.replicates < 2 ? std::numeric_limits<double>::quiet_NaN() : std::sqrt(squares.value() / (count - 1.0));
  summary.bias = summary.mean - estimate;
  return summary;
}

}  // namespace sdc
