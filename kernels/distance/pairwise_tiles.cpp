#include "kernels/distance/pairwise_tiles.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::distance {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Relative width of the screening band: the rounding of the GEMM expansion and of the re-check are
// about p·2⁻⁵³ of the same magnitudes, so a point at the exact minimum can never fall outside.
constexpr double kScreeningSlack = 1e-9;
// Candidate lists are pruned to the current band only when they double: amortised O(1) per offer.
constexpr std::size_t kFirstPrune = 64;

using RowArray = Eigen::Array<double, 1, Eigen::Dynamic>;

bool uses_kernel(const DistanceSpec& distance) {
  return distance.kind == DistanceSpec::Kind::kPolynomialKernel && distance.kernel_degree != 1;
}

double integer_power(double base, int exponent) {
  double result = 1.0;
  for (int e = 0; e < exponent; ++e) result *= base;
  return result;
}

/// K(x, x) for the kernel, ‖x‖² for the Euclidean distance: the term the screening value omits.
double self_term(double squared_norm, const DistanceSpec& distance) {
  return uses_kernel(distance) ? integer_power(1.0 + squared_norm, distance.kernel_degree) : squared_norm;
}

void check_options(const PointSet& a, const PointSet& b, const TileOptions& options) {
  if (options.tile_rows == 0) throw ParameterError("the distance tiles need at least one row (tile_rows)");
  if (options.distance.kind == DistanceSpec::Kind::kPolynomialKernel && options.distance.kernel_degree < 1) {
    throw ParameterError("the kernel degree must be at least 1");
  }
  SDC_CHECK(a.dimension() == b.dimension() || a.size() == 0 || b.size() == 0,
            "both point sets have the same variables");
  SDC_CHECK(a.squared_norms.size() == a.size() && b.squared_norms.size() == b.size(), "point norms are present");
}

/// The screening state of one query: the k smallest screening values seen (a max-heap) and every
/// point within the slack of the k-th of them.
class QueryScreen {
 public:
  void reset(double slack) {
    best_.clear();
    candidates_.clear();
    threshold_ = kInfinity;
    slack_ = slack;
    prune_at_ = kFirstPrune;
  }

  double threshold() const { return threshold_; }

  /// Called only for values at or below threshold().
  void offer(double value, std::size_t index, std::size_t k) {
    candidates_.emplace_back(value, index);
    if (best_.size() < k) {
      best_.push_back(value);
      std::push_heap(best_.begin(), best_.end());
      if (best_.size() == k) threshold_ = best_.front() + slack_;
    } else if (value < best_.front()) {
      std::pop_heap(best_.begin(), best_.end());
      best_.back() = value;
      std::push_heap(best_.begin(), best_.end());
      threshold_ = best_.front() + slack_;
    }
    if (candidates_.size() >= prune_at_) {
      prune();
      prune_at_ = std::max(kFirstPrune, 2 * candidates_.size());
    }
  }

  const std::vector<std::pair<double, std::size_t>>& final_candidates() {
    prune();
    return candidates_;
  }

 private:
  void prune() {
    std::erase_if(candidates_, [this](const auto& candidate) { return candidate.first > threshold_; });
  }

  std::vector<double> best_;
  std::vector<std::pair<double, std::size_t>> candidates_;
  double threshold_ = kInfinity;
  double slack_ = 0.0;
  std::size_t prune_at_ = kFirstPrune;
};

// The Euclidean screening is a fused micro-kernel: four queries against four references at a time
// in registers, ‖b‖² − 2 a·b and its running minimum without a stored tile. GCC's vector extensions
// keep it portable; where the compiler can, a second clone for AVX2 is chosen at load time. Either
// clone only screens — the exact re-check is plain scalar code — so the results do not depend on it.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define SDC_SCREENING_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SDC_SCREENING_CLONES
#endif

using Lanes = double __attribute__((vector_size(32)));
constexpr std::size_t kLanes = sizeof(Lanes) / sizeof(double);
constexpr std::size_t kQueryGroup = 4;

