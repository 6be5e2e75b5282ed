#include "kernels/recoding/lattice.h"

#include <absl/container/flat_hash_map.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc::recoding {
namespace {

constexpr std::int64_t kMaxLatticeNodes = std::int64_t{1} << 24;

/// What every node check reads: per key and level, each leaf's ancestor and each value's record count.
struct LatticeContext {
  const LeafPatterns& patterns;
  std::span<const GeneralizationHierarchy* const> hierarchies;
  std::int64_t records = 0;
  std::vector<std::vector<std::vector<std::int32_t>>> ancestor;   // [key][level][leaf]
  std::vector<std::vector<std::vector<std::int64_t>>> frequency;  // [key][level][value]: records there
  /// [key][level]: Σ over records of −log₂(F(leaf) / F(ancestor)); the entropy does not depend on the
  /// classes (suppressed records count at their generalised values), so it is summed once per level.
  std::vector<std::vector<double>> level_entropy;

  LatticeContext(const LeafPatterns& p, std::span<const GeneralizationHierarchy* const> h)
      : patterns(p), hierarchies(h) {
    if (h.size() != p.key_count)
      throw ParameterError("lattice search: " + std::to_string(h.size()) + " hierarchies for " +
                           std::to_string(p.key_count) + " keys");
    for (const std::int64_t count : p.counts) records += count;
    if (records == 0) throw ParameterError("lattice search: there are no records");
    ancestor.resize(h.size());
    frequency.resize(h.size());
    for (std::size_t j = 0; j < h.size(); ++j) {
      const GeneralizationHierarchy& hierarchy = *h[j];
      const auto levels = static_cast<std::size_t>(hierarchy.height()) + 1;
      ancestor[j].resize(levels);
      frequency[j].resize(levels);
      const std::size_t leaves = hierarchy.labels(0).size();
      ancestor[j][0].resize(leaves);
      for (std::size_t leaf = 0; leaf < leaves; ++leaf) ancestor[j][0][leaf] = static_cast<std::int32_t>(leaf);
      for (std::size_t l = 1; l < levels; ++l) {
        const std::span<const std::int32_t> parents = hierarchy.parents(static_cast<std::int32_t>(l) - 1);
        ancestor[j][l].resize(leaves);
        for (std::size_t leaf = 0; leaf < leaves; ++leaf)
          ancestor[j][l][leaf] = parents[static_cast<std::size_t>(ancestor[j][l - 1][leaf])];
      }
      for (std::size_t l = 0; l < levels; ++l) {
        frequency[j][l].assign(hierarchy.labels(static_cast<std::int32_t>(l)).size(), 0);
        for (std::size_t pattern = 0; pattern < p.pattern_count(); ++pattern) {
          const std::int32_t leaf = p.leaves[pattern * p.key_count + j];
          if (leaf >= 0)
            frequency[j][l][static_cast<std::size_t>(ancestor[j][l][static_cast<std::size_t>(leaf)])] +=
                p.counts[pattern];
        }
      }
      level_entropy.emplace_back(levels, 0.0);
      for (std::size_t l = 0; l < levels; ++l) {
        ExactSum sum;
        for (std::size_t leaf = 0; leaf < leaves; ++leaf) {
          const std::int64_t records_here = frequency[j][0][leaf];
          if (records_here == 0) continue;
          const auto value = static_cast<std::size_t>(ancestor[j][l][leaf]);
          sum.add(static_cast<double>(records_here) *
                  std::log2(static_cast<double>(frequency[j][l][value]) / static_cast<double>(records_here)));
        }
        level_entropy[j][l] = sum.value();
      }
    }
  }

  void check_node(std::span<const std::int32_t> node) const {
    if (node.size() != hierarchies.size())
      throw ParameterError("lattice search: a node needs one level per key (" + std::to_string(hierarchies.size()) +
                           ")");
    for (std::size_t j = 0; j < node.size(); ++j)
      if (node[j] < 0 || node[j] > hierarchies[j]->height())
        throw ParameterError("lattice search: level " + std::to_string(node[j]) + " of key " + std::to_string(j + 1) +
                             " outside 0.." + std::to_string(hierarchies[j]->height()));
  }

