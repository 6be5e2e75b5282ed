#pragma once
// The random-number contract (docs/rng.md). Every random draw of sdc-engine is a pure function of
//   key     = (seed, StepId)                      — who draws, and for what purpose
//   counter = (unit id, draw index, replicate, attempt) — which draw
// through Random123's Philox4x64-10, a counter-based generator. No draw depends on a thread, a rank,
// a loop order or a previous draw, so outputs are identical for any partitioning of the records.

#include <Random123/philox.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <utility>

namespace sdc {

/// One value per method and draw purpose. Append only: a value is never renumbered or reused, and is
/// never the position of a step in a pipeline (docs/rng.md lists them).
enum class StepId : std::uint64_t {
  kReserved = 0,         ///< never used for draws; catches an unset StepId
  kKnownAnswerTest = 1,  ///< tests of the contract itself
  // Synthetic census generator (kernels/generate/census.h, docs/generator.md). Unit = household id;
  // draw = person index within the household for the per-person purposes.
  kGenerateHousehold = 2,         ///< household type and size, household latents, household citizenship
  kGenerateSample = 3,            ///< Bernoulli selection of a household into the sample
  kGeneratePersonDemography = 4,  ///< a person's sex, age, marital status, citizenship
  kGeneratePersonEducation = 5,   ///< a person's education, activity and occupation (and partner ages)
  kGeneratePersonIncome = 6,      ///< a person's income and savings
  kGenerateCitizenshipAreas = 7,  ///< home areas of the rare citizenships (unit = citizenship code)
  // Risk suite (docs/methods bootstrap.md, risk.md).
  kBootstrapReplicate = 8,   ///< replicate multiplicities (unit = resampling unit or tree node; replicate = b)
  kBootstrapParametric = 9,  ///< parametric bootstrap: f* drawn from a fitted model (unit = cell; replicate = b)
  kRiskSimulation = 10,      ///< synthetic populations and samples of the risk estimators' accuracy tests
  kDpMeanTest = 11,          ///< DP mean test (bootstrap/dp_mean_test.h): privacy noise (unit = sample; replicate = b)
  kResamplingMask = 12,      ///< resampling as masking (bootstrap/resampling_mask.h): the t sorted bootstrap samples
  // PRAM (kernels/perturbation/pram.h, docs/pram.md).
  kPramMatrix = 13,  ///< the reference construction's diagonal d_k ~ U(pd, 1) (unit = category; draw = stratum id;
                     ///< replicate = the variable's position in the step)
  kPram = 14,        ///< a record's released category (unit = record; draw = the variable's position in the step)
  // Swapping (kernels/swapping/, docs/swapping.md).
  kRankSwap = 15,  ///< rank swapping's partner of sorted position j (unit = its record; draw = the variable's position)
  /// Targeted record swapping (kernels/swapping/targeted_swap.h): a household's donor key at level h
  /// (unit = household id; draw = h).
  kTargetedSwapDonor = 16,
  /// Targeted record swapping's quotas: the fresh key of a household added to reach its area's quota
  /// (unit = household id; draw 0), an area's key for the remaining quota (unit = the area's position;
  /// draw 1), the coin rounding the total (unit 0; draw 2).
  kTargetedSwapQuota = 17,
  /// Additive and correlated noise (kernels/perturbation/noise.h): a record's standard normals (unit =
  /// row id; draw = variable index / 4, two normals from each pair of words).
  kNoise = 18,
  /// Data shuffling (kernels/swapping/data_shuffle.h): a record's standard normals of the conditional
  /// draw (unit = row id; draw = confidential variable index / 4).
  kDataShuffle = 19,
  /// Karr–Sanil data swapping (kernels/swapping/karr_sanil.h): a record's selection key in a replicate
  /// (unit = row id; replicate = the replicate's index).
  kKarrSanilSelection = 20,
  /// Cell key method (kernels/tables/cell_key.h, docs/methods cellkey.md §1): a record's native key
  /// (unit = row id; draw 0); the native zero_row's key of an empty cell (unit = cell index; draw 1).
  kCellKeyRecordKey = 21,
  /// Heer's bootstrap of a frequency table (kernels/tables/resampling.h): a node's binomial split (unit =
  /// tree node id; draw = the sampler's block; replicate = the table's bootstrap index m; attempt =
  /// regeneration); the exact-disclosure study's trials (unit = trial; draw = 2^62 or 2^63 + generation).
  kTableBootstrap = 22,
  /// Cell-oriented binomial perturbation of a frequency table (kernels/tables/resampling.h): a cell's
  /// binomial draw (unit = cell id; attempt = redraw); the compensation's hypergeometric splits (unit = tree
  /// node; draw = 1; replicate = 2^63 + slice; attempt = the sampler's block); the study's trials as above.
  kTableCellPerturbation = 23,
  /// Synthetic table-protection instances (kernels/tables/instance_generator.h): a leaf cell's emptiness,
  /// count and contributions (unit = cell column; draw 0, 1, 2 + j/4), a random tree's branching (unit =
  /// breadth-first node id; draw = 2^63 + the dimension's stream).
  kTableInstance = 24,
  /// Multilevel block-angular reordering (kernels/tables/block_angular.h): the heavy-edge matching's
  /// visit order at level h (unit = vertex of that level; draw = h; replicate = the bisection's number,
  /// 1 for the whole matrix, 2b and 2b + 1 for the parts of bisection b) and its tie salt (unit 0;
  /// draw = h; attempt 1), a random initial bisection i (unit = vertex of the coarsest level;
  /// draw = 2^32 + i; replicate = the bisection's number). Cycle c of a bisection adds c·2^40 to its
  /// number.
  kBlockAngularReordering = 25,
};

/// The four counter words. `unit` is a global id: record (row id), household, cell or tree node.
struct DrawCounter {
  std::uint64_t unit = 0;
  std::uint64_t draw = 0;  ///< draws beyond the four words of one block raise this
  /// The bootstrap replicate; a step without replicates may use it for a second index of its draws
  /// (PRAM's matrices: the variable), as its StepId's line says.
  std::uint64_t replicate = 0;
  std::uint64_t attempt = 0;  ///< retries of rejection sampling
};

class RecordRng {
 public:
  using Engine = r123::Philox4x64;  // Philox4x64-10
  using Block = Engine::ctr_type;   // four 64-bit words

