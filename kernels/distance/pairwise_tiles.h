#pragma once
// Exact nearest neighbours between two point sets, tile by tile: the distance engine of the
// continuous methods (record linkage now; candidate lists and blocking of microaggregation later).
//
// Screening: for an A-block and a B-block one GEMM gives ‖b‖² − 2 a·b for every pair; per query a
// the engine keeps the candidates within a slack 1e−9·(‖a‖² + max‖b‖²) of its running k-th best.
// The GEMM expansion cancels and its rounding depends on the tiling, so it only chooses candidates:
// the answer comes from an exact re-check, Σ_j (a_j − b_j)² summed serially over j in double. Every
// point at the exact minimum survives the screening (the slack is many orders above the GEMM error),
// so the tie sets, distances and k nearest are the same bits for any tile size and thread count.
// Memory is one tile per thread plus the candidates, never n_A × n_B.
//
// Shape (a) for the nearest neighbours: `nearest_partial` against one slice of B, then
// `nearest_merge` (minimum, union of the tie sets) — associative and commutative, so B may be
// partitioned across ranks. `k_nearest` / `k_nearest_merge` likewise. `farthest_from` is
// element-wise with an exact, order-free reduction.

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/core/numeric_columns.h"

namespace sdc::distance {

using CoordinateMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Points after a transform (standardisation, whitening): row i is point i, contiguous.
struct PointSet {
  CoordinateMatrix coordinates;       ///< n × p
  std::vector<double> squared_norms;  ///< ‖x_i‖², summed serially over j
  std::vector<std::int64_t> ids;      ///< global row id of point i (tie sets, messages)

  std::size_t size() const noexcept { return ids.size(); }
  std::size_t dimension() const noexcept { return static_cast<std::size_t>(coordinates.cols()); }
};

/// The points of `coordinates` (finite values; validated by the caller) with their norms.
PointSet make_point_set(CoordinateMatrix coordinates, std::vector<std::int64_t> ids);
/// The untransformed columns as points (sdc::require_complete first).
PointSet make_point_set(const NumericColumns& columns);

/// Which dissimilarity the engine ranks by; both are computed from a·b, ‖a‖², ‖b‖².
struct DistanceSpec {
  enum class Kind {
    kSquaredEuclidean,  ///< Σ_j (a_j − b_j)²
    kPolynomialKernel,  ///< K(a,a) − 2K(a,b) + K(b,b), K(x,y) = (1 + x·y)^degree
  };
  Kind kind = Kind::kSquaredEuclidean;
  int kernel_degree = 2;  ///< ≥ 1; degree 1 is the squared Euclidean distance identically
};

/// A tile fits the 512 KiB second-level cache of the reference node (256 × 256 doubles).
inline constexpr std::size_t kDefaultTileRows = 256;

struct TileOptions {
  std::size_t tile_rows = kDefaultTileRows;  ///< rows of A and of B per tile; ≥ 1
  DistanceSpec distance;
};

/// The exact dissimilarity of a.row(i) and b.row(j): serial sums over j in double, fixed order.
double exact_distance(const PointSet& a, std::size_t i, const PointSet& b, std::size_t j, const DistanceSpec& distance);

/// Per query: the exact minimum over one slice of B and every point of the slice at exactly that
/// minimum (ids ascending). An empty slice gives distance +inf and no ties.
struct NearestPartial {
  double distance = 0.0;
  std::vector<std::int64_t> ties;
};

std::vector<NearestPartial> nearest_partial(const PointSet& a, const PointSet& b, const TileOptions& options = {});
/// Keeps the smaller distance; on equal distances unites the tie sets (ids ascending, no repeats).
void nearest_merge(NearestPartial& into, const NearestPartial& from);
void nearest_merge(std::vector<NearestPartial>& into, const std::vector<NearestPartial>& from);

struct Neighbour {
  double distance = 0.0;
  std::int64_t id = 0;
  friend bool operator==(const Neighbour&, const Neighbour&) = default;
};

/// The k nearest points of B to every query, ordered by (exact distance, id): ties at the k-th
/// distance are resolved by the smaller id. Fewer than k when B has fewer points.
std::vector<std::vector<Neighbour>> k_nearest(const PointSet& a, const PointSet& b, std::size_t k,
                                              const TileOptions& options = {});
/// The k first of the union by (distance, id): merging the slices of B gives the answer on all of B.
void k_nearest_merge(std::vector<Neighbour>& into, const std::vector<Neighbour>& from, std::size_t k);

/// The point farthest (squared Euclidean, exact) from `from`; among equals the smallest id. The
/// distance is −inf and the id 0 for an empty set.
Neighbour farthest_from(const PointSet& points, std::span<const double> from);

}  // namespace sdc::distance
