#pragma once
// Simulated correlated data and the correlations the swapping tests measure on it (the swap-versus-
// shuffle A oracle of docs/methods swapping.md §5).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/core/record_rng.h"

namespace sdc::testing {

/// n rows of two standard normals with correlation `rho` (Box–Muller on mt19937_64 words: the same data
/// on every standard library), as two columns.
inline std::vector<std::vector<double>> bivariate_normal(std::size_t n, double rho, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::vector<std::vector<double>> out(2, std::vector<double>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t a = engine();
    const auto [z1, z2] = normal_pair_from_bits(a, engine());
    out[0][i] = z1;
    out[1][i] = rho * z1 + std::sqrt(1.0 - rho * rho) * z2;
  }
  return out;
}

/// Ranks 1…n, equal values sharing the average of their ranks.
inline std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin + 1;
    while (end < order.size() && values[order[end]] == values[order[begin]]) ++end;
    for (std::size_t k = begin; k < end; ++k) ranks[order[k]] = (static_cast<double>(begin + end) + 1.0) / 2.0;
    begin = end;
  }
  return ranks;
}

inline double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const auto n = static_cast<double>(a.size());
  const double mean_a = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mean_b = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - mean_a) * (b[i] - mean_b);
    aa += (a[i] - mean_a) * (a[i] - mean_a);
    bb += (b[i] - mean_b) * (b[i] - mean_b);
  }
  return ab / std::sqrt(aa * bb);
}

inline double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  return pearson(average_ranks(a), average_ranks(b));
}

}  // namespace sdc::testing
