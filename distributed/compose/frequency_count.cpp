#include "distributed/compose/frequency_count.h"

#include <vector>

#include "kernels/core/error.h"

namespace sdc::distributed {

namespace {

/// Steps 1 to 5 of the header's composition, from this rank's local count.
DistributedFrequencies merged_frequency_count(const Communicator& comm, const LocalFrequencyCount& local,
                                              std::int64_t k) {
  const FrequencyClasses& mine = local.classes;
  DistributedFrequencies out;
  if (comm.size() == 1) {  // the local classes are the global ones
    std::vector<double> class_weights(mine.class_count());
    for (std::size_t c = 0; c < class_weights.size(); ++c) class_weights[c] = mine.weights[c].value();
    out.records = frequency_count_assign(local.record_class, mine.counts, class_weights);
    out.summary = frequency_count_finalize(mine.counts, k);
    return out;
  }

  // 1-2. Each local class goes to its owner, which merges what every rank sent.
  const OwnedClasses classes = send_classes_to_owners(comm, mine);
  const FrequencyClasses& owned = classes.owned;

  // 3. Totals back to each sender, in the order it sent its classes.
  const auto totals = answer_senders(comm, classes, [&](ByteWriter& reply, std::size_t g) {
    reply.put(owned.counts[g]);
    reply.put(owned.weights[g].value());
  });

  // 4. Each local class takes its totals from its owner's reply, in the order sent.
  std::vector<std::int64_t> class_counts(mine.class_count());
  std::vector<double> class_weights(mine.class_count());
  std::vector<ByteReader> from_owner;
  for (const auto& t : totals) from_owner.emplace_back(t);
  for (std::size_t c = 0; c < mine.class_count(); ++c) {
    auto& in = from_owner[static_cast<std::size_t>(classes.owner[c])];
    class_counts[c] = in.get<std::int64_t>();
    class_weights[c] = in.get<double>();
  }
  for (const auto& in : from_owner) SDC_CHECK(in.done(), "every class total consumed");

  out.records = frequency_count_assign(local.record_class, class_counts, class_weights);

  // 5. Integer summaries add up in any order.
  out.summary = sum_over_ranks(comm, frequency_count_finalize(owned.counts, k));
  return out;
}

}  // namespace

DistributedFrequencies distributed_frequency_count(const Communicator& comm, const KeyColumns& keys,
                                                   std::span<const double> weights, std::int64_t k) {
  return merged_frequency_count(comm, frequency_count_local(keys, weights), k);
}

DistributedFrequencies distributed_frequency_count(const Communicator& comm, const KeyGrouping& grouping,
                                                   std::span<const double> weights, std::int64_t k) {
  return merged_frequency_count(comm, frequency_count_local(grouping, weights), k);
}

}  // namespace sdc::distributed
