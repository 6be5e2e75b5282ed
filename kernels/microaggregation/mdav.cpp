#include "kernels/microaggregation/mdav.h"

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
#include "kernels/core/step_team.h"

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

/// A shared bar moves one way only; relaxed order suffices, since it only lets searches skip sooner.
template <typename T>
void raise_to(std::atomic<T>& bar, T value) {
  T seen = bar.load(std::memory_order_relaxed);
  while (value > seen && !bar.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

template <typename T>
void lower_to(std::atomic<T>& bar, T value) {
  T seen = bar.load(std::memory_order_relaxed);
  while (value < seen && !bar.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
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
/// Boxes are given variable-major (`stride` boxes per variable) and bounded `count` at a time, terms
/// summed in variable order as a scan sums them.
template <typename Distance>
Distance box_term(double difference, double weight) {
  return static_cast<Distance>(difference * difference * weight);
}

template <typename Distance>
void lower_bounds_to_boxes(const double* target, const double* low, const double* high, std::size_t stride,
                           const double* weight, std::size_t variables, std::size_t count, Distance* out) {
  std::fill_n(out, count, Distance{0});
  for (std::size_t j = 0; j < variables; ++j) {
    const double centre = target[j];
    const double* box_low = low + j * stride;
    const double* box_high = high + j * stride;
    for (std::size_t i = 0; i < count; ++i) {
      const double below = std::max(box_low[i] - centre, 0.0);
      const double above = std::min(box_high[i] - centre, 0.0);
      out[i] += box_term<Distance>(below + above, weight[j]);
    }
  }
}

template <typename Distance>
void upper_bounds_to_boxes(const double* target, const double* low, const double* high, std::size_t stride,
                           const double* weight, std::size_t variables, std::size_t count, Distance* out) {
  std::fill_n(out, count, Distance{0});
  for (std::size_t j = 0; j < variables; ++j) {
    const double centre = target[j];
    const double* box_low = low + j * stride;
    const double* box_high = high + j * stride;
    for (std::size_t i = 0; i < count; ++i) {
      out[i] += std::max(box_term<Distance>(box_low[i] - centre, weight[j]),
                         box_term<Distance>(box_high[i] - centre, weight[j]));
    }
  }
}

/// The rows not yet grouped, column-major, in cells: the leaves of a median-split tree over the
/// variables (or plain input-order chunks when missing values void the distance bounds). Rows of a
/// cell keep input order, so a cell is scanned like a chunk; cells whose bounding box cannot hold
/// the answer are skipped. A removed row is marked dead (record −1, NaN in the first column); a cell
/// is squeezed once a quarter of its slots are dead. Exact per-variable sums give the centroid.
template <typename Distance>
class Remaining {
 public:
  Remaining(const NumericColumns& data, const Metric& metric, int k, StepTeam& team)
      : data_(data),
        metric_(metric),
        k_(static_cast<std::size_t>(k)),
        p_(data.variables()),
        live_(data.records()),
        team_(team),
        parts_(team.parts()) {
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
    far_bar_.store(Distance{0}, std::memory_order_relaxed);
    ++search_serial_;
    auto search = [&](std::size_t part) { farthest_in_part(part, target.data()); };
    team_.run(search);
    return merge_farthest();
  }

  /// The k remaining rows nearest to `target`, nearest first (ties: the later record first).
  void nearest(const std::vector<double>& target, std::vector<Candidate<Distance>>& out) {
    near_bar_.store(std::numeric_limits<Distance>::infinity(), std::memory_order_relaxed);
    auto search = [&](std::size_t part) { nearest_in_part(part, target.data()); };
    team_.run(search);
    merge_nearest(out);
  }

  /// Both searches from one target in one step of the team: the k nearest rows into `out`, and the
  /// farthest row returned.
  Candidate<Distance> nearest_and_farthest(const std::vector<double>& target, std::vector<Candidate<Distance>>& out) {
    near_bar_.store(std::numeric_limits<Distance>::infinity(), std::memory_order_relaxed);
    far_bar_.store(Distance{0}, std::memory_order_relaxed);
    ++search_serial_;
    auto search = [&](std::size_t part) {
      nearest_in_part(part, target.data());
      farthest_in_part(part, target.data());
    };
    team_.run(search);
    merge_nearest(out);
    return merge_farthest();
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
  // Cells bounded together, and handed to one part of a search: neighbouring leaves, so every part
  // owns cells all over the data.
  static constexpr std::size_t kCellRun = 8;

  struct Cell {
    std::size_t begin;  // first slot, a multiple of kBlock
    std::size_t size;   // slots in use, dead ones included
    std::size_t live;
  };
  struct CellBound {
    Distance bound;
    std::size_t cell;
  };
  /// One part of a search: the runs of kCellRun cells numbered part, part + parts, …, and what the
  /// part found. A farthest search publishes its sorted cells so that idle parts can take some.
  struct alignas(64) PartSearch {
    std::vector<CellBound> bounds;
    std::atomic<std::size_t> next_bound{0};
    std::atomic<std::uint64_t> published{0};  // the search serial once `bounds` is ready to share
    Candidate<Distance> farthest{Distance{0}, -1, 0};
    std::vector<Candidate<Distance>> nearest;
  };

  Candidate<Distance> merge_farthest() const {
    Candidate<Distance> best{Distance{0}, -1, 0};
    for (const auto& part : parts_) consider_farthest(part.farthest, best);
    return best;
  }

  void merge_nearest(std::vector<Candidate<Distance>>& out) const {
    out.clear();
    for (const auto& part : parts_) out.insert(out.end(), part.nearest.begin(), part.nearest.end());
    std::sort(out.begin(), out.end(), nearer<Distance>);
    if (out.size() > k_) out.resize(k_);
  }

  /// The live cells of a part with their bounds from `target`.
  void bound_cells(std::size_t part, const double* target, bool upper, std::vector<CellBound>& bounds) const {
    bounds.clear();
    const std::size_t cells = cells_.size();
    Distance run_bounds[kCellRun];
    for (std::size_t first = part * kCellRun; first < cells; first += parts_.size() * kCellRun) {
      const std::size_t count = std::min(kCellRun, cells - first);
      if (!prunable_) {
        std::fill_n(run_bounds, count, upper ? std::numeric_limits<Distance>::infinity() : Distance{0});
      } else if (upper) {
        upper_bounds_to_boxes(target, &low_[first], &high_[first], cells, metric_.weight.data(), p_, count, run_bounds);
      } else {
        lower_bounds_to_boxes(target, &low_[first], &high_[first], cells, metric_.weight.data(), p_, count, run_bounds);
      }
      for (std::size_t i = 0; i < count; ++i) {
        if (cells_[first + i].live != 0) bounds.push_back({run_bounds[i], first + i});
      }
    }
  }

  // Parts share the best distance found so far only to skip cells sooner, and skip a cell only when
  // its bound is strictly worse than a distance some row attains: such a cell cannot hold the answer
  // or an equally good row that wins the tie, so the merged answer never depends on timing, nor on
  // which part scanned which cell.
  void farthest_in_part(std::size_t part, const double* target) {
    PartSearch& search = parts_[part];
    auto& bounds = search.bounds;
    bound_cells(part, target, true, bounds);
    search.farthest = {Distance{0}, -1, 0};
    auto scan = [&](std::size_t cell) {
      scan_cell(cell, target, true, false);
      const Candidate<Distance>& found = cell_far_[cell];
      consider_farthest(found, search.farthest);
      if (found.record >= 0) raise_to(far_bar_, found.distance);
    };
    auto higher = [](const CellBound& a, const CellBound& b) {
      return a.bound > b.bound || (a.bound == b.bound && a.cell < b.cell);
    };
    if (!bounds.empty()) {
      // The most promising cell sets the bar for the rest.
      const auto lead = std::min_element(bounds.begin(), bounds.end(), higher);
      const std::size_t lead_cell = lead->cell;
      *lead = bounds.back();
      bounds.pop_back();
      scan(lead_cell);
      const Distance bar = far_bar_.load(std::memory_order_relaxed);
      std::erase_if(bounds, [&](const CellBound& b) { return b.bound < bar; });
      std::sort(bounds.begin(), bounds.end(), higher);
    }
    search.next_bound.store(0, std::memory_order_relaxed);
    search.published.store(search_serial_, std::memory_order_release);
    // Own cells first, then what other parts have not reached: cells are claimed one at a time.
    for (std::size_t offset = 0; offset < parts_.size(); ++offset) {
      PartSearch& owner = parts_[(part + offset) % parts_.size()];
      if (owner.published.load(std::memory_order_acquire) != search_serial_) continue;
      for (;;) {
        const std::size_t i = owner.next_bound.fetch_add(1, std::memory_order_relaxed);
        if (i >= owner.bounds.size() || owner.bounds[i].bound < far_bar_.load(std::memory_order_relaxed)) break;
        scan(owner.bounds[i].cell);
      }
    }
  }

  void nearest_in_part(std::size_t part, const double* target) {
    PartSearch& search = parts_[part];
    auto& bounds = search.bounds;
    bound_cells(part, target, false, bounds);
    auto& out = search.nearest;
    out.clear();
    auto threshold = [&] {
      const Distance shared = near_bar_.load(std::memory_order_relaxed);
      return out.size() == k_ ? std::min(out.back().distance, shared) : shared;
    };
    auto take = [&](std::size_t cell) {
      scan_cell(cell, target, false, true);
      for (std::size_t m = 0; m < cell_near_count_[cell]; ++m) {
        const auto& row = cell_near_[cell * k_ + m];
        if (out.size() == k_ && !nearer(row, out.back())) break;
        if (out.size() == k_) out.pop_back();
        out.insert(std::upper_bound(out.begin(), out.end(), row, nearer<Distance>), row);
      }
      if (out.size() == k_) lower_to(near_bar_, out.back().distance);
    };
    auto by_bound = [](const CellBound& a, const CellBound& b) {
      return a.bound < b.bound || (a.bound == b.bound && a.cell < b.cell);
    };
    // The nearest box first gives a threshold that usually leaves a handful of cells to scan. A part
    // may stop short of k rows when another part's k-th row is nearer than all its cells.
    while (out.size() < k_ && !bounds.empty()) {
      const auto first = std::min_element(bounds.begin(), bounds.end(), by_bound);
      const std::size_t cell = first->cell;
      const Distance bound = first->bound;
      *first = bounds.back();
      bounds.pop_back();
      if (bound > threshold()) return;
      take(cell);
    }
    const Distance bar = threshold();
    std::erase_if(bounds, [&](const CellBound& b) { return b.bound > bar; });
    std::sort(bounds.begin(), bounds.end(), by_bound);
    for (const auto& b : bounds) {
      if (b.bound > threshold()) break;
      take(b.cell);
    }
  }

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
      low_[j * cells_.size() + c] = low;
      high_[j * cells_.size() + c] = high;
    }
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
  std::vector<double> low_;                  // cell box, variable-major
  std::vector<double> high_;
  std::vector<ExactSum> sums_;
  std::vector<std::int64_t> present_;
  std::vector<Candidate<Distance>> cell_far_;
  std::vector<Candidate<Distance>> cell_near_;
  std::vector<std::size_t> cell_near_count_;
  StepTeam& team_;
  std::vector<PartSearch> parts_;
  std::atomic<Distance> far_bar_{Distance{0}};
  std::atomic<Distance> near_bar_{Distance{0}};
  std::uint64_t search_serial_ = 0;
  std::vector<std::size_t> touched_;
};

// Rows from which a block's searches are split between threads.
constexpr std::size_t kTeamRows = 20000;

template <typename Distance>
MdavResult run_mdav(const NumericColumns& data, const Metric& metric, int k) {
  const std::size_t n = data.records();
  const std::size_t group_size = static_cast<std::size_t>(k);
  MdavResult result;
  result.grouping.group_of_record.assign(n, -1);
  // A team pays for itself only on a large block; many small blocks are spread over threads whole.
  StepTeam team(n >= kTeamRows ? StepTeam::available_helpers() : 0);
  Remaining<Distance> remaining(data, metric, k, team);
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
      // s is chosen among the rows present before the first group leaves (§2.4c), so it is searched
      // for together with the first group.
      const auto s = remaining.nearest_and_farthest(target, nearest);
      remaining.coordinates(s.record, second_seed);
    } else {
      remaining.nearest(target, nearest);
    }
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
