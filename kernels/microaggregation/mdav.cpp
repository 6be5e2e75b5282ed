#include "kernels/microaggregation/mdav.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SDC_MDAV_AVX2 1
#endif

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc::microaggregation {

namespace {

// Rows of a cell at most when missing values void the distance bounds and cells are plain runs of
// input rows; also the most rows one scan takes (the portable scan buffers their distances).
constexpr std::size_t kChunk = 2048;
// Rows per vector step. Chunks, the slot capacity and the scanned length are multiples of it; the
// slots past the last row are dead rows, so a step never needs a scalar remainder.
constexpr std::size_t kBlock = 8;
static_assert(kChunk % kBlock == 0);

std::size_t round_up_to_block(std::size_t count) { return (count + kBlock - 1) / kBlock * kBlock; }

template <typename Distance>
struct Candidate {
  Distance distance;
  std::int32_t record;  // position in the input: the tie key
  std::uint32_t slot;   // position among the remaining rows
};

/// The k-nearest order of §2.4: distance ascending, then the later record first.
template <typename Distance>
bool nearer(const Candidate<Distance>& a, const Candidate<Distance>& b) {
  return a.distance < b.distance || (a.distance == b.distance && a.record > b.record);
}

/// The farthest-row order of §2.4b: distance descending, then the earlier record first.
template <typename Distance>
bool farther(const Candidate<Distance>& a, const Candidate<Distance>& b) {
  return a.distance > b.distance || (a.distance == b.distance && a.record < b.record);
}

/// The k nearest rows of one chunk seen so far, nearest first. Rows arrive in input order, so a row
/// as near as the current k-th displaces it (the later record wins a tie).
template <typename Distance>
class NearestRows {
 public:
  NearestRows(Candidate<Distance>* rows, std::size_t k) : rows_(rows), k_(k) {}

  /// Rows farther than this cannot enter; NaN (a dead row) never passes `distance <= threshold()`.
  Distance threshold() const {
    return count_ < k_ ? std::numeric_limits<Distance>::infinity() : rows_[k_ - 1].distance;
  }

  void offer(const Candidate<Distance>& row) {
    if (count_ == k_ && !(row.distance <= rows_[k_ - 1].distance)) return;
    std::size_t position = count_ < k_ ? count_ : k_ - 1;
    while (position > 0 && row.distance <= rows_[position - 1].distance) {
      rows_[position] = rows_[position - 1];
      --position;
    }
    rows_[position] = row;
    if (count_ < k_) ++count_;
  }

  std::size_t count() const { return count_; }

 private:
  Candidate<Distance>* rows_;
  std::size_t k_;
  std::size_t count_ = 0;
};

struct Metric {
  std::vector<double> weight;        // w_j (1 in native mode: the data are z-scores)
  std::vector<double> missing_term;  // m_j, the term when exactly one of the two values is missing
  bool has_missing = false;
};

/// Weights of the reference (§2.1): 1 / (mean(x²) − mean(x)²) from plain row-order double sums.
Metric reference_metric(const NumericColumns& x) {
  Metric metric;
  for (const auto column : x.columns) {
    double sum = 0.0;
    double sum_of_squares = 0.0;
    double low = std::numeric_limits<double>::infinity();
    double high = -std::numeric_limits<double>::infinity();
    std::int64_t present = 0;
    for (const double value : column) {
      if (std::isnan(value)) {
        metric.has_missing = true;
        continue;
      }
      sum += value;
      sum_of_squares += value * value;
      low = std::min(low, value);
      high = std::max(high, value);
      ++present;
    }
    double weight = 1.0;
    double missing_term = 0.0;
    if (present > 0) {
      const double count = static_cast<double>(present);
      const double mean = sum / count;
      const double variance = sum_of_squares / count - mean * mean;
      if (variance != 0.0) weight = 1.0 / variance;
      missing_term = (high - low) * (high - low) * weight;
    }
    metric.weight.push_back(weight);
    metric.missing_term.push_back(missing_term);
  }
  return metric;
}

/// What one chunk scan reads and where it writes its partial result.
template <typename Distance>
struct ChunkScan {
  const double* values;  // column-major, `stride` slots per column
  std::size_t stride;
  std::size_t variables;
  const double* target;
  const double* weight;
  const double* missing_term;
  const std::int32_t* record;  // −1 marks a dead slot
  std::size_t begin;           // first slot, a multiple of kBlock
  std::size_t end;             // one past the last slot, a multiple of kBlock
  Candidate<Distance>* farthest;
  NearestRows<Distance>* nearest;
};

/// Any data, any CPU: distances into a buffer with the missing-value rules of §2.2, then selection.
template <typename Distance>
void scan_chunk_portable(const ChunkScan<Distance>& scan, bool has_missing) {
  const std::size_t length = scan.end - scan.begin;
  Distance distance[kChunk];
  std::fill_n(distance, length, Distance{0});
  // Terms are rounded to Distance one by one and summed in column order (§2.2).
  for (std::size_t j = 0; j < scan.variables; ++j) {
    const double* column = scan.values + j * scan.stride + scan.begin;
    const double centre = scan.target[j];
    const double weight = scan.weight[j];
    if (!has_missing) {
      for (std::size_t i = 0; i < length; ++i) {
        const double difference = column[i] - centre;
        distance[i] += static_cast<Distance>(difference * difference * weight);
      }
    } else {
      const bool centre_missing = std::isnan(centre);
      const double missing_term = scan.missing_term[j];
      for (std::size_t i = 0; i < length; ++i) {
        const bool value_missing = std::isnan(column[i]);
        double term = 0.0;
        if (value_missing != centre_missing) {
          term = missing_term;
        } else if (!value_missing) {
          const double difference = column[i] - centre;
          term = difference * difference * weight;
        }
        distance[i] += static_cast<Distance>(term);
      }
    }
  }
  Candidate<Distance> farthest{Distance{0}, -1, 0};
  for (std::size_t i = 0; i < length; ++i) {
    const std::size_t slot = scan.begin + i;
    const std::int32_t record = scan.record[slot];
    if (record < 0) continue;
    const Distance d = distance[i];
    const Candidate<Distance> row{d, record, static_cast<std::uint32_t>(slot)};
    // Slots are in input order, so a strict comparison keeps the first of equally far rows.
    if (scan.farthest != nullptr && (farthest.record < 0 || d > farthest.distance)) farthest = row;
    if (scan.nearest != nullptr) scan.nearest->offer(row);
  }
  if (scan.farthest != nullptr) *scan.farthest = farthest;
}

#ifdef SDC_MDAV_AVX2

/// The farthest row of a chunk from per-lane maxima: lanes keep their first strict maximum, so the
/// lane holding the overall maximum at the lowest slot holds the first farthest row.
template <typename Distance>
Candidate<Distance> farthest_of_lanes(const Distance* lane_distance, const std::int64_t* lane_slot, std::size_t lanes,
                                      const std::int32_t* record) {
  Candidate<Distance> farthest{Distance{0}, -1, 0};
  std::int64_t best_slot = -1;
  for (std::size_t lane = 0; lane < lanes; ++lane) {
    const std::int64_t slot = lane_slot[lane];
    if (slot < 0) continue;
    const Distance d = lane_distance[lane];
    if (best_slot < 0 || d > farthest.distance || (d == farthest.distance && slot < best_slot)) {
      best_slot = slot;
      farthest.distance = d;
    }
  }
  if (best_slot >= 0) {
    farthest.record = record[best_slot];
    farthest.slot = static_cast<std::uint32_t>(best_slot);
  }
  return farthest;
}

// Complete data only: dead slots carry NaN in the first column, so their distance is NaN and fails
// every ordered comparison; no per-row liveness test is needed.
template <std::size_t kVariables, bool kFarthest, bool kNearest>
__attribute__((target("avx2"))) void scan_chunk_float_avx2(const ChunkScan<float>& scan) {
  // Local copies: the compiler cannot keep fields of `scan` in registers across the stores below.
  const std::size_t variables = kVariables > 0 ? kVariables : scan.variables;
  const double* const values = scan.values;
  const std::size_t stride = scan.stride;
  const std::size_t end = scan.end;
  constexpr std::size_t kHoisted = kVariables > 0 ? kVariables : 1;
  __m256d hoisted_centre[kHoisted];
  __m256d hoisted_weight[kHoisted];
  if constexpr (kVariables > 0) {
    for (std::size_t j = 0; j < kVariables; ++j) {
      hoisted_centre[j] = _mm256_broadcast_sd(scan.target + j);
      hoisted_weight[j] = _mm256_broadcast_sd(scan.weight + j);
    }
  }
  const __m256i lane_offset = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 far_distance = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256i far_slot = _mm256_set1_epi32(-1);
  float threshold = kNearest ? scan.nearest->threshold() : 0.0f;
  __m256 near_threshold = _mm256_set1_ps(threshold);
  for (std::size_t i = scan.begin; i < end; i += kBlock) {
    __m128 low = _mm_setzero_ps();
    __m128 high = _mm_setzero_ps();
    for (std::size_t j = 0; j < variables; ++j) {
      const double* column = values + j * stride + i;
      const __m256d centre = kVariables > 0 ? hoisted_centre[j] : _mm256_broadcast_sd(scan.target + j);
      const __m256d weight = kVariables > 0 ? hoisted_weight[j] : _mm256_broadcast_sd(scan.weight + j);
      const __m256d low_difference = _mm256_sub_pd(_mm256_loadu_pd(column), centre);
      const __m256d high_difference = _mm256_sub_pd(_mm256_loadu_pd(column + 4), centre);
      // (x − c)²·w in double, rounded to float, then added in float: the reference's term (§2.2).
      low = _mm_add_ps(low, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_mul_pd(low_difference, low_difference), weight)));
      high = _mm_add_ps(high, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_mul_pd(high_difference, high_difference), weight)));
    }
    const __m256 distance = _mm256_set_m128(high, low);
    if constexpr (kFarthest) {
      const __m256i slot = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(i)), lane_offset);
      const __m256 greater = _mm256_cmp_ps(distance, far_distance, _CMP_GT_OQ);
      far_distance = _mm256_blendv_ps(far_distance, distance, greater);
      far_slot =
          _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(far_slot), _mm256_castsi256_ps(slot), greater));
    }
    if constexpr (kNearest) {
      unsigned candidates =
          static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(distance, near_threshold, _CMP_LE_OQ)));
      if (candidates != 0) {
        alignas(32) float lane_distance[kBlock];
        _mm256_store_ps(lane_distance, distance);
        while (candidates != 0) {
          const auto lane = static_cast<std::size_t>(std::countr_zero(candidates));
          candidates &= candidates - 1;
          const std::size_t slot = i + lane;
          scan.nearest->offer({lane_distance[lane], scan.record[slot], static_cast<std::uint32_t>(slot)});
        }
        threshold = scan.nearest->threshold();
        near_threshold = _mm256_set1_ps(threshold);
      }
    }
  }
  if constexpr (kFarthest) {
    alignas(32) float lane_distance[kBlock];
    alignas(32) std::int32_t lane_slot32[kBlock];
    _mm256_store_ps(lane_distance, far_distance);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane_slot32), far_slot);
    std::int64_t lane_slot[kBlock];
    for (std::size_t lane = 0; lane < kBlock; ++lane) lane_slot[lane] = lane_slot32[lane];
    *scan.farthest = farthest_of_lanes(lane_distance, lane_slot, kBlock, scan.record);
  }
}

