#include "kernels/distance/pairwise_tiles.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::distance {
namespace {

/// n points with p integer coordinates in 0 … levels − 1: many exact duplicates and equal distances.
PointSet integer_points(std::size_t n, std::size_t p, int levels, std::uint64_t seed, std::int64_t first_id) {
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<int> draw(0, levels - 1);
  CoordinateMatrix coordinates(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(p));
  for (Eigen::Index i = 0; i < coordinates.rows(); ++i) {
    for (Eigen::Index j = 0; j < coordinates.cols(); ++j) coordinates(i, j) = draw(engine);
  }
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = first_id + static_cast<std::int64_t>(i);
  return make_point_set(std::move(coordinates), std::move(ids));
}

PointSet gaussian_points(std::size_t n, std::size_t p, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> draw;
  CoordinateMatrix coordinates(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(p));
  for (Eigen::Index i = 0; i < coordinates.rows(); ++i) {
    for (Eigen::Index j = 0; j < coordinates.cols(); ++j) coordinates(i, j) = draw(engine);
  }
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::int64_t>(i);
  return make_point_set(std::move(coordinates), std::move(ids));
}

PointSet slice(const PointSet& points, std::size_t begin, std::size_t end) {
  CoordinateMatrix coordinates =
      points.coordinates.middleRows(static_cast<Eigen::Index>(begin), static_cast<Eigen::Index>(end - begin));
  return make_point_set(std::move(coordinates), {points.ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                                 points.ids.begin() + static_cast<std::ptrdiff_t>(end)});
}

std::vector<NearestPartial> brute_force_nearest(const PointSet& a, const PointSet& b, const DistanceSpec& spec) {
  std::vector<NearestPartial> result(a.size(), NearestPartial{std::numeric_limits<double>::infinity(), {}});
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < b.size(); ++j) {
      const double d = exact_distance(a, i, b, j, spec);
      if (d < result[i].distance) {
        result[i].distance = d;
        result[i].ties.assign(1, b.ids[j]);
      } else if (d == result[i].distance) {
        result[i].ties.push_back(b.ids[j]);
      }
    }
  }
  return result;
}

void expect_same(const std::vector<NearestPartial>& x, const std::vector<NearestPartial>& y) {
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].distance, y[i].distance) << "query " << i;
    EXPECT_EQ(x[i].ties, y[i].ties) << "query " << i;
  }
}

TEST(APairwiseTileEngine, FindsTheSameTieSetsAsABruteForceDoubleLoop) {
  const auto a = integer_points(500, 3, 4, 11, 0);
  const auto b = integer_points(300, 3, 4, 12, 1000);
  const auto expected = brute_force_nearest(a, b, {});
  std::size_t largest_tie = 0;
  for (const auto& nearest : expected) largest_tie = std::max(largest_tie, nearest.ties.size());
  EXPECT_GT(largest_tie, 5U);  // the data really are full of ties
  for (std::size_t tile : {1UL, 7UL, 64UL, 1024UL}) {
    TileOptions options;
    options.tile_rows = tile;
    expect_same(nearest_partial(a, b, options), expected);
  }
}

TEST(APairwiseTileEngine, FindsTheSameKernelTieSetsAsABruteForceDoubleLoop) {
  const auto a = integer_points(200, 3, 3, 21, 0);
  const auto b = integer_points(150, 3, 3, 22, 500);
  TileOptions options;
  options.tile_rows = 32;
  options.distance.kind = DistanceSpec::Kind::kPolynomialKernel;
  options.distance.kernel_degree = 2;
  expect_same(nearest_partial(a, b, options), brute_force_nearest(a, b, options.distance));
}

TEST(APairwiseTileEngine, GivesIdenticalResultsForAnyTileSize) {
  const auto a = gaussian_points(5000, 4, 1);
  const auto b = gaussian_points(4500, 4, 2);
  TileOptions options;
  options.tile_rows = 64;
  const auto reference = nearest_partial(a, b, options);
  for (std::size_t tile : {1024UL, 4096UL}) {
    options.tile_rows = tile;
    expect_same(nearest_partial(a, b, options), reference);
  }
  const auto tied = integer_points(3000, 3, 5, 3, 0);
  const auto tied_b = integer_points(2500, 3, 5, 4, 0);
  options.tile_rows = 64;
  const auto tied_reference = nearest_partial(tied, tied_b, options);
  for (std::size_t tile : {1024UL, 4096UL}) {
    options.tile_rows = tile;
    expect_same(nearest_partial(tied, tied_b, options), tied_reference);
  }
}

