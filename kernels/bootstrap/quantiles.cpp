#include "kernels/bootstrap/quantiles.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "kernels/core/error.h"

namespace sdc {
namespace {

__extension__ using U128 = unsigned __int128;

constexpr double kFuzz = 4.0 * 2.220446049250313e-16;  // R's 4 * .Machine$double.eps

void check_probability(double p) {
  if (!(p >= 0.0 && p <= 1.0))
    throw ParameterError("quantile probability must lie in [0, 1], got " + std::to_string(p));
}

void check_alpha(double alpha) {
  if (!(alpha > 0.0 && alpha < 1.0)) throw ParameterError("alpha must lie in (0, 1), got " + std::to_string(alpha));
}

/// p = num / den exactly, from the shortest decimal that reads back as p. nullopt-like flag when the
/// denominator would not fit the exact path (p below about 1e-20).
struct Rational {
  U128 num = 0;
  U128 den = 1;
  bool ok = false;
};

Rational decimal_rational(double p) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, p, std::chars_format::scientific);
  const std::string text(buffer, result.ptr);
  const std::size_t e = text.find('e');
  U128 mantissa = 0;
  int fraction_digits = 0;
  bool after_point = false;
  for (std::size_t i = 0; i < e; ++i) {
    if (text[i] == '.') {
      after_point = true;
      continue;
    }
    mantissa = mantissa * 10 + static_cast<unsigned>(text[i] - '0');
    if (after_point) ++fraction_digits;
  }
  const int exponent = std::stoi(text.substr(e + 1));
  int scale = fraction_digits - exponent;  // p = mantissa / 10^scale
  Rational r;
  while (scale < 0) {  // only p = 1 (and 0) get here
    mantissa *= 10;
    ++scale;
  }
  if (scale > 36) return r;
  r.num = mantissa;
  for (int i = 0; i < scale; ++i) r.den *= 10;
  r.ok = true;
  return r;
}

bool mul(U128 a, U128 b, U128& out) { return !__builtin_mul_overflow(a, b, &out); }
bool add(U128 a, U128 b, U128& out) { return !__builtin_add_overflow(a, b, &out); }

std::uint64_t clamp_rank(long double j, std::uint64_t n) {
  if (j < 1.0L) return 1;
  if (j >= static_cast<long double>(n)) return n;
  return static_cast<std::uint64_t>(j);
}

std::uint64_t clamp_rank(U128 j, std::uint64_t n) {
  if (j < 1) return 1;
  if (j >= n) return n;
  return static_cast<std::uint64_t>(j);
}

double ratio(U128 num, U128 den) { return static_cast<double>(num) / static_cast<double>(den); }

/// The (a, b) of the continuous types as h = (A + p·M) / D with integers.
struct Continuous {
  U128 a_num;
  U128 m;
  U128 d;
};

Continuous continuous_terms(QuantileType type, std::uint64_t n) {
  const U128 nn = n;
  switch (type) {
    case QuantileType::kType4:
      return {0, nn, 1};
    case QuantileType::kType5:
      return {1, 2 * nn, 2};
    case QuantileType::kType6:
      return {0, nn + 1, 1};
    case QuantileType::kType7:
      return {1, nn - 1, 1};
    case QuantileType::kType8:
      return {1, 3 * nn + 1, 3};
    default:
      return {3, 8 * nn + 2, 8};  // type 9
  }
}

void ab(QuantileType type, double& a, double& b) {
  switch (type) {
    case QuantileType::kType4:
      a = 0.0, b = 1.0;
      break;
    case QuantileType::kType5:
      a = 0.5, b = 0.5;
      break;
    case QuantileType::kType6:
      a = 0.0, b = 0.0;
      break;
    case QuantileType::kType7:
      a = 1.0, b = 1.0;
      break;
    case QuantileType::kType8:
      a = 1.0 / 3.0, b = 1.0 / 3.0;
      break;
    default:
      a = 3.0 / 8.0, b = 3.0 / 8.0;
      break;
  }
}

/// Plan from j = floor(position) and the fractional part g (as R does for types 1-3).
QuantilePlan discontinuous_plan(QuantileType type, std::uint64_t n, long double j, bool g_zero) {
  QuantilePlan plan;
  plan.lo = clamp_rank(j, n);
  plan.hi = clamp_rank(j + 1.0L, n);
  const bool j_even = std::fmod(j, 2.0L) == 0.0L;
  switch (type) {
    case QuantileType::kType1:
      plan.weight_hi = g_zero ? 0.0 : 1.0;
      break;
    case QuantileType::kType2:
      plan.weight_hi = g_zero ? 0.5 : 1.0;
      break;
    default:
      plan.weight_hi = (g_zero && j_even) ? 0.0 : 1.0;
      break;  // type 3
  }
  return plan;
}