// Native mode: z-scores, every weight 1, so the term is (x − c)² exactly as the portable scan forms it.
template <std::size_t kVariables, bool kFarthest, bool kNearest>
__attribute__((target("avx2"))) void scan_chunk_double_avx2(const ChunkScan<double>& scan) {
  constexpr std::size_t kLanes = 4;
  const std::size_t variables = kVariables > 0 ? kVariables : scan.variables;
  const double* const values = scan.values;
  const std::size_t stride = scan.stride;
  const std::size_t end = scan.end;
  constexpr std::size_t kHoisted = kVariables > 0 ? kVariables : 1;
  __m256d hoisted_centre[kHoisted];
  if constexpr (kVariables > 0) {
    for (std::size_t j = 0; j < kVariables; ++j) hoisted_centre[j] = _mm256_broadcast_sd(scan.target + j);
  }
  const __m256i lane_offset = _mm256_setr_epi64x(0, 1, 2, 3);
  __m256d far_distance[2] = {_mm256_set1_pd(-std::numeric_limits<double>::infinity()),
                             _mm256_set1_pd(-std::numeric_limits<double>::infinity())};
  __m256i far_slot[2] = {_mm256_set1_epi64x(-1), _mm256_set1_epi64x(-1)};
  double threshold = kNearest ? scan.nearest->threshold() : 0.0;
  __m256d near_threshold = _mm256_set1_pd(threshold);
  for (std::size_t i = scan.begin; i < end; i += kBlock) {
    __m256d distance[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    for (std::size_t j = 0; j < variables; ++j) {
      const double* column = values + j * stride + i;
      const __m256d centre = kVariables > 0 ? hoisted_centre[j] : _mm256_broadcast_sd(scan.target + j);
      for (std::size_t half = 0; half < 2; ++half) {
        const __m256d difference = _mm256_sub_pd(_mm256_loadu_pd(column + half * kLanes), centre);
        distance[half] = _mm256_add_pd(distance[half], _mm256_mul_pd(difference, difference));
      }
    }
    if constexpr (kFarthest) {
      for (std::size_t half = 0; half < 2; ++half) {
        const __m256i slot =
            _mm256_add_epi64(_mm256_set1_epi64x(static_cast<std::int64_t>(i + half * kLanes)), lane_offset);
        const __m256d greater = _mm256_cmp_pd(distance[half], far_distance[half], _CMP_GT_OQ);
        far_distance[half] = _mm256_blendv_pd(far_distance[half], distance[half], greater);
        far_slot[half] = _mm256_castpd_si256(
            _mm256_blendv_pd(_mm256_castsi256_pd(far_slot[half]), _mm256_castsi256_pd(slot), greater));
      }
    }
    if constexpr (kNearest) {
      unsigned candidates =
          static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(distance[0], near_threshold, _CMP_LE_OQ))) |
          static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(distance[1], near_threshold, _CMP_LE_OQ))) << kLanes;
      if (candidates != 0) {
        alignas(32) double lane_distance[kBlock];
        _mm256_store_pd(lane_distance, distance[0]);
        _mm256_store_pd(lane_distance + kLanes, distance[1]);
        while (candidates != 0) {
          const auto lane = static_cast<std::size_t>(std::countr_zero(candidates));
          candidates &= candidates - 1;
          const std::size_t slot = i + lane;
          scan.nearest->offer({lane_distance[lane], scan.record[slot], static_cast<std::uint32_t>(slot)});
        }
        threshold = scan.nearest->threshold();
        near_threshold = _mm256_set1_pd(threshold);
      }
    }
  }
  if constexpr (kFarthest) {
    alignas(32) double lane_distance[kBlock];
    alignas(32) std::int64_t lane_slot[kBlock];
    for (std::size_t half = 0; half < 2; ++half) {
      _mm256_store_pd(lane_distance + half * kLanes, far_distance[half]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(lane_slot + half * kLanes), far_slot[half]);
    }
    *scan.farthest = farthest_of_lanes(lane_distance, lane_slot, kBlock, scan.record);
  }
}

