#pragma once
// Full-domain generalisation (docs/methods recoding.md §5): every key recoded to one level of its
// hierarchy, a node g = (g_1..g_m) of the lattice Π(0..h_j); the search for the anonymous node of least
// information loss under a suppression limit.
//
// Node check: the data's key tuples as patterns with counts (one group-by of the records, done once),
// each pattern recoded to the node's levels and grouped again; outliers are the records in classes
// below k, and the node is anonymous when they are at most the suppression limit.
// Search: when no record of the data lies below k, the bottom node (no recoding) is the optimum and
// every node is anonymous: one check. Otherwise nodes top-down by height. A node with a non-anonymous direct
// generalisation is non-anonymous (monotonicity: generalising merges classes) and is never checked; every other node is
// checked, in parallel within a height. So only the anonymous nodes and the border below them are
// grouped (ARX's Flash checks fewer on deep lattices; the result is the same, by the definition below).
// Result: the anonymous node of least loss; ties to the smaller height, then the lexicographically
// smaller node. The metrics are computed for every anonymous node (all of them are checked), so the
// definition holds with or without suppression and for the non-monotone metrics.
//
// Missing key values (leaf −1) stay missing at every level: a class value of their own, no loss counted.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/recoding/generalization_hierarchy.h"

namespace sdc::recoding {

/// The data's key tuples as leaf indices of each key's hierarchy (−1 missing), with their counts.
struct LeafPatterns {
  std::size_t key_count = 0;
  std::vector<std::int32_t> leaves;  ///< pattern p, key j at [p × key_count + j]
  std::vector<std::int64_t> counts;
  std::size_t pattern_count() const { return counts.size(); }
};

/// The patterns of records whose key j has leaf index leaves[j][r] (−1 missing), in first-seen order.
LeafPatterns leaf_patterns(std::span<const std::span<const std::int32_t>> leaves);

/// The merge of the patterns of consecutive blocks of records (ranks in order): equal tuples' counts
/// summed, in first-seen order over the blocks, so the result equals leaf_patterns of all the records.
/// ParameterError for parts of different key counts.
LeafPatterns merge_leaf_patterns(std::span<const LeafPatterns> parts);

enum class LossMetric : std::uint8_t {
  kEntropy,         ///< non-uniform entropy, monotone form (bits)
  kDiscernibility,  ///< DM
  kLoss,            ///< Iyengar's LM, the mean over keys
  kPrecision,       ///< Sweeney's precision loss
  kSuppressed,      ///< |O|
};

struct NodeMetrics {
  bool anonymous = false;
  std::int64_t outliers = 0;          ///< |O|: records in classes below k
  std::int64_t classes = 0;           ///< before suppression
  std::int64_t released_classes = 0;  ///< classes of at least k
  std::int64_t smallest_released = 0;
  std::int32_t height = 0;
  double precision_loss = 0.0;
  double loss_mean = 0.0;  ///< LM, mean over keys
  double loss_arx = 0.0;   ///< LM, ARX's Π(1 + LM_j)^(1/m) − 1
  double discernibility = 0.0;
  double discernibility_star = 0.0;  ///< DM*: Σ |E|² over all classes
  double aecs = 0.0;
  double entropy = 0.0;
  double loss(LossMetric metric) const;
};

struct LatticeSearchOptions {
  std::int64_t k = 2;
  double suppression_limit = 0.0;  ///< s: at most ⌊s·n⌋ outliers
  LossMetric metric = LossMetric::kEntropy;
};

/// An anonymous node on the frontier of loss against suppression: no other anonymous node has at most
/// its loss and at most its outliers, one of them fewer.
struct FrontierNode {
  std::vector<std::int32_t> levels;
  double loss = 0.0;
  std::int64_t outliers = 0;
  std::int32_t height = 0;
};

struct LatticeSearchResult {
  bool found = false;
  std::vector<std::int32_t> optimum;
  NodeMetrics metrics;
  std::int64_t nodes = 0;
  std::int64_t checked_nodes = 0;
  std::int64_t anonymous_nodes = 0;
  std::int64_t minimal_nodes = 0;  ///< anonymous nodes without an anonymous direct specialisation
  /// By loss ascending, outliers descending; of nodes with equal loss and outliers, the one the
  /// optimum's tie rule prefers (smaller height, then lexicographically smaller).
  std::vector<FrontierNode> frontier;
};

/// The node's metrics. ParameterError for a node of the wrong length or a level outside 0..h_j, or no
/// records.
NodeMetrics evaluate_node(const LeafPatterns& patterns, std::span<const GeneralizationHierarchy* const> hierarchies,
                          std::span<const std::int32_t> node, const LatticeSearchOptions& options);

/// The search above. ParameterError for k < 1, a suppression limit outside [0, 1], a hierarchy count
/// other than the patterns' keys, no records, or a lattice of more than 2^24 nodes.
LatticeSearchResult search_lattice(const LeafPatterns& patterns,
                                   std::span<const GeneralizationHierarchy* const> hierarchies,
                                   const LatticeSearchOptions& options);

}  // namespace sdc::recoding
