#include "distributed/compose/strata.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cstring>

#include "kernels/core/error.h"
#include "kernels/core/table.h"

namespace sdc::distributed {
namespace {

/// Stratum variables with at most this many combinations of values index them densely (4 bytes each).
constexpr std::uint64_t kDenseCombinations = std::uint64_t{1} << 20;

std::vector<std::uint64_t> to_ids(std::span<const std::byte> bytes) {
  std::vector<std::uint64_t> ids(bytes.size() / sizeof(std::uint64_t));
  if (!ids.empty()) std::memcpy(ids.data(), bytes.data(), ids.size() * sizeof(std::uint64_t));
  return ids;
}

}  // namespace

std::vector<std::int32_t> stratum_codes(std::uint64_t id, std::span<const std::int32_t> level_counts) {
  std::vector<std::int32_t> codes;
  for (std::int32_t levels : level_counts) {
    const auto radix = static_cast<std::uint64_t>(levels) + 1;
    const auto code = static_cast<std::int32_t>(id % radix);
    codes.push_back(code == levels ? kMissingCode : code);
    id /= radix;
  }
  return codes;
}

Strata distributed_strata(const Communicator& comm, const KeyColumns& strata, std::size_t records,
                          const std::string& flag) {
  Strata out;
  const std::size_t n = records;
  std::vector<std::uint64_t> radix;
  std::uint64_t combinations = 1;
  for (std::int32_t levels : strata.level_counts) {
    radix.push_back(combinations);
    const auto base = static_cast<std::uint64_t>(levels) + 1;
    if (combinations > (std::uint64_t{1} << 62) / base)
      throw UsageError(flag + ": the stratum variables have more than 2^62 combinations of levels");
    combinations *= base;
  }
  out.record_stratum.assign(n, 0);
  if (strata.key_count() == 0) {
    out.ids = {0};  // one stratum on every rank, even a rank without records
    return out;
  }
  std::vector<std::uint64_t> record_ids(n, 0);
  for (std::size_t j = 0; j < strata.key_count(); ++j) {
    const auto codes = strata.codes[j];
    const auto missing = static_cast<std::uint64_t>(strata.level_counts[j]);
    for (std::size_t i = 0; i < n; ++i)
      record_ids[i] += radix[j] * (codes[i] < 0 ? missing : static_cast<std::uint64_t>(codes[i]));
  }
  // Few combinations (the usual case: a region or two) index a dense table; many go through a hash map.
  // Either way the ids are sorted before they are numbered, so the numbering is the same on every rank.
  const bool dense = combinations <= kDenseCombinations;
  std::vector<std::int32_t> dense_index(dense ? combinations : 0, -1);
  absl::flat_hash_map<std::uint64_t, std::int32_t> sparse_index;
  std::vector<std::uint64_t> local;
  for (std::uint64_t id : record_ids) {
    if (dense) {
      if (dense_index[id] < 0) {
        dense_index[id] = 0;
        local.push_back(id);
      }
    } else if (sparse_index.emplace(id, 0).second) {
      local.push_back(id);
    }
  }
  std::sort(local.begin(), local.end());
  for (const auto& part : comm.all_gather_bytes(std::as_bytes(std::span<const std::uint64_t>(local)))) {
    const auto ids = to_ids(part);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
  }
  std::sort(out.ids.begin(), out.ids.end());
  out.ids.erase(std::unique(out.ids.begin(), out.ids.end()), out.ids.end());
  // Every local id is among the global ones: number the local ones only.
  for (std::uint64_t id : local) {
    const auto index =
        static_cast<std::int32_t>(std::lower_bound(out.ids.begin(), out.ids.end(), id) - out.ids.begin());
    if (dense)
      dense_index[id] = index;
    else
      sparse_index[id] = index;
  }
  for (std::size_t i = 0; i < n; ++i)
    out.record_stratum[i] = dense ? dense_index[record_ids[i]] : sparse_index.find(record_ids[i])->second;
  return out;
}

}  // namespace sdc::distributed