template <typename Distance, std::size_t kVariables, bool kFarthest, bool kNearest>
void scan_chunk_avx2(const ChunkScan<Distance>& scan) {
  if constexpr (std::is_same_v<Distance, float>) {
    scan_chunk_float_avx2<kVariables, kFarthest, kNearest>(scan);
  } else {
    scan_chunk_double_avx2<kVariables, kFarthest, kNearest>(scan);
  }
}

template <typename Distance, std::size_t kVariables>
void scan_chunk_avx2(const ChunkScan<Distance>& scan) {
  if (scan.farthest != nullptr && scan.nearest != nullptr) {
    scan_chunk_avx2<Distance, kVariables, true, true>(scan);
  } else if (scan.farthest != nullptr) {
    scan_chunk_avx2<Distance, kVariables, true, false>(scan);
  } else if (scan.nearest != nullptr) {
    scan_chunk_avx2<Distance, kVariables, false, true>(scan);
  }
}

/// Few variables get a fully unrolled column loop with the target held in registers.
template <typename Distance>
void scan_chunk_avx2(const ChunkScan<Distance>& scan) {
  switch (scan.variables) {
    case 1:
      return scan_chunk_avx2<Distance, 1>(scan);
    case 2:
      return scan_chunk_avx2<Distance, 2>(scan);
    case 3:
      return scan_chunk_avx2<Distance, 3>(scan);
    case 4:
      return scan_chunk_avx2<Distance, 4>(scan);
    default:
      return scan_chunk_avx2<Distance, 0>(scan);
  }
}

