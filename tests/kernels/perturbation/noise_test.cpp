#include "kernels/perturbation/noise.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/distance/whitening.h"

namespace sdc::perturbation {
namespace {

using LongColumns = std::vector<std::vector<long double>>;
using LongMatrix = std::vector<std::vector<long double>>;

// ---- synthetic data ----

/// Correlated synthetic variables with very different scales: income (mean 1e5, sd 2e4), age (40, 12),
/// savings (3e4, 1e4), household size (3, 0.8), a share (0.5, 0.2). Row ids 1000 + 3i (not contiguous).
/// The standard normals come from Philox with the test StepId, so the data are the same on every platform.
NumericData synthetic_data(std::size_t n, std::size_t p, std::uint64_t seed) {
  NumericData data;
  data.columns.assign(p, std::vector<double>(n));
  for (std::size_t j = 0; j < p; ++j) data.names.push_back("v" + std::to_string(j + 1));
  const RecordRng rng(seed, StepId::kKnownAnswerTest);
  for (std::size_t i = 0; i < n; ++i) {
    data.row_ids.push_back(1000 + 3 * static_cast<std::int64_t>(i));
    double g[8];
    for (std::uint64_t block = 0; block < 2; ++block) {
      const auto bits = rng.bits({static_cast<std::uint64_t>(i), block, 0, 0});
      const auto [a, b] = normal_pair_from_bits(bits[0], bits[1]);
      const auto [c, d] = normal_pair_from_bits(bits[2], bits[3]);
      g[4 * block] = a;
      g[4 * block + 1] = b;
      g[4 * block + 2] = c;
      g[4 * block + 3] = d;
    }
    const double values[5] = {
        1e5 + 2e4 * g[0],
        40.0 + 12.0 * (0.6 * g[0] + 0.8 * g[1]),
        3e4 + 1e4 * (0.5 * g[0] - 0.3 * g[1] + 0.81 * g[2]),
        3.0 + 0.8 * (0.7 * g[2] + 0.71 * g[3]),
        0.5 + 0.2 * (-0.4 * g[1] + 0.9 * g[4]),
    };
    for (std::size_t j = 0; j < p; ++j) data.columns[j][i] = values[j];
  }
  return data;
}

// ---- the kernel's pipeline on one block ----

struct NoiseRun {
  NumericData z;
  NoiseMap map;
  std::vector<std::vector<double>> released;
};

NoiseRun run_noise(const NumericData& x, std::uint64_t seed, const NoiseOptions& options) {
  NoiseRun run;
  const std::size_t p = x.columns.size();
  run.z = noise_normals(x.row_ids, p, seed);
  const NumericColumns joint = joint_columns(x.view(), run.z.view());
  run.map = noise_map(distance::moments_finalize(distance::moments_local(joint)), p, options);
  run.released = apply_noise(x.view(), run.z.view(), run.map);
  return run;
}

// ---- sample moments in long double, independent of the kernel's moments code ----

LongColumns to_long(const std::vector<std::vector<double>>& columns) {
  LongColumns out;
  for (const auto& column : columns) out.emplace_back(column.begin(), column.end());
  return out;
}

/// E = X' − X, each difference formed in long double (exact for doubles of similar magnitude).
LongColumns difference(const std::vector<std::vector<double>>& released, const std::vector<std::vector<double>>& x) {
  LongColumns e(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    for (std::size_t i = 0; i < x[j].size(); ++i)
      e[j].push_back(static_cast<long double>(released[j][i]) - static_cast<long double>(x[j][i]));
  }
  return e;
}

std::vector<long double> sample_means(const LongColumns& columns) {
  std::vector<long double> means;
  for (const auto& column : columns) {
    long double sum = 0.0L;
    for (long double v : column) sum += v;
    means.push_back(sum / static_cast<long double>(column.size()));
  }
  return means;
}

/// Two-pass sample cross-covariance (divisor n − 1): entry (j, k) = cov(a_j, b_k).
LongMatrix sample_cross_covariance(const LongColumns& a, const LongColumns& b) {
  const std::vector<long double> mean_a = sample_means(a);
  const std::vector<long double> mean_b = sample_means(b);
  const std::size_t n = a.front().size();
  LongMatrix cov(a.size(), std::vector<long double>(b.size()));
  for (std::size_t j = 0; j < a.size(); ++j) {
    for (std::size_t k = 0; k < b.size(); ++k) {
      long double sum = 0.0L;
      for (std::size_t i = 0; i < n; ++i) sum += (a[j][i] - mean_a[j]) * (b[k][i] - mean_b[k]);
      cov[j][k] = sum / static_cast<long double>(n - 1);
    }
  }
  return cov;
}

LongMatrix sample_covariance(const LongColumns& a) { return sample_cross_covariance(a, a); }

LongMatrix scaled(const LongMatrix& m, long double factor) {
  LongMatrix out = m;
  for (auto& row : out) {
    for (auto& v : row) v *= factor;
  }
  return out;
}

/// Every entry of `actual` within relative · sqrt(target_jj · target_kk) of `target` (at least as tight as
/// relative · max|target| for a covariance matrix, and meaningful for the small-scale variables too).
void expect_covariance_near(const LongMatrix& actual, const LongMatrix& target, long double relative,
                            const std::string& what) {
  ASSERT_EQ(actual.size(), target.size());
  for (std::size_t j = 0; j < target.size(); ++j) {
    for (std::size_t k = 0; k < target.size(); ++k) {
      const long double tolerance = relative * std::sqrt(target[j][j] * target[k][k]);
      EXPECT_LE(std::fabs(actual[j][k] - target[j][k]), tolerance)
          << what << " entry (" << j << ", " << k << "): " << static_cast<double>(actual[j][k]) << " vs "
          << static_cast<double>(target[j][k]);
    }
  }
}

/// The view of records [begin, end) of `data`.
NumericColumns rows_of(const NumericData& data, std::size_t begin, std::size_t end) {
  NumericColumns view;
  view.names = data.names;
  for (const auto& column : data.columns)
    view.columns.emplace_back(std::span<const double>(column).subspan(begin, end - begin));
  view.row_ids = std::span<const std::int64_t>(data.row_ids).subspan(begin, end - begin);
  return view;
}

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

void expect_same_bits(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, const std::string& what) {
  ASSERT_EQ(a.rows(), b.rows()) << what;
  ASSERT_EQ(a.cols(), b.cols()) << what;
  for (Eigen::Index r = 0; r < a.rows(); ++r) {
    for (Eigen::Index c = 0; c < a.cols(); ++c)
      EXPECT_TRUE(same_bits(a(r, c), b(r, c)))
          << what << " (" << r << ", " << c << "): " << a(r, c) << " vs " << b(r, c);
  }
}

void expect_same_map(const NoiseMap& a, const NoiseMap& b, const std::string& what) {
  expect_same_bits(a.x_mean, b.x_mean, what + ": x mean");
  expect_same_bits(a.z_mean, b.z_mean, what + ": z mean");
  expect_same_bits(a.regression, b.regression, what + ": regression");
  expect_same_bits(a.transform, b.transform, what + ": transform");
  EXPECT_TRUE(same_bits(a.c, b.c)) << what;
  EXPECT_EQ(a.restore_variance, b.restore_variance) << what;
}

struct Shape {
  std::size_t n;
  std::size_t p;
};

const Shape kShapes[] = {{50, 1}, {50, 3}, {50, 5}, {1000, 1}, {1000, 3}, {1000, 5}, {5000, 1}, {5000, 3}, {5000, 5}};

constexpr long double kExactRelative = 1e-12L;

// ---- 1. exact moments (perturbation.md §6, oracle "E exact moments") ----

TEST(ExactNoise, HasSampleMeanZeroAndCovarianceCSigmaForAnySeed) {
  for (const Shape shape : kShapes) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      const NumericData x = synthetic_data(shape.n, shape.p, 7000 + seed);
      const LongMatrix sigma = sample_covariance(to_long(x.columns));
      for (double percent : {50.0, 150.0}) {
        SCOPED_TRACE("n = " + std::to_string(shape.n) + ", p = " + std::to_string(shape.p) +
                     ", seed = " + std::to_string(seed) + ", percent = " + std::to_string(percent));
        const NoiseRun run = run_noise(x, seed, {.method = NoiseMethod::kExact, .percent = percent});
        const long double c = static_cast<long double>(percent) / 100.0L;
        EXPECT_EQ(run.map.c, percent / 100.0);
        const LongColumns e = difference(run.released, x.columns);
        const std::vector<long double> mean = sample_means(e);
        for (std::size_t j = 0; j < shape.p; ++j)
          EXPECT_LE(std::fabs(mean[j]), kExactRelative * std::sqrt(c * sigma[j][j])) << "mean of E_" << j;
        expect_covariance_near(sample_covariance(e), scaled(sigma, c), kExactRelative, "cov(E) vs c·Σ");
      }
    }
  }
}

