#include "distributed/compose/replicate_risk.h"

#include <cstring>

#include "distributed/compose/class_exchange.h"
#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

/// The records of the classes this rank owns, as they arrived: one entry per (sender, class).
struct OwnedRecords {
  std::vector<std::vector<std::int32_t>> entry_codes;  ///< per key, per entry
  std::vector<std::uint32_t> record_entry;             ///< per record
  std::vector<std::uint64_t> units;
  std::vector<double> weights;  ///< empty when unweighted
};

/// Sends every record (class key, unit, weight) to the owner of its class; class by class, so a key
/// tuple travels once per sending rank and class.
OwnedRecords send_records_to_owners(const Communicator& comm, const KeyColumns& keys, const KeyGrouping& local,
                                    std::span<const std::uint64_t> units, std::span<const double> weights) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  const bool weighted = !weights.empty();
  std::vector<ByteWriter> to_owner(ranks);
  for (std::size_t c = 0; c < local.class_count(); ++c) {
    ByteWriter& out = to_owner[static_cast<std::size_t>(owner_of(local.key(c), comm.size()))];
    out.put_span(local.key(c));
    out.put(local.class_size(c));
    for (std::uint32_t j = local.class_offsets[c]; j < local.class_offsets[c + 1]; ++j) {
      const std::uint32_t i = local.sorted_records[j];
      out.put(units[i]);
      if (weighted) out.put(weights[i]);
    }
  }
  std::vector<std::vector<std::byte>> send(ranks);
  for (std::size_t r = 0; r < ranks; ++r) send[r] = std::move(to_owner[r].bytes());
  to_owner.clear();
  const auto received = comm.all_to_all_bytes(send);
  send.clear();

  OwnedRecords owned;
  const std::size_t m = keys.key_count();
  owned.entry_codes.resize(m);
  std::vector<std::int32_t> key(m);
  std::uint32_t entry = 0;
  for (const auto& bytes : received) {  // in rank order; the plan's canonical order makes it irrelevant
    ByteReader in(bytes);
    while (!in.done()) {
      in.get_span(std::span(key));
      for (std::size_t j = 0; j < m; ++j) owned.entry_codes[j].push_back(key[j]);
      const auto count = in.get<std::uint32_t>();
      for (std::uint32_t k = 0; k < count; ++k) {
        owned.record_entry.push_back(entry);
        owned.units.push_back(in.get<std::uint64_t>());
        if (weighted) owned.weights.push_back(in.get<double>());
      }
      ++entry;
    }
  }
  return owned;
}

void put_partial(ByteWriter& out, const ReplicateRiskPartial& partial) {
  out.put(partial.first_replicate);
  out.put(static_cast<std::uint64_t>(partial.replicate_count()));
  out.put_span(std::span<const std::uint64_t>(partial.records));
  out.put_span(std::span<const std::uint64_t>(partial.sample_uniques));
  out.put_span(std::span<const std::uint64_t>(partial.records_below_k));
  out.put_span(std::span<const std::uint64_t>(partial.unique_survivors));
  out.put_span(std::span<const FixedPointSum>(partial.expected));
}

ReplicateRiskPartial get_partial(ByteReader& in) {
  ReplicateRiskPartial partial;
  partial.first_replicate = in.get<std::uint64_t>();
  const auto count = static_cast<std::size_t>(in.get<std::uint64_t>());
  for (auto* values :
       {&partial.records, &partial.sample_uniques, &partial.records_below_k, &partial.unique_survivors}) {
    values->resize(count);
    in.get_span(std::span(*values));
  }
  partial.expected.resize(count);
  in.get_span(std::span(partial.expected));
  return partial;
}

}  // namespace