TEST(APairwiseTileEngine, GivesIdenticalResultsForOneAndTwoThreads) {
  const auto a = integer_points(3000, 3, 6, 5, 0);
  const auto b = integer_points(3000, 3, 6, 6, 0);
  TileOptions options;
  options.tile_rows = 64;
  std::vector<NearestPartial> one;
  std::vector<NearestPartial> two;
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 1);
    one = nearest_partial(a, b, options);
  }
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
    two = nearest_partial(a, b, options);
  }
  expect_same(one, two);
}

TEST(APairwiseTileEngine, MergesSlicesOfTheReferenceIntoTheWholeInAnyOrder) {
  const auto a = integer_points(700, 3, 4, 7, 0);
  const auto b = integer_points(900, 3, 4, 8, 0);
  const auto whole = nearest_partial(a, b);
  const auto first = nearest_partial(a, slice(b, 0, 250));
  const auto second = nearest_partial(a, slice(b, 250, 600));
  const auto third = nearest_partial(a, slice(b, 600, 900));
  auto forward = first;
  nearest_merge(forward, second);
  nearest_merge(forward, third);
  expect_same(forward, whole);
  auto backward = third;
  auto inner = second;
  nearest_merge(inner, first);
  nearest_merge(backward, inner);
  expect_same(backward, whole);
}

TEST(APairwiseTileEngine, ReportsNoNeighbourAgainstAnEmptySlice) {
  const auto a = integer_points(3, 2, 4, 9, 0);
  const auto empty = slice(a, 0, 0);
  const auto nearest = nearest_partial(a, empty);
  ASSERT_EQ(nearest.size(), 3U);
  EXPECT_TRUE(std::isinf(nearest[0].distance));
  EXPECT_TRUE(nearest[0].ties.empty());
}

TEST(APairwiseTileEngine, FindsTheKNearestWithTiesResolvedById) {
  const auto a = integer_points(300, 2, 5, 13, 0);
  const auto b = integer_points(400, 2, 5, 14, 0);
  const std::size_t k = 7;
  TileOptions options;
  options.tile_rows = 50;
  const auto found = k_nearest(a, b, k, options);
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::vector<Neighbour> all;
    for (std::size_t j = 0; j < b.size(); ++j) all.push_back({exact_distance(a, i, b, j, {}), b.ids[j]});
    std::sort(all.begin(), all.end(), [](const Neighbour& x, const Neighbour& y) {
      return x.distance < y.distance || (x.distance == y.distance && x.id < y.id);
    });
    all.resize(k);
    ASSERT_EQ(found[i], all) << "query " << i;
  }
  auto merged = k_nearest(a, slice(b, 0, 170), k, options);
  const auto rest = k_nearest(a, slice(b, 170, 400), k, options);
  for (std::size_t i = 0; i < a.size(); ++i) {
    k_nearest_merge(merged[i], rest[i], k);
    EXPECT_EQ(merged[i], found[i]);
  }
}

TEST(APairwiseTileEngine, FindsTheFarthestPointWithTheSmallestIdAmongEquals) {
  const auto points = integer_points(1000, 2, 3, 15, 0);
  const std::vector<double> origin{0.0, 0.0};
  const auto farthest = farthest_from(points, origin);
  EXPECT_EQ(farthest.distance, 8.0);
  std::int64_t first = -1;
  for (std::size_t i = 0; i < points.size() && first < 0; ++i) {
    if (points.squared_norms[i] == 8.0) first = points.ids[i];
  }
  EXPECT_EQ(farthest.id, first);
}

TEST(APairwiseTileEngine, RejectsAMissingValueNamingTheVariableAndRow) {
  NumericData data;
  data.names = {"income", "age"};
  data.columns = {{1.0, 2.0}, {3.0, std::numeric_limits<double>::quiet_NaN()}};
  data.row_ids = {40, 41};
  try {
    sdc::require_complete(data.view(), "distances");
    FAIL() << "a missing value passed";
  } catch (const InvalidInput& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'age'"), std::string::npos) << message;
    EXPECT_NE(message.find("row id 41"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace sdc::distance