TEST(ExactNoise, IsNotCorrelatedNoiseWithSampleCovarianceNearCSigmaOnly) {
  // The exact construction must differ from plain correlated noise: with the same normals, the
  // correlated map's sample covariance misses c·Σ by sampling error (≫ 1e-12), the exact one does not.
  const NumericData x = synthetic_data(1000, 3, 11);
  const LongMatrix sigma = sample_covariance(to_long(x.columns));
  const NoiseRun correlated = run_noise(x, 5, {.method = NoiseMethod::kCorrelated, .percent = 50.0});
  const LongMatrix cov = sample_covariance(difference(correlated.released, x.columns));
  long double worst = 0.0L;
  for (std::size_t j = 0; j < 3; ++j) {
    for (std::size_t k = 0; k < 3; ++k)
      worst =
          std::max(worst, std::fabs(cov[j][k] - 0.5L * sigma[j][k]) / (0.5L * std::sqrt(sigma[j][j] * sigma[k][k])));
  }
  EXPECT_GT(worst, 1e-4L);
}

// ---- 2. orthogonal exact noise, with and without variance restoration ----

TEST(ExactNoise, OrthogonalIsSampleUncorrelatedWithXAndGivesCovarianceOnePlusCSigma) {
  for (const Shape shape : kShapes) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      const NumericData x = synthetic_data(shape.n, shape.p, 8000 + seed);
      const LongColumns xl = to_long(x.columns);
      const LongMatrix sigma = sample_covariance(xl);
      for (double percent : {50.0, 150.0}) {
        SCOPED_TRACE("n = " + std::to_string(shape.n) + ", p = " + std::to_string(shape.p) +
                     ", seed = " + std::to_string(seed) + ", percent = " + std::to_string(percent));
        const NoiseRun run =
            run_noise(x, seed, {.method = NoiseMethod::kExact, .percent = percent, .orthogonal = true});
        const long double c = static_cast<long double>(percent) / 100.0L;
        const LongColumns e = difference(run.released, x.columns);
        const std::vector<long double> mean = sample_means(e);
        for (std::size_t j = 0; j < shape.p; ++j)
          EXPECT_LE(std::fabs(mean[j]), kExactRelative * std::sqrt(c * sigma[j][j])) << "mean of E_" << j;
        expect_covariance_near(sample_covariance(e), scaled(sigma, c), kExactRelative, "cov(E) vs c·Σ");
        const LongMatrix cross = sample_cross_covariance(xl, e);
        for (std::size_t j = 0; j < shape.p; ++j) {
          for (std::size_t k = 0; k < shape.p; ++k)
            EXPECT_LE(std::fabs(cross[j][k]), kExactRelative * std::sqrt(sigma[j][j] * c * sigma[k][k]))
                << "cov(X_" << j << ", E_" << k << ")";
        }
        expect_covariance_near(sample_covariance(to_long(run.released)), scaled(sigma, 1.0L + c), kExactRelative,
                               "cov(X') vs (1 + c)·Σ");
      }
    }
  }
}

TEST(ExactNoise, OrthogonalWithRestoreVarianceKeepsTheMeanAndTheCovarianceOfX) {
  for (const Shape shape : kShapes) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      const NumericData x = synthetic_data(shape.n, shape.p, 9000 + seed);
      const LongColumns xl = to_long(x.columns);
      const LongMatrix sigma = sample_covariance(xl);
      const std::vector<long double> x_mean = sample_means(xl);
      for (double percent : {50.0, 150.0}) {
        SCOPED_TRACE("n = " + std::to_string(shape.n) + ", p = " + std::to_string(shape.p) +
                     ", seed = " + std::to_string(seed) + ", percent = " + std::to_string(percent));
        const NoiseRun run = run_noise(
            x, seed, {.method = NoiseMethod::kExact, .percent = percent, .orthogonal = true, .restore_variance = true});
        EXPECT_TRUE(run.map.restore_variance);
        const LongColumns released = to_long(run.released);
        const std::vector<long double> mean = sample_means(released);
        for (std::size_t j = 0; j < shape.p; ++j)
          EXPECT_LE(std::fabs(mean[j] - x_mean[j]), kExactRelative * std::sqrt(sigma[j][j])) << "mean of X''_" << j;
        expect_covariance_near(sample_covariance(released), sigma, kExactRelative, "cov(X'') vs Σ");
      }
    }
  }
}

TEST(ExactNoise, RestoreVarianceReleasesTheMeanPlusTheShrunkDeviationOfXPrime) {
  // x'' = x̄ + (x' − x̄)/sqrt(1 + c), with x' the release of the same map without restoration.
  const NumericData x = synthetic_data(1000, 3, 17);
  const std::vector<long double> x_mean = sample_means(to_long(x.columns));
  for (NoiseMethod method : {NoiseMethod::kCorrelated, NoiseMethod::kExact}) {
    const NoiseRun plain = run_noise(x, 3, {.method = method, .percent = 150.0});
    const NoiseRun restored = run_noise(x, 3, {.method = method, .percent = 150.0, .restore_variance = true});
    const long double shrink = 1.0L / std::sqrt(2.5L);
    for (std::size_t j = 0; j < 3; ++j) {
      for (std::size_t i = 0; i < 1000; ++i) {
        const long double expected = x_mean[j] + (plain.released[j][i] - x_mean[j]) * shrink;
        EXPECT_NEAR(static_cast<double>(restored.released[j][i]), static_cast<double>(expected),
                    1e-14 * std::fabs(static_cast<double>(x_mean[j])) + 1e-12 * std::fabs(plain.released[j][i]))
            << "variable " << j << ", record " << i;
      }
    }
  }
}

