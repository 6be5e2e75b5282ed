#pragma once
// Maximum flow and minimum cut of a directed network with integer capacities (Dinic's algorithm:
// breadth-first level graphs, blocking flows by depth-first search with current-arc pointers;
// O(V²E) in the worst case, far fewer phases on the corridors of hypergraph cuts: 41 for a network of
// 115 000 nodes and 825 000 arcs of a 16x16x16x16 table's matrix).
//
// The minimum cut is given as the nodes on either side of it. The nodes reachable from the source in
// the residual network form the smallest source side of a minimum cut, and the nodes that reach the
// sink the smallest sink side: both sets are the same for every maximum flow, so they do not depend on
// the order in which the arcs were added or the paths augmented.
//
// Written here rather than taken from the Boost Graph Library: the one caller (the flow refinement
// of kernels/tables/block_angular) builds a fresh network per refinement on flat arrays, and needs the
// residual network afterwards; a Boost adjacency_list with its property maps would cost more memory
// per arc for no gain, and a new build dependency (the Boost headers).

#include <cstdint>
#include <vector>

namespace sdc {

class FlowNetwork {
 public:
  explicit FlowNetwork(std::int32_t nodes = 0) : nodes_(nodes) {}

  std::int32_t add_node() { return nodes_++; }
  std::int32_t nodes() const { return nodes_; }

  /// An arc from → to of `capacity`; its reverse arc to → from gets `reverse_capacity` (0 for a
  /// directed arc, `capacity` for an undirected edge). Capacities are non-negative.
  void add_arc(std::int32_t from, std::int32_t to, std::int64_t capacity, std::int64_t reverse_capacity = 0);

  /// The value of a maximum flow from `source` to `sink` (source ≠ sink). Call once, after every arc.
  std::int64_t max_flow(std::int32_t source, std::int32_t sink);

  /// After max_flow: per node, 1 when it is reachable from the source in the residual network.
  std::vector<std::uint8_t> source_side() const;
  /// After max_flow: per node, 1 when it reaches the sink in the residual network.
  std::vector<std::uint8_t> sink_side() const;

 private:
  struct Arc {
    std::int32_t to = 0;
    std::int32_t reverse = 0;  // index of the paired arc
    std::int64_t residual = 0;
  };
  struct Added {
    std::int32_t from;
    std::int32_t to;
    std::int64_t capacity;
    std::int64_t reverse_capacity;
  };

  void build();
  bool levels_from_source();
  std::int64_t augment();

  std::int32_t nodes_ = 0;
  std::int32_t source_ = 0;
  std::int32_t sink_ = 0;
  std::vector<Added> added_;
  std::vector<std::int64_t> first_arc_;  // node v's arcs: [first_arc_[v], first_arc_[v + 1])
  std::vector<Arc> arcs_;
  std::vector<std::int32_t> level_;
  std::vector<std::int64_t> next_arc_;
};

}  // namespace sdc
