#include "distributed/compose/class_exchange.h"

#include "distributed/compose/pairwise_merge.h"
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
  put_exact_sum(out, classes.weights[c]);
}

FrequencyClasses read_classes(std::span<const std::byte> bytes, std::size_t key_count) {
  FrequencyClasses classes;
  classes.key_count = key_count;
  ByteReader in(bytes);
  std::vector<std::int32_t> key(key_count);
  while (!in.done()) {
    in.get_span(std::span(key));
    classes.class_keys.insert(classes.class_keys.end(), key.begin(), key.end());
    classes.counts.push_back(in.get<std::int64_t>());
    classes.weights.push_back(get_exact_sum(in));
  }
  return classes;
}

}  // namespace

int owner_of(std::span<const std::int32_t> key, int ranks) {
  std::uint64_t h = 0x243f6a8885a308d3ULL;
  for (std::int32_t code : key) h = mix(h ^ static_cast<std::uint32_t>(code));
  return static_cast<int>(h % static_cast<std::uint64_t>(ranks));
}

void put_exact_sum(ByteWriter& out, const ExactSum& sum) {
  const auto partials = sum.partials();
  out.put(static_cast<std::uint32_t>(partials.size()));
  out.put_span(partials);
}

ExactSum get_exact_sum(ByteReader& in) {
  absl::InlinedVector<double, 4> partials(in.get<std::uint32_t>());
  in.get_span(std::span(partials.data(), partials.size()));
  return ExactSum::from_partials(std::span<const double>(partials.data(), partials.size()));
}

void put_exact_sums(ByteWriter& out, const std::vector<ExactSum>& sums) {
  out.put(static_cast<std::uint64_t>(sums.size()));
  for (const ExactSum& sum : sums) put_exact_sum(out, sum);
}

std::vector<ExactSum> get_exact_sums(ByteReader& in) {
  std::vector<ExactSum> sums(in.get<std::uint64_t>());
  for (ExactSum& sum : sums) sum = get_exact_sum(in);
  return sums;
}

FrequencySummary sum_over_ranks(const Communicator& comm, const FrequencySummary& mine) {
  FrequencySummary total;
  total.k = mine.k;
  total.records = comm.all_reduce_sum(mine.records);
  total.classes = comm.all_reduce_sum(mine.classes);
  total.sample_uniques = comm.all_reduce_sum(mine.sample_uniques);
  total.records_below_k = comm.all_reduce_sum(mine.records_below_k);
  total.classes_below_k = comm.all_reduce_sum(mine.classes_below_k);
  return total;
}

OwnedClasses send_classes_to_owners(const Communicator& comm, const FrequencyClasses& mine) {
  std::vector<int> owner(mine.class_count());
  for (std::size_t c = 0; c < mine.class_count(); ++c) owner[c] = owner_of(mine.key(c), comm.size());
  return send_classes_to_owners(comm, mine, std::move(owner));
}

OwnedClasses send_classes_to_owners(const Communicator& comm, const FrequencyClasses& mine, std::vector<int> owner,
                                    std::span<const std::size_t> copy_offsets, std::span<const int> copy_ranks) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  const std::size_t m = mine.key_count;
  SDC_CHECK(owner.size() == mine.class_count(), "one owner per local class");
  SDC_CHECK(copy_offsets.empty() || copy_offsets.size() == mine.class_count() + 1, "copy offsets: one range per class");
  OwnedClasses out;

  // Each local class goes to its owner (and its copies to theirs); each destination's list stays
  // sorted by key tuple.
  std::vector<ByteWriter> to_owner(ranks);
  out.owner = std::move(owner);
  const auto is_rank = [&](int r) { return r >= 0 && static_cast<std::size_t>(r) < ranks; };
  for (std::size_t c = 0; c < mine.class_count(); ++c) {
    SDC_CHECK(is_rank(out.owner[c]), "owner is a rank");
    put_class(to_owner[static_cast<std::size_t>(out.owner[c])], mine, c);
    if (copy_offsets.empty()) continue;
    for (std::size_t i = copy_offsets[c]; i < copy_offsets[c + 1]; ++i) {
      SDC_CHECK(is_rank(copy_ranks[i]) && copy_ranks[i] != out.owner[c], "a copy goes to another rank");
      put_class(to_owner[static_cast<std::size_t>(copy_ranks[i])], mine, c);
    }
  }
  std::vector<std::vector<std::byte>> send(ranks);
  for (std::size_t r = 0; r < ranks; ++r) send[r] = std::move(to_owner[r].bytes());
  const auto received = comm.all_to_all_bytes(send);
  send.clear();

  // The owner merges what every rank sent. Exact weights make the merge order irrelevant.
  out.from_rank.resize(ranks);
  for (std::size_t r = 0; r < ranks; ++r) out.from_rank[r] = read_classes(received[r], m);
  out.owned = merge_pairwise(out.from_rank, frequency_count_merge);
  out.owned.key_count = m;
  return out;
}

}  // namespace sdc::distributed
