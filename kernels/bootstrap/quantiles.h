#pragma once
// Sample quantiles (Hyndman & Fan 1996, types 1-9), bootstrap percentile and basic intervals, the
// order-statistic critical value of Dunsche, Kutta & Dette, and exact quantiles of a distributed vector
// without gathering it (docs/methods/bootstrap.md §4-§7).
//
// Shapes:
//   sample_quantiles, quantile_of_sorted      pure functions of one vector
//   radix_count_local / radix_count_merge     shape (a), mergeable partials: per-rank 16-bit histograms
//                                             of order-preserving keys under a key prefix; merge adds
//   distributed_quantiles                     the driver: four local+merge passes reach the exact order
//                                             statistics; the merge across ranks is a callback, so the
//                                             distributed layer plugs an MPI allreduce in
//
// Conventions shared by every function here:
// * NaN (either sign, any payload) is excluded before anything is computed and reported in nan_count;
//   with no non-NaN value every quantile is NaN.
// * Order: values are ranked by their order-preserving 64-bit key (order_key), a total order that agrees
//   with < on non-NaN doubles and puts -0.0 before +0.0. Ties are equal keys; they are counted, so
//   duplicates need no tie-break. The sorted and the distributed path select the same order statistics
//   and therefore return the same bits.
// * Interpolation, as R's quantile(): with order statistics x_lo, x_hi and weight w on x_hi the result is
//   x_lo when w = 0 or x_lo == x_hi, x_hi when w = 1, else (1 - w)·x_lo + w·x_hi. Infinities pass
//   through; -inf and +inf interpolate to NaN.
// * Arithmetic (QuantileArithmetic): native evaluates np and h exactly, p read as the decimal rational
//   of its shortest round-trip representation (0.07 is 7/100); compat-R follows R 4.2 in doubles.
// * Invalid parameters (p outside [0, 1], alpha outside (0, 1), a type outside 1..9) throw ParameterError.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace sdc {

/// Hyndman & Fan's nine sample quantile definitions; the numbers are theirs (and R's `type`).
enum class QuantileType : std::uint8_t {
  kType1 = 1,  ///< inverse of the empirical distribution function
  kType2 = 2,  ///< averaging at discontinuities (SAS default)
  kType3 = 3,  ///< nearest even order statistic
  kType4 = 4,  ///< linear interpolation of the empirical cdf, (a, b) = (0, 1)
  kType5 = 5,  ///< (1/2, 1/2)
  kType6 = 6,  ///< (0, 0): h = (n + 1)p (SPSS, Minitab)
  kType7 = 7,  ///< (1, 1): h = (n - 1)p + 1 (R and NumPy default; our default)
  kType8 = 8,  ///< (1/3, 1/3): approximately median-unbiased
  kType9 = 9,  ///< (3/8, 3/8): approximately unbiased for normal data
};

/// The type with number 1..9; throws ParameterError naming the allowed values otherwise.
QuantileType quantile_type_from_number(int number);

enum class QuantileArithmetic : std::uint8_t {
  kExact,    ///< native: np and h as exact rationals (p taken as its shortest decimal)
  kCompatR,  ///< R 4.2: plain floor for types 1-3, 4ε fuzz for 4-6, 8, 9, none for 7
};

struct QuantileOptions {
  QuantileType type = QuantileType::kType7;
  QuantileArithmetic arithmetic = QuantileArithmetic::kExact;
};

/// Which order statistics a quantile needs and how it combines them (1-based ranks, clamped to 1..n,
/// so x_(0) = x_(1) and x_(n+1) = x_(n)). Needs n >= 1.
struct QuantilePlan {
  std::uint64_t lo = 1;
  std::uint64_t hi = 1;
  double weight_hi = 0.0;  ///< 0 = x_lo, 1 = x_hi, else (1 - w)·x_lo + w·x_hi
};
QuantilePlan quantile_plan(std::uint64_t n, double p, const QuantileOptions& options);

/// Combine the two order statistics of a plan (the interpolation rule above).
double apply_quantile_plan(const QuantilePlan& plan, double x_lo, double x_hi);

/// The quantile of values already sorted by order_key, without NaN; NaN when empty.
double quantile_of_sorted(std::span<const double> sorted, double p, const QuantileOptions& options = {});