  RecordRng(std::uint64_t seed, StepId step) : key_{{seed, static_cast<std::uint64_t>(step)}} {}

  /// Four independent 64-bit words for `counter`.
  Block bits(const DrawCounter& counter) const {
    return Engine{}(Block{{counter.unit, counter.draw, counter.replicate, counter.attempt}}, key_);
  }

  /// Uniform on [0, 1) with 53 random bits: the top 53 bits of word `word` (0..3) scaled by 2^-53.
  double uniform(const DrawCounter& counter, unsigned word = 0) const {
    return uniform_from_bits(bits(counter)[word & 3U]);
  }

  static double uniform_from_bits(std::uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

 private:
  Engine::key_type key_;
};

// ---- derived distributions (docs/rng.md, "Derived draws"): pure functions of counter words ----

/// Two independent standard normals from two 64-bit words (Box-Muller, Box and Muller 1958): with
/// u1 = 1 - uniform(a) in (0, 1] and u2 = uniform(b), r = sqrt(-2 ln u1), the pair is
/// (r cos 2 pi u2, r sin 2 pi u2).
inline std::pair<double, double> normal_pair_from_bits(std::uint64_t a, std::uint64_t b) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double u1 = 1.0 - RecordRng::uniform_from_bits(a);
  const double u2 = RecordRng::uniform_from_bits(b);
  const double r = std::sqrt(-2.0 * std::log(u1));
  return {r * std::cos(kTwoPi * u2), r * std::sin(kTwoPi * u2)};
}

/// A Laplace(0, scale) draw by inversion from one 64-bit word: with k its top 53 bits, u = (k + 1/2) · 2^-53
/// in (0, 1); scale · ln(2u) for u < 1/2, -scale · ln(2 - 2u) otherwise. Both arguments are odd multiples
/// of 2^-53, formed exactly from integers (2 - 2u in doubles would round to 0 at the top word), so the draw
/// is finite and words k and 2^53 - 1 - k give opposite values.
inline double laplace_from_bits(std::uint64_t x, double scale) {
  const std::uint64_t k = x >> 11;
  constexpr std::uint64_t kHalf = std::uint64_t{1} << 52;
  if (k < kHalf) return scale * std::log(static_cast<double>(2 * k + 1) * 0x1.0p-53);
  return -scale * std::log(static_cast<double>((std::uint64_t{1} << 54) - 2 * k - 1) * 0x1.0p-53);
}

/// ⌊u·count⌋ for u = k·2^-53, k the top 53 bits of `x`: a uniform index in [0, count), computed
/// exactly in integers (the double product u·count can round up to count itself).
inline std::uint64_t index_from_bits(std::uint64_t x, std::uint64_t count) {
  __extension__ using Wide = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<Wide>(x >> 11) * count) >> 53);
}

/// A categorical draw from cumulative weights (non-decreasing, last entry the total, > 0): the
/// first index i with u * total < cumulative[i], for u uniform on [0, 1). Zero-weight categories are
/// never drawn. Binary search: O(log of the number of categories).
inline std::size_t categorical_from_uniform(double u, std::span<const double> cumulative) {
  const double target = u * cumulative.back();
  std::size_t low = 0;
  std::size_t high = cumulative.size() - 1;
  while (low < high) {
    const std::size_t mid = low + (high - low) / 2;
    if (target < cumulative[mid])
      high = mid;
    else
      low = mid + 1;
  }
  return low;
}

}  // namespace sdc