// ---- 3. split invariance ----

/// Moments of the joint (x, z) columns from the blocks [bounds[b], bounds[b + 1]), merged in the given order.
distance::Moments merged_moments(const NumericData& x, const NumericData& z, const std::vector<std::size_t>& bounds,
                                 bool reverse) {
  std::vector<distance::MomentsPartial> partials;
  for (std::size_t b = 0; b + 1 < bounds.size(); ++b)
    partials.push_back(distance::moments_local(
        joint_columns(rows_of(x, bounds[b], bounds[b + 1]), rows_of(z, bounds[b], bounds[b + 1]))));
  if (reverse) std::reverse(partials.begin(), partials.end());
  distance::MomentsPartial total;
  for (const auto& partial : partials) distance::moments_merge(total, partial);
  return distance::moments_finalize(total);
}

TEST(NoiseSplitInvariance, MapHasTheSameBitsForMomentsFromOneOrManyBlocks) {
  const NumericData x = synthetic_data(1003, 4, 21);
  const NumericData z = noise_normals(x.row_ids, 4, 99);
  const std::vector<std::vector<std::size_t>> splits = {
      {0, 1003},
      {0, 500, 1003},
      {0, 1, 700, 1003},
      {0, 2, 150, 151, 400, 800, 1000, 1003},
  };
  const NoiseOptions options[] = {
      {.method = NoiseMethod::kAdditive, .percent = 150.0},
      {.method = NoiseMethod::kCorrelated, .percent = 80.0, .restore_variance = true},
      {.method = NoiseMethod::kExact, .percent = 50.0},
      {.method = NoiseMethod::kExact, .percent = 150.0, .orthogonal = true, .restore_variance = true},
  };
  for (const NoiseOptions& option : options) {
    const NoiseMap whole = noise_map(merged_moments(x, z, splits[0], false), 4, option);
    const auto released = apply_noise(x.view(), z.view(), whole);
    for (std::size_t s = 1; s < splits.size(); ++s) {
      for (bool reverse : {false, true}) {
        const std::string what = std::to_string(splits[s].size() - 1) + " blocks" + (reverse ? ", reversed" : "");
        const NoiseMap split = noise_map(merged_moments(x, z, splits[s], reverse), 4, option);
        expect_same_map(whole, split, what);
        const auto again = apply_noise(x.view(), z.view(), split);
        for (std::size_t j = 0; j < 4; ++j) {
          for (std::size_t i = 0; i < 1003; ++i)
            EXPECT_TRUE(same_bits(released[j][i], again[j][i])) << what << ", variable " << j << ", record " << i;
        }
      }
    }
  }
}

TEST(NoiseSplitInvariance, ApplyNoiseOnSubBlocksGivesTheValuesOfTheWholeBlock) {
  const NumericData x = synthetic_data(1003, 5, 22);
  const NumericData z = noise_normals(x.row_ids, 5, 123);
  const NoiseMap map =
      noise_map(merged_moments(x, z, {0, 1003}, false), 5,
                {.method = NoiseMethod::kExact, .percent = 150.0, .orthogonal = true, .restore_variance = true});
  const auto whole = apply_noise(x.view(), z.view(), map);
  const std::vector<std::size_t> bounds = {0, 1, 2, 150, 151, 400, 800, 1000, 1003};
  for (std::size_t b = 0; b + 1 < bounds.size(); ++b) {
    const std::size_t begin = bounds[b];
    const std::size_t end = bounds[b + 1];
    // The block's normals regenerated from its own row ids, as a rank does.
    const NumericData z_block = noise_normals(rows_of(x, begin, end).row_ids, 5, 123);
    const auto part = apply_noise(rows_of(x, begin, end), z_block.view(), map);
    for (std::size_t j = 0; j < 5; ++j) {
      for (std::size_t i = begin; i < end; ++i) {
        EXPECT_TRUE(same_bits(z_block.columns[j][i - begin], z.columns[j][i]))
            << "z, variable " << j << ", record " << i;
        EXPECT_TRUE(same_bits(part[j][i - begin], whole[j][i])) << "variable " << j << ", record " << i;
      }
    }
  }
}

// ---- 4. the records' normals ----

TEST(NoiseNormals, AreAFunctionOfRowIdAndSeedOnly) {
  const std::vector<std::int64_t> ids = {0, 7, 1000, 123456789, 5};
  const NumericData a = noise_normals(ids, 6, 42);
  const NumericData b = noise_normals(ids, 6, 42);
  ASSERT_EQ(a.columns.size(), 6U);
  EXPECT_EQ(a.row_ids, ids);
  for (std::size_t j = 0; j < 6; ++j) {
    ASSERT_EQ(a.columns[j].size(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      EXPECT_TRUE(same_bits(a.columns[j][i], b.columns[j][i]));
      // The same row id alone, or in another block at another position, gets the same normal.
      const std::vector<std::int64_t> alone = {ids[i]};
      EXPECT_TRUE(same_bits(noise_normals(alone, 6, 42).columns[j][0], a.columns[j][i])) << "row id " << ids[i];
    }
  }
  const std::vector<std::int64_t> reversed(ids.rbegin(), ids.rend());
  const NumericData r = noise_normals(reversed, 6, 42);
  for (std::size_t j = 0; j < 6; ++j) {
    for (std::size_t i = 0; i < ids.size(); ++i)
      EXPECT_TRUE(same_bits(r.columns[j][ids.size() - 1 - i], a.columns[j][i]));
  }
}

TEST(NoiseNormals, DifferForDifferentSeedsAndRowIds) {
  std::vector<std::int64_t> ids(1000);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i);
  const NumericData a = noise_normals(ids, 5, 1);
  const NumericData b = noise_normals(ids, 5, 2);
  for (std::size_t j = 0; j < 5; ++j) {
    std::size_t equal_seeds = 0;
    std::size_t equal_neighbours = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      equal_seeds += a.columns[j][i] == b.columns[j][i] ? 1U : 0U;
      if (i > 0) equal_neighbours += a.columns[j][i] == a.columns[j][i - 1] ? 1U : 0U;
    }
    EXPECT_EQ(equal_seeds, 0U) << "variable " << j;
    EXPECT_EQ(equal_neighbours, 0U) << "variable " << j;
  }
  // Columns of one record differ too (each its own normal).
  for (std::size_t i = 0; i < 10; ++i) {
    for (std::size_t j = 1; j < 5; ++j) EXPECT_NE(a.columns[j][i], a.columns[j - 1][i]);
  }
}