bool cpu_has_avx2() {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  return has_avx2;
}

#endif

/// Bounds on the distance from a target to any row of a box, exact for the emulated arithmetic:
/// each rounded term is monotone in |x_j − c_j| and a rounded sum of non-negative terms is monotone
/// in every term, so the nearest (farthest) box point gives a lower (upper) bound with no margin.
template <typename Distance>
Distance box_term(double difference, double weight) {
  return static_cast<Distance>(difference * difference * weight);
}

template <typename Distance>
Distance lower_bound_to_box(const double* target, const double* low, const double* high, const double* weight,
                            std::size_t variables) {
  Distance sum{0};
  for (std::size_t j = 0; j < variables; ++j) {
    const double centre = target[j];
    double difference = 0.0;
    if (centre < low[j]) {
      difference = low[j] - centre;
    } else if (centre > high[j]) {
      difference = high[j] - centre;
    }
    sum += box_term<Distance>(difference, weight[j]);
  }
  return sum;
}

template <typename Distance>
Distance upper_bound_to_box(const double* target, const double* low, const double* high, const double* weight,
                            std::size_t variables) {
  Distance sum{0};
  for (std::size_t j = 0; j < variables; ++j) {
    sum +=
        std::max(box_term<Distance>(low[j] - target[j], weight[j]), box_term<Distance>(high[j] - target[j], weight[j]));
  }
  return sum;
}

