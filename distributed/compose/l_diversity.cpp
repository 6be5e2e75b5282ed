#include "distributed/compose/l_diversity.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <vector>

#include "distributed/compose/frequency_count.h"
#include "distributed/compose/pairwise_merge.h"
#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

void put_class(ByteWriter& out, const SensitiveClasses& classes, std::size_t c) {
  out.put_span(classes.key(c));
  const std::size_t begin = classes.category_offsets[c];
  const std::size_t end = classes.category_offsets[c + 1];
  out.put(static_cast<std::uint32_t>(end - begin));
  out.put_span(std::span<const std::int32_t>(classes.categories).subspan(begin, end - begin));
  out.put_span(std::span<const std::int64_t>(classes.category_counts).subspan(begin, end - begin));
}

SensitiveClasses read_classes(std::span<const std::byte> bytes, std::size_t key_count) {
  SensitiveClasses classes;
  classes.key_count = key_count;
  ByteReader in(bytes);
  std::vector<std::int32_t> key(key_count);
  while (!in.done()) {
    in.get_span(std::span(key));
    classes.class_keys.insert(classes.class_keys.end(), key.begin(), key.end());
    const auto size = in.get<std::uint32_t>();
    const std::size_t begin = classes.categories.size();
    classes.categories.resize(begin + size);
    classes.category_counts.resize(begin + size);
    in.get_span(std::span(classes.categories).subspan(begin, size));
    in.get_span(std::span(classes.category_counts).subspan(begin, size));
    classes.category_offsets.push_back(begin + size);
  }
  return classes;
}

SensitiveClasses merge_all(std::vector<SensitiveClasses> round) {
  return merge_pairwise(std::move(round), l_diversity_merge);
}

struct OwnedSummary {
  std::int64_t classes = 0;
  std::int64_t min_distinct = std::numeric_limits<std::int64_t>::max();
  double min_entropy = std::numeric_limits<double>::infinity();
  std::int64_t min_recursive = std::numeric_limits<std::int64_t>::max();
  std::int64_t classes_below = 0;
  std::int64_t records_below = 0;
};

OwnedSummary summarize(const SensitiveClasses& classes, const LDiversity& measures, std::int64_t l) {
  OwnedSummary s;
  s.classes = static_cast<std::int64_t>(classes.class_count());
  for (std::size_t c = 0; c < classes.class_count(); ++c) {
    s.min_distinct = std::min(s.min_distinct, measures.distinct[c]);
    s.min_entropy = std::min(s.min_entropy, measures.entropy[c]);
    s.min_recursive = std::min(s.min_recursive, measures.recursive[c]);
    if (measures.distinct[c] < l) {
      ++s.classes_below;
      for (std::size_t j = classes.category_offsets[c]; j < classes.category_offsets[c + 1]; ++j)
        s.records_below += classes.category_counts[j];
    }
  }
  return s;
}

}  // namespace

DistributedLDiversity distributed_l_diversity(const Communicator& comm, const KeyColumns& keys,
                                              std::span<const std::int32_t> sensitive, const LDiversityOptions& options,
                                              std::int64_t l) {
  return distributed_l_diversity(comm, group_by_keys(keys), sensitive, options, l);
}

DistributedLDiversity distributed_l_diversity(const Communicator& comm, const KeyGrouping& grouping,
                                              std::span<const std::int32_t> sensitive, const LDiversityOptions& options,
                                              std::int64_t l) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  const std::size_t m = grouping.key_count;
  const LocalSensitiveClasses local = l_diversity_local(grouping, sensitive);
  const SensitiveClasses& mine = local.classes;

  DistributedLDiversity out;
  OwnedSummary owned_summary;
  LDiversity class_measures;  // per local class
  if (comm.size() == 1) {
    class_measures = l_diversity_finalize(mine, options);
    owned_summary = summarize(mine, class_measures, l);
  } else {
    std::vector<ByteWriter> to_owner(ranks);
    std::vector<int> owner(mine.class_count());
    for (std::size_t c = 0; c < mine.class_count(); ++c) {
      owner[c] = owner_of(mine.key(c), comm.size());
      put_class(to_owner[static_cast<std::size_t>(owner[c])], mine, c);
    }
    std::vector<std::vector<std::byte>> send(ranks);
    for (std::size_t r = 0; r < ranks; ++r) send[r] = std::move(to_owner[r].bytes());
    const auto received = comm.all_to_all_bytes(send);
    send.clear();

    std::vector<SensitiveClasses> from_rank(ranks);
    for (std::size_t r = 0; r < ranks; ++r) from_rank[r] = read_classes(received[r], m);
    SensitiveClasses owned = merge_all(from_rank);
    owned.key_count = m;
    const LDiversity owned_measures = l_diversity_finalize(owned, options);
    owned_summary = summarize(owned, owned_measures, l);

    // Measures back to each sender in the order it sent its classes (merge join on sorted lists).
    std::vector<std::vector<std::byte>> replies(ranks);
    for (std::size_t r = 0; r < ranks; ++r) {
      ByteWriter reply;
      std::size_t g = 0;
      for (std::size_t c = 0; c < from_rank[r].class_count(); ++c) {
        while (compare_key_tuples(owned.key(g), from_rank[r].key(c)) < 0) ++g;
        reply.put(owned_measures.distinct[g]);
        reply.put(owned_measures.entropy[g]);
        reply.put(owned_measures.recursive[g]);
      }
      replies[r] = std::move(reply.bytes());
    }
    const auto measures = comm.all_to_all_bytes(replies);
    std::vector<ByteReader> from_owner;
    for (const auto& bytes : measures) from_owner.emplace_back(bytes);
    class_measures.distinct.resize(mine.class_count());
    class_measures.entropy.resize(mine.class_count());
    class_measures.recursive.resize(mine.class_count());
    for (std::size_t c = 0; c < mine.class_count(); ++c) {
      auto& in = from_owner[static_cast<std::size_t>(owner[c])];
      class_measures.distinct[c] = in.get<std::int64_t>();
      class_measures.entropy[c] = in.get<double>();
      class_measures.recursive[c] = in.get<std::int64_t>();
    }
    for (const auto& in : from_owner) SDC_CHECK(in.done(), "every class's measures consumed");
  }
  out.records = l_diversity_assign(local.record_class, class_measures);

  out.classes = comm.all_reduce_sum(owned_summary.classes);
  out.min_distinct = comm.all_reduce_min(owned_summary.min_distinct);
  out.min_recursive = comm.all_reduce_min(owned_summary.min_recursive);
  out.classes_distinct_below = comm.all_reduce_sum(owned_summary.classes_below);
  out.records_distinct_below = comm.all_reduce_sum(owned_summary.records_below);
  // The minimum entropy: doubles compare exactly, so a min over ranks is order-free. Entropies are
  // positive, so their order keys order as the values do.
  const std::int64_t entropy_bits =
      comm.all_reduce_min(static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(owned_summary.min_entropy)));
  out.min_entropy = std::bit_cast<double>(static_cast<std::uint64_t>(entropy_bits));
  if (out.classes == 0) {
    out.min_distinct = 0;
    out.min_entropy = 0.0;
    out.min_recursive = 0;
  }
  return out;
}

}  // namespace sdc::distributed
