#include "distributed/compose/targeted_swap.h"

#include <utility>

#include "distributed/collective_error.h"
#include "distributed/compose/frequency_count.h"
#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

/// What the coordinator needs of a household: everything but its first row.
std::vector<std::byte> summary_bytes(const swapping::HouseholdSummaries& households) {
  ByteWriter out;
  out.put(static_cast<std::uint64_t>(households.levels));
  out.put(static_cast<std::uint64_t>(households.similar_count));
  out.put(static_cast<std::uint64_t>(households.carry_count));
  out.put_vector(households.ids);
  out.put_vector(households.members);
  out.put_vector(households.geography);
  out.put_vector(households.similar);
  out.put_vector(households.carry);
  out.put_vector(households.risk);
  return std::move(out.bytes());
}

swapping::HouseholdSummaries summaries_from(std::span<const std::byte> bytes) {
  ByteReader in(bytes);
  swapping::HouseholdSummaries households;
  households.levels = in.get<std::uint64_t>();
  households.similar_count = in.get<std::uint64_t>();
  households.carry_count = in.get<std::uint64_t>();
  households.ids = in.get_vector<std::int64_t>();
  households.members = in.get_vector<std::int32_t>();
  households.geography = in.get_vector<std::int32_t>();
  households.similar = in.get_vector<std::int32_t>();
  households.carry = in.get_vector<std::uint64_t>();
  households.risk = in.get_vector<double>();
  households.first_rows.assign(households.ids.size(), 0);
  return households;
}

void put_counts(ByteWriter& out, const swapping::TargetedSwapPlan& plan) {
  out.put(static_cast<std::uint64_t>(plan.levels.size()));
  for (const auto& level : plan.levels) {
    out.put(level.risky_households);
    out.put(level.must_swap);
    out.put(level.swapped_pairs);
    out.put(level.without_donor);
    out.put(level.quota_added);
  }
  out.put(plan.households);
  out.put(plan.quota_total);
  out.put(plan.swapped_households);
  out.put(plan.swapped_records);
  out.put(plan.households_without_donor);
}

swapping::TargetedSwapPlan counts_from(std::span<const std::byte> bytes) {
  ByteReader in(bytes);
  swapping::TargetedSwapPlan plan;
  plan.levels.resize(in.get<std::uint64_t>());
  for (auto& level : plan.levels) {
    level.risky_households = in.get<std::int64_t>();
    level.must_swap = in.get<std::int64_t>();
    level.swapped_pairs = in.get<std::int64_t>();
    level.without_donor = in.get<std::int64_t>();
    level.quota_added = in.get<std::int64_t>();
  }
  plan.households = in.get<std::int64_t>();
  plan.quota_total = in.get<std::int64_t>();
  plan.swapped_households = in.get<std::int64_t>();
  plan.swapped_records = in.get<std::int64_t>();
  plan.households_without_donor = in.get<std::int64_t>();
  return plan;
}

}  // namespace

std::vector<std::vector<double>> distributed_person_risk(const Communicator& comm, const KeyColumns& risk_variables,
                                                         const KeyColumns& geography) {
  std::vector<std::vector<double>> risk;
  for (std::size_t h = 0; h < geography.key_count(); ++h) {
    const DistributedFrequencies counted =
        distributed_frequency_count(comm, swapping::level_keys(risk_variables, geography, h), {}, 1);
    risk.push_back(swapping::person_risk_from_counts(counted.records.fk));
  }
  return risk;
}

std::vector<std::int64_t> distributed_risky_households(const Communicator& comm,
                                                       std::span<const std::int64_t> household_ids,
                                                       const std::vector<std::vector<double>>& person_risk,
                                                       double threshold) {
  const std::vector<std::span<const double>> risk(person_risk.begin(), person_risk.end());
  std::vector<std::int64_t> counts = swapping::count_risky_households(household_ids, risk, threshold);
  comm.all_reduce_sum(std::span<std::int64_t>(counts));
  return counts;
}

