#include "distributed/compose/recoding.h"

#include <cmath>
#include <limits>

#include "distributed/collective_error.h"

namespace sdc::distributed {

std::vector<std::int64_t> distributed_code_counts(const Communicator& comm, std::span<const std::int32_t> codes,
                                                  std::int32_t categories) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(categories), 0);
  for (const std::int32_t code : codes)
    if (code >= 0 && code < categories) ++counts[static_cast<std::size_t>(code)];
  comm.all_reduce_sum(std::span<std::int64_t>(counts));
  return counts;
}

std::optional<std::pair<double, double>> distributed_value_range(const Communicator& comm,
                                                                 std::span<const double> values) {
  struct Range {
    double low = std::numeric_limits<double>::infinity();
    double high = -std::numeric_limits<double>::infinity();
    std::int64_t present = 0;
  };
  Range local;
  for (const double value : values) {
    if (std::isnan(value)) continue;
    local.low = std::min(local.low, value);
    local.high = std::max(local.high, value);
    ++local.present;
  }
  Range all;
  for (const Range& part : comm.all_gather(local)) {
    if (part.present == 0) continue;
    all.low = std::min(all.low, part.low);
    all.high = std::max(all.high, part.high);
    all.present += part.present;
  }
  if (all.present == 0) return std::nullopt;
  return std::pair{all.low, all.high};
}

recoding::LeafPatterns distributed_leaf_patterns(const Communicator& comm,
                                                 std::span<const std::span<const std::int32_t>> leaves) {
  const recoding::LeafPatterns local = recoding::leaf_patterns(leaves);
  if (comm.size() == 1) return local;
  ByteWriter out;
  out.put_vector(local.leaves);
  out.put_vector(local.counts);
  std::vector<recoding::LeafPatterns> parts;
  for (const auto& bytes : comm.all_gather_bytes(out.bytes())) {
    ByteReader in(bytes);
    recoding::LeafPatterns& part = parts.emplace_back();
    part.key_count = leaves.size();
    part.leaves = in.get_vector<std::int32_t>();
    part.counts = in.get_vector<std::int64_t>();
  }
  return recoding::merge_leaf_patterns(parts);
}

namespace {

void put_result(ByteWriter& out, const recoding::LocalSuppressionResult& result) {
  out.put_vector(result.suppressed);
  out.put(result.passes);
  out.put(result.records_touched);
  out.put(result.violators_before);
  out.put(result.violators_after);
  out.put_vector(std::vector<char>(result.impossible.begin(), result.impossible.end()));
}

recoding::LocalSuppressionResult get_result(ByteReader& in) {
  recoding::LocalSuppressionResult result;
  result.suppressed = in.get_vector<std::int64_t>();
  result.passes = in.get<std::int64_t>();
  result.records_touched = in.get<std::int64_t>();
  result.violators_before = in.get<std::int64_t>();
  result.violators_after = in.get<std::int64_t>();
  const auto impossible = in.get_vector<char>();
  result.impossible.assign(impossible.begin(), impossible.end());
  return result;
}

}  // namespace

recoding::LocalSuppressionResult distributed_local_suppression(const Communicator& comm,
                                                               std::span<const std::span<std::int32_t>> keys,
                                                               std::span<const std::int32_t> level_counts,
                                                               const recoding::LocalSuppressionOptions& options) {
  agree_on_error(comm, [&] { recoding::check_local_suppression_options(keys.size(), options); });
  const std::size_t m = keys.size();
  const std::size_t local_rows = m == 0 ? 0 : keys.front().size();

  std::vector<std::vector<std::byte>> sends(static_cast<std::size_t>(comm.size()));
  {
    ByteWriter out;
    out.put(static_cast<std::uint64_t>(local_rows));
    for (const auto& column : keys) out.put_span(std::span<const std::int32_t>(column));
    sends.front() = std::move(out.bytes());
  }
  const auto received = comm.all_to_all_bytes(sends);

  // On the coordinator: every rank's rows in rank order, suppressed, and sent back in slices.
  std::vector<std::uint64_t> rows_of(static_cast<std::size_t>(comm.size()), 0);
  std::vector<std::vector<std::int32_t>> all(m);
  recoding::LocalSuppressionResult result;
  if (comm.is_coordinator()) {
    for (std::size_t r = 0; r < received.size(); ++r) {
      ByteReader in(received[r]);
      rows_of[r] = in.get<std::uint64_t>();
      for (std::size_t j = 0; j < m; ++j) {
        const std::size_t start = all[j].size();
        all[j].resize(start + rows_of[r]);
        in.get_span(std::span<std::int32_t>(all[j]).subspan(start));
      }
    }
  }
  agree_on_error(comm, [&] {
    if (!comm.is_coordinator()) return;
    std::vector<std::span<std::int32_t>> columns(all.begin(), all.end());
    result = recoding::suppress_to_k_anonymity(columns, level_counts, options);
  });

  std::vector<std::vector<std::byte>> replies(static_cast<std::size_t>(comm.size()));
  if (comm.is_coordinator()) {
    std::size_t first = 0;
    for (std::size_t r = 0; r < replies.size(); ++r) {
      ByteWriter out;
      put_result(out, result);
      for (std::size_t j = 0; j < m; ++j)
        out.put_span(std::span<const std::int32_t>(all[j]).subspan(first, rows_of[r]));
      first += rows_of[r];
      replies[r] = std::move(out.bytes());
    }
  }
  const auto back = comm.all_to_all_bytes(replies);
  ByteReader in(back.front());
  result = get_result(in);
  for (const auto& column : keys) in.get_span(column);
  return result;
}

}  // namespace sdc::distributed
