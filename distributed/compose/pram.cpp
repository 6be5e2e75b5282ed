#include "distributed/compose/pram.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "distributed/compose/class_exchange.h"
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

std::vector<std::int64_t> distributed_pram_pair_counts(const Communicator& comm, std::span<const std::int32_t> rows,
                                                       std::span<const std::int32_t> columns, const Strata& strata,
                                                       std::int32_t row_categories, std::int32_t column_categories) {
  const auto kr = static_cast<std::size_t>(row_categories);
  const auto kc = static_cast<std::size_t>(column_categories);
  std::vector<std::int64_t> counts(strata.ids.size() * kr * kc, 0);
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i] >= 0 && columns[i] >= 0)
      ++counts[(static_cast<std::size_t>(strata.record_stratum[i]) * kr + static_cast<std::size_t>(rows[i])) * kc +
               static_cast<std::size_t>(columns[i])];
  comm.all_reduce_sum(std::span<std::int64_t>(counts));
  return counts;
}

PramTargetSums distributed_pram_target_sums(const Communicator& comm, std::span<const std::int32_t> codes,
                                            std::span<const double> values, const Strata& strata,
                                            std::int32_t categories) {
  const auto k = static_cast<std::size_t>(categories);
  PramTargetSums out;
  out.counts.assign(strata.ids.size() * k, 0);
  out.sums.resize(strata.ids.size() * k);
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] < 0 || std::isnan(values[i])) continue;
    const std::size_t cell =
        static_cast<std::size_t>(strata.record_stratum[i]) * k + static_cast<std::size_t>(codes[i]);
    ++out.counts[cell];
    out.sums[cell].add(values[i]);
  }
  comm.all_reduce_sum(std::span<std::int64_t>(out.counts));
  if (comm.size() > 1) {
    ByteWriter mine;
    put_exact_sums(mine, out.sums);
    const auto parts = comm.all_gather_bytes(mine.bytes());
    std::vector<ExactSum> total(out.sums.size());
    for (const auto& part : parts) {
      ByteReader in(part);
      const std::vector<ExactSum> sums = get_exact_sums(in);
      SDC_CHECK(sums.size() == total.size(), "ranks disagree on the PRAM strata");
      for (std::size_t c = 0; c < total.size(); ++c) total[c].merge(sums[c]);
    }
    out.sums = std::move(total);
  }
  return out;
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