TEST(NoiseNormals, AreStandardNormalWithinFiveSigmaOver200000Draws) {
  constexpr std::size_t kDraws = 200000;
  std::vector<std::int64_t> ids(kDraws);
  for (std::size_t i = 0; i < kDraws; ++i) ids[i] = static_cast<std::int64_t>(3 * i + 11);
  const NumericData z = noise_normals(ids, 6, 2024);
  const LongColumns zl = to_long(z.columns);
  const std::vector<long double> mean = sample_means(zl);
  const LongMatrix cov = sample_covariance(zl);
  const long double n = static_cast<long double>(kDraws);
  for (std::size_t j = 0; j < 6; ++j) {
    EXPECT_LE(std::fabs(mean[j]), 5.0L / std::sqrt(n)) << "mean of z_" << j;
    EXPECT_LE(std::fabs(cov[j][j] - 1.0L), 5.0L * std::sqrt(2.0L / n)) << "variance of z_" << j;
    for (std::size_t k = 0; k < j; ++k)
      EXPECT_LE(std::fabs(cov[j][k]), 5.0L / std::sqrt(n)) << "covariance of z_" << j << " and z_" << k;
  }
  // Fourth moment (3 for a normal; sd of its estimate sqrt(96/n)) rules out non-normal unit-variance draws.
  for (std::size_t j = 0; j < 6; ++j) {
    long double m4 = 0.0L;
    for (long double v : zl[j]) m4 += (v - mean[j]) * (v - mean[j]) * (v - mean[j]) * (v - mean[j]);
    m4 /= n;
    EXPECT_LE(std::fabs(m4 - 3.0L), 5.0L * std::sqrt(96.0L / n)) << "fourth moment of z_" << j;
  }
}

TEST(NoiseNormals, ColumnsFourAndFiveComeFromTheSecondPhiloxBlock) {
  const std::vector<std::int64_t> ids = {0, 1, 17, 1000003, 42};
  const NumericData z6 = noise_normals(ids, 6, 77);
  const NumericData z4 = noise_normals(ids, 4, 77);
  const NumericData z5 = noise_normals(ids, 5, 77);
  const RecordRng rng(77, StepId::kNoise);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto unit = static_cast<std::uint64_t>(ids[i]);
    const auto first = rng.bits({unit, 0, 0, 0});
    const auto [a, b] = normal_pair_from_bits(first[0], first[1]);
    const auto [c, d] = normal_pair_from_bits(first[2], first[3]);
    const auto second = rng.bits({unit, 1, 0, 0});
    const auto [e, f] = normal_pair_from_bits(second[0], second[1]);
    const double expected[6] = {a, b, c, d, e, f};
    for (std::size_t j = 0; j < 6; ++j)
      EXPECT_TRUE(same_bits(z6.columns[j][i], expected[j])) << "row id " << ids[i] << ", column " << j;
    for (std::size_t j = 0; j < 4; ++j) EXPECT_TRUE(same_bits(z4.columns[j][i], z6.columns[j][i]));
    for (std::size_t j = 0; j < 5; ++j) EXPECT_TRUE(same_bits(z5.columns[j][i], z6.columns[j][i]));
  }
}

// ---- 5. additive noise (the reference's convention) ----

TEST(AdditiveNoise, TransformIsDiagonalPercentOfEachSampleSd) {
  const NumericData x = synthetic_data(500, 5, 31);
  const LongMatrix sigma = sample_covariance(to_long(x.columns));
  for (double percent : {10.0, 150.0}) {
    const NoiseRun run =
        run_noise(x, 8, {.method = NoiseMethod::kAdditive, .percent = percent, .restore_variance = true});
    EXPECT_FALSE(run.map.restore_variance) << "restore_variance is ignored for additive noise";
    EXPECT_EQ(run.map.c, 0.0);
    EXPECT_TRUE(run.map.z_mean.isZero(0.0));
    EXPECT_TRUE(run.map.regression.isZero(0.0));
    ASSERT_EQ(run.map.transform.rows(), 5);
    ASSERT_EQ(run.map.transform.cols(), 5);
    for (Eigen::Index j = 0; j < 5; ++j) {
      for (Eigen::Index k = 0; k < 5; ++k) {
        if (j != k) {
          EXPECT_EQ(run.map.transform(j, k), 0.0);
          continue;
        }
        const long double expected = static_cast<long double>(percent) / 100.0L *
                                     std::sqrt(sigma[static_cast<std::size_t>(j)][static_cast<std::size_t>(j)]);
        EXPECT_LE(std::fabs(run.map.transform(j, j) - expected), 1e-14L * expected) << "variable " << j;
      }
    }
  }
}

TEST(AdditiveNoise, HasSdPercentOfEachSdAndUncorrelatedComponentsOver200000Records) {
  constexpr std::size_t kRecords = 200000;
  const NumericData x = synthetic_data(kRecords, 3, 32);
  const LongMatrix sigma = sample_covariance(to_long(x.columns));
  const NoiseRun run = run_noise(x, 9, {.method = NoiseMethod::kAdditive, .percent = 150.0});
  const LongColumns e = difference(run.released, x.columns);
  const LongMatrix cov = sample_covariance(e);
  const std::vector<long double> mean = sample_means(e);
  const long double n = static_cast<long double>(kRecords);
  for (std::size_t j = 0; j < 3; ++j) {
    const long double target_sd = 1.5L * std::sqrt(sigma[j][j]);
    EXPECT_LE(std::fabs(mean[j]), 5.0L * target_sd / std::sqrt(n)) << "mean of E_" << j;
    // The sample sd's relative standard error is 1/sqrt(2n).
    EXPECT_LE(std::fabs(std::sqrt(cov[j][j]) / target_sd - 1.0L), 5.0L / std::sqrt(2.0L * n)) << "sd of E_" << j;
    for (std::size_t k = 0; k < j; ++k) {
      const long double correlation = cov[j][k] / std::sqrt(cov[j][j] * cov[k][k]);
      EXPECT_LE(std::fabs(correlation), 5.0L / std::sqrt(n)) << "correlation of E_" << j << " and E_" << k;
    }
  }
}

TEST(AdditiveNoise, IgnoresRestoreVariance) {
  const NumericData x = synthetic_data(300, 3, 33);
  const NoiseRun plain = run_noise(x, 4, {.method = NoiseMethod::kAdditive, .percent = 150.0});
  const NoiseRun restored =
      run_noise(x, 4, {.method = NoiseMethod::kAdditive, .percent = 150.0, .restore_variance = true});
  EXPECT_FALSE(restored.map.restore_variance);
  for (std::size_t j = 0; j < 3; ++j) {
    for (std::size_t i = 0; i < 300; ++i) EXPECT_TRUE(same_bits(plain.released[j][i], restored.released[j][i]));
  }
}

// ---- 6. correlated noise ----