/// The rows not yet grouped, column-major, in cells: the leaves of a median-split tree over the
/// variables (or plain input-order chunks when missing values void the distance bounds). Rows of a
/// cell keep input order, so a cell is scanned like a chunk; cells whose bounding box cannot hold
/// the answer are skipped. A removed row is marked dead (record −1, NaN in the first column); a cell
/// is squeezed once a quarter of its slots are dead. Exact per-variable sums give the centroid.
template <typename Distance>
class Remaining {
 public:
  Remaining(const NumericColumns& data, const Metric& metric, int k)
      : data_(data), metric_(metric), k_(static_cast<std::size_t>(k)), p_(data.variables()), live_(data.records()) {
    prunable_ = !metric.has_missing &&
                std::all_of(metric.weight.begin(), metric.weight.end(), [](double w) { return std::isfinite(w); });
#ifdef SDC_MDAV_AVX2
    const bool unit_weights =
        std::all_of(metric.weight.begin(), metric.weight.end(), [](double w) { return w == 1.0; });
    vectorised_ = cpu_has_avx2() && p_ > 0 && prunable_ && (std::is_same_v<Distance, float> || unit_weights);
#endif
    build_cells();
    sums_.resize(p_);
    present_.assign(p_, 0);
    for (std::size_t j = 0; j < p_; ++j) {
      for (const double value : data.columns[j]) {
        if (std::isnan(value)) continue;
        sums_[j].add(value);
        ++present_[j];
      }
    }
    cell_far_.resize(cells_.size());
    cell_near_.resize(cells_.size() * k_);
    cell_near_count_.resize(cells_.size());
  }

  std::size_t live() const { return live_; }

  void centroid(std::vector<double>& out) const {
    for (std::size_t j = 0; j < p_; ++j) {
      out[j] = present_[j] == 0 ? std::numeric_limits<double>::quiet_NaN()
                                : sums_[j].value() / static_cast<double>(present_[j]);
    }
  }

  void coordinates(std::int32_t record, std::vector<double>& out) const {
    for (std::size_t j = 0; j < p_; ++j) out[j] = data_.columns[j][static_cast<std::size_t>(record)];
  }