  NodeMetrics evaluate(std::span<const std::int32_t> node, const LatticeSearchOptions& options) const {
    const std::size_t m = hierarchies.size();
    const std::size_t count = patterns.pattern_count();
    // Group the patterns by their recoded tuple.
    absl::flat_hash_map<std::string, std::int32_t> class_of_tuple;
    std::vector<std::int64_t> class_size;
    std::vector<std::size_t> class_pattern;  // a pattern of each class: its recoded values
    std::string tuple(m * sizeof(std::int32_t), '\0');
    for (std::size_t p = 0; p < count; ++p) {
      for (std::size_t j = 0; j < m; ++j) {
        const std::int32_t leaf = patterns.leaves[p * m + j];
        const std::int32_t value =
            leaf < 0 ? -1 : ancestor[j][static_cast<std::size_t>(node[j])][static_cast<std::size_t>(leaf)];
        std::memcpy(tuple.data() + j * sizeof(std::int32_t), &value, sizeof value);
      }
      const auto [it, added] = class_of_tuple.try_emplace(tuple, static_cast<std::int32_t>(class_size.size()));
      if (added) {
        class_size.push_back(0);
        class_pattern.push_back(p);
      }
      class_size[static_cast<std::size_t>(it->second)] += patterns.counts[p];
    }
    NodeMetrics metrics;
    const auto n = static_cast<double>(records);
    metrics.classes = static_cast<std::int64_t>(class_size.size());
    double dm_released = 0.0;
    for (const std::int64_t size : class_size) {
      const auto squared = static_cast<double>(size) * static_cast<double>(size);
      metrics.discernibility_star += squared;
      if (size < options.k) {
        metrics.outliers += size;
      } else {
        ++metrics.released_classes;
        dm_released += squared;
        metrics.smallest_released = metrics.smallest_released == 0 ? size : std::min(metrics.smallest_released, size);
      }
    }
    const auto limit = static_cast<std::int64_t>(std::floor(options.suppression_limit * n));
    metrics.anonymous = metrics.outliers <= limit;
    const auto outliers = static_cast<double>(metrics.outliers);
    metrics.discernibility = dm_released + n * outliers;
    metrics.aecs = n / static_cast<double>(metrics.released_classes + (metrics.outliers > 0 ? 1 : 0));
    const double released = n - outliers;
    ExactSum precision;
    ExactSum entropy;
    ExactSum loss_sum;
    double loss_product = 1.0;
    for (std::size_t j = 0; j < m; ++j) {
      metrics.height += node[j];
      const GeneralizationHierarchy& hierarchy = *hierarchies[j];
      const auto level = static_cast<std::size_t>(node[j]);
      const double share = hierarchy.height() == 0 ? 0.0 : static_cast<double>(node[j]) / hierarchy.height();
      precision.add((released * share + outliers) / n);
      const auto leaves_total = static_cast<double>(hierarchy.labels(0).size());
      const std::span<const std::int64_t> leaves = hierarchy.leaves(node[j]);
      entropy.add(level_entropy[j][level]);
      // A class has one value of every key: its records' leaves under that value, counted per class.
      ExactSum kept_leaves;
      for (std::size_t c = 0; c < class_size.size(); ++c) {
        const std::int32_t leaf = patterns.leaves[class_pattern[c] * m + j];
        if (leaf < 0 || class_size[c] < options.k) continue;
        const auto value = static_cast<std::size_t>(ancestor[j][level][static_cast<std::size_t>(leaf)]);
        kept_leaves.add(static_cast<double>(class_size[c]) * static_cast<double>(leaves[value]) / leaves_total);
      }
      const double floor_term = n / leaves_total;
      const double denominator = n - floor_term;
      const double loss_j = denominator > 0.0 ? (kept_leaves.value() + outliers - floor_term) / denominator : 0.0;
      loss_sum.add(loss_j);
      loss_product *= 1.0 + loss_j;
    }
    metrics.precision_loss = precision.value() / static_cast<double>(m);
    metrics.entropy = entropy.value();
    metrics.loss_mean = loss_sum.value() / static_cast<double>(m);
    metrics.loss_arx = std::pow(loss_product, 1.0 / static_cast<double>(m)) - 1.0;
    return metrics;
  }
};

void check_search_options(const LatticeSearchOptions& options) {
  if (options.k < 1) throw ParameterError("lattice search: k must be at least 1");
  if (!(options.suppression_limit >= 0.0 && options.suppression_limit <= 1.0))
    throw ParameterError("lattice search: the suppression limit must lie in [0, 1]");
}

}  // namespace

