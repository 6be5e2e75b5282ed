#include "kernels/core/max_flow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace sdc {
namespace {

struct TestArc {
  std::int32_t from;
  std::int32_t to;
  std::int64_t capacity;
  std::int64_t reverse_capacity;
};

FlowNetwork network_of(std::int32_t nodes, const std::vector<TestArc>& arcs) {
  FlowNetwork network(nodes);
  for (const TestArc& a : arcs) network.add_arc(a.from, a.to, a.capacity, a.reverse_capacity);
  return network;
}

/// The capacity of the arcs leaving the node set `side` (reverse capacities of arcs entering it).
std::int64_t cut_capacity(const std::vector<TestArc>& arcs, const std::vector<std::uint8_t>& side) {
  std::int64_t capacity = 0;
  for (const TestArc& a : arcs) {
    if (side[static_cast<std::size_t>(a.from)] != 0 && side[static_cast<std::size_t>(a.to)] == 0)
      capacity += a.capacity;
    if (side[static_cast<std::size_t>(a.to)] != 0 && side[static_cast<std::size_t>(a.from)] == 0)
      capacity += a.reverse_capacity;
  }
  return capacity;
}

/// The minimum cut by enumerating every node set with the source and without the sink.
std::int64_t brute_force_min_cut(std::int32_t nodes, const std::vector<TestArc>& arcs, std::int32_t source,
                                 std::int32_t sink) {
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  for (std::uint32_t mask = 0; mask < (1U << static_cast<unsigned>(nodes)); ++mask) {
    if ((mask >> static_cast<unsigned>(source) & 1U) == 0 || (mask >> static_cast<unsigned>(sink) & 1U) != 0) continue;
    std::vector<std::uint8_t> side(static_cast<std::size_t>(nodes));
    for (std::int32_t v = 0; v < nodes; ++v)
      side[static_cast<std::size_t>(v)] = (mask >> static_cast<unsigned>(v)) & 1U;
    best = std::min(best, cut_capacity(arcs, side));
  }
  return best;
}

TEST(AFlowNetwork, FindsTheMaximumFlowOfTheTextbookNetwork) {
  // Cormen et al.'s example: s = 0, t = 5, maximum flow 23.
  const std::vector<TestArc> arcs{{0, 1, 16, 0}, {0, 2, 13, 0}, {1, 3, 12, 0}, {2, 1, 4, 0}, {2, 4, 14, 0},
                                  {3, 2, 9, 0},  {3, 5, 20, 0}, {4, 3, 7, 0},  {4, 5, 4, 0}};
  FlowNetwork network = network_of(6, arcs);
  EXPECT_EQ(network.max_flow(0, 5), 23);
  const auto source_side = network.source_side();
  EXPECT_EQ(cut_capacity(arcs, source_side), 23);
  EXPECT_EQ(source_side, (std::vector<std::uint8_t>{1, 1, 1, 0, 1, 0}));
}

TEST(AFlowNetwork, GivesTheMinimumCutOfRandomNetworksOnBothSidesWhateverTheArcOrder) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    const auto nodes = static_cast<std::int32_t>(2 + random() % 9);
    std::vector<TestArc> arcs;
    const auto count = static_cast<int>(random() % 25);
    for (int a = 0; a < count; ++a) {
      const auto from = static_cast<std::int32_t>(random() % static_cast<std::uint64_t>(nodes));
      const auto to = static_cast<std::int32_t>(random() % static_cast<std::uint64_t>(nodes));
      if (from == to) continue;
      const auto capacity = static_cast<std::int64_t>(random() % 6);
      const std::int64_t reverse = random() % 3 == 0 ? capacity : 0;  // some undirected edges
      arcs.push_back({from, to, capacity, reverse});
    }
    const std::int32_t sink = nodes - 1;
    const std::int64_t expected = brute_force_min_cut(nodes, arcs, 0, sink);

    FlowNetwork network = network_of(nodes, arcs);
    ASSERT_EQ(network.max_flow(0, sink), expected) << "trial " << trial;
    const auto source_side = network.source_side();
    const auto sink_side = network.sink_side();
    EXPECT_EQ(source_side[0], 1);
    EXPECT_EQ(sink_side[static_cast<std::size_t>(sink)], 1);
    EXPECT_EQ(cut_capacity(arcs, source_side), expected) << "trial " << trial;
    std::vector<std::uint8_t> not_sink_side(sink_side.size());
    for (std::size_t v = 0; v < sink_side.size(); ++v) {
      not_sink_side[v] = sink_side[v] == 0 ? 1 : 0;
      EXPECT_FALSE(source_side[v] != 0 && sink_side[v] != 0) << "trial " << trial << ", node " << v;
    }
    EXPECT_EQ(cut_capacity(arcs, not_sink_side), expected) << "trial " << trial;

    // Both sides are unique: the same with the arcs added in another order.
    std::vector<TestArc> shuffled = arcs;
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    FlowNetwork again = network_of(nodes, shuffled);
    EXPECT_EQ(again.max_flow(0, sink), expected);
    EXPECT_EQ(again.source_side(), source_side) << "trial " << trial;
    EXPECT_EQ(again.sink_side(), sink_side) << "trial " << trial;
  }
}

TEST(AFlowNetwork, CarriesFlowAlongPathsLongerThanAnyStack) {
  // A path of a million nodes: the search must not recurse per node.
  constexpr std::int32_t kNodes = 1'000'000;
  FlowNetwork network(kNodes);
  for (std::int32_t v = 0; v + 1 < kNodes; ++v) network.add_arc(v, v + 1, v == kNodes / 2 ? 3 : 5);
  EXPECT_EQ(network.max_flow(0, kNodes - 1), 3);
  const auto side = network.source_side();
  EXPECT_EQ(side[kNodes / 2], 1);
  EXPECT_EQ(side[kNodes / 2 + 1], 0);
}

}  // namespace
}  // namespace sdc