/// Double arithmetic: compat-R, and the fallback for p too small for the exact path.
QuantilePlan double_plan(std::uint64_t n, double p, QuantileType type, bool fuzz) {
  const double nd = static_cast<double>(n);
  if (type <= QuantileType::kType3) {
    const double nppm = type == QuantileType::kType3 ? nd * p - 0.5 : nd * p;
    const double j = std::floor(nppm);
    return discontinuous_plan(type, n, static_cast<long double>(j), nppm == j);
  }
  QuantilePlan plan;
  if (type == QuantileType::kType7) {
    const double index = 1.0 + (nd - 1.0) * p;
    const double lo = std::floor(index);
    plan.lo = clamp_rank(static_cast<long double>(lo), n);
    plan.hi = clamp_rank(static_cast<long double>(lo) + 1.0L, n);
    plan.weight_hi = index - lo;
    return plan;
  }
  double a = 0.0;
  double b = 0.0;
  ab(type, a, b);
  const double h = a + p * (nd + 1.0 - a - b);
  const double j = std::floor(h + (fuzz ? kFuzz : 0.0));
  double gamma = h - j;
  if (fuzz && std::fabs(gamma) < kFuzz) gamma = 0.0;
  plan.lo = clamp_rank(static_cast<long double>(j), n);
  plan.hi = clamp_rank(static_cast<long double>(j) + 1.0L, n);
  plan.weight_hi = gamma;
  return plan;
}

bool exact_plan(std::uint64_t n, const Rational& p, QuantileType type, QuantilePlan& plan) {
  if (type <= QuantileType::kType3) {
    U128 np = 0;
    if (!mul(p.num, n, np)) return false;
    U128 num = np;  // position = num / den
    U128 den = p.den;
    if (type == QuantileType::kType3) {  // np - 1/2 = (2np - den) / (2den)
      U128 twice = 0;
      if (!mul(np, 2, twice) || !mul(p.den, 2, den)) return false;
      if (twice < p.den) {  // -1/2 <= np - 1/2 < 0: j = -1, g > 0 -> x_(0) = x_(1)
        plan = QuantilePlan{1, 1, 1.0};
        return true;
      }
      num = twice - p.den;
    }
    const U128 j = num / den;
    plan = discontinuous_plan(type, n, static_cast<long double>(j), num % den == 0);
    return true;
  }
  const Continuous t = continuous_terms(type, n);
  U128 a_scaled = 0;
  U128 pm = 0;
  U128 num = 0;
  U128 den = 0;
  if (!mul(t.a_num, p.den, a_scaled) || !mul(p.num, t.m, pm) || !add(a_scaled, pm, num) || !mul(t.d, p.den, den))
    return false;
  const U128 j = num / den;
  plan.lo = clamp_rank(j, n);
  plan.hi = clamp_rank(j + 1, n);
  plan.weight_hi = ratio(num % den, den);
  return true;
}

std::vector<double> sorted_without_nan(std::span<const double> values, std::uint64_t& nan_count) {
  std::vector<std::uint64_t> keys;
  keys.reserve(values.size());
  nan_count = 0;
  for (const double v : values) {
    if (std::isnan(v))
      ++nan_count;
    else
      keys.push_back(order_key(v));
  }
  std::sort(keys.begin(), keys.end());
  std::vector<double> sorted(keys.size());
  std::transform(keys.begin(), keys.end(), sorted.begin(), from_order_key);
  return sorted;
}

}  // namespace

QuantileType quantile_type_from_number(int number) {
  if (number < 1 || number > 9)
    throw ParameterError("quantile type must be one of 1, 2, 3, 4, 5, 6, 7, 8, 9, got " + std::to_string(number));
  return static_cast<QuantileType>(number);
}

QuantilePlan quantile_plan(std::uint64_t n, double p, const QuantileOptions& options) {
  check_probability(p);
  static_cast<void>(quantile_type_from_number(static_cast<int>(options.type)));
  SDC_CHECK(n >= 1, "a quantile plan needs at least one value");
  if (options.arithmetic == QuantileArithmetic::kExact) {
    const Rational r = decimal_rational(p);
    QuantilePlan plan;
    if (r.ok && exact_plan(n, r, options.type, plan)) return plan;
  }
  return double_plan(n, p, options.type, options.arithmetic == QuantileArithmetic::kCompatR);
}

double apply_quantile_plan(const QuantilePlan& plan, double x_lo, double x_hi) {
  const double w = plan.weight_hi;
  if (w <= 0.0 || x_lo == x_hi) return x_lo;
  if (w >= 1.0) return x_hi;
  return (1.0 - w) * x_lo + w * x_hi;
}

