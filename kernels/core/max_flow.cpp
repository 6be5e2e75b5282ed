#include "kernels/core/max_flow.h"

#include <algorithm>
#include <limits>

#include "kernels/core/error.h"

namespace sdc {

void FlowNetwork::add_arc(std::int32_t from, std::int32_t to, std::int64_t capacity, std::int64_t reverse_capacity) {
  SDC_CHECK(from >= 0 && from < nodes_ && to >= 0 && to < nodes_, "flow arc between existing nodes");
  SDC_CHECK(capacity >= 0 && reverse_capacity >= 0, "flow capacities are non-negative");
  SDC_CHECK(arcs_.empty(), "flow arcs are added before the flow is computed");
  added_.push_back({from, to, capacity, reverse_capacity});
}

void FlowNetwork::build() {
  const auto n = static_cast<std::size_t>(nodes_);
  first_arc_.assign(n + 1, 0);
  for (const Added& a : added_) {
    ++first_arc_[static_cast<std::size_t>(a.from) + 1];
    ++first_arc_[static_cast<std::size_t>(a.to) + 1];
  }
  for (std::size_t v = 0; v < n; ++v) first_arc_[v + 1] += first_arc_[v];
  SDC_CHECK(2 * added_.size() <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
            "flow network of at most 2^31 - 1 arcs");
  std::vector<std::int64_t> cursor(first_arc_.begin(), first_arc_.end() - 1);
  arcs_.resize(2 * added_.size());
  for (const Added& a : added_) {
    const std::int64_t forward = cursor[static_cast<std::size_t>(a.from)]++;
    const std::int64_t backward = cursor[static_cast<std::size_t>(a.to)]++;
    arcs_[static_cast<std::size_t>(forward)] = {a.to, static_cast<std::int32_t>(backward), a.capacity};
    arcs_[static_cast<std::size_t>(backward)] = {a.from, static_cast<std::int32_t>(forward), a.reverse_capacity};
  }
  added_ = {};
}

bool FlowNetwork::levels_from_source() {
  level_.assign(static_cast<std::size_t>(nodes_), -1);
  std::vector<std::int32_t> queue{source_};
  level_[static_cast<std::size_t>(source_)] = 0;
  // Nodes at the sink's level or beyond lie on no shortest path: the search stops at that level.
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::int32_t v = queue[head];
    const std::int32_t sink_level = level_[static_cast<std::size_t>(sink_)];
    if (sink_level >= 0 && level_[static_cast<std::size_t>(v)] >= sink_level) break;
    for (auto a = first_arc_[static_cast<std::size_t>(v)]; a < first_arc_[static_cast<std::size_t>(v) + 1]; ++a) {
      const Arc& arc = arcs_[static_cast<std::size_t>(a)];
      if (arc.residual > 0 && level_[static_cast<std::size_t>(arc.to)] < 0) {
        level_[static_cast<std::size_t>(arc.to)] = level_[static_cast<std::size_t>(v)] + 1;
        queue.push_back(arc.to);
      }
    }
  }
  return level_[static_cast<std::size_t>(sink_)] >= 0;
}

/// One augmenting path of the level graph, by an iterative depth-first search (paths can be as long
/// as the network is large); a node found to lead nowhere leaves the level graph. 0 when none is left.
std::int64_t FlowNetwork::augment() {
  std::vector<std::int64_t> path;  // arcs from the source
  std::int32_t v = source_;
  for (;;) {
    if (v == sink_) {
      std::int64_t bottleneck = std::numeric_limits<std::int64_t>::max();
      for (const std::int64_t a : path) bottleneck = std::min(bottleneck, arcs_[static_cast<std::size_t>(a)].residual);
      for (const std::int64_t a : path) {
        Arc& arc = arcs_[static_cast<std::size_t>(a)];
        arc.residual -= bottleneck;
        arcs_[static_cast<std::size_t>(arc.reverse)].residual += bottleneck;
      }
      return bottleneck;
    }
    std::int64_t& a = next_arc_[static_cast<std::size_t>(v)];
    const std::int64_t end = first_arc_[static_cast<std::size_t>(v) + 1];
    while (a < end) {
      const Arc& arc = arcs_[static_cast<std::size_t>(a)];
      if (arc.residual > 0 && level_[static_cast<std::size_t>(arc.to)] == level_[static_cast<std::size_t>(v)] + 1)
        break;
      ++a;
    }
    if (a < end) {
      path.push_back(a);
      v = arcs_[static_cast<std::size_t>(a)].to;
      continue;
    }
    if (path.empty()) return 0;
    level_[static_cast<std::size_t>(v)] = -1;
    const Arc& last = arcs_[static_cast<std::size_t>(path.back())];
    v = arcs_[static_cast<std::size_t>(last.reverse)].to;
    path.pop_back();
    ++next_arc_[static_cast<std::size_t>(v)];
  }
}

std::int64_t FlowNetwork::max_flow(std::int32_t source, std::int32_t sink) {
  SDC_CHECK(source != sink && source >= 0 && source < nodes_ && sink >= 0 && sink < nodes_,
            "max_flow between two different nodes");
  SDC_CHECK(arcs_.empty(), "max_flow is computed once");
  source_ = source;
  sink_ = sink;
  build();
  std::int64_t flow = 0;
  while (levels_from_source()) {
    next_arc_.assign(first_arc_.begin(), first_arc_.end() - 1);
    while (const std::int64_t pushed = augment()) flow += pushed;
  }
  return flow;
}

std::vector<std::uint8_t> FlowNetwork::source_side() const {
  std::vector<std::uint8_t> side(static_cast<std::size_t>(nodes_), 0);
  std::vector<std::int32_t> queue{source_};
  side[static_cast<std::size_t>(source_)] = 1;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::int32_t v = queue[head];
    for (auto a = first_arc_[static_cast<std::size_t>(v)]; a < first_arc_[static_cast<std::size_t>(v) + 1]; ++a) {
      const Arc& arc = arcs_[static_cast<std::size_t>(a)];
      if (arc.residual > 0 && side[static_cast<std::size_t>(arc.to)] == 0) {
        side[static_cast<std::size_t>(arc.to)] = 1;
        queue.push_back(arc.to);
      }
    }
  }
  return side;
}

std::vector<std::uint8_t> FlowNetwork::sink_side() const {
  std::vector<std::uint8_t> side(static_cast<std::size_t>(nodes_), 0);
  std::vector<std::int32_t> queue{sink_};
  side[static_cast<std::size_t>(sink_)] = 1;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::int32_t v = queue[head];
    // u reaches v when the arc u → v, the reverse of one of v's arcs, has residual capacity.
    for (auto a = first_arc_[static_cast<std::size_t>(v)]; a < first_arc_[static_cast<std::size_t>(v) + 1]; ++a) {
      const Arc& arc = arcs_[static_cast<std::size_t>(a)];
      if (arcs_[static_cast<std::size_t>(arc.reverse)].residual > 0 && side[static_cast<std::size_t>(arc.to)] == 0) {
        side[static_cast<std::size_t>(arc.to)] = 1;
        queue.push_back(arc.to);
      }
    }
  }
  return side;
}

}  // namespace sdc