/// values[q·width + j] = norms[j] + Σ_v scaled[q·p + v]·coordinates[v][j] for the four queries of a
/// group (scaled = −2a), and minima[q] their minimum. `packed` holds the norms, then the p coordinate
/// rows, each `width` long (a multiple of kLanes).
SDC_SCREENING_CLONES
void screen_group(const double* scaled, std::size_t p, const double* packed, std::size_t width, double* values,
                  double* minima) {
  Lanes low[kQueryGroup];
  for (auto& lane : low) {
    for (std::size_t l = 0; l < kLanes; ++l) lane[l] = std::numeric_limits<double>::infinity();
  }
  for (std::size_t j = 0; j < width; j += kLanes) {
    Lanes norms;
    std::memcpy(&norms, packed + j, sizeof norms);
    Lanes sum0 = norms;
    Lanes sum1 = norms;
    Lanes sum2 = norms;
    Lanes sum3 = norms;
    for (std::size_t v = 0; v < p; ++v) {
      Lanes coordinate;
      std::memcpy(&coordinate, packed + (v + 1) * width + j, sizeof coordinate);
      sum0 += scaled[v] * coordinate;
      sum1 += scaled[p + v] * coordinate;
      sum2 += scaled[2 * p + v] * coordinate;
      sum3 += scaled[3 * p + v] * coordinate;
    }
    std::memcpy(values + j, &sum0, sizeof sum0);
    std::memcpy(values + width + j, &sum1, sizeof sum1);
    std::memcpy(values + 2 * width + j, &sum2, sizeof sum2);
    std::memcpy(values + 3 * width + j, &sum3, sizeof sum3);
    low[0] = sum0 < low[0] ? sum0 : low[0];
    low[1] = sum1 < low[1] ? sum1 : low[1];
    low[2] = sum2 < low[2] ? sum2 : low[2];
    low[3] = sum3 < low[3] ? sum3 : low[3];
  }
  for (std::size_t q = 0; q < kQueryGroup; ++q) {
    double minimum = low[q][0];
    for (std::size_t l = 1; l < kLanes; ++l) minimum = std::min(minimum, low[q][l]);
    minima[q] = minimum;
  }
}

/// The references block by block in the layout screen_group reads; padding lanes have norm +inf.
struct PackedReferences {
  std::size_t width = 0;  ///< padded block width
  std::vector<std::vector<double>> blocks;
};

PackedReferences pack_references(const PointSet& b, std::size_t tile) {
  PackedReferences packed;
  const std::size_t p = b.dimension();
  const std::size_t rows = std::min(tile, b.size());
  packed.width = (rows + kLanes - 1) / kLanes * kLanes;
  for (std::size_t b0 = 0; b0 < b.size(); b0 += tile) {
    const std::size_t count = std::min(tile, b.size() - b0);
    std::vector<double> block((p + 1) * packed.width, 0.0);
    for (std::size_t j = 0; j < packed.width; ++j) {
      block[j] = j < count ? b.squared_norms[b0 + j] : std::numeric_limits<double>::infinity();
    }
    for (std::size_t j = 0; j < count; ++j) {
      for (std::size_t v = 0; v < p; ++v) {
        block[(v + 1) * packed.width + j] =
            b.coordinates(static_cast<Eigen::Index>(b0 + j), static_cast<Eigen::Index>(v));
      }
    }
    packed.blocks.push_back(std::move(block));
  }
  return packed;
}

