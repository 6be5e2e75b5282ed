#pragma once
// Census-shaped key columns shared by the risk benchmarks: fixed seed, cached per size.

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "kernels/core/key_grouping.h"

namespace sdc::bench {

struct CensusKeys {
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<std::int32_t> levels;
  std::vector<double> weights;
  sdc::KeyColumns view() const {
    sdc::KeyColumns keys;
    keys.level_counts = levels;
    for (const auto& c : codes) keys.codes.emplace_back(c);
    return keys;
  }
};

/// Draws codes 0..levels-1 with probability proportional to 1/(code + 1) from `generator`.
inline auto zipf_sampler(std::mt19937_64& generator, int levels) {
  std::vector<double> cumulative(static_cast<std::size_t>(levels));
  double total = 0;
  for (int i = 0; i < levels; ++i) cumulative[static_cast<std::size_t>(i)] = (total += 1.0 / (i + 1.0));
  return [&generator, cumulative, total]() {
    const double u = std::uniform_real_distribution<double>(0, total)(generator);
    return static_cast<std::int32_t>(std::lower_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
  };
}

/// Eight census-like keys: sex, age, marital status, citizenship (Zipf), municipality (Zipf over
/// 2000 areas), education, occupation, household type. Fixed seed; benchmarks may use <random>.
inline const CensusKeys& census_keys(std::size_t records) {
  static std::map<std::size_t, CensusKeys> cache;
  auto& keys = cache[records];
  if (!keys.codes.empty()) return keys;
  std::mt19937_64 generator(2026);
  const auto zipf = [&](int levels) { return zipf_sampler(generator, levels); };
  keys.levels = {2, 101, 5, 60, 2000, 8, 40, 10};
  auto citizenship = zipf(60);
  auto municipality = zipf(2000);
  keys.codes.assign(8, std::vector<std::int32_t>(records));
  keys.weights.resize(records);
  for (std::size_t i = 0; i < records; ++i) {
    keys.codes[0][i] = static_cast<std::int32_t>(generator() % 2);
    keys.codes[1][i] = static_cast<std::int32_t>(generator() % 101);
    keys.codes[2][i] = static_cast<std::int32_t>(generator() % 5);
    keys.codes[3][i] = citizenship();
    keys.codes[4][i] = municipality();
    keys.codes[5][i] = static_cast<std::int32_t>(generator() % 8);
    keys.codes[6][i] = static_cast<std::int32_t>(generator() % 40);
    keys.codes[7][i] = static_cast<std::int32_t>(generator() % 10);
    keys.weights[i] = 20.0 + static_cast<double>(generator() % 10000) / 100.0;
  }
  return keys;
}

}  // namespace sdc::bench
