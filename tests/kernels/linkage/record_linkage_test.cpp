#include "kernels/linkage/record_linkage.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "tests/kernels/support/reference_data.h"

namespace sdc::linkage {
namespace {

NumericData make_data(std::vector<std::vector<double>> columns) {
  NumericData data;
  for (std::size_t j = 0; j < columns.size(); ++j) data.names.push_back("v" + std::to_string(j + 1));
  data.columns = std::move(columns);
  for (std::size_t i = 0; i < data.columns.front().size(); ++i) data.row_ids.push_back(static_cast<std::int64_t>(i));
  return data;
}

/// Correlated variables and a perturbed copy: x = mix·z, masked = x + noise.
std::pair<NumericData, NumericData> correlated_pair(std::size_t n, std::size_t p, double noise, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> draw;
  std::vector<std::vector<double>> original(p, std::vector<double>(n));
  std::vector<std::vector<double>> masked(p, std::vector<double>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const double common = draw(engine);
    for (std::size_t j = 0; j < p; ++j) {
      original[j][i] = 10.0 * static_cast<double>(j + 1) * (common + 0.3 * draw(engine)) + 100.0;
      masked[j][i] = original[j][i] + noise * draw(engine);
    }
  }
  return {make_data(std::move(original)), make_data(std::move(masked))};
}

std::vector<std::int64_t> raw_euclidean_nearest(const NumericData& original, const NumericData& masked) {
  const auto a = distance::make_point_set(original.view());
  const auto b = distance::make_point_set(masked.view());
  std::vector<std::int64_t> ids;
  for (const auto& nearest : distance::nearest_partial(a, b)) ids.push_back(nearest.ties.front());
  return ids;
}

void expect_same(const LinkageResult& x, const LinkageResult& y) {
  EXPECT_EQ(x.records, y.records);
  EXPECT_EQ(x.strict, y.strict);
  EXPECT_EQ(x.optimistic, y.optimistic);
  EXPECT_EQ(x.fractional, y.fractional);
  EXPECT_EQ(x.linked, y.linked);
  EXPECT_EQ(x.tie_size, y.tie_size);
  EXPECT_EQ(x.nearest_id, y.nearest_id);
  EXPECT_EQ(x.nearest_distance, y.nearest_distance);
}

const LinkageDistance kAllDistances[] = {LinkageDistance::kDbrl1,           LinkageDistance::kDbrl1Common,
                                         LinkageDistance::kDbrl2,           LinkageDistance::kMahalanobisCov,
                                         LinkageDistance::kMahalanobisCov0, LinkageDistance::kKernel};

TEST(ARecordLinkage, GivesFractionalCreditForTies) {
  const auto original = make_data({{1, 2, 3, 10, 11, 12}});
  const auto masked = make_data({{2, 2, 2, 11, 11, 11}});
  for (const auto distance : kAllDistances) {
    LinkageOptions options;
    options.distance = distance;
    options.kernel_degree = 1;
    const auto result = record_linkage(original.view(), masked.view(), options);
    EXPECT_EQ(result.strict, 0) << static_cast<int>(distance);
    EXPECT_EQ(result.fractional, 2.0) << static_cast<int>(distance);
    EXPECT_EQ(result.optimistic, 6) << static_cast<int>(distance);
    EXPECT_DOUBLE_EQ(result.fractional_rate(), 1.0 / 3.0);
    EXPECT_EQ(result.tie_size, (std::vector<std::int64_t>{3, 3, 3, 3, 3, 3}));
  }
}

TEST(ARecordLinkage, LinksMaskedToOriginalWhenAsked) {
  const auto original = make_data({{1, 2, 3, 10, 11, 12}});
  const auto masked = make_data({{2, 2, 2, 11, 11, 11}});
  LinkageOptions options;
  options.direction = LinkageDirection::kMaskedToOriginal;
  options.distance = LinkageDistance::kDbrl1Common;
  const auto result = record_linkage(original.view(), masked.view(), options);
  // Each masked 2 (or 11) is nearest to the original 2 (or 11) alone: rows 1 and 4 link.
  EXPECT_EQ(result.strict, 2);
  EXPECT_EQ(result.optimistic, 2);
  EXPECT_EQ(result.fractional, 2.0);
  EXPECT_EQ(result.nearest_id, (std::vector<std::int64_t>{1, 1, 1, 4, 4, 4}));
}

TEST(ARecordLinkage, GivesTheRawEuclideanLinksForOneVariableWithEveryScaledDistance) {
  auto [original, masked] = correlated_pair(2000, 1, 3.0, 41);
  const auto expected = raw_euclidean_nearest(original, masked);
  for (const auto distance : {LinkageDistance::kDbrl2, LinkageDistance::kMahalanobisCov,
                              LinkageDistance::kMahalanobisCov0, LinkageDistance::kDbrl1Common}) {
    LinkageOptions options;
    options.distance = distance;
    const auto result = record_linkage(original.view(), masked.view(), options);
    EXPECT_EQ(result.nearest_id, expected) << static_cast<int>(distance);
    EXPECT_EQ(result.regularisation_epsilon, 0.0);
  }
}

TEST(ARecordLinkage, GivesTheDbrl1NeighboursWithAKernelOfDegreeOne) {
  auto [original, masked] = correlated_pair(1500, 3, 2.0, 43);
  LinkageOptions options;
  const auto dbrl1 = record_linkage(original.view(), masked.view(), options);
  options.distance = LinkageDistance::kKernel;
  options.kernel_degree = 1;
  expect_same(record_linkage(original.view(), masked.view(), options), dbrl1);
  // The kernel formula itself equals the squared distance up to rounding.
  const auto prepared = prepare_linkage(original.view(), masked.view(), options);
  distance::DistanceSpec kernel{distance::DistanceSpec::Kind::kPolynomialKernel, 1};
  for (std::size_t i = 0; i < 50; ++i) {
    const double euclidean = distance::exact_distance(prepared.queries, i, prepared.references, i + 1, {});
    const double dot = prepared.queries.coordinates.row(static_cast<Eigen::Index>(i))
                           .dot(prepared.references.coordinates.row(static_cast<Eigen::Index>(i + 1)));
    const double formula =
        (1 + prepared.queries.squared_norms[i]) - 2 * (1 + dot) + (1 + prepared.references.squared_norms[i + 1]);
    EXPECT_NEAR(formula, euclidean, 1e-12 * (1 + euclidean));
    EXPECT_EQ(distance::exact_distance(prepared.queries, i, prepared.references, i + 1, kernel), euclidean);
  }
}

TEST(ARecordLinkage, KeepsMahalanobisLinksUnderAnInvertibleLinearMap) {
  auto [original, masked] = correlated_pair(2000, 3, 4.0, 47);
  const double map[3][3] = {{2.0, -1.0, 0.5}, {0.3, 1.5, -2.0}, {-1.0, 0.2, 0.7}};
  auto transform = [&](const NumericData& data) {
    NumericData mapped = data;
    for (std::size_t i = 0; i < data.row_ids.size(); ++i) {
      for (std::size_t r = 0; r < 3; ++r) {
        double value = 0.0;
        for (std::size_t c = 0; c < 3; ++c) value += map[r][c] * data.columns[c][i];
        mapped.columns[r][i] = value;
      }
    }
    return mapped;
  };
  const auto mapped_original = transform(original);
  const auto mapped_masked = transform(masked);
  for (const auto distance : {LinkageDistance::kMahalanobisCov, LinkageDistance::kMahalanobisCov0}) {
    LinkageOptions options;
    options.distance = distance;
    const auto before = record_linkage(original.view(), masked.view(), options);
    const auto after = record_linkage(mapped_original.view(), mapped_masked.view(), options);
    EXPECT_EQ(after.nearest_id, before.nearest_id) << static_cast<int>(distance);
    EXPECT_EQ(after.strict, before.strict);
  }
}

TEST(ARecordLinkage, GivesIdenticalResultsForAnyTileSizeAndThreadCount) {
  // Rounded values: many equal distances.
  std::mt19937_64 engine(53);
  std::uniform_int_distribution<int> draw(0, 20);
  std::vector<std::vector<double>> original(3, std::vector<double>(3000));
  std::vector<std::vector<double>> masked = original;
  for (std::size_t j = 0; j < 3; ++j) {
    for (std::size_t i = 0; i < 3000; ++i) {
      original[j][i] = draw(engine);
      masked[j][i] = original[j][i] + draw(engine) % 3 - 1;
    }
  }
  const auto a = make_data(original);
  const auto b = make_data(masked);
  for (const auto distance : kAllDistances) {
    LinkageOptions options;
    options.distance = distance;
    options.tile_rows = 64;
    const auto reference = record_linkage(a.view(), b.view(), options);
    EXPECT_GT(reference.optimistic, reference.strict);
    for (std::size_t tile : {1024UL, 4096UL}) {
      options.tile_rows = tile;
      expect_same(record_linkage(a.view(), b.view(), options), reference);
    }
    options.tile_rows = 64;
    for (int threads : {1, 2}) {
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
      expect_same(record_linkage(a.view(), b.view(), options), reference);
    }
  }
}

TEST(ARecordLinkage, CountsTheSameFromSlicesOfTheMaskedFile) {
  auto [original, masked] = correlated_pair(1200, 2, 1.0, 59);
  for (auto& column : masked.columns) {
    for (auto& value : column) value = std::round(value);
  }
  LinkageOptions options;
  options.distance = LinkageDistance::kMahalanobisCov0;
  const auto prepared = prepare_linkage(original.view(), masked.view(), options);
  const auto& references = prepared.references;
  auto part = [&](std::size_t begin, std::size_t end) {
    distance::CoordinateMatrix rows =
        references.coordinates.middleRows(static_cast<Eigen::Index>(begin), static_cast<Eigen::Index>(end - begin));
    return distance::nearest_partial(
        prepared.queries,
        distance::make_point_set(std::move(rows), {references.ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                                   references.ids.begin() + static_cast<std::ptrdiff_t>(end)}),
        prepared.tiles);
  };
  auto merged = part(700, 1200);
  distance::nearest_merge(merged, part(0, 300));
  distance::nearest_merge(merged, part(300, 700));
  expect_same(linkage_count(prepared.queries.ids, merged), record_linkage(original.view(), masked.view(), options));
}

TEST(ARecordLinkage, TransformsABlockWithMergedMomentsAsTheWholeFile) {
  auto [original, masked] = correlated_pair(900, 3, 1.0, 67);
  auto rows = [](const NumericData& data, std::size_t begin, std::size_t end) {
    NumericData part;
    part.names = data.names;
    for (const auto& column : data.columns) {
      part.columns.emplace_back(column.begin() + static_cast<std::ptrdiff_t>(begin),
                                column.begin() + static_cast<std::ptrdiff_t>(end));
    }
    part.row_ids.assign(data.row_ids.begin() + static_cast<std::ptrdiff_t>(begin),
                        data.row_ids.begin() + static_cast<std::ptrdiff_t>(end));
    return part;
  };
  const auto original_head = rows(original, 0, 400);
  const auto masked_head = rows(masked, 0, 400);
  for (const auto distance : kAllDistances) {
    LinkageOptions options;
    options.distance = distance;
    auto total = linkage_moments_local(rows(original, 400, 900).view(), rows(masked, 400, 900).view(), options);
    linkage_moments_merge(total, linkage_moments_local(original_head.view(), masked_head.view(), options));
    const auto block = prepare_linkage_with(total, original_head.view(), masked_head.view(), options);
    const auto whole = prepare_linkage(original.view(), masked.view(), options);
    EXPECT_TRUE((block.queries.coordinates.array() == whole.queries.coordinates.topRows(400).array()).all());
    EXPECT_TRUE((block.references.coordinates.array() == whole.references.coordinates.topRows(400).array()).all());
  }
}

TEST(ARecordLinkage, RegularisesASingularCovarianceAndSaysSo) {
  std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<double> doubled;
  for (double value : x) doubled.push_back(2 * value);
  const auto original = make_data({x, doubled});
  const auto masked =
      make_data({{1.2, 2.1, 2.9, 4.2, 5.1, 5.8, 7.3, 7.9}, {2.4, 4.2, 5.8, 8.4, 10.2, 11.6, 14.6, 15.8}});
  LinkageOptions options;
  options.distance = LinkageDistance::kMahalanobisCov0;
  const auto result = record_linkage(original.view(), masked.view(), options);
  EXPECT_GT(result.regularisation_epsilon, 0.0);
  EXPECT_EQ(result.optimistic, 8);
}

TEST(ARecordLinkage, RejectsFilesThatAreNotAligned) {
  auto original = make_data({{1, 2, 3}});
  auto masked = make_data({{1, 2, 3}});
  masked.row_ids = {0, 5, 2};
  try {
    record_linkage(original.view(), masked.view());
    FAIL() << "misaligned files passed";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("row id 1"), std::string::npos) << error.what();
  }
  const auto shorter = make_data({{1, 2}});
  EXPECT_THROW(record_linkage(original.view(), shorter.view()), InvalidInput);
  const auto wider = make_data({{1, 2, 3}, {4, 5, 6}});
  EXPECT_THROW(record_linkage(original.view(), wider.view()), ParameterError);
}

TEST(ARecordLinkage, RejectsAMissingValueNamingTheVariableAndRow) {
  const auto original = make_data({{1, 2, 3}, {4, 5, 6}});
  auto masked = make_data({{1, 2, 3}, {4, std::numeric_limits<double>::quiet_NaN(), 6}});
  masked.names = {"income", "rent"};
  try {
    record_linkage(original.view(), masked.view());
    FAIL() << "a missing value passed";
  } catch (const InvalidInput& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'rent'"), std::string::npos) << message;
    EXPECT_NE(message.find("row id 1"), std::string::npos) << message;
  }
}

// Approximate oracle (docs/methods/linkage.md §6): on strongly correlated quasi-identifiers with a
// perturbation along their common direction, Mahalanobis COV0 links far more than DBRL1.
TEST(ARecordLinkage, LinksFarMoreWithMahalanobisOnCorrelatedEiaVariables) {
  const auto eia =
      testing::read_reference_csv("EIA.csv", {"RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "TOTREVENUE"});
  if (!eia) GTEST_SKIP() << "shared reference data absent";
  const NumericData& original = *eia;
  std::mt19937_64 engine(61);
  std::normal_distribution<double> draw;
  NumericData masked = original;
  for (std::size_t i = 0; i < original.row_ids.size(); ++i) {
    const double shared = draw(engine);
    for (auto& column : masked.columns) column[i] += 0.5 * shared * std::fabs(column[i]);
  }
  LinkageOptions options;
  const auto dbrl1 = record_linkage(original.view(), masked.view(), options);
  options.distance = LinkageDistance::kMahalanobisCov0;
  const auto cov0 = record_linkage(original.view(), masked.view(), options);
  std::printf("EIA %zu records: DBRL1 fractional %.1f, COV0 fractional %.1f (epsilon %g)\n", original.row_ids.size(),
              dbrl1.fractional, cov0.fractional, cov0.regularisation_epsilon);
  EXPECT_GT(cov0.fractional, dbrl1.fractional);
}

}  // namespace
}  // namespace sdc::linkage