struct SampleQuantiles {
  std::vector<double> values;  ///< one per probability, in the order given
  std::uint64_t count = 0;     ///< non-NaN values used
  std::uint64_t nan_count = 0;
};

/// Quantiles of unsorted values (copied, NaN dropped, sorted by order_key).
SampleQuantiles sample_quantiles(std::span<const double> values, std::span<const double> probabilities,
                                 const QuantileOptions& options = {});

// ---- Bootstrap summaries (bootstrap.md §4, §6) ----

struct BootstrapInterval {
  double lower = 0.0;
  double upper = 0.0;
  std::uint64_t replicates = 0;  ///< non-NaN replicate statistics used
  std::uint64_t nan_replicates = 0;
};

/// Percentile interval [Q(α/2), Q(1 - α/2)] of the replicate statistics (α/2 and 1 - α/2 evaluated in
/// doubles, then read as decimals like any p).
BootstrapInterval percentile_interval(std::span<const double> replicates, double alpha,
                                      const QuantileOptions& options = {});

/// Basic interval [2θ̂ - Q(1 - α/2), 2θ̂ - Q(α/2)].
BootstrapInterval basic_interval(std::span<const double> replicates, double estimate, double alpha,
                                 const QuantileOptions& options = {});

/// Rank of the critical value t*_(⌊(1 - α)B⌋) (1-based), with (1 - α)B evaluated exactly (α as its
/// shortest decimal): B = 200, α = 0.05 -> 190; B = 199 -> 189. Throws ParameterError when the rank is 0
/// (fewer than 1/(1 - α) replicates).
std::uint64_t critical_value_rank(std::uint64_t replicates, double alpha);

struct CriticalValue {
  double value = 0.0;  ///< reject when t > value
  std::uint64_t rank = 0;
  std::uint64_t replicates = 0;  ///< B: non-NaN replicate statistics
  std::uint64_t nan_replicates = 0;
};
/// The order-statistic critical value for a test rejecting for large t (bootstrap.md §6).
CriticalValue bootstrap_critical_value(std::span<const double> replicates, double alpha);

// ---- Exact quantiles of a distributed vector (bootstrap.md §7) ----

/// Order-preserving key: flip the sign bit of non-negatives, all bits of negatives. Not for NaN.
std::uint64_t order_key(double x);
/// Inverse of order_key.
double from_order_key(std::uint64_t key);

inline constexpr int kRadixBits = 16;
inline constexpr std::size_t kRadixBuckets = std::size_t{1} << kRadixBits;

/// Keys whose top `prefix_bits` bits (0, 16, 32 or 48) equal those of `prefix` (its lower bits are 0).
struct RadixQuery {
  std::uint64_t prefix = 0;
  int prefix_bits = 0;
  friend bool operator==(const RadixQuery&, const RadixQuery&) = default;
};

/// Per query, the counts of matching keys by their next 16 bits: counts[q * kRadixBuckets + bucket].
struct RadixCounts {
  std::uint64_t nan_count = 0;  ///< NaN values seen (every pass counts them; the driver reads pass 1)
  std::vector<std::uint64_t> counts;
};

/// Local step: histogram this rank's values for the queries.
RadixCounts radix_count_local(std::span<const double> values, std::span<const RadixQuery> queries);
/// Merge step: add `from` into `into` (same queries). Associative and commutative (integer sums).
void radix_count_merge(RadixCounts& into, const RadixCounts& from);

/// Turns this rank's counts for `queries` into the global counts (same queries on every rank). An MPI
/// implementation sums RadixCounts::counts and nan_count with an allreduce and may ignore `queries`.
using RadixAllreduce = std::function<void(std::span<const RadixQuery> queries, RadixCounts& counts)>;

/// Exact quantiles of the vector whose parts the ranks hold, every rank calling with its part and the
/// same probabilities and options. Four passes of radix_count_local + `allreduce`; the result equals
/// sample_quantiles on the concatenation, bit for bit, for any partition.
SampleQuantiles distributed_quantiles(std::span<const double> local_values, std::span<const double> probabilities,
                                      const QuantileOptions& options, const RadixAllreduce& allreduce);

}  // namespace sdc