double NodeMetrics::loss(LossMetric metric) const {
  switch (metric) {
    case LossMetric::kEntropy:
      return entropy;
    case LossMetric::kDiscernibility:
      return discernibility;
    case LossMetric::kLoss:
      return loss_mean;
    case LossMetric::kPrecision:
      return precision_loss;
    case LossMetric::kSuppressed:
      return static_cast<double>(outliers);
  }
  return 0.0;
}

LeafPatterns leaf_patterns(std::span<const std::span<const std::int32_t>> leaves) {
  LeafPatterns patterns;
  patterns.key_count = leaves.size();
  if (leaves.empty()) return patterns;
  const std::size_t m = leaves.size();
  absl::flat_hash_map<std::string, std::size_t> index;
  std::string tuple(m * sizeof(std::int32_t), '\0');
  for (std::size_t r = 0; r < leaves.front().size(); ++r) {
    for (std::size_t j = 0; j < m; ++j)
      std::memcpy(tuple.data() + j * sizeof(std::int32_t), &leaves[j][r], sizeof(std::int32_t));
    const auto [it, added] = index.try_emplace(tuple, patterns.counts.size());
    if (added) {
      patterns.counts.push_back(0);
      for (std::size_t j = 0; j < m; ++j) patterns.leaves.push_back(leaves[j][r]);
    }
    ++patterns.counts[it->second];
  }
  return patterns;
}

LeafPatterns merge_leaf_patterns(std::span<const LeafPatterns> parts) {
  LeafPatterns merged;
  if (parts.empty()) return merged;
  const std::size_t m = parts.front().key_count;
  merged.key_count = m;
  absl::flat_hash_map<std::string, std::size_t> index;
  std::string tuple(m * sizeof(std::int32_t), '\0');
  for (const LeafPatterns& part : parts) {
    if (part.key_count != m)
      throw ParameterError("merge_leaf_patterns: parts of " + std::to_string(m) + " and " +
                           std::to_string(part.key_count) + " keys");
    for (std::size_t p = 0; p < part.pattern_count(); ++p) {
      const std::int32_t* leaves = part.leaves.data() + p * m;
      if (m > 0) std::memcpy(tuple.data(), leaves, m * sizeof(std::int32_t));
      const auto [it, added] = index.try_emplace(tuple, merged.counts.size());
      if (added) {
        merged.counts.push_back(0);
        merged.leaves.insert(merged.leaves.end(), leaves, leaves + m);
      }
      merged.counts[it->second] += part.counts[p];
    }
  }
  return merged;
}

NodeMetrics evaluate_node(const LeafPatterns& patterns, std::span<const GeneralizationHierarchy* const> hierarchies,
                          std::span<const std::int32_t> node, const LatticeSearchOptions& options) {
  check_search_options(options);
  const LatticeContext context(patterns, hierarchies);
  context.check_node(node);
  return context.evaluate(node, options);
}

