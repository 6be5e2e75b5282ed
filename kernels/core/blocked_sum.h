#pragma once
// The sum over records of a per-record quantity, with the same bits for any split of the records
// across ranks and threads (docs/rng.md, "Reductions and order"): terms are accumulated exactly per
// fixed block of kSumBlockRecords global row ids, and the blocks' rounded values are folded in
// block order. A block split between ranks merges exactly, so the fold sees the same block values.
// Shape (a): local step (blocked_sum), merge (BlockedSum::merge), finalize (value).

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "kernels/core/exact_sum.h"

namespace sdc {

inline constexpr std::int64_t kSumBlockRecords = 4096;

class BlockedSum {
 public:
  /// Adds `x` for the record with global row id `row_id`; row ids must not decrease between calls.
  void add(std::int64_t row_id, double x);
  /// Folds in another partial; associative and commutative.
  void merge(const BlockedSum& other);
  /// Sum of the blocks' values (each rounded once from its exact sum), in block order.
  double value() const;

  const std::vector<std::pair<std::int64_t, ExactSum>>& blocks() const { return blocks_; }
  void add_block(std::int64_t block, const ExactSum& sum);

 private:
  std::vector<std::pair<std::int64_t, ExactSum>> blocks_;  // sorted by block id
};

/// The partial of values[i] for rows first_row_id + i.
BlockedSum blocked_sum(std::span<const double> values, std::int64_t first_row_id);

}  // namespace sdc