TEST(CorrelatedNoise, HasCovarianceCSigmaWithinSamplingErrorOver200000Records) {
  constexpr std::size_t kRecords = 200000;
  const NumericData x = synthetic_data(kRecords, 3, 34);
  const LongMatrix sigma = sample_covariance(to_long(x.columns));
  for (double percent : {50.0, 150.0}) {
    SCOPED_TRACE("percent = " + std::to_string(percent));
    const NoiseRun run = run_noise(x, 10, {.method = NoiseMethod::kCorrelated, .percent = percent});
    const long double c = static_cast<long double>(percent) / 100.0L;
    EXPECT_TRUE(run.map.z_mean.isZero(0.0));
    EXPECT_TRUE(run.map.regression.isZero(0.0));
    // A = L_Σᵀ: upper triangular with AᵀA = cΣ.
    const Eigen::MatrixXd& a = run.map.transform;
    for (Eigen::Index j = 0; j < 3; ++j) {
      for (Eigen::Index k = 0; k < j; ++k) EXPECT_EQ(a(j, k), 0.0);
    }
    const Eigen::MatrixXd ata = a.transpose() * a;
    LongMatrix ata_long(3, std::vector<long double>(3));
    for (std::size_t j = 0; j < 3; ++j) {
      for (std::size_t k = 0; k < 3; ++k)
        ata_long[j][k] = ata(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(k));
    }
    expect_covariance_near(ata_long, scaled(sigma, c), 1e-13L, "AᵀA vs c·Σ");

    const LongColumns e = difference(run.released, x.columns);
    const LongMatrix cov = sample_covariance(e);
    const std::vector<long double> mean = sample_means(e);
    const long double n = static_cast<long double>(kRecords);
    for (std::size_t j = 0; j < 3; ++j) {
      EXPECT_LE(std::fabs(mean[j]), 5.0L * std::sqrt(c * sigma[j][j] / n)) << "mean of E_" << j;
      for (std::size_t k = 0; k < 3; ++k) {
        // Var of a Gaussian sample covariance: (s_jj s_kk + s_jk²)/n.
        const long double sjj = c * sigma[j][j];
        const long double skk = c * sigma[k][k];
        const long double sjk = c * sigma[j][k];
        EXPECT_LE(std::fabs(cov[j][k] - sjk), 5.0L * std::sqrt((sjj * skk + sjk * sjk) / n))
            << "cov(E_" << j << ", E_" << k << ")";
      }
    }
  }
}

// ---- positive definiteness is a property of the correlations, not of the units ----

// Incomes (sd 2e4) next to a rate (sd 0.005), correlation 0.3: each pivot is judged against its own
// variable's variance, so the verdict does not depend on the units (a rate in fractions, not percent).
TEST(NoiseErrors, PositiveDefiniteCovarianceWithVariablesOnVeryDifferentScalesIsAccepted) {
  NumericData x = synthetic_data(1000, 2, 39);
  NumericData g = synthetic_data(1000, 5, 40);
  for (std::size_t i = 0; i < 1000; ++i)
    x.columns[1][i] = 0.03 + 0.005 * (0.3 * (x.columns[0][i] - 1e5) / 2e4 + 0.95 * (g.columns[4][i] - 0.5) / 0.2);
  const LongMatrix sigma = sample_covariance(to_long(x.columns));
  for (NoiseMethod method : {NoiseMethod::kCorrelated, NoiseMethod::kExact}) {
    NoiseRun run;
    ASSERT_NO_THROW(run = run_noise(x, 2, {.method = method, .percent = 150.0}));
    if (method == NoiseMethod::kExact)
      expect_covariance_near(sample_covariance(difference(run.released, x.columns)), scaled(sigma, 1.5L),
                             kExactRelative, "cov(E) vs c·Σ");
  }
}

TEST(NoiseErrors, SameDataInCommensurateUnitsIsAccepted) {
  // The control of the disabled test above: the rate in percent (sd 0.5) passes the pivot threshold.
  NumericData x = synthetic_data(1000, 2, 39);
  NumericData g = synthetic_data(1000, 5, 40);
  for (std::size_t i = 0; i < 1000; ++i)
    x.columns[1][i] = 3.0 + 0.5 * (0.3 * (x.columns[0][i] - 1e5) / 2e4 + 0.95 * (g.columns[4][i] - 0.5) / 0.2);
  const LongMatrix sigma = sample_covariance(to_long(x.columns));
  NoiseRun run;
  ASSERT_NO_THROW(run = run_noise(x, 2, {.method = NoiseMethod::kExact, .percent = 150.0}));
  expect_covariance_near(sample_covariance(difference(run.released, x.columns)), scaled(sigma, 1.5L), kExactRelative,
                         "cov(E) vs c·Σ");
}

// ---- 7. errors and the zero percent ----

TEST(NoiseErrors, ConstantVariableThrowsParameterErrorForCorrelatedAndExact) {
  NumericData x = synthetic_data(200, 3, 35);
  std::fill(x.columns[1].begin(), x.columns[1].end(), 40.0);
  const NoiseOptions options[] = {
      {.method = NoiseMethod::kCorrelated, .percent = 150.0},
      {.method = NoiseMethod::kExact, .percent = 150.0},
      {.method = NoiseMethod::kExact, .percent = 50.0, .orthogonal = true},
  };
  for (const NoiseOptions& option : options) EXPECT_THROW(run_noise(x, 1, option), ParameterError);
  // Additive noise scales each variable by its own sd: a constant variable stays as it is.
  const NoiseRun additive = run_noise(x, 1, {.method = NoiseMethod::kAdditive, .percent = 150.0});
  for (std::size_t i = 0; i < 200; ++i) EXPECT_EQ(additive.released[1][i], 40.0);
}

TEST(NoiseErrors, VariableThatIsALinearFunctionOfOthersThrowsParameterError) {
  NumericData x = synthetic_data(200, 3, 36);
  for (std::size_t i = 0; i < 200; ++i) x.columns[2][i] = 2.0 * x.columns[0][i] - 3.0 * x.columns[1][i];
  EXPECT_THROW(run_noise(x, 1, {.method = NoiseMethod::kCorrelated, .percent = 150.0}), ParameterError);
  EXPECT_THROW(run_noise(x, 1, {.method = NoiseMethod::kExact, .percent = 150.0}), ParameterError);
}

TEST(NoiseErrors, OrthogonalNeedsMoreThanTwicePRecords) {
  for (std::size_t p : {1U, 3U, 5U}) {
    const NumericData at_bound = synthetic_data(2 * p, p, 37);
    try {
      run_noise(at_bound, 1, {.method = NoiseMethod::kExact, .percent = 150.0, .orthogonal = true});
      ADD_FAILURE() << "n = 2p = " << 2 * p << " did not throw";
    } catch (const ParameterError& error) {
      EXPECT_NE(std::string(error.what()).find("2p = " + std::to_string(2 * p)), std::string::npos) << error.what();
    }
    const NumericData below = synthetic_data(p + 1, p, 37);
    EXPECT_THROW(run_noise(below, 1, {.method = NoiseMethod::kExact, .percent = 150.0, .orthogonal = true}),
                 ParameterError);
    // One record more is enough, and the exact properties hold there as well.
    const NumericData above = synthetic_data(2 * p + 1, p, 37);
    const NoiseRun run = run_noise(above, 1, {.method = NoiseMethod::kExact, .percent = 150.0, .orthogonal = true});
    const LongColumns xl = to_long(above.columns);
    const LongMatrix sigma = sample_covariance(xl);
    const LongColumns e = difference(run.released, above.columns);
    expect_covariance_near(sample_covariance(e), scaled(sigma, 1.5L), 1e-10L, "cov(E) at n = 2p + 1");
    const LongMatrix cross = sample_cross_covariance(xl, e);
    for (std::size_t j = 0; j < p; ++j) {
      for (std::size_t k = 0; k < p; ++k)
        EXPECT_LE(std::fabs(cross[j][k]), 1e-10L * std::sqrt(sigma[j][j] * 1.5L * sigma[k][k]));
    }
    // Without `orthogonal`, exact noise needs only n > p.
    EXPECT_NO_THROW(run_noise(at_bound, 1, {.method = NoiseMethod::kExact, .percent = 150.0}));
  }
}

