#pragma once
// Merging the partial results of the ranks in pairwise rounds: each element is copied log2(ranks)
// times rather than once per rank, and the order of merges is fixed by the ranks alone.

#include <utility>
#include <vector>

namespace sdc::distributed {

/// Merges `parts` (not empty) with `merge(into, from)`, a kernel's X_merge, in pairwise rounds:
/// (0,1), (2,3), ... then again on the results.
template <typename Partial, typename Merge>
Partial merge_pairwise(std::vector<Partial> parts, Merge merge) {
  while (parts.size() > 1) {
    std::vector<Partial> next;
    next.reserve((parts.size() + 1) / 2);
    for (std::size_t i = 0; i + 1 < parts.size(); i += 2) {
      merge(parts[i], parts[i + 1]);
      next.push_back(std::move(parts[i]));
    }
    if (parts.size() % 2 == 1) next.push_back(std::move(parts.back()));
    parts = std::move(next);
  }
  return std::move(parts.front());
}

}  // namespace sdc::distributed
