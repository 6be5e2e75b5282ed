#include "distributed/compose/loglinear.h"

#include <map>

#include "kernels/core/error.h"

namespace sdc::distributed {

KeyColumns ObservedKeys::columns() const {
  KeyColumns keys;
  for (const auto& c : codes) keys.codes.emplace_back(c);
  keys.level_counts = level_counts;
  return keys;
}

ObservedKeys distributed_observed_keys(const Communicator& comm, const KeyColumns& keys) {
  const std::size_t m = keys.key_count();
  const std::size_t n = keys.record_count();
  // present[offset[j] + code + 1]: records of key j with that code (slot 0: missing).
  std::vector<std::size_t> offset(m + 1, 0);
  for (std::size_t j = 0; j < m; ++j) offset[j + 1] = offset[j] + static_cast<std::size_t>(keys.level_counts[j]) + 1;
  std::vector<std::int64_t> present(offset[m], 0);
  for (std::size_t j = 0; j < m; ++j) {
    for (std::int32_t code : keys.codes[j]) {
      SDC_CHECK(code >= -1 && code < keys.level_counts[j], "key codes within their levels");
      ++present[offset[j] + static_cast<std::size_t>(code + 1)];
    }
  }
  comm.all_reduce_sum(std::span<std::int64_t>(present));
  ObservedKeys out;
  out.codes.resize(m);
  out.level_counts.resize(m);
  for (std::size_t j = 0; j < m; ++j) {
    const std::size_t slots = offset[j + 1] - offset[j];
    std::vector<std::int32_t> renumber(slots, -1);  // by code + 1
    std::int32_t next = 0;
    for (std::size_t s = 1; s < slots; ++s)
      if (present[offset[j] + s] > 0) renumber[s] = next++;
    if (present[offset[j]] > 0) {
      renumber[0] = next++;
      out.has_missing = true;
    }
    out.level_counts[j] = next;
    out.codes[j].resize(n);
    for (std::size_t i = 0; i < n; ++i) out.codes[j][i] = renumber[static_cast<std::size_t>(keys.codes[j][i] + 1)];
  }
  return out;
}

MarginCounts distributed_loglinear_margins(const Communicator& comm, const LogLinearModelSpec& spec,
                                           const KeyColumns& observed) {
  MarginCounts margins = loglinear_margins_local(spec, observed);
  if (comm.size() == 1) return margins;
  std::vector<std::int64_t> flat;
  for (const auto& table : margins.counts) flat.insert(flat.end(), table.begin(), table.end());
  comm.all_reduce_sum(std::span<std::int64_t>(flat));
  std::size_t at = 0;
  for (auto& table : margins.counts) {
    std::copy(flat.begin() + static_cast<std::ptrdiff_t>(at),
              flat.begin() + static_cast<std::ptrdiff_t>(at + table.size()), table.begin());
    at += table.size();
  }
  return margins;
}

std::vector<ClassSizeCount> distributed_class_sizes(const Communicator& comm, std::span<const double> class_size,
                                                    std::span<const std::uint8_t> selected) {
  std::map<std::int64_t, std::int64_t> records;  // by size, so the exchange is in a fixed order
  for (std::size_t i = 0; i < class_size.size(); ++i) {
    if (!selected.empty() && selected[i] == 0) continue;
    const auto size = static_cast<std::int64_t>(class_size[i]);
    SDC_CHECK(size >= 1 && static_cast<double>(size) == class_size[i], "whole class sizes");
    ++records[size];
  }
  if (comm.size() > 1) {
    ByteWriter out;
    for (const auto& [size, count] : records) {
      out.put(size);
      out.put(count);
    }
    const auto parts = comm.all_gather_bytes(out.bytes());
    records.clear();
    for (const auto& part : parts) {
      ByteReader in(part);
      while (!in.done()) {
        const auto size = in.get<std::int64_t>();
        records[size] += in.get<std::int64_t>();
      }
    }
  }
  std::vector<ClassSizeCount> sizes;
  for (const auto& [size, count] : records) {
    SDC_CHECK(count % size == 0, "a class of s records contributes s records");
    sizes.push_back({size, count / size});
  }
  return sizes;
}

}  // namespace sdc::distributed