  /// The remaining row farthest from `target` (ties: the first record).
  Candidate<Distance> farthest(const std::vector<double>& target) {
    bounds_.clear();
    for (std::size_t c = 0; c < cells_.size(); ++c) {
      if (cells_[c].live == 0) continue;
      bounds_.push_back({upper_bound(c, target.data()), c});
    }
    Candidate<Distance> best{Distance{0}, -1, 0};
    auto higher = [](const CellBound& a, const CellBound& b) {
      return a.bound > b.bound || (a.bound == b.bound && a.cell < b.cell);
    };
    // The most promising cells, scanned in turn, set the bar for the rest; whatever is left after
    // them is scanned in parallel when it is large. A cell whose bound equals the best distance may
    // still hold an earlier record at that distance, so only a strictly lower bound prunes.
    const std::size_t leading = std::min(bounds_.size(), kSerialFarthestCells);
    std::partial_sort(bounds_.begin(), bounds_.begin() + static_cast<std::ptrdiff_t>(leading), bounds_.end(), higher);
    for (std::size_t i = 0; i < leading; ++i) {
      if (bounds_[i].bound < best.distance) return best;
      scan_cell(bounds_[i].cell, target.data(), true, false);
      consider_farthest(cell_far_[bounds_[i].cell], best);
    }
    bounds_.erase(bounds_.begin(), bounds_.begin() + static_cast<std::ptrdiff_t>(leading));
    std::erase_if(bounds_, [&](const CellBound& b) { return b.bound < best.distance; });
    std::sort(bounds_.begin(), bounds_.end(), higher);
    std::size_t rows = 0;
    for (const auto& b : bounds_) rows += cells_[b.cell].size;
    if (rows >= kParallelRows) {
      // Threads share the best distance found so far only to skip cells sooner: a cell is skipped
      // when its bound is below a distance some row attains, so the answer never depends on timing.
      std::atomic<Distance> bar{best.distance};
      scanned_.assign(bounds_.size(), 0);
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, bounds_.size(), 1),
                        [&](const tbb::blocked_range<std::size_t>& range) {
                          for (std::size_t i = range.begin(); i < range.end(); ++i) {
                            if (bounds_[i].bound < bar.load(std::memory_order_relaxed)) break;
                            scan_cell(bounds_[i].cell, target.data(), true, false);
                            scanned_[i] = 1;
                            const Distance found = cell_far_[bounds_[i].cell].distance;
                            Distance seen = bar.load(std::memory_order_relaxed);
                            while (found > seen && !bar.compare_exchange_weak(seen, found, std::memory_order_relaxed)) {
                            }
                          }
                        });
      for (std::size_t i = 0; i < bounds_.size(); ++i) {
        if (scanned_[i] != 0) consider_farthest(cell_far_[bounds_[i].cell], best);
      }
    } else {
      for (const auto& b : bounds_) {
        if (b.bound < best.distance) break;
        scan_cell(b.cell, target.data(), true, false);
        consider_farthest(cell_far_[b.cell], best);
      }
    }
    return best;
  }

  /// The k remaining rows nearest to `target`, nearest first (ties: the later record first).
  void nearest(const std::vector<double>& target, std::vector<Candidate<Distance>>& out) {
    bounds_.clear();
    for (std::size_t c = 0; c < cells_.size(); ++c) {
      if (cells_[c].live == 0) continue;
      bounds_.push_back({lower_bound(c, target.data()), c});
    }
    out.clear();
    auto take = [&](std::size_t cell) {
      scan_cell(cell, target.data(), false, true);
      for (std::size_t m = 0; m < cell_near_count_[cell]; ++m) {
        const auto& row = cell_near_[cell * k_ + m];
        if (out.size() == k_ && !nearer(row, out.back())) break;
        if (out.size() == k_) out.pop_back();
        out.insert(std::upper_bound(out.begin(), out.end(), row, nearer<Distance>), row);
      }
    };
    auto by_bound = [](const CellBound& a, const CellBound& b) {
      return a.bound < b.bound || (a.bound == b.bound && a.cell < b.cell);
    };
    // The nearest box first gives a threshold that usually leaves a handful of cells to scan.
    while (out.size() < k_ && !bounds_.empty()) {
      const auto first = std::min_element(bounds_.begin(), bounds_.end(), by_bound);
      const std::size_t cell = first->cell;
      *first = bounds_.back();
      bounds_.pop_back();
      take(cell);
    }
    if (out.size() < k_) return;
    std::erase_if(bounds_, [&](const CellBound& b) { return b.bound > out.back().distance; });
    std::sort(bounds_.begin(), bounds_.end(), by_bound);
    for (const auto& b : bounds_) {
      if (b.bound > out.back().distance) break;
      take(b.cell);
    }
  }

  void remove(const Candidate<Distance>& row) {
    SDC_CHECK(record_[row.slot] >= 0, "an MDAV row joins one group only");
    for (std::size_t j = 0; j < p_; ++j) {
      const double value = values_[j * stride_ + row.slot];
      if (std::isnan(value)) continue;
      sums_[j].add(-value);
      --present_[j];
    }
    kill(row.slot);
    --live_;
    const std::size_t cell = cell_of(row.slot);
    --cells_[cell].live;
    touched_.push_back(cell);
  }

  /// Squeezes the cells that lost rows this round; slots of earlier candidates become stale.
  void compact_touched() {
    for (const std::size_t c : touched_) {
      Cell& cell = cells_[c];
      if ((cell.size - cell.live) * 4 <= cell.size) continue;
      std::size_t kept = cell.begin;
      for (std::size_t slot = cell.begin; slot < cell.begin + cell.size; ++slot) {
        if (record_[slot] < 0) continue;
        if (kept != slot) {
          for (std::size_t j = 0; j < p_; ++j) values_[j * stride_ + kept] = values_[j * stride_ + slot];
          record_[kept] = record_[slot];
        }
        ++kept;
      }
      for (std::size_t slot = kept; slot < cell.begin + round_up_to_block(cell.size); ++slot) kill(slot);
      cell.size = kept - cell.begin;
      fit_box(c);
    }
    touched_.clear();
  }

  template <typename Visit>
  void for_each_live(Visit visit) const {
    for (const Cell& cell : cells_) {
      for (std::size_t slot = cell.begin; slot < cell.begin + cell.size; ++slot) {
        if (record_[slot] >= 0) visit(record_[slot]);
      }
    }
  }

 private:
  // Rows per cell at most: a few hundred rows amortise a scan's start-up, and many cells prune well.
  static constexpr std::size_t kCellRows = 512;
  static_assert(kCellRows <= kChunk);
  // Below this many candidate rows the farthest search stays on the calling thread.
  static constexpr std::size_t kParallelRows = 16384;
  // Cells a farthest search scans on the calling thread before it weighs going parallel.
  static constexpr std::size_t kSerialFarthestCells = 2;

  struct Cell {
    std::size_t begin;  // first slot, a multiple of kBlock
    std::size_t size;   // slots in use, dead ones included
    std::size_t live;
  };
  struct CellBound {
    Distance bound;
    std::size_t cell;
  };

  void build_cells() {
    const std::size_t n = data_.records();
    std::vector<std::int32_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::int32_t>(i);
    std::vector<std::pair<std::size_t, std::size_t>> leaves;  // ranges of `order`
    if (prunable_ && p_ > 0) {
      split(order, 0, n, leaves);
    } else {
      for (std::size_t begin = 0; begin < n; begin += kChunk) leaves.emplace_back(begin, std::min(n, begin + kChunk));
    }
    std::size_t slots = 0;
    for (const auto& [begin, end] : leaves) {
      std::sort(order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(end));
      cells_.push_back({slots, end - begin, end - begin});
      slots += round_up_to_block(end - begin);
    }
    stride_ = slots;
    values_.assign(p_ * stride_, 0.0);
    record_.assign(stride_, -1);
    cell_of_slot_.resize(stride_ / kBlock);
    low_.assign(cells_.size() * p_, 0.0);
    high_.assign(cells_.size() * p_, 0.0);
    for (std::size_t c = 0; c < cells_.size(); ++c) {
      const Cell& cell = cells_[c];
      for (std::size_t i = 0; i < cell.size; ++i) {
        const auto record = order[leaves[c].first + i];
        record_[cell.begin + i] = record;
        for (std::size_t j = 0; j < p_; ++j)
          values_[j * stride_ + cell.begin + i] = data_.columns[j][static_cast<std::size_t>(record)];
      }
      for (std::size_t slot = cell.begin + cell.size; slot < cell.begin + round_up_to_block(cell.size); ++slot)
        kill(slot);
      for (std::size_t block = cell.begin / kBlock; block < (cell.begin + round_up_to_block(cell.size)) / kBlock;
           ++block)
        cell_of_slot_[block] = static_cast<std::uint32_t>(c);
      fit_box(c);
    }
  }

  /// Median split on the variable of widest weighted range until a part fits in a cell.
  void split(std::vector<std::int32_t>& order, std::size_t begin, std::size_t end,
             std::vector<std::pair<std::size_t, std::size_t>>& leaves) {
    if (end - begin <= kCellRows) {
      leaves.emplace_back(begin, end);
      return;
    }
    std::size_t widest = 0;
    double widest_range = -1.0;
    for (std::size_t j = 0; j < p_; ++j) {
      const auto column = data_.columns[j];
      double low = std::numeric_limits<double>::infinity();
      double high = -low;
      for (std::size_t i = begin; i < end; ++i) {
        const double value = column[static_cast<std::size_t>(order[i])];
        low = std::min(low, value);
        high = std::max(high, value);
      }
      const double range = (high - low) * (high - low) * metric_.weight[j];
      if (range > widest_range) {
        widest_range = range;
        widest = j;
      }
    }
    const auto column = data_.columns[widest];
    const std::size_t middle = begin + (end - begin) / 2;
    const auto first = order.begin();
    std::nth_element(first + static_cast<std::ptrdiff_t>(begin), first + static_cast<std::ptrdiff_t>(middle),
                     first + static_cast<std::ptrdiff_t>(end), [&](std::int32_t a, std::int32_t b) {
                       const double va = column[static_cast<std::size_t>(a)];
                       const double vb = column[static_cast<std::size_t>(b)];
                       return va < vb || (va == vb && a < b);
                     });
    split(order, begin, middle, leaves);
    split(order, middle, end, leaves);
  }

  void fit_box(std::size_t c) {
    const Cell& cell = cells_[c];
    for (std::size_t j = 0; j < p_; ++j) {
      double low = std::numeric_limits<double>::infinity();
      double high = -low;
      for (std::size_t slot = cell.begin; slot < cell.begin + cell.size; ++slot) {
        if (record_[slot] < 0) continue;
        const double value = values_[j * stride_ + slot];
        low = std::min(low, value);
        high = std::max(high, value);
      }
      low_[c * p_ + j] = low;
      high_[c * p_ + j] = high;
    }
  }

  Distance lower_bound(std::size_t c, const double* target) const {
    if (!prunable_) return Distance{0};
    return lower_bound_to_box<Distance>(target, &low_[c * p_], &high_[c * p_], metric_.weight.data(), p_);
  }

  Distance upper_bound(std::size_t c, const double* target) const {
    if (!prunable_) return std::numeric_limits<Distance>::infinity();
    return upper_bound_to_box<Distance>(target, &low_[c * p_], &high_[c * p_], metric_.weight.data(), p_);
  }

  static void consider_farthest(const Candidate<Distance>& row, Candidate<Distance>& best) {
    if (row.record >= 0 && (best.record < 0 || farther(row, best))) best = row;
  }

  std::size_t cell_of(std::size_t slot) const { return cell_of_slot_[slot / kBlock]; }

  void kill(std::size_t slot) {
    record_[slot] = -1;
    if (p_ > 0) values_[slot] = std::numeric_limits<double>::quiet_NaN();
  }

  void scan_cell(std::size_t c, const double* target, bool want_farthest, bool want_nearest) {
    const Cell& cell = cells_[c];
    NearestRows<Distance> nearest(cell_near_.data() + c * k_, k_);
    const ChunkScan<Distance> scan{values_.data(),
                                   stride_,
                                   p_,
                                   target,
                                   metric_.weight.data(),
                                   metric_.missing_term.data(),
                                   record_.data(),
                                   cell.begin,
                                   cell.begin + round_up_to_block(cell.size),
                                   want_farthest ? &cell_far_[c] : nullptr,
                                   want_nearest ? &nearest : nullptr};
#ifdef SDC_MDAV_AVX2
    if (vectorised_) {
      scan_chunk_avx2(scan);
    } else {
      scan_chunk_portable(scan, metric_.has_missing);
    }
#else
    scan_chunk_portable(scan, metric_.has_missing);
#endif
    cell_near_count_[c] = want_nearest ? nearest.count() : 0;
  }

  const NumericColumns& data_;
  const Metric& metric_;
  std::size_t k_;
  std::size_t p_;
  std::size_t stride_ = 0;
  std::size_t live_;
  bool prunable_ = false;
  bool vectorised_ = false;
  std::vector<double> values_;
  std::vector<std::int32_t> record_;
  std::vector<Cell> cells_;
  std::vector<std::uint32_t> cell_of_slot_;  // per block of slots
  std::vector<double> low_;                  // cell box, cell-major
  std::vector<double> high_;
  std::vector<ExactSum> sums_;
  std::vector<std::int64_t> present_;
  std::vector<Candidate<Distance>> cell_far_;
  std::vector<Candidate<Distance>> cell_near_;
  std::vector<std::size_t> cell_near_count_;
  std::vector<CellBound> bounds_;
  std::vector<std::uint8_t> scanned_;  // per entry of bounds_ in a parallel farthest search
  std::vector<std::size_t> touched_;
};