/// Screens every query of `a` against all of `b` tile by tile and hands each query's surviving
/// candidates (indices into b) to `finish(query index, candidates)`.
template <class Finish>
void screen_euclidean(const PointSet& a, const PointSet& b, const TileOptions& options, std::size_t k,
                      const Finish& finish) {
  const std::size_t tile = options.tile_rows;
  const std::size_t p = a.dimension();
  const std::size_t count_a = a.size();
  const double max_self_b = *std::max_element(b.squared_norms.begin(), b.squared_norms.end());
  const auto packed = pack_references(b, tile);
  const std::size_t width = packed.width;
  const std::size_t blocks = (count_a + tile - 1) / tile;

  struct Scratch {
    std::vector<double> values;
    std::vector<double> scaled;
    std::vector<QueryScreen> screens;
  };
  tbb::enumerable_thread_specific<Scratch> scratches;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks, 1), [&](const tbb::blocked_range<std::size_t>& range) {
    auto& scratch = scratches.local();
    scratch.values.resize(kQueryGroup * width);
    scratch.screens.resize(std::min(tile, count_a));
    for (std::size_t block = range.begin(); block != range.end(); ++block) {
      const std::size_t a0 = block * tile;
      const std::size_t rows_a = std::min(tile, count_a - a0);
      const std::size_t groups = (rows_a + kQueryGroup - 1) / kQueryGroup;
      scratch.scaled.assign(groups * kQueryGroup * p, 0.0);
      for (std::size_t i = 0; i < rows_a; ++i) {
        scratch.screens[i].reset(kScreeningSlack * (a.squared_norms[a0 + i] + max_self_b));
        for (std::size_t v = 0; v < p; ++v) {
          scratch.scaled[i * p + v] =
              -2.0 * a.coordinates(static_cast<Eigen::Index>(a0 + i), static_cast<Eigen::Index>(v));
        }
      }
      for (std::size_t b_block = 0; b_block < packed.blocks.size(); ++b_block) {
        const std::size_t b0 = b_block * tile;
        const std::size_t rows_b = std::min(tile, b.size() - b0);
        for (std::size_t group = 0; group < groups; ++group) {
          double minima[kQueryGroup];
          screen_group(scratch.scaled.data() + group * kQueryGroup * p, p, packed.blocks[b_block].data(), width,
                       scratch.values.data(), minima);
          for (std::size_t q = 0; q < kQueryGroup; ++q) {
            const std::size_t i = group * kQueryGroup + q;
            if (i >= rows_a) break;
            auto& screen = scratch.screens[i];
            // Most rows of most blocks hold nothing within the band: their minimum skips them.
            if (minima[q] > screen.threshold()) continue;
            const double* row = scratch.values.data() + q * width;
            for (std::size_t j = 0; j < rows_b; ++j) {
              if (row[j] <= screen.threshold()) screen.offer(row[j], b0 + j, k);
            }
          }
        }
      }
      for (std::size_t i = 0; i < rows_a; ++i) finish(a0 + i, scratch.screens[i].final_candidates());
    }
  });
}

/// The kernel distance screens from one GEMM per tile, K(b,b) − 2(1 + a·b)^d.
template <class Finish>
void screen_kernel(const PointSet& a, const PointSet& b, const TileOptions& options, std::size_t k,
                   const Finish& finish) {
  const std::size_t tile = options.tile_rows;
  const std::size_t count_a = a.size();
  const std::size_t count_b = b.size();
  const int degree = options.distance.kernel_degree;

  RowArray self_b(static_cast<Eigen::Index>(count_b));
  double max_self_b = 0.0;
  for (std::size_t j = 0; j < count_b; ++j) {
    self_b[static_cast<Eigen::Index>(j)] = self_term(b.squared_norms[j], options.distance);
    max_self_b = std::max(max_self_b, self_b[static_cast<Eigen::Index>(j)]);
  }

  const std::size_t rows_a_max = std::min(tile, count_a);
  const std::size_t rows_b_max = std::min(tile, count_b);
  const std::size_t blocks = (count_a + tile - 1) / tile;
  tbb::enumerable_thread_specific<std::vector<double>> tile_buffers;
  tbb::enumerable_thread_specific<std::vector<QueryScreen>> screen_buffers;

  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks, 1), [&](const tbb::blocked_range<std::size_t>& range) {
    auto& buffer = tile_buffers.local();
    buffer.resize(rows_a_max * rows_b_max);
    auto& screens = screen_buffers.local();
    screens.resize(rows_a_max);
    for (std::size_t block = range.begin(); block != range.end(); ++block) {
      const std::size_t a0 = block * tile;
      const std::size_t rows_a = std::min(tile, count_a - a0);
      const auto a_block = a.coordinates.middleRows(static_cast<Eigen::Index>(a0), static_cast<Eigen::Index>(rows_a));
      for (std::size_t i = 0; i < rows_a; ++i) {
        screens[i].reset(kScreeningSlack * (self_term(a.squared_norms[a0 + i], options.distance) + max_self_b));
      }
      for (std::size_t b0 = 0; b0 < count_b; b0 += tile) {
        const std::size_t rows_b = std::min(tile, count_b - b0);
        const auto b_block = b.coordinates.middleRows(static_cast<Eigen::Index>(b0), static_cast<Eigen::Index>(rows_b));
        Eigen::Map<CoordinateMatrix> products(buffer.data(), static_cast<Eigen::Index>(rows_a),
                                              static_cast<Eigen::Index>(rows_b));
        products.noalias() = a_block * b_block.transpose();
        for (std::size_t i = 0; i < rows_a; ++i) {
          auto& screen = screens[i];
          for (std::size_t j = 0; j < rows_b; ++j) {
            const double value =
                self_b[static_cast<Eigen::Index>(b0 + j)] -
                2.0 * integer_power(1.0 + products(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)), degree);
            if (value <= screen.threshold()) screen.offer(value, b0 + j, k);
          }
        }
      }
      for (std::size_t i = 0; i < rows_a; ++i) finish(a0 + i, screens[i].final_candidates());
    }
  });
}