TEST(NoiseErrors, ZeroPercentReleasesXUnchanged) {
  const NumericData x = synthetic_data(400, 4, 38);
  const NoiseOptions options[] = {
      {.method = NoiseMethod::kAdditive, .percent = 0.0},
      {.method = NoiseMethod::kCorrelated, .percent = 0.0},
      {.method = NoiseMethod::kExact, .percent = 0.0},
      {.method = NoiseMethod::kExact, .percent = 0.0, .orthogonal = true},
  };
  for (const NoiseOptions& option : options) {
    const NoiseRun run = run_noise(x, 6, option);
    EXPECT_EQ(run.map.c, 0.0);
    for (std::size_t j = 0; j < 4; ++j) {
      for (std::size_t i = 0; i < 400; ++i)
        EXPECT_TRUE(same_bits(run.released[j][i], x.columns[j][i])) << "variable " << j << ", record " << i;
    }
  }
}

// ---- 8. restoring the covariance after microaggregation (perturbation.md §3) ----

/// A simple first stage: records sorted by the variables `sort_by` (then by position), groups of `k`
/// consecutive records (the last one takes the remainder), the variables `aggregated` replaced by their
/// group means; the others stay as they are.
NumericData microaggregated(const NumericData& x, std::size_t k, const std::vector<std::size_t>& sort_by,
                            const std::vector<std::size_t>& aggregated) {
  const std::size_t n = x.row_ids.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    for (std::size_t j : sort_by)
      if (x.columns[j][a] != x.columns[j][b]) return x.columns[j][a] < x.columns[j][b];
    return a < b;
  });
  NumericData out = x;
  for (std::size_t first = 0; first < n; first += k) {
    const std::size_t end = n - first < 2 * k ? n : first + k;
    for (std::size_t j : aggregated) {
      long double sum = 0.0L;
      for (std::size_t r = first; r < end; ++r) sum += x.columns[j][order[r]];
      const auto mean = static_cast<double>(sum / static_cast<long double>(end - first));
      for (std::size_t r = first; r < end; ++r) out.columns[j][order[r]] = mean;
    }
    if (end == n) break;
  }
  return out;
}

struct RestoreRun {
  NumericData z;
  RestoreTarget target;
  NoiseMap map;
  std::vector<std::vector<double>> released;
};

RestoreRun run_restore(const NumericData& original, const NumericData& input, std::uint64_t seed,
                       const NoiseOptions& options) {
  RestoreRun run;
  const std::size_t p = input.columns.size();
  const auto size = static_cast<Eigen::Index>(p);
  run.z = noise_normals(input.row_ids, p, seed);
  const distance::Moments joint =
      distance::moments_finalize(distance::moments_local(joint_columns(input.view(), run.z.view())));
  const distance::Moments reference = distance::moments_finalize(distance::moments_local(original.view()));
  run.target = restore_target(reference.covariance, joint.covariance.topLeftCorner(size, size));
  run.map = restore_covariance_map(joint, p, run.target, options);
  run.released = apply_noise(input.view(), run.z.view(), run.map);
  return run;
}

LongMatrix to_long(const Eigen::MatrixXd& m) {
  LongMatrix out(static_cast<std::size_t>(m.rows()), std::vector<long double>(static_cast<std::size_t>(m.cols())));
  for (Eigen::Index j = 0; j < m.rows(); ++j) {
    for (Eigen::Index k = 0; k < m.cols(); ++k) out[static_cast<std::size_t>(j)][static_cast<std::size_t>(k)] = m(j, k);
  }
  return out;
}

/// Every entry of `actual` within relative · sqrt(scale_jj · scale_kk) of `target`: `scale` is the
/// original's covariance where the target is singular (a zero pivot has no scale of its own).
void expect_covariance_within(const LongMatrix& actual, const LongMatrix& target, const LongMatrix& scale,
                              long double relative, const std::string& what) {
  ASSERT_EQ(actual.size(), target.size());
  for (std::size_t j = 0; j < target.size(); ++j) {
    for (std::size_t k = 0; k < target.size(); ++k) {
      const long double tolerance = relative * std::sqrt(scale[j][j] * scale[k][k]);
      EXPECT_LE(std::fabs(actual[j][k] - target[j][k]), tolerance)
          << what << " entry (" << j << ", " << k << "): " << static_cast<double>(actual[j][k]) << " vs "
          << static_cast<double>(target[j][k]);
    }
  }
}

/// The rotation by `angle` of diag(a, b), in the scale of sds (s1, s2): s · R diag(a, b) Rᵀ · s.
Eigen::Matrix2d scaled_rotation(double a, double b, double angle, double s1, double s2) {
  Eigen::Matrix2d r;
  r << std::cos(angle), -std::sin(angle), std::sin(angle), std::cos(angle);
  const Eigen::Matrix2d m = r * Eigen::Vector2d(a, b).asDiagonal() * r.transpose();
  return Eigen::Vector2d(s1, s2).asDiagonal() * m * Eigen::Vector2d(s1, s2).asDiagonal();
}

TEST(RestoreTarget, IsTheDifferenceOfTheCovariancesWhenItIsPositiveSemiDefinite) {
  Eigen::Matrix3d original;
  original << 4e8, 1.2e5, 3e7, 1.2e5, 144.0, 2e4, 3e7, 2e4, 1e8;
  const Eigen::Matrix3d input = 0.7 * original;  // D = 0.3 · original: positive definite
  const RestoreTarget target = restore_target(original, input);
  EXPECT_EQ(target.clipped, 0U);
  EXPECT_EQ(target.clipped_mass, 0.0);
  expect_same_bits(target.target, original - input, "the target is D itself");
  // In the scale of the original's sds, D is 0.3 times a correlation matrix: its eigenvalues sum to 0.9.
  EXPECT_NEAR(target.eigenvalues.sum(), 0.9, 1e-14);
  const Eigen::MatrixXd product = target.factor * target.factor.transpose();
  expect_covariance_near(to_long(product), to_long(target.target), 1e-14L, "F Fᵀ vs D");
}