double quantile_of_sorted(std::span<const double> sorted, double p, const QuantileOptions& options) {
  if (sorted.empty()) {
    check_probability(p);
    return std::nan("");
  }
  const QuantilePlan plan = quantile_plan(sorted.size(), p, options);
  return apply_quantile_plan(plan, sorted[plan.lo - 1], sorted[plan.hi - 1]);
}

SampleQuantiles sample_quantiles(std::span<const double> values, std::span<const double> probabilities,
                                 const QuantileOptions& options) {
  SampleQuantiles result;
  const std::vector<double> sorted = sorted_without_nan(values, result.nan_count);
  result.count = sorted.size();
  result.values.reserve(probabilities.size());
  for (const double p : probabilities) result.values.push_back(quantile_of_sorted(sorted, p, options));
  return result;
}

BootstrapInterval percentile_interval(std::span<const double> replicates, double alpha,
                                      const QuantileOptions& options) {
  check_alpha(alpha);
  const double probabilities[] = {alpha / 2.0, 1.0 - alpha / 2.0};
  const SampleQuantiles q = sample_quantiles(replicates, probabilities, options);
  return {q.values[0], q.values[1], q.count, q.nan_count};
}

BootstrapInterval basic_interval(std::span<const double> replicates, double estimate, double alpha,
                                 const QuantileOptions& options) {
  const BootstrapInterval percentile = percentile_interval(replicates, alpha, options);
  return {2.0 * estimate - percentile.upper, 2.0 * estimate - percentile.lower, percentile.replicates,
          percentile.nan_replicates};
}

std::uint64_t critical_value_rank(std::uint64_t replicates, double alpha) {
  check_alpha(alpha);
  const Rational a = decimal_rational(alpha);
  U128 product = 0;
  std::uint64_t rank = 0;
  if (a.ok && mul(a.den - a.num, replicates, product)) {
    rank = static_cast<std::uint64_t>(product / a.den);
  } else {
    rank = static_cast<std::uint64_t>(std::floor((1.0 - alpha) * static_cast<double>(replicates)));
  }
  if (rank == 0)
    throw ParameterError("critical value at alpha " + std::to_string(alpha) + " needs more than " +
                         std::to_string(replicates) + " replicates");
  return rank;
}

CriticalValue bootstrap_critical_value(std::span<const double> replicates, double alpha) {
  CriticalValue result;
  const std::vector<double> sorted = sorted_without_nan(replicates, result.nan_replicates);
  result.replicates = sorted.size();
  result.rank = critical_value_rank(result.replicates, alpha);
  result.value = sorted[result.rank - 1];
  return result;
}

// ---- Distributed exact quantiles ----

std::uint64_t order_key(double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  return (bits & kSign) != 0 ? ~bits : bits ^ kSign;
}

double from_order_key(std::uint64_t key) {
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  return std::bit_cast<double>((key & kSign) != 0 ? key ^ kSign : ~key);
}

RadixCounts radix_count_local(std::span<const double> values, std::span<const RadixQuery> queries) {
  for (const RadixQuery& q : queries)
    SDC_CHECK(q.prefix_bits >= 0 && q.prefix_bits <= 64 - kRadixBits && q.prefix_bits % kRadixBits == 0,
              "radix query prefix length must be 0, 16, 32 or 48 bits");
  // Queries grouped by prefix length and sorted by prefix, so that a key finds the queries it
  // matches by one binary search per length instead of a comparison with every query.
  struct Group {
    int bits = 0;
    std::vector<std::pair<std::uint64_t, std::size_t>> prefixes;  // (top `bits` bits, query position)
    // Whether any prefix starts with these 16 bits: most keys fail this one lookup and skip the search.
    std::vector<bool> leading;
  };
  std::vector<Group> groups;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const int bits = queries[q].prefix_bits;
    auto group = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.bits == bits; });
    if (group == groups.end()) group = groups.insert(groups.end(), Group{bits, {}, {}});
    group->prefixes.emplace_back(bits == 0 ? 0 : queries[q].prefix >> (64 - bits), q);
  }
  for (Group& group : groups) {
    std::sort(group.prefixes.begin(), group.prefixes.end());
    if (group.bits == 0) continue;
    group.leading.assign(kRadixBuckets, false);
    for (const auto& [prefix, position] : group.prefixes) group.leading[prefix >> (group.bits - kRadixBits)] = true;
  }

  const std::size_t width = queries.size() * kRadixBuckets;
  // Counts are integers, so summing per-thread histograms gives the same result for any split.
  tbb::enumerable_thread_specific<RadixCounts> partials([&] {
    RadixCounts counts;
    counts.counts.assign(width, 0);
    return counts;
  });
  constexpr std::size_t kGrain = std::size_t{1} << 16;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, values.size(), kGrain), [&](const auto& range) {
    RadixCounts& local = partials.local();
    for (std::size_t i = range.begin(); i < range.end(); ++i) {
      const double v = values[i];
      if (std::isnan(v)) {
        ++local.nan_count;
        continue;
      }
      const std::uint64_t key = order_key(v);
      for (const Group& group : groups) {
        if (group.bits > 0 && !group.leading[key >> (64 - kRadixBits)]) continue;
        const std::uint64_t prefix = group.bits == 0 ? 0 : key >> (64 - group.bits);
        const auto bucket = static_cast<std::size_t>((key >> (64 - group.bits - kRadixBits)) & (kRadixBuckets - 1));
        auto it = std::lower_bound(group.prefixes.begin(), group.prefixes.end(), std::pair{prefix, std::size_t{0}});
        for (; it != group.prefixes.end() && it->first == prefix; ++it)
          ++local.counts[it->second * kRadixBuckets + bucket];
      }
    }
  });
  RadixCounts result;
  result.counts.assign(width, 0);
  for (const RadixCounts& partial : partials) radix_count_merge(result, partial);
  return result;
}