LatticeSearchResult search_lattice(const LeafPatterns& patterns,
                                   std::span<const GeneralizationHierarchy* const> hierarchies,
                                   const LatticeSearchOptions& options) {
  check_search_options(options);
  const LatticeContext context(patterns, hierarchies);
  const std::size_t m = hierarchies.size();
  // Nodes in mixed radix, the last key fastest; stride[j] the index step of one level of key j.
  std::vector<std::int64_t> stride(m, 1);
  std::int64_t nodes = 1;
  for (std::size_t j = m; j-- > 0;) {
    stride[j] = nodes;
    nodes *= hierarchies[j]->height() + 1;
    if (nodes > kMaxLatticeNodes)
      throw ParameterError("lattice search: more than 2^24 nodes; use fewer keys or shallower hierarchies");
  }
  const auto levels_of = [&](std::int64_t index) {
    std::vector<std::int32_t> node(m);
    for (std::size_t j = 0; j < m; ++j)
      node[j] = static_cast<std::int32_t>((index / stride[j]) % (hierarchies[j]->height() + 1));
    return node;
  };
  // Predictive tagging from the bottom: when the data itself leaves no record below k, every node is
  // anonymous with no outlier, and generalising only adds loss, so the bottom node is the optimum and
  // dominates every other node.
  const std::vector<std::int32_t> bottom(m, 0);
  const NodeMetrics bottom_metrics = context.evaluate(bottom, options);
  if (bottom_metrics.outliers == 0) {
    LatticeSearchResult result;
    result.found = true;
    result.nodes = nodes;
    result.checked_nodes = 1;
    result.anonymous_nodes = nodes;
    result.minimal_nodes = 1;
    result.optimum = bottom;
    result.metrics = bottom_metrics;
    result.frontier.push_back({bottom, bottom_metrics.loss(options.metric), 0, 0});
    return result;
  }
  std::int32_t top = 0;
  for (const GeneralizationHierarchy* hierarchy : hierarchies) top += hierarchy->height();
  std::vector<std::vector<std::int64_t>> by_height(static_cast<std::size_t>(top) + 1);
  for (std::int64_t index = 0; index < nodes; ++index) {
    const std::vector<std::int32_t> node = levels_of(index);
    std::int32_t height = 0;
    for (const std::int32_t level : node) height += level;
    by_height[static_cast<std::size_t>(height)].push_back(index);
  }
  enum : std::uint8_t { kNotAnonymous = 0, kAnonymous = 1 };
  std::vector<std::uint8_t> anonymous(static_cast<std::size_t>(nodes), kNotAnonymous);
  std::vector<double> loss(static_cast<std::size_t>(nodes), 0.0);
  std::vector<std::int64_t> outliers(static_cast<std::size_t>(nodes), 0);
  std::vector<std::uint8_t> checked(static_cast<std::size_t>(nodes), 0);
  for (std::size_t height = by_height.size(); height-- > 0;) {
    const std::vector<std::int64_t>& level = by_height[height];
    tbb::parallel_for(std::size_t{0}, level.size(), [&](std::size_t i) {
      const std::int64_t index = level[i];
      const std::vector<std::int32_t> node = levels_of(index);
      for (std::size_t j = 0; j < m; ++j)
        if (node[j] < hierarchies[j]->height() &&
            anonymous[static_cast<std::size_t>(index + stride[j])] == kNotAnonymous)
          return;  // a generalisation is not anonymous, so neither is this node
      checked[static_cast<std::size_t>(index)] = 1;
      const NodeMetrics metrics = context.evaluate(node, options);
      if (!metrics.anonymous) return;
      anonymous[static_cast<std::size_t>(index)] = kAnonymous;
      loss[static_cast<std::size_t>(index)] = metrics.loss(options.metric);
      outliers[static_cast<std::size_t>(index)] = metrics.outliers;
    });
  }
  LatticeSearchResult result;
  result.nodes = nodes;
  std::int64_t best = -1;
  std::int32_t best_height = 0;
  std::vector<FrontierNode> anonymous_nodes;
  for (std::int64_t index = 0; index < nodes; ++index) {
    result.checked_nodes += checked[static_cast<std::size_t>(index)];
    if (anonymous[static_cast<std::size_t>(index)] == kNotAnonymous) continue;
    ++result.anonymous_nodes;
    const std::vector<std::int32_t> node = levels_of(index);
    bool minimal = true;
    std::int32_t height = 0;
    for (std::size_t j = 0; j < m; ++j) {
      height += node[j];
      if (node[j] > 0 && anonymous[static_cast<std::size_t>(index - stride[j])] == kAnonymous) minimal = false;
    }
    result.minimal_nodes += minimal ? 1 : 0;
    anonymous_nodes.push_back(
        {node, loss[static_cast<std::size_t>(index)], outliers[static_cast<std::size_t>(index)], height});
    // Index order is the lexicographic order of the nodes, so a tie on loss and height keeps the first.
    const double value = loss[static_cast<std::size_t>(index)];
    if (best < 0 || value < loss[static_cast<std::size_t>(best)] ||
        (value == loss[static_cast<std::size_t>(best)] && height < best_height)) {
      best = index;
      best_height = height;
    }
  }
  // Nodes are in lexicographic order: the stable sort leaves equal (loss, outliers, height) in the tie
  // rule's order.
  std::stable_sort(anonymous_nodes.begin(), anonymous_nodes.end(), [](const FrontierNode& a, const FrontierNode& b) {
    if (a.loss != b.loss) return a.loss < b.loss;
    return a.outliers != b.outliers ? a.outliers < b.outliers : a.height < b.height;
  });
  for (FrontierNode& node : anonymous_nodes)
    if (result.frontier.empty() || node.outliers < result.frontier.back().outliers)
      result.frontier.push_back(std::move(node));
  if (best >= 0) {
    result.found = true;
    result.optimum = levels_of(best);
    result.metrics = context.evaluate(result.optimum, options);
  }
  return result;
}

}  // namespace sdc::recoding
