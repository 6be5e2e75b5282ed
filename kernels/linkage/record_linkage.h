#pragma once
// Distance-based record linkage (DBRL) of an original file A against a masked file B
// (docs/methods/linkage.md): for each query record the set N(a) of records of the other file at the
// exact minimum distance, and the strict, fractional and optimistic counts of correct links.
//
// Alignment: original record i is the masked record with the same row id; both files have the same
// length and the same row ids in the same order (InvalidInput naming the first row where they part).
// Missing values: rejected with InvalidInput naming the variable and the row id — a distance with
// gaps is not defined here; callers impute or drop records first.
//
// Shape: `prepare_linkage` transforms both files (moments: shape (a) in distance/whitening.h, then
// element-wise transforms); the nearest-neighbour search is shape (a) over slices of the reference
// file (distance::nearest_partial / nearest_merge); `linkage_count` counts from the merged partials.
// `record_linkage` runs all three on one process. Ties are never broken: a query with t tied
// neighbours including its counterpart earns 1/t (fractional), 0 (strict unless t = 1), 1 (optimistic).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/core/numeric_columns.h"
#include "kernels/distance/pairwise_tiles.h"
#include "kernels/distance/whitening.h"

namespace sdc::linkage {

enum class LinkageDistance {
  kDbrl1,            ///< each file standardised with its own mean and sd
  kDbrl1Common,      ///< both files standardised with the original file's moments
  kDbrl2,            ///< differences scaled by the sd of aligned differences
  kMahalanobisCov,   ///< S = Var(A − B) over aligned records
  kMahalanobisCov0,  ///< S = Var(A) + Var(B)
  kKernel,           ///< (1 + x·y)^d kernel distance on DBRL1-standardised values
};

enum class LinkageDirection {
  kOriginalToMasked,  ///< queries are original records, neighbours masked ones (default)
  kMaskedToOriginal,
};

struct LinkageOptions {
  LinkageDistance distance = LinkageDistance::kDbrl1;
  int kernel_degree = 2;
  std::size_t tile_rows = distance::kDefaultTileRows;
  LinkageDirection direction = LinkageDirection::kOriginalToMasked;
};

/// Both files as points, ready for the nearest-neighbour search.
struct PreparedLinkage {
  distance::PointSet queries;
  distance::PointSet references;
  distance::TileOptions tiles;
  double regularisation_epsilon = 0.0;  ///< ε added to S (Mahalanobis only; 0 otherwise)
};

/// The moments every distance may need, shape (a): of the original file, of the masked file and of
/// the aligned differences original − masked. The local step checks the alignment and completeness
/// of its block (InvalidInput for files of different length, row ids that differ — naming the first —
/// or a missing value; ParameterError for different numbers of variables).
struct LinkageMomentsPartial {
  distance::MomentsPartial original;
  distance::MomentsPartial masked;
  distance::MomentsPartial difference;
};

LinkageMomentsPartial linkage_moments_local(const NumericColumns& original, const NumericColumns& masked,
                                            const LinkageOptions& options = {});
void linkage_moments_merge(LinkageMomentsPartial& into, const LinkageMomentsPartial& from);

/// Transforms this block of both files with the moments of all blocks (element-wise). ParameterError
/// for a kernel degree below 1 or fewer than two records in all.
PreparedLinkage prepare_linkage_with(const LinkageMomentsPartial& total, const NumericColumns& original,
                                     const NumericColumns& masked, const LinkageOptions& options = {});
/// One process: the local moments are the total.
PreparedLinkage prepare_linkage(const NumericColumns& original, const NumericColumns& masked,
                                const LinkageOptions& options = {});

struct LinkageResult {
  std::int64_t records = 0;
  std::int64_t strict = 0;      ///< |N(a)| = 1 and correct
  std::int64_t optimistic = 0;  ///< correct, whatever |N(a)|
  double fractional = 0.0;      ///< Σ 1/|N(a)| over correct links, summed exactly
  double regularisation_epsilon = 0.0;
  // Per query record, in query order:
  std::vector<std::uint8_t> linked;      ///< 1 when the counterpart is in N(a)
  std::vector<std::int64_t> tie_size;    ///< |N(a)|
  std::vector<std::int64_t> nearest_id;  ///< smallest row id in N(a)
  std::vector<double> nearest_distance;  ///< the exact minimum (transformed coordinates)

  double strict_rate() const { return records == 0 ? 0.0 : static_cast<double>(strict) / static_cast<double>(records); }
  double fractional_rate() const { return records == 0 ? 0.0 : fractional / static_cast<double>(records); }
  double optimistic_rate() const {
    return records == 0 ? 0.0 : static_cast<double>(optimistic) / static_cast<double>(records);
  }
};

/// Counts from each query's merged nearest partial; the counterpart of query i is the reference with
/// the same row id.
LinkageResult linkage_count(const std::vector<std::int64_t>& query_ids,
                            const std::vector<distance::NearestPartial>& nearest);

LinkageResult record_linkage(const NumericColumns& original, const NumericColumns& masked,
                             const LinkageOptions& options = {});

}  // namespace sdc::linkage
