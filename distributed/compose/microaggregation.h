#pragma once
// Microaggregation across ranks (kernels/microaggregation/, docs/microaggregation.md; docs/methods
// microaggregation.md §7–8). Blocks are independent tasks: every record travels to the rank that holds
// its block (whole blocks, balanced by record count), each rank microaggregates its blocks on its
// threads, and the masked values and group ids travel back to the records' home ranks. Without
// blocking the whole file is one block on one rank (exact global MDAV; its memory is that rank's).
//
// Block keys: strata are numbered on every rank alike (compose/strata.h); tree and PC1 blocks are
// cut by the coordinator from the records' standardised coordinates (kd-tree: 8·(p + 1) bytes per
// record on the coordinator; kd-tree or principal-axis cuts) or scores (PC1: 16 bytes per record), gathered once, and
// the block ids scattered back.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "distributed/partition.h"
#include "kernels/core/numeric_columns.h"
#include "kernels/core/table.h"
#include "kernels/microaggregation/grouping.h"

namespace sdc::distributed {

/// What a method makes of one block: its grouping and its masked values in original units.
struct BlockMicroaggregation {
  microaggregation::Grouping grouping;
  std::vector<std::vector<double>> masked;  ///< masked[j][i]: variable j of the block's record i
  /// The records of each part the method cut the block into (a large stratum cut by a tree); empty
  /// when the block is one part.
  std::vector<std::int64_t> part_sizes;
};

/// Runs one method on one block (the block's records in row-id order). Called concurrently for
/// different blocks.
using BlockMicroaggregator = std::function<BlockMicroaggregation(const NumericColumns& block)>;

/// This rank's records after microaggregation, in home order.
struct MicroaggregatedPart {
  std::vector<std::vector<double>> masked;  ///< masked[j][i]
  std::vector<std::int64_t> group_id;       ///< the row id of the first record of the record's group
  std::vector<std::int64_t> block_id;       ///< the record's block (0 without blocking)
  /// Over all ranks, equal on every rank:
  std::int64_t groups = 0;
  std::int64_t blocks = 0;                         ///< the parts microaggregated apart: blocks, or their parts
  std::int64_t largest_block = 0;                  ///< records of the largest of those parts
  std::int64_t shuffled_blocks = 0;                ///< the blocks that travelled whole to ranks
  std::vector<std::int64_t> group_size_histogram;  ///< [s] = groups of s records
};

/// Collective. Blocks of at least `min_block` records: a smaller block joins its neighbour in block-id
/// order (the next one; the last joins the one before), repeatedly, so that every block can hold its
/// groups of k. Returns the new block of each record (block ids renumbered 0.. in order).
std::vector<std::int64_t> join_small_blocks(const Communicator& comm, std::span<const std::int64_t> block_of_record,
                                            std::int64_t min_block);

/// How a tree of blocks cuts a node (kernels/microaggregation/blocking.h).
enum class TreeCut {
  kCoordinate,     ///< kd-tree: along the coordinate of largest spread
  kPrincipalAxis,  ///< along the node's first principal axis
};

/// Collective. Tree blocks of at most `block_max` records over `standardised` coordinates, cut by the
/// coordinator.
std::vector<std::int64_t> tree_blocks(const Communicator& comm, const NumericColumns& standardised,
                                      std::int64_t block_max, int k, TreeCut cut);

/// Collective. Consecutive blocks of at most `block_max` records in the order of `score` (ties by
/// row id), cut by the coordinator.
std::vector<std::int64_t> ordering_blocks(const Communicator& comm, std::span<const double> score,
                                          std::span<const std::int64_t> row_ids, std::int64_t block_max, int k);

/// Collective. Moves the records of `part` (variables `variables`) to their blocks' ranks, runs
/// `method` on every block, and brings the results home (`home`: this rank's row range).
MicroaggregatedPart microaggregate_blocks(const Communicator& comm, const Table& part, const RowRange& home,
                                          const std::vector<std::string>& variables,
                                          std::span<const std::int64_t> block_of_record,
                                          const BlockMicroaggregator& method);

}  // namespace sdc::distributed
