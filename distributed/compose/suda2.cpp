#include "distributed/compose/suda2.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <string>

#include "distributed/collective_error.h"
#include "distributed/compose/class_exchange.h"
#include "kernels/core/error.h"
#include "kernels/risk/frequency_count.h"

namespace sdc::distributed {
namespace {

constexpr std::size_t kGrain = std::size_t{1} << 14;

std::uint8_t capped(std::uint64_t count) {
  return static_cast<std::uint8_t>(std::min<std::uint64_t>(count, kCountMore));
}

/// Indices of the flagged records, ascending.
std::vector<std::uint32_t> flagged_records(std::span<const std::uint64_t> flags, std::size_t records) {
  std::vector<std::uint32_t> out;
  for (std::size_t w = 0; w < flags.size(); ++w) {
    std::uint64_t bits = flags[w];
    if (w * 64 + 64 > records) bits &= (std::uint64_t{1} << (records - w * 64)) - 1;
    for (; bits != 0; bits &= bits - 1)
      out.push_back(static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
  }
  return out;
}

/// Every rank must count the same subset: the masks of all ranks must agree. A rank that differs
/// from any other makes every rank see a difference, so all throw together.
void check_same_subset(const Communicator& comm, std::span<const std::size_t> subset) {
  std::uint64_t mask = 0;
  for (std::size_t j : subset) mask |= std::uint64_t{1} << j;
  const auto masks = comm.all_gather(mask);
  for (std::uint64_t other : masks)
    SDC_CHECK(other == mask, "suda2: every rank counts the same key subset in the same order");
}

/// Dense: per flagged record the index of its tuple; a histogram summed over ranks.
void count_dense(const Communicator& comm, const KeyColumns& keys, std::span<const std::size_t> subset,
                 std::span<const std::uint32_t> records, std::uint64_t space, std::span<std::uint8_t> out) {
  const std::vector<std::uint64_t> codes = subset_tuple_indices(keys, subset, records);
  std::vector<std::uint64_t> histogram(space, 0);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, codes.size(), kGrain), [&](const auto& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p)
      std::atomic_ref<std::uint64_t>(histogram[codes[p]]).fetch_add(1, std::memory_order_relaxed);
  });
  comm.all_reduce_sum(std::span<std::uint64_t>(histogram));  // integer counts: any order
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, records.size(), kGrain), [&](const auto& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p) out[records[p]] = capped(histogram[codes[p]]);
  });
}

/// Distributed group-by: local classes of the flagged records to their owners, capped totals back.
void count_by_shuffle(const Communicator& comm, const KeyColumns& keys, std::span<const std::size_t> subset,
                      std::span<const std::uint32_t> records, std::span<std::uint8_t> out) {
  std::vector<std::vector<std::int32_t>> gathered(subset.size(), std::vector<std::int32_t>(records.size()));
  KeyColumns projected;
  for (std::size_t t = 0; t < subset.size(); ++t) {
    const auto source = keys.codes[subset[t]];
    auto& column = gathered[t];
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, records.size(), kGrain), [&](const auto& range) {
      for (std::size_t p = range.begin(); p != range.end(); ++p) column[p] = source[records[p]];
    });
    projected.codes.emplace_back(column);
    projected.level_counts.push_back(keys.level_counts[subset[t]]);
  }

  // Local classes of the flagged records, sorted by tuple; their weights stay empty (counts only).
  FrequencyClasses mine;
  mine.key_count = subset.size();
  std::vector<std::uint32_t> record_class;
  if (!records.empty()) {
    KeyGrouping grouping = group_by_keys(projected);
    mine.class_keys = std::move(grouping.class_keys);
    mine.counts.resize(grouping.class_count());
    for (std::size_t c = 0; c < mine.counts.size(); ++c) mine.counts[c] = grouping.class_size(c);
    mine.weights.resize(grouping.class_count());
    record_class = std::move(grouping.record_class);
  }
  gathered.clear();

  const OwnedClasses classes = send_classes_to_owners(comm, mine);
  const auto totals = answer_senders(comm, classes, [&](ByteWriter& reply, std::size_t g) {
    reply.put(capped(static_cast<std::uint64_t>(classes.owned.counts[g])));
  });

  std::vector<std::uint8_t> class_count(mine.class_count());
  std::vector<ByteReader> from_owner;
  for (const auto& t : totals) from_owner.emplace_back(t);
  for (std::size_t c = 0; c < class_count.size(); ++c)
    class_count[c] = from_owner[static_cast<std::size_t>(classes.owner[c])].get<std::uint8_t>();
  for (const auto& in : from_owner) SDC_CHECK(in.done(), "every class count consumed");
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, records.size(), kGrain), [&](const auto& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p) out[records[p]] = class_count[record_class[p]];
  });
}

