#include "kernels/core/blocked_sum.h"

#include <algorithm>

#include "kernels/core/error.h"

namespace sdc {

void BlockedSum::add(std::int64_t row_id, double x) {
  const std::int64_t block = row_id / kSumBlockRecords;
  if (blocks_.empty() || blocks_.back().first != block) {
    SDC_CHECK(blocks_.empty() || blocks_.back().first < block, "row ids added in increasing order");
    blocks_.emplace_back(block, ExactSum{});
  }
  blocks_.back().second.add(x);
}

void BlockedSum::add_block(std::int64_t block, const ExactSum& sum) {
  const auto it = std::lower_bound(blocks_.begin(), blocks_.end(), block,
                                   [](const auto& entry, std::int64_t id) { return entry.first < id; });
  if (it != blocks_.end() && it->first == block) {
    it->second.merge(sum);
  } else {
    blocks_.insert(it, {block, sum});
  }
}

void BlockedSum::merge(const BlockedSum& other) {
  std::vector<std::pair<std::int64_t, ExactSum>> merged;
  merged.reserve(blocks_.size() + other.blocks_.size());
  auto a = blocks_.begin();
  auto b = other.blocks_.begin();
  while (a != blocks_.end() || b != other.blocks_.end()) {
    if (b == other.blocks_.end() || (a != blocks_.end() && a->first < b->first)) {
      merged.push_back(*a++);
    } else if (a == blocks_.end() || b->first < a->first) {
      merged.push_back(*b++);
    } else {
      merged.push_back(*a++);
      merged.back().second.merge((b++)->second);
    }
  }
  blocks_ = std::move(merged);
}

double BlockedSum::value() const {
  double total = 0.0;
  for (const auto& [block, sum] : blocks_) total += sum.value();
  return total;
}

BlockedSum blocked_sum(std::span<const double> values, std::int64_t first_row_id) {
  BlockedSum sum;
  for (std::size_t i = 0; i < values.size(); ++i) sum.add(first_row_id + static_cast<std::int64_t>(i), values[i]);
  return sum;
}

}  // namespace sdc