template <class Finish>
void screen_tiles(const PointSet& a, const PointSet& b, const TileOptions& options, std::size_t k,
                  const Finish& finish) {
  if (uses_kernel(options.distance)) {
    screen_kernel(a, b, options, k, finish);
  } else {
    screen_euclidean(a, b, options, k, finish);
  }
}

}  // namespace

PointSet make_point_set(CoordinateMatrix coordinates, std::vector<std::int64_t> ids) {
  SDC_CHECK(static_cast<std::size_t>(coordinates.rows()) == ids.size(), "one id per point");
  PointSet points;
  points.coordinates = std::move(coordinates);
  points.ids = std::move(ids);
  points.squared_norms.resize(points.ids.size());
  const auto p = static_cast<std::size_t>(points.coordinates.cols());
  for (std::size_t i = 0; i < points.ids.size(); ++i) {
    const double* x = points.coordinates.data() + i * p;
    double sum = 0.0;
    for (std::size_t j = 0; j < p; ++j) sum += x[j] * x[j];
    points.squared_norms[i] = sum;
  }
  return points;
}

PointSet make_point_set(const NumericColumns& columns) {
  const std::size_t n = columns.records();
  const std::size_t p = columns.variables();
  CoordinateMatrix coordinates(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(p));
  for (std::size_t j = 0; j < p; ++j) {
    for (std::size_t i = 0; i < n; ++i) {
      coordinates(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = columns.columns[j][i];
    }
  }
  return make_point_set(std::move(coordinates), {columns.row_ids.begin(), columns.row_ids.end()});
}

double exact_distance(const PointSet& a, std::size_t i, const PointSet& b, std::size_t j,
                      const DistanceSpec& distance) {
  const std::size_t p = a.dimension();
  const double* x = a.coordinates.data() + i * p;
  const double* y = b.coordinates.data() + j * p;
  if (!uses_kernel(distance)) {
    double sum = 0.0;
    for (std::size_t v = 0; v < p; ++v) {
      const double difference = x[v] - y[v];
      sum += difference * difference;
    }
    return sum;
  }
  double dot = 0.0;
  for (std::size_t v = 0; v < p; ++v) dot += x[v] * y[v];
  return self_term(a.squared_norms[i], distance) - 2.0 * integer_power(1.0 + dot, distance.kernel_degree) +
         self_term(b.squared_norms[j], distance);
}

std::vector<NearestPartial> nearest_partial(const PointSet& a, const PointSet& b, const TileOptions& options) {
  check_options(a, b, options);
  std::vector<NearestPartial> result(a.size(), NearestPartial{kInfinity, {}});
  if (b.size() == 0) return result;
  screen_tiles(a, b, options, 1, [&](std::size_t i, const std::vector<std::pair<double, std::size_t>>& candidates) {
    auto& nearest = result[i];
    for (const auto& candidate : candidates) {
      const double exact = exact_distance(a, i, b, candidate.second, options.distance);
      if (exact < nearest.distance) {
        nearest.distance = exact;
        nearest.ties.assign(1, b.ids[candidate.second]);
      } else if (exact == nearest.distance) {
        nearest.ties.push_back(b.ids[candidate.second]);
      }
    }
    std::sort(nearest.ties.begin(), nearest.ties.end());
  });
  return result;
}

void nearest_merge(NearestPartial& into, const NearestPartial& from) {
  if (from.distance < into.distance) {
    into = from;
  } else if (from.distance == into.distance) {
    std::vector<std::int64_t> united;
    united.reserve(into.ties.size() + from.ties.size());
    std::set_union(into.ties.begin(), into.ties.end(), from.ties.begin(), from.ties.end(), std::back_inserter(united));
    into.ties = std::move(united);
  }
}

void nearest_merge(std::vector<NearestPartial>& into, const std::vector<NearestPartial>& from) {
  SDC_CHECK(into.size() == from.size(), "partials of the same queries");
  for (std::size_t i = 0; i < into.size(); ++i) nearest_merge(into[i], from[i]);
}

namespace {
bool nearer(const Neighbour& x, const Neighbour& y) {
  return x.distance < y.distance || (x.distance == y.distance && x.id < y.id);
}
}  // namespace

std::vector<std::vector<Neighbour>> k_nearest(const PointSet& a, const PointSet& b, std::size_t k,
                                              const TileOptions& options) {
  check_options(a, b, options);
  std::vector<std::vector<Neighbour>> result(a.size());
  if (b.size() == 0 || k == 0) return result;
  screen_tiles(a, b, options, k, [&](std::size_t i, const std::vector<std::pair<double, std::size_t>>& candidates) {
    auto& neighbours = result[i];
    neighbours.reserve(candidates.size());
    for (const auto& candidate : candidates) {
      neighbours.push_back({exact_distance(a, i, b, candidate.second, options.distance), b.ids[candidate.second]});
    }
    const std::size_t kept = std::min(k, neighbours.size());
    std::partial_sort(neighbours.begin(), neighbours.begin() + static_cast<std::ptrdiff_t>(kept), neighbours.end(),
                      nearer);
    neighbours.resize(kept);
  });
  return result;
}

void k_nearest_merge(std::vector<Neighbour>& into, const std::vector<Neighbour>& from, std::size_t k) {
  std::vector<Neighbour> united;
  united.reserve(into.size() + from.size());
  std::merge(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(united), nearer);
  united.erase(std::unique(united.begin(), united.end()), united.end());
  if (united.size() > k) united.resize(k);
  into = std::move(united);
}

Neighbour farthest_from(const PointSet& points, std::span<const double> from) {
  SDC_CHECK(from.size() == points.dimension() || points.size() == 0, "the point has the variables of the set");
  const std::size_t p = points.dimension();
  const auto farther = [](const Neighbour& x, const Neighbour& y) {
    return (x.distance > y.distance || (x.distance == y.distance && x.id < y.id)) ? x : y;
  };
  return tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, points.size()), Neighbour{-kInfinity, 0},
      [&](const tbb::blocked_range<std::size_t>& range, Neighbour best) {
        for (std::size_t i = range.begin(); i != range.end(); ++i) {
          const double* x = points.coordinates.data() + i * p;
          double sum = 0.0;
          for (std::size_t v = 0; v < p; ++v) {
            const double difference = x[v] - from[v];
            sum += difference * difference;
          }
          best = farther(best, Neighbour{sum, points.ids[i]});
        }
        return best;
      },
      farther);
}

}  // namespace sdc::distance
