#include "distributed/compose/frequency_count.h"

#include <cstring>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void put_class(ByteWriter& out, const FrequencyClasses& classes, std::size_t c) {
  out.put_span(classes.key(c));
  out.put(classes.counts[c]);
  const auto partials = classes.weights[c].partials();
  out.put(static_cast<std::uint32_t>(partials.size()));
  out.put_span(partials);
}

FrequencyClasses read_classes(std::span<const std::byte> bytes, std::size_t key_count) {
  FrequencyClasses classes;
  classes.key_count = key_count;
  ByteReader in(bytes);
  std::vector<std::int32_t> key(key_count);
  std::vector<double> partials;
  while (!in.done()) {
    in.get_span(std::span(key));
    classes.class_keys.insert(classes.class_keys.end(), key.begin(), key.end());
    classes.counts.push_back(in.get<std::int64_t>());
    partials.resize(in.get<std::uint32_t>());
    in.get_span(std::span(partials));
    classes.weights.push_back(ExactSum::from_partials(partials));
  }
  return classes;
}

}  // namespace

int owner_of(std::span<const std::int32_t> key, int ranks) {
  std::uint64_t h = 0x243f6a8885a308d3ULL;
  for (std::int32_t code : key) h = mix(h ^ static_cast<std::uint32_t>(code));
  return static_cast<int>(h % static_cast<std::uint64_t>(ranks));
}

DistributedFrequencies distributed_frequency_count(const Communicator& comm, const KeyColumns& keys,
                                                   std::span<const double> weights, std::int64_t k) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  const LocalFrequencyCount local = frequency_count_local(keys, weights);
  const FrequencyClasses& mine = local.classes;
  const std::size_t m = keys.key_count();
  DistributedFrequencies out;
  if (comm.size() == 1) {  // the local classes are the global ones
    std::vector<double> class_weights(mine.class_count());
    for (std::size_t c = 0; c < class_weights.size(); ++c) class_weights[c] = mine.weights[c].value();
    out.records = frequency_count_assign(local.record_class, mine.counts, class_weights);
    out.summary = summarize_frequencies(mine.counts, k);
    return out;
  }

  // 1. Each local class goes to its owner; each destination's list stays sorted by key tuple.
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

  // 2. The owner merges what every rank sent. Exact weights make the merge order irrelevant.
  std::vector<FrequencyClasses> from_rank(ranks);
  for (std::size_t r = 0; r < ranks; ++r) from_rank[r] = read_classes(received[r], m);
  // Pairwise rounds, so that every class is copied log2(ranks) times rather than once per rank.
  std::vector<FrequencyClasses> round = from_rank;
  while (round.size() > 1) {
    std::vector<FrequencyClasses> next;
    for (std::size_t i = 0; i + 1 < round.size(); i += 2) next.push_back(frequency_count_merge(round[i], round[i + 1]));
    if (round.size() % 2 == 1) next.push_back(std::move(round.back()));
    round = std::move(next);
  }
  FrequencyClasses owned = std::move(round.front());
  owned.key_count = m;

  // 3. Totals back to each sender, in the order it sent its classes (a merge join on sorted lists).
  std::vector<std::vector<std::byte>> replies(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    ByteWriter reply;
    std::size_t g = 0;
    for (std::size_t c = 0; c < from_rank[r].class_count(); ++c) {
      while (compare_key_tuples(owned.key(g), from_rank[r].key(c)) < 0) ++g;
      reply.put(owned.counts[g]);
      reply.put(owned.weights[g].value());
    }
    replies[r] = std::move(reply.bytes());
  }
  const auto totals = comm.all_to_all_bytes(replies);

  // 4. Each local class takes its totals from its owner's reply, in the order sent.
  std::vector<std::int64_t> class_counts(mine.class_count());
  std::vector<double> class_weights(mine.class_count());
  std::vector<ByteReader> from_owner;
  for (const auto& t : totals) from_owner.emplace_back(t);
  for (std::size_t c = 0; c < mine.class_count(); ++c) {
    auto& in = from_owner[static_cast<std::size_t>(owner[c])];
    class_counts[c] = in.get<std::int64_t>();
    class_weights[c] = in.get<double>();
  }
  for (const auto& in : from_owner) SDC_CHECK(in.done(), "every class total consumed");

  out.records = frequency_count_assign(local.record_class, class_counts, class_weights);

  // 5. Integer summaries add up in any order.
  const FrequencySummary owned_summary = summarize_frequencies(owned.counts, k);
  out.summary.k = k;
  out.summary.records = comm.all_reduce_sum(owned_summary.records);
  out.summary.classes = comm.all_reduce_sum(owned_summary.classes);
  out.summary.sample_uniques = comm.all_reduce_sum(owned_summary.sample_uniques);
  out.summary.records_below_k = comm.all_reduce_sum(owned_summary.records_below_k);
  out.summary.classes_below_k = comm.all_reduce_sum(owned_summary.classes_below_k);
  return out;
}

}  // namespace sdc::distributed