void radix_count_merge(RadixCounts& into, const RadixCounts& from) {
  SDC_CHECK(into.counts.size() == from.counts.size(), "radix counts of different queries cannot be merged");
  into.nan_count += from.nan_count;
  for (std::size_t i = 0; i < into.counts.size(); ++i) into.counts[i] += from.counts[i];
}

SampleQuantiles distributed_quantiles(std::span<const double> local_values, std::span<const double> probabilities,
                                      const QuantileOptions& options, const RadixAllreduce& allreduce) {
  for (const double p : probabilities) check_probability(p);
  // Pass 1: the top 16 bits of every key; its total is n.
  std::vector<RadixQuery> queries{RadixQuery{}};
  RadixCounts counts = radix_count_local(local_values, queries);
  allreduce(queries, counts);
  SampleQuantiles result;
  result.nan_count = counts.nan_count;
  for (std::size_t b = 0; b < kRadixBuckets; ++b) result.count += counts.counts[b];
  if (result.count == 0) {
    result.values.assign(probabilities.size(), std::nan(""));
    return result;
  }
  std::vector<QuantilePlan> plans;
  std::vector<std::uint64_t> targets;  // the order statistics needed, ascending, distinct
  for (const double p : probabilities) {
    plans.push_back(quantile_plan(result.count, p, options));
    targets.push_back(plans.back().lo);
    targets.push_back(plans.back().hi);
  }
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());

  struct Search {
    std::uint64_t remaining;  // rank among the keys under the current prefix (1-based)
    RadixQuery query;
  };
  std::vector<Search> searches;
  for (const std::uint64_t t : targets) searches.push_back({t, RadixQuery{}});
  for (int pass = 0;; ++pass) {
    // Locate each target's bucket in its query's histogram.
    for (Search& s : searches) {
      const auto q = static_cast<std::size_t>(std::find(queries.begin(), queries.end(), s.query) - queries.begin());
      const std::uint64_t* histogram = counts.counts.data() + q * kRadixBuckets;
      std::uint64_t below = 0;
      std::size_t bucket = 0;
      while (bucket < kRadixBuckets && below + histogram[bucket] < s.remaining) below += histogram[bucket++];
      SDC_CHECK(bucket < kRadixBuckets, "radix counts disagree between passes");
      s.remaining -= below;
      s.query.prefix |= static_cast<std::uint64_t>(bucket) << (64 - s.query.prefix_bits - kRadixBits);
      s.query.prefix_bits += kRadixBits;
    }
    if (pass == 64 / kRadixBits - 1) break;
    queries.clear();
    for (const Search& s : searches)
      if (std::find(queries.begin(), queries.end(), s.query) == queries.end()) queries.push_back(s.query);
    counts = radix_count_local(local_values, queries);
    allreduce(queries, counts);
  }
  auto value_of = [&](std::uint64_t rank) {
    const auto it = std::lower_bound(targets.begin(), targets.end(), rank);
    return from_order_key(searches[static_cast<std::size_t>(it - targets.begin())].query.prefix);
  };
  result.values.reserve(plans.size());
  for (const QuantilePlan& plan : plans)
    result.values.push_back(apply_quantile_plan(plan, value_of(plan.lo), value_of(plan.hi)));
  return result;
}

}  // namespace sdc
