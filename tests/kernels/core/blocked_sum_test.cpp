#include "kernels/core/blocked_sum.h"

#include <gtest/gtest.h>

#include <random>

namespace sdc {
namespace {

std::vector<double> random_values(std::size_t n) {
  std::mt19937_64 generator(7);  // test data only
  std::lognormal_distribution<double> value(2.0, 3.0);
  std::vector<double> out(n);
  for (auto& x : out) x = value(generator) * ((generator() & 1U) ? 1.0 : -1.0);
  return out;
}

TEST(ABlockedSum, HasTheSameBitsForAnySplitOfTheRecords) {
  const auto values = random_values(50000);
  const double whole = blocked_sum(values, 0).value();
  std::mt19937 generator(3);
  for (int ranks : {2, 3, 7}) {
    // Uneven cut points that do not respect block boundaries, merged in reverse order.
    std::vector<std::size_t> cuts{0, values.size()};
    for (int r = 1; r < ranks; ++r) cuts.push_back(generator() % values.size());
    std::sort(cuts.begin(), cuts.end());
    BlockedSum merged;
    for (std::size_t r = cuts.size() - 1; r-- > 0;) {
      const std::span<const double> part(values.data() + cuts[r], cuts[r + 1] - cuts[r]);
      merged.merge(blocked_sum(part, static_cast<std::int64_t>(cuts[r])));
    }
    EXPECT_EQ(merged.value(), whole) << ranks << " parts";
  }
}

TEST(ABlockedSum, FoldsBlocksInBlockOrder) {
  BlockedSum sum;
  sum.add(0, 1e16);
  sum.add(kSumBlockRecords, 1.0);
  sum.add(2 * kSumBlockRecords, -1e16);
  // Block values 1e16, 1, -1e16 folded in order: (1e16 + 1) rounds to 1e16, then -1e16 gives 0.
  EXPECT_EQ(sum.value(), 0.0);
}

}  // namespace
}  // namespace sdc