void count_over_ranks(const Communicator& comm, const KeyColumns& keys, std::span<const std::size_t> subset,
                      std::span<const std::uint64_t> candidates, std::span<std::uint8_t> out) {
  const std::size_t n = keys.record_count();
  SDC_CHECK(candidates.size() == record_bit_words(n), "one candidate bit per record");
  SDC_CHECK(out.size() == n, "one count per record");
  check_same_subset(comm, subset);
  std::uint64_t space = 1;
  bool fits = true;
  for (std::size_t j : subset) {
    SDC_CHECK(j < keys.key_count(), "subset key index within the keys");
    fits = fits && !__builtin_mul_overflow(space, static_cast<std::uint64_t>(keys.level_counts[j]) + 1U, &space);
  }
  const std::vector<std::uint32_t> records = flagged_records(candidates, n);
  // The branch depends on the key levels only, the same on every rank.
  if (fits && space <= kDenseSubsetSpace)
    count_dense(comm, keys, subset, records, space, out);
  else
    count_by_shuffle(comm, keys, subset, records, out);
}

std::vector<std::byte> serialize(const Suda2Partial& partial) {
  ByteWriter out;
  out.put(partial.unique_records);
  out.put(partial.pair_records);
  out.put(partial.scored_records);
  out.put(partial.msu_count);
  put_exact_sum(out, partial.inverse_score_power_sum);
  put_exact_sum(out, partial.score_sum);
  out.put(static_cast<std::uint64_t>(partial.msus_by_size.size()));
  out.put_span(std::span<const std::int64_t>(partial.msus_by_size));
  put_exact_sums(out, partial.key_contribution);
  put_exact_sums(out, partial.level_contribution);
  out.put(static_cast<std::uint64_t>(partial.level_offsets.size()));
  out.put_span(std::span<const std::size_t>(partial.level_offsets));
  return std::move(out.bytes());
}

Suda2Partial deserialize(std::span<const std::byte> bytes) {
  ByteReader in(bytes);
  Suda2Partial partial;
  partial.unique_records = in.get<std::int64_t>();
  partial.pair_records = in.get<std::int64_t>();
  partial.scored_records = in.get<std::int64_t>();
  partial.msu_count = in.get<std::int64_t>();
  partial.inverse_score_power_sum = get_exact_sum(in);
  partial.score_sum = get_exact_sum(in);
  partial.msus_by_size.resize(in.get<std::uint64_t>());
  in.get_span(std::span(partial.msus_by_size));
  partial.key_contribution = get_exact_sums(in);
  partial.level_contribution = get_exact_sums(in);
  partial.level_offsets.resize(in.get<std::uint64_t>());
  in.get_span(std::span(partial.level_offsets));
  SDC_CHECK(in.done(), "a whole SUDA2 partial read");
  return partial;
}

double max_over_ranks(const Communicator& comm, double local) {
  double out = local;
  for (double value : comm.all_gather(local)) out = std::max(out, value);
  return out;
}

}  // namespace

SubsetCounter make_distributed_subset_counter(const Communicator& comm, const KeyColumns& keys) {
  SDC_CHECK(keys.level_counts.size() == keys.key_count(), "one level count per key");
  // The dense branch indexes by code: every code must lie in -1..L-1. All ranks throw together.
  agree_on_error(comm, [&keys] {
    for (std::size_t j = 0; j < keys.key_count(); ++j) {
      SDC_CHECK(keys.codes[j].size() == keys.record_count(), "key columns of equal length");
      const std::int32_t levels = keys.level_counts[j];
      if (std::any_of(keys.codes[j].begin(), keys.codes[j].end(),
                      [&](std::int32_t code) { return code < -1 || code >= levels; }))
        throw InvalidInput("suda2: key variable " + std::to_string(j) + " has a code outside its levels");
    }
  });
  return [&comm, &keys](std::span<const std::size_t> subset, std::span<const std::uint64_t> candidates,
                        std::span<std::uint8_t> out) { count_over_ranks(comm, keys, subset, candidates, out); };
}

Suda2Partial all_reduce_suda2_partial(const Communicator& comm, const Suda2Partial& local) {
  if (comm.size() == 1) return local;
  const auto parts = comm.all_gather_bytes(serialize(local));
  Suda2Partial total = deserialize(parts.front());
  for (std::size_t r = 1; r < parts.size(); ++r) suda2_merge(total, deserialize(parts[r]));
  return total;
}

DistributedSuda2 distributed_suda2(const Communicator& comm, const KeyColumns& keys, const Suda2Options& options) {
  // One rank: the kernel's local counter (dense counting or a local group-by) gives the same integers.
  const SubsetCounter counter =
      comm.size() == 1 ? make_local_subset_counter(keys) : make_distributed_subset_counter(comm, keys);
  Suda2Local local = suda2_local(keys, counter, options);
  DistributedSuda2 out;
  out.total = all_reduce_suda2_partial(comm, local.partial);
  out.dis = suda2_dis_scores(local.score, out.total, keys.key_count(), options);
  out.score = std::move(local.score);
  const auto local_max = [](const std::vector<double>& values) {
    return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
  };
  out.score_max = max_over_ranks(comm, local_max(out.score));
  out.dis_max = max_over_ranks(comm, local_max(out.dis));
  if (options.contributions) out.contributions = suda2_attribute_contributions(out.total);
  return out;
}

}  // namespace sdc::distributed