template <typename Distance>
MdavResult run_mdav(const NumericColumns& data, const Metric& metric, int k) {
  const std::size_t n = data.records();
  const std::size_t group_size = static_cast<std::size_t>(k);
  MdavResult result;
  result.grouping.group_of_record.assign(n, -1);
  Remaining<Distance> remaining(data, metric, k);
  std::vector<double> target(data.variables());
  std::vector<double> second_seed(data.variables());
  std::vector<Candidate<Distance>> nearest;
  nearest.reserve(group_size);
  std::int32_t next_group = 0;
  auto form_group = [&]() {
    SDC_CHECK(nearest.size() == group_size, "an MDAV round finds k rows");
    for (const auto& row : nearest) {
      result.grouping.group_of_record[static_cast<std::size_t>(row.record)] = next_group;
      remaining.remove(row);
    }
    ++next_group;
  };
  while (remaining.live() >= 2 * group_size) {
    const bool two_groups = remaining.live() >= 3 * group_size;
    remaining.centroid(target);
    const auto r = remaining.farthest(target);
    remaining.coordinates(r.record, target);
    if (two_groups) {
      // s is chosen among the rows present before the first group leaves (§2.4c).
      const auto s = remaining.farthest(target);
      remaining.coordinates(s.record, second_seed);
    }
    remaining.nearest(target, nearest);
    form_group();
    if (two_groups) {
      remaining.nearest(second_seed, nearest);
      form_group();
    }
    remaining.compact_touched();
  }
  if (remaining.live() > 0) {
    result.tail_group = next_group;
    remaining.for_each_live(
        [&](std::int32_t record) { result.grouping.group_of_record[static_cast<std::size_t>(record)] = next_group; });
    ++next_group;
  }
  result.grouping.group_count = next_group;
  return result;
}

}  // namespace

MdavResult mdav(const NumericColumns& x, int k, MdavMode mode, const Moments* standardisation) {
  require_group_size(k, "mdav");
  SDC_CHECK(x.records() <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
            "an MDAV block indexes its rows with 32 bits");
  if (mode == MdavMode::kCompat) return run_mdav<float>(x, reference_metric(x), k);
  require_complete(x, "mdav");
  const NumericData z = standardise(x, standardisation != nullptr ? *standardisation : population_moments(x));
  Metric metric;
  metric.weight.assign(x.variables(), 1.0);
  metric.missing_term.assign(x.variables(), 0.0);
  return run_mdav<double>(z.view(), metric, k);
}

}  // namespace sdc::microaggregation
