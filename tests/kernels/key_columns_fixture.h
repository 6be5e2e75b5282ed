#pragma once
// Key columns owned by a test, viewed as the KeyColumns the kernels take (all records or a block).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/core/key_grouping.h"

namespace sdc {

struct Columns {
  std::vector<std::vector<std::int32_t>> codes;  ///< codes[key][record]
  std::vector<std::int32_t> levels;

  std::size_t records() const { return codes.empty() ? 0 : codes.front().size(); }
  KeyColumns view(std::size_t first = 0, std::size_t count = SIZE_MAX) const {
    KeyColumns keys;
    keys.level_counts = levels;
    for (const auto& c : codes) keys.codes.emplace_back(c.data() + first, std::min(count, c.size() - first));
    return keys;
  }
};

}  // namespace sdc