DistributedReplicateRisk distributed_replicate_risk(const Communicator& comm, const KeyColumns& keys,
                                                    std::span<const std::uint64_t> units,
                                                    std::span<const double> weights,
                                                    const ReplicateRiskOptions& options, const ReplicateDesign& design,
                                                    std::uint64_t first_replicate, std::uint64_t end_replicate) {
  SDC_CHECK(units.size() == keys.record_count(), "one resampling unit per record");
  SDC_CHECK(!options.risk.weighted || weights.size() == keys.record_count(), "one weight per record when weighted");
  const std::span<const double> used_weights = options.risk.weighted ? weights : std::span<const double>();

  ReplicateRiskPlan plan;
  {
    const KeyGrouping local = group_by_keys(keys);
    if (comm.size() == 1) {
      plan = make_replicate_risk_plan(local.record_class, units, used_weights, options);
    } else {
      OwnedRecords owned = send_records_to_owners(comm, keys, local, units, used_weights);
      KeyColumns entry_keys;
      entry_keys.level_counts = keys.level_counts;
      for (const auto& codes : owned.entry_codes) entry_keys.codes.emplace_back(codes);
      // Entries of one tuple from several senders become one class; class ids follow the sorted tuples.
      const KeyGrouping entries = group_by_keys(entry_keys);
      std::vector<std::uint32_t> record_class(owned.record_entry.size());
      for (std::size_t i = 0; i < record_class.size(); ++i)
        record_class[i] = entries.record_class[owned.record_entry[i]];
      owned.record_entry = {};
      plan = make_replicate_risk_plan(record_class, owned.units, owned.weights, options);
    }
  }

  ReplicateRiskPartial full = replicate_risk_full_sample(plan);
  ReplicateRiskPartial replicates = replicate_risk_local(plan, design, first_replicate, end_replicate);
  plan = {};
  if (comm.size() > 1) {
    ByteWriter mine;
    put_partial(mine, full);
    put_partial(mine, replicates);
    const auto all = comm.all_gather_bytes(mine.bytes());
    // Every rank merges the same partials (integer sums: the order would not matter either).
    for (std::size_t r = 0; r < all.size(); ++r) {
      ByteReader in(all[r]);
      ReplicateRiskPartial rank_full = get_partial(in);
      ReplicateRiskPartial rank_replicates = get_partial(in);
      SDC_CHECK(in.done(), "every partial consumed");
      if (r == 0) {
        full = std::move(rank_full);
        replicates = std::move(rank_replicates);
      } else {
        replicate_risk_merge(full, rank_full);
        replicate_risk_merge(replicates, rank_replicates);
      }
    }
  }
  return {replicate_risk_finalize(full), replicate_risk_finalize(replicates)};
}

StratifiedUnits number_units_within_strata(const Communicator& comm, std::span<const std::int32_t> unit_stratum,
                                           std::size_t strata) {
  std::vector<std::uint64_t> counts(strata, 0);
  for (std::int32_t h : unit_stratum) {
    SDC_CHECK(h >= 0 && static_cast<std::size_t>(h) < strata, "stratum codes lie in [0, strata)");
    ++counts[static_cast<std::size_t>(h)];
  }
  const auto all = comm.all_gather_bytes(std::as_bytes(std::span<const std::uint64_t>(counts)));
  std::vector<std::uint64_t> totals(strata, 0);
  std::vector<std::uint64_t> before(strata, 0);  // units of each stratum on lower ranks
  std::vector<std::uint64_t> rank_counts(strata);
  for (std::size_t r = 0; r < all.size(); ++r) {
    SDC_CHECK(all[r].size() == strata * sizeof(std::uint64_t), "the same strata on every rank");
    if (!all[r].empty()) std::memcpy(rank_counts.data(), all[r].data(), all[r].size());
    for (std::size_t h = 0; h < strata; ++h) {
      totals[h] += rank_counts[h];
      if (r < static_cast<std::size_t>(comm.rank())) before[h] += rank_counts[h];
    }
  }
  StratifiedUnits out;
  out.offsets.assign(strata + 1, 0);
  for (std::size_t h = 0; h < strata; ++h) out.offsets[h + 1] = out.offsets[h] + totals[h];
  std::vector<std::uint64_t> next(strata);
  for (std::size_t h = 0; h < strata; ++h) next[h] = out.offsets[h] + before[h];
  out.numbers.resize(unit_stratum.size());
  for (std::size_t u = 0; u < unit_stratum.size(); ++u)
    out.numbers[u] = next[static_cast<std::size_t>(unit_stratum[u])]++;
  return out;
}

}  // namespace sdc::distributed