TEST(RestoreTarget, ClipsNegativeEigenvaluesAndReportsTheirCountAndMass) {
  // In the scale of the original's sds (2e4 and 12), D is R diag(0.5, −0.2) Rᵀ: one negative eigenvalue.
  const double s1 = 2e4;
  const double s2 = 12.0;
  Eigen::Matrix2d original;
  original << s1 * s1, 0.6 * s1 * s2, 0.6 * s1 * s2, s2 * s2;
  const Eigen::Matrix2d difference = scaled_rotation(0.5, -0.2, 0.4, s1, s2);
  const RestoreTarget target = restore_target(original, original - difference);
  EXPECT_EQ(target.clipped, 1U);
  EXPECT_NEAR(target.clipped_mass, 0.2, 1e-14);
  EXPECT_NEAR(target.eigenvalues(0), -0.2, 1e-14);
  EXPECT_NEAR(target.eigenvalues(1), 0.5, 1e-14);
  // The projection keeps the positive part: s · R diag(0.5, 0) Rᵀ · s, and F Fᵀ equals it.
  const Eigen::Matrix2d expected = scaled_rotation(0.5, 0.0, 0.4, s1, s2);
  expect_covariance_near(to_long(target.target), to_long(expected), 1e-14L, "D₊ vs the positive part");
  expect_covariance_near(to_long(Eigen::MatrixXd(target.factor * target.factor.transpose())), to_long(expected), 1e-14L,
                         "F Fᵀ vs D₊");
  // What was clipped is the nearest positive semi-definite matrix's distance in the sds' scale.
  const Eigen::Matrix2d unscale = Eigen::Vector2d(1.0 / s1, 1.0 / s2).asDiagonal();
  EXPECT_NEAR((unscale * (difference - target.target) * unscale).norm(), 0.2, 1e-14);
}

TEST(RestoreTarget, FactorsASingularDifferenceWithAZeroPivotWithoutCholesky) {
  // The first variable's covariance is fully restored already: D has a zero row, no Cholesky factor.
  Eigen::Matrix3d original;
  original << 9.0, 2.0, 1.0, 2.0, 16.0, 3.0, 1.0, 3.0, 25.0;
  Eigen::Matrix3d difference;
  difference << 0.0, 0.0, 0.0, 0.0, 2.0, 1.0, 0.0, 1.0, 3.0;
  const RestoreTarget target = restore_target(original, original - difference);
  EXPECT_NE(Eigen::LLT<Eigen::MatrixXd>(target.difference).info(), Eigen::Success)
      << "no Cholesky factor of a matrix with a zero pivot";
  EXPECT_LE(target.clipped_mass, 1e-15);
  const Eigen::MatrixXd product = target.factor * target.factor.transpose();
  const LongMatrix scale = to_long(Eigen::MatrixXd(original));
  expect_covariance_within(to_long(product), to_long(difference), scale, 1e-15L, "F Fᵀ vs D");
  for (Eigen::Index k = 0; k < 3; ++k) EXPECT_LE(std::fabs(target.factor(0, k)), 1e-15 * 3.0) << "row 0 of F";
}

TEST(RestoreTarget, DoesNotDependOnTheVariablesUnits) {
  const Eigen::Matrix2d original = (Eigen::Matrix2d() << 4.0, 1.2, 1.2, 1.0).finished();
  const Eigen::Matrix2d difference = scaled_rotation(0.3, -0.1, 0.7, 2.0, 1.0);
  const RestoreTarget plain = restore_target(original, original - difference);
  // The second variable in thousandths: covariances scale by 1e3 and 1e6, the eigenvalues do not.
  const Eigen::Matrix2d units = Eigen::Vector2d(1.0, 1e3).asDiagonal();
  const RestoreTarget rescaled = restore_target(units * original * units, units * (original - difference) * units);
  EXPECT_EQ(rescaled.clipped, plain.clipped);
  EXPECT_NEAR(rescaled.clipped_mass, plain.clipped_mass, 1e-14);
  for (Eigen::Index k = 0; k < 2; ++k) EXPECT_NEAR(rescaled.eigenvalues(k), plain.eigenvalues(k), 1e-14);
  expect_covariance_near(to_long(Eigen::MatrixXd(rescaled.target)),
                         to_long(Eigen::MatrixXd(units * plain.target * units)), 1e-13L, "D₊ in other units");
}

TEST(RestoreCovarianceNoise, ExactHasSampleMeanZeroAndCovarianceDForAnySeed) {
  for (const Shape shape : kShapes) {
    if (shape.n < 1000) continue;  // groups of 3 need more records than variables
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      const NumericData original = synthetic_data(shape.n, shape.p, 9500 + seed);
      std::vector<std::size_t> all(shape.p);
      for (std::size_t j = 0; j < shape.p; ++j) all[j] = j;
      const NumericData input = microaggregated(original, 3, {0}, all);
      const LongMatrix sigma = sample_covariance(to_long(original.columns));
      for (bool orthogonal : {false, true}) {
        SCOPED_TRACE("n = " + std::to_string(shape.n) + ", p = " + std::to_string(shape.p) +
                     ", seed = " + std::to_string(seed) + (orthogonal ? ", orthogonal" : ""));
        const RestoreRun run = run_restore(original, input, seed,
                                           {.method = NoiseMethod::kRestoreCovarianceExact, .orthogonal = orthogonal});
        EXPECT_EQ(run.target.clipped, 0U) << "the scatter within groups is positive semi-definite";
        EXPECT_EQ(run.map.c, 0.0);
        EXPECT_FALSE(run.map.restore_variance);
        const LongMatrix target = to_long(run.target.target);
        const LongColumns e = difference(run.released, input.columns);
        const std::vector<long double> mean = sample_means(e);
        for (std::size_t j = 0; j < shape.p; ++j)
          EXPECT_LE(std::fabs(mean[j]), kExactRelative * std::sqrt(target[j][j])) << "mean of E_" << j;
        expect_covariance_near(sample_covariance(e), target, kExactRelative, "cov(E) vs D");
        if (!orthogonal) continue;
        const LongColumns xl = to_long(input.columns);
        const LongMatrix cross = sample_cross_covariance(xl, e);
        const LongMatrix input_sigma = sample_covariance(xl);
        for (std::size_t j = 0; j < shape.p; ++j) {
          for (std::size_t k = 0; k < shape.p; ++k)
            EXPECT_LE(std::fabs(cross[j][k]), kExactRelative * std::sqrt(input_sigma[j][j] * target[k][k]))
                << "cov(X_" << j << ", E_" << k << ")";
        }
        expect_covariance_near(sample_covariance(to_long(run.released)), sigma, kExactRelative,
                               "cov(X + E) vs Cov(original)");
      }
    }
  }
}

TEST(RestoreCovarianceNoise, RestoresAVariableTheFirstStageLeftAloneWithAZeroPivot) {
  // v1 takes 7 values, each on a multiple of 3 records, and the groups form within them: v1 is left
  // alone and constant within each group, so D's first row is 0 (exactly its diagonal: the same sums).
  constexpr std::size_t kRecords = 2100;
  NumericData original = synthetic_data(kRecords, 3, 77);
  for (std::size_t i = 0; i < kRecords; ++i) {
    const auto level = static_cast<double>((i / 30) % 7);
    original.columns[0][i] = 1.0 + level;
    original.columns[1][i] += 5.0 * level;
  }
  const NumericData input = microaggregated(original, 3, {0, 1}, {1, 2});
  const LongMatrix sigma = sample_covariance(to_long(original.columns));
  const RestoreRun run =
      run_restore(original, input, 5, {.method = NoiseMethod::kRestoreCovarianceExact, .orthogonal = true});
  EXPECT_EQ(run.target.difference(0, 0), 0.0);
  EXPECT_LE(run.target.clipped_mass, 1e-12) << "nothing but rounding clipped";
  const LongColumns e = difference(run.released, input.columns);
  expect_covariance_within(sample_covariance(e), to_long(run.target.target), sigma, kExactRelative, "cov(E) vs D");
  expect_covariance_near(sample_covariance(to_long(run.released)), sigma, kExactRelative,
                         "cov(X + E) vs Cov(original)");
  for (std::size_t i = 0; i < kRecords; ++i)
    EXPECT_LE(std::fabs(static_cast<double>(e[0][i])), 1e-6 * std::sqrt(static_cast<double>(sigma[0][0])))
        << "v1 gets no noise, record " << i;
}

