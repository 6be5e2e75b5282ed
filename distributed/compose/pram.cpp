#include "distributed/compose/pram.h"

#include <algorithm>
#include <cstring>

#include "kernels/core/error.h"
#include "kernels/core/table.h"

namespace sdc::distributed {

std::vector<std::int64_t> distributed_pram_counts(const Communicator& comm, std::span<const std::int32_t> codes,
                                                  const Strata& strata, std::int32_t categories) {
  const auto k = static_cast<std::size_t>(categories);
  std::vector<std::int64_t> counts(strata.ids.size() * k, 0);
  for (std::size_t i = 0; i < codes.size(); ++i)
    if (codes[i] >= 0)
      ++counts[static_cast<std::size_t>(strata.record_stratum[i]) * k + static_cast<std::size_t>(codes[i])];
  comm.all_reduce_sum(std::span<std::int64_t>(counts));
  return counts;
}

std::vector<std::int64_t> distributed_pram_changes(const Communicator& comm, std::span<const std::int32_t> original,
                                                   std::span<const std::int32_t> released, const Strata& strata) {
  std::vector<std::int64_t> changes(strata.ids.size(), 0);
  for (std::size_t i = 0; i < original.size(); ++i)
    if (original[i] != released[i]) ++changes[static_cast<std::size_t>(strata.record_stratum[i])];
  comm.all_reduce_sum(std::span<std::int64_t>(changes));
  return changes;
}

}  // namespace sdc::distributed
