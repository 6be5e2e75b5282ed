#include "distributed/compose/marketer_risk.h"

#include "distributed/compose/class_exchange.h"
#include "distributed/compose/risk_merges.h"
#include "kernels/core/error.h"
#include "kernels/risk/frequency_count.h"

namespace sdc::distributed {

DistributedMarketerRisk distributed_marketer_risk(const Communicator& comm, const KeyColumns& internal,
                                                  const KeyColumns& external) {
  const LocalFrequencyCount d = frequency_count_local(internal, {});
  const LocalFrequencyCount e = frequency_count_local(external, {});
  const OwnedClasses d_owned = send_classes_to_owners(comm, d.classes);
  const OwnedClasses e_owned = send_classes_to_owners(comm, e.classes);

  // The owner joins its D classes with the E classes of equal tuples (both lists sorted by tuple).
  const FrequencyClasses& mine = d_owned.owned;
  const FrequencyClasses& theirs = e_owned.owned;
  std::vector<double> external_counts(mine.class_count(), 0.0);
  std::size_t j = 0;
  for (std::size_t g = 0; g < mine.class_count(); ++g) {
    while (j < theirs.class_count() && compare_key_tuples(theirs.key(j), mine.key(g)) < 0) ++j;
    if (j < theirs.class_count() && compare_key_tuples(theirs.key(j), mine.key(g)) == 0)
      external_counts[g] = static_cast<double>(theirs.counts[j]);
  }
  const MarketerRiskPartial owned = marketer_risk_local(mine.counts, external_counts);

  DistributedMarketerRisk out;
  out.totals.classes = comm.all_reduce_sum(owned.classes);
  out.totals.records = comm.all_reduce_sum(owned.records);
  out.totals.invalid_records = comm.all_reduce_sum(owned.invalid_records);
  out.totals.certain = all_reduce_exact_sum(comm, owned.certain);
  out.totals.valid = all_reduce_exact_sum(comm, owned.valid);
  out.risk = marketer_risk_finalize(out.totals);

  // F_i back to the records of D, class by class in the order each rank sent them.
  const auto answers =
      answer_senders(comm, d_owned, [&](ByteWriter& reply, std::size_t g) { reply.put(external_counts[g]); });
  std::vector<ByteReader> from_owner;
  for (const auto& bytes : answers) from_owner.emplace_back(bytes);
  std::vector<double> class_external(d.classes.class_count());
  for (std::size_t c = 0; c < class_external.size(); ++c)
    class_external[c] = from_owner[static_cast<std::size_t>(d_owned.owner[c])].get<double>();
  for (const auto& in : from_owner) SDC_CHECK(in.done(), "every class's external count consumed");
  out.record_external.resize(d.record_class.size());
  for (std::size_t i = 0; i < out.record_external.size(); ++i)
    out.record_external[i] = class_external[d.record_class[i]];
  return out;
}

}  // namespace sdc::distributed