TEST(RestoreCovarianceNoise, ProjectsAnIndefiniteDifferenceAndHitsTheProjectionExactly) {
  // v1 is left alone but varies within the groups formed on v2: D has a zero diagonal entry with a
  // non-zero row, which no positive semi-definite matrix has.
  const NumericData original = synthetic_data(3000, 3, 78);
  const NumericData input = microaggregated(original, 3, {1}, {1, 2});
  const LongMatrix sigma = sample_covariance(to_long(original.columns));
  const RestoreRun run = run_restore(original, input, 6, {.method = NoiseMethod::kRestoreCovarianceExact});
  EXPECT_GE(run.target.clipped, 1U);
  long double negative = 0.0L;
  for (Eigen::Index k = 0; k < run.target.eigenvalues.size(); ++k)
    if (run.target.eigenvalues(k) < 0.0) negative -= run.target.eigenvalues(k);
  EXPECT_GT(run.target.clipped_mass, 1e-6);
  EXPECT_NEAR(run.target.clipped_mass, static_cast<double>(negative), 1e-15);
  // The projection is positive semi-definite (to rounding, in the scale of the sds).
  Eigen::Vector3d scale;
  for (Eigen::Index j = 0; j < 3; ++j)
    scale(j) = 1.0 / std::sqrt(static_cast<double>(sigma[static_cast<std::size_t>(j)][static_cast<std::size_t>(j)]));
  const Eigen::MatrixXd scaled = scale.asDiagonal() * run.target.target * scale.asDiagonal();
  EXPECT_GE(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(scaled).eigenvalues().minCoeff(), -1e-14);
  const LongColumns e = difference(run.released, input.columns);
  expect_covariance_within(sample_covariance(e), to_long(run.target.target), sigma, kExactRelative, "cov(E) vs D₊");
}

TEST(RestoreCovarianceNoise, RandomDrawsHaveCovarianceDWithinSamplingErrorOver200000Records) {
  constexpr std::size_t kRecords = 200000;
  const NumericData original = synthetic_data(kRecords, 3, 79);
  const NumericData input = microaggregated(original, 3, {0}, {0, 1, 2});
  const RestoreRun run = run_restore(original, input, 7, {.method = NoiseMethod::kRestoreCovariance});
  EXPECT_TRUE(run.map.z_mean.isZero(0.0));
  EXPECT_TRUE(run.map.regression.isZero(0.0));
  const LongMatrix target = to_long(run.target.target);
  const LongColumns e = difference(run.released, input.columns);
  const LongMatrix cov = sample_covariance(e);
  const std::vector<long double> mean = sample_means(e);
  const long double n = static_cast<long double>(kRecords);
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_LE(std::fabs(mean[j]), 5.0L * std::sqrt(target[j][j] / n)) << "mean of E_" << j;
    for (std::size_t k = 0; k < 3; ++k)
      EXPECT_LE(std::fabs(cov[j][k] - target[j][k]),
                5.0L * std::sqrt((target[j][j] * target[k][k] + target[j][k] * target[j][k]) / n))
          << "cov(E_" << j << ", E_" << k << ")";
  }
}

TEST(RestoreCovarianceNoise, MapHasTheSameBitsForMomentsFromOneOrManyBlocks) {
  const NumericData original = synthetic_data(1003, 4, 80);
  const NumericData input = microaggregated(original, 3, {0}, {0, 1, 2, 3});
  const NumericData z = noise_normals(input.row_ids, 4, 99);
  const std::vector<std::vector<std::size_t>> splits = {{0, 1003}, {0, 500, 1003}, {0, 2, 150, 151, 400, 1000, 1003}};
  auto map_of = [&](const std::vector<std::size_t>& bounds, bool reverse, const NoiseOptions& options) {
    std::vector<distance::MomentsPartial> originals;
    for (std::size_t b = 0; b + 1 < bounds.size(); ++b)
      originals.push_back(distance::moments_local(rows_of(original, bounds[b], bounds[b + 1])));
    if (reverse) std::reverse(originals.begin(), originals.end());
    distance::MomentsPartial total;
    for (const auto& partial : originals) distance::moments_merge(total, partial);
    const distance::Moments joint = merged_moments(input, z, bounds, reverse);
    const RestoreTarget target =
        restore_target(distance::moments_finalize(total).covariance, joint.covariance.topLeftCorner(4, 4));
    return restore_covariance_map(joint, 4, target, options);
  };
  for (const NoiseOptions& options :
       {NoiseOptions{.method = NoiseMethod::kRestoreCovariance},
        NoiseOptions{.method = NoiseMethod::kRestoreCovarianceExact, .orthogonal = true}}) {
    const NoiseMap whole = map_of(splits[0], false, options);
    for (std::size_t s = 1; s < splits.size(); ++s) {
      for (bool reverse : {false, true})
        expect_same_map(whole, map_of(splits[s], reverse, options),
                        std::to_string(splits[s].size() - 1) + " blocks" + (reverse ? ", reversed" : ""));
    }
  }
}

TEST(RestoreCovarianceNoise, OrthogonalRefusesTooFewRecordsAndASingularInputCovariance) {
  const NumericData original = synthetic_data(6, 3, 81);
  EXPECT_THROW(run_restore(original, original, 1, {.method = NoiseMethod::kRestoreCovarianceExact, .orthogonal = true}),
               ParameterError);
  // A variable the first stage made constant: Σ of the input has no inverse for the regression.
  const NumericData larger = synthetic_data(300, 3, 82);
  NumericData input = microaggregated(larger, 3, {0}, {0, 1});
  std::fill(input.columns[2].begin(), input.columns[2].end(), 3.0);
  try {
    run_restore(larger, input, 1, {.method = NoiseMethod::kRestoreCovarianceExact, .orthogonal = true});
    ADD_FAILURE() << "a constant input variable did not throw";
  } catch (const ParameterError& error) {
    EXPECT_NE(std::string(error.what()).find("the covariance matrix of the input's variables"), std::string::npos)
        << error.what();
  }
  // Without `orthogonal` the same data are fine: the noise alone restores that variable's variance.
  const RestoreRun run = run_restore(larger, input, 1, {.method = NoiseMethod::kRestoreCovarianceExact});
  expect_covariance_near(sample_covariance(difference(run.released, input.columns)), to_long(run.target.target),
                         kExactRelative, "cov(E) vs D");
}

}  // namespace
}  // namespace sdc::perturbation