TargetedSwappedPart targeted_swap_households(const Communicator& comm, const swapping::HouseholdRecords& records,
                                             const swapping::TargetedSwapOptions& options, std::uint64_t seed) {
  const swapping::HouseholdSummaries mine = swapping::summarise_households(records);
  std::vector<std::vector<std::byte>> to_coordinator(static_cast<std::size_t>(comm.size()));
  to_coordinator[0] = summary_bytes(mine);
  const auto gathered = comm.all_to_all_bytes(to_coordinator);

  // The coordinator plans; each rank gets (its household index, the partner's geography and carry).
  std::vector<std::vector<std::byte>> to_ranks(static_cast<std::size_t>(comm.size()));
  std::vector<std::byte> counts;
  agree_on_error(comm, [&] {
    if (!comm.is_coordinator()) return;
    swapping::HouseholdSummaries all;
    std::vector<int> rank_of;
    std::vector<std::uint32_t> local_index;
    for (std::size_t r = 0; r < gathered.size(); ++r) {
      const swapping::HouseholdSummaries part = summaries_from(gathered[r]);
      for (std::size_t i = 0; i < part.size(); ++i) {
        rank_of.push_back(static_cast<int>(r));
        local_index.push_back(static_cast<std::uint32_t>(i));
      }
      swapping::append_households(all, part);
    }
    const swapping::TargetedSwapPlan plan = swapping::plan_targeted_swap(all, options, seed);
    std::vector<ByteWriter> out(static_cast<std::size_t>(comm.size()));
    auto send = [&](std::uint32_t household, std::uint32_t partner) {
      ByteWriter& to = out[static_cast<std::size_t>(rank_of[household])];
      to.put(local_index[household]);
      to.put_span(all.geography_of(partner));
      to.put_span(all.carry_of(partner));
    };
    for (const swapping::SwapPair& pair : plan.pairs) {
      send(pair.initiator, pair.donor);
      send(pair.donor, pair.initiator);
    }
    for (std::size_t r = 0; r < out.size(); ++r) to_ranks[r] = std::move(out[r].bytes());
    ByteWriter summary;
    put_counts(summary, plan);
    counts = std::move(summary.bytes());
  });
  const auto received = comm.all_to_all_bytes(to_ranks);
  TargetedSwappedPart part;
  part.plan = counts_from(comm.broadcast_bytes(counts));
  part.levels = mine.levels;
  part.carry_count = mine.carry_count;

  // Households in record order, so the output is written the same way for any arrival order.
  std::vector<std::pair<std::uint32_t, std::size_t>> arrivals;
  ByteReader in(received[0]);
  std::vector<std::int32_t> geography;
  std::vector<std::uint64_t> carry;
  while (!in.done()) {
    const auto household = in.get<std::uint32_t>();
    SDC_CHECK(household < mine.size(), "a swapped household of this rank");
    arrivals.emplace_back(household, arrivals.size());
    geography.resize(geography.size() + mine.levels);
    in.get_span(std::span(geography).last(mine.levels));
    carry.resize(carry.size() + mine.carry_count);
    in.get_span(std::span(carry).last(mine.carry_count));
  }
  std::sort(arrivals.begin(), arrivals.end());
  for (const auto& [household, k] : arrivals) {
    part.first_rows.push_back(mine.first_rows[household]);
    part.members.push_back(mine.members[household]);
    part.geography.insert(part.geography.end(), geography.begin() + static_cast<std::ptrdiff_t>(k * mine.levels),
                          geography.begin() + static_cast<std::ptrdiff_t>((k + 1) * mine.levels));
    part.carry.insert(part.carry.end(), carry.begin() + static_cast<std::ptrdiff_t>(k * mine.carry_count),
                      carry.begin() + static_cast<std::ptrdiff_t>((k + 1) * mine.carry_count));
  }
  return part;
}

}  // namespace sdc::distributed
