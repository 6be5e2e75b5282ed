#include "distributed/compose/karr_sanil.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "distributed/compose/class_exchange.h"
#include "distributed/partition.h"
#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

int owner_of_replicate(std::uint32_t replicate, int ranks) {
  return static_cast<int>(replicate % static_cast<std::uint32_t>(ranks));
}

/// The table over the attributes: local classes to their owners, then every owner's merged cells to
/// every rank, merged in rank order (integer counts: any order gives the same table).
swapping::ReleaseTable gather_table(const Communicator& comm, const KeyColumns& attributes) {
  const LocalFrequencyCount local = frequency_count_local(attributes, {});
  const OwnedClasses owned = send_classes_to_owners(comm, local.classes);
  ByteWriter out;
  out.put_vector(owned.owned.class_keys);
  out.put_vector(owned.owned.counts);
  FrequencyClasses merged;
  merged.key_count = attributes.key_count();
  for (const auto& bytes : comm.all_gather_bytes(out.bytes())) {
    ByteReader in(bytes);
    FrequencyClasses part;
    part.key_count = attributes.key_count();
    part.class_keys = in.get_vector<std::int32_t>();
    part.counts = in.get_vector<std::int64_t>();
    part.weights.resize(part.counts.size());  // unweighted: the merge carries empty sums along
    frequency_count_merge(merged, part);
  }
  return swapping::make_release_table(merged, attributes.level_counts);
}

/// The key threshold below which about `wanted` of `records` keys fall, with room to spare: keys are
/// uniform on 64 bits.
std::uint64_t first_threshold(std::int64_t wanted, std::int64_t records) {
  if (wanted >= records) return std::numeric_limits<std::uint64_t>::max();
  const double w = static_cast<double>(wanted);
  const double share = (w + 10.0 * std::sqrt(w) + 100.0) / static_cast<double>(records);
  if (share >= 1.0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(std::ldexp(share, 64));
}

/// Every replicate's 2m smallest keys go to the replicate's owner: thresholds are raised (doubled)
/// until enough keys fall below them on all ranks together, then the records below are sent.
std::vector<swapping::SwapSelection> gather_selections(const Communicator& comm, const KeyColumns& attributes,
                                                       const KeyColumns& strata, std::int64_t first_row_id,
                                                       const FrontierSettings& settings,
                                                       const swapping::ReleaseTable& table, std::int64_t wanted) {
  const std::uint32_t replicates = settings.replicates;
  const std::size_t records = attributes.record_count();
  std::vector<std::uint64_t> threshold(replicates, first_threshold(wanted, table.total));
  if (wanted == 0) threshold.assign(replicates, 0);
  for (;;) {
    std::vector<std::int64_t> below(replicates, 0);
    for (std::uint32_t b = 0; b < replicates; ++b) {
      if (threshold[b] == 0) continue;
      below[b] = tbb::parallel_reduce(
          tbb::blocked_range<std::size_t>(0, records, std::size_t{1} << 16), std::int64_t{0},
          [&](const tbb::blocked_range<std::size_t>& range, std::int64_t count) {
            for (std::size_t i = range.begin(); i < range.end(); ++i)
              if (swapping::selection_key(settings.seed, b, first_row_id + static_cast<std::int64_t>(i)) < threshold[b])
                ++count;
            return count;
          },
          std::plus<>());
    }
    comm.all_reduce_sum(std::span<std::int64_t>(below));
    bool enough = true;
    for (std::uint32_t b = 0; b < replicates; ++b) {
      if (below[b] >= wanted || threshold[b] == std::numeric_limits<std::uint64_t>::max()) continue;
      enough = false;
      threshold[b] = threshold[b] > std::numeric_limits<std::uint64_t>::max() / 2
                         ? std::numeric_limits<std::uint64_t>::max()
                         : 2 * threshold[b];
    }
    if (enough) break;
  }
  // The top threshold keeps every key (below max): the last key value counts too.
  const auto is_selected = [&](std::uint64_t key, std::uint32_t b) {
    return threshold[b] == std::numeric_limits<std::uint64_t>::max() || key < threshold[b];
  };
  const int ranks = comm.size();
  std::vector<ByteWriter> sends(static_cast<std::size_t>(ranks));
  std::vector<std::int32_t> codes(attributes.key_count() + strata.key_count());
  for (std::uint32_t b = 0; b < replicates && wanted > 0; ++b) {
    ByteWriter& out = sends[static_cast<std::size_t>(owner_of_replicate(b, ranks))];
    for (std::size_t i = 0; i < records; ++i) {
      const std::int64_t row = first_row_id + static_cast<std::int64_t>(i);
      const std::uint64_t key = swapping::selection_key(settings.seed, b, row);
      if (!is_selected(key, b)) continue;
      for (std::size_t j = 0; j < attributes.key_count(); ++j) codes[j] = attributes.codes[j][i];
      for (std::size_t j = 0; j < strata.key_count(); ++j) codes[attributes.key_count() + j] = strata.codes[j][i];
      out.put(b);
      out.put(key);
      out.put(row);
      out.put_span(std::span<const std::int32_t>(codes));
    }
  }
  std::vector<std::vector<std::byte>> send_bytes;
  send_bytes.reserve(sends.size());
  for (auto& writer : sends) send_bytes.push_back(std::move(writer.bytes()));
  const auto received = comm.all_to_all_bytes(send_bytes);

  std::vector<std::vector<swapping::SelectedRecord>> gathered(replicates);
  for (const auto& bytes : received) {
    ByteReader in(bytes);
    while (!in.done()) {
      const auto b = in.get<std::uint32_t>();
      swapping::SelectedRecord record;
      record.key = in.get<std::uint64_t>();
      record.row_id = in.get<std::int64_t>();
      record.codes.resize(codes.size());
      in.get_span(std::span<std::int32_t>(record.codes));
      gathered[b].push_back(std::move(record));
    }
  }
  std::vector<swapping::SwapSelection> selections(replicates);
  for (std::uint32_t b = 0; b < replicates; ++b)
    if (owner_of_replicate(b, ranks) == comm.rank())
      selections[b] = swapping::make_swap_selection(std::move(gathered[b]), static_cast<std::size_t>(wanted), table,
                                                    strata.key_count());
  return selections;
}

void put_evaluation(ByteWriter& out, const swapping::ReleaseEvaluation& e) {
  out.put(e.pairs);
  out.put(e.swapped_records);
  out.put(e.changed_records);
  out.put(e.unswapped_records);
  out.put(e.unswapped_in_small_cells);
  out.put(e.disclosure_risk);
  out.put(e.distances);
  out.put(e.loglinear_utility);
}

swapping::ReleaseEvaluation get_evaluation(ByteReader& in) {
  swapping::ReleaseEvaluation e;
  e.pairs = in.get<std::int64_t>();
  e.swapped_records = in.get<std::int64_t>();
  e.changed_records = in.get<std::int64_t>();
  e.unswapped_records = in.get<std::int64_t>();
  e.unswapped_in_small_cells = in.get<std::int64_t>();
  e.disclosure_risk = in.get<double>();
  e.distances = in.get<utility::TableDistances>();
  e.loglinear_utility = in.get<double>();
  return e;
}

}  // namespace

FrontierEvaluation evaluate_frontier(const Communicator& comm, const KeyColumns& attributes, const KeyColumns& strata,
                                     std::int64_t first_row_id, const FrontierSettings& settings) {
  if (settings.replicates == 0) throw ParameterError("swap frontier: at least one replicate is needed");
  FrontierEvaluation out;
  out.table = gather_table(comm, attributes);
  out.original_risk = swapping::original_disclosure_risk(out.table);

  // M*: fitted on the whole table, which every rank holds, so every rank finds the same one.
  if (!settings.models.empty()) {
    std::vector<LogLinearModelSpec> specs;
    for (const auto& generators : settings.models) {
      LogLinearModelSpec spec;
      spec.level_counts = out.table.level_counts;
      spec.generators = generators;
      specs.push_back(canonical_model(spec));
    }
    std::size_t chosen = 0;
    if (specs.size() > 1) {
      LogLinearClasses classes;
      classes.key_count = out.table.attribute_count;
      classes.keys = out.table.cells;
      classes.sample_counts = out.table.counts;
      out.model_selection = select_loglinear_model(specs, classes);
      chosen = settings.select_by_bic ? out.model_selection->best_by_bic : out.model_selection->best_by_aic;
    }
    out.baseline = swapping::make_loglinear_baseline(out.table, specs[chosen], settings.refit);
  }

  std::int64_t most_pairs = 0;
  for (const auto& candidate : settings.candidates) {
    out.pairs_wanted.push_back(swapping::pairs_for_rate(candidate.rate, out.table.total));
    most_pairs = std::max(most_pairs, out.pairs_wanted.back());
  }
  out.selections = gather_selections(comm, attributes, strata, first_row_id, settings, out.table, 2 * most_pairs);

  // Candidates of the owned replicates, on this rank's threads.
  struct Task {
    std::size_t candidate;
    std::uint32_t replicate;
  };
  std::vector<Task> tasks;
  for (std::uint32_t b = 0; b < settings.replicates; ++b)
    if (owner_of_replicate(b, comm.size()) == comm.rank())
      for (std::size_t c = 0; c < settings.candidates.size(); ++c) tasks.push_back({c, b});
  std::vector<swapping::ReleaseEvaluation> results(tasks.size());
  const swapping::LogLinearBaseline* baseline = out.baseline ? &*out.baseline : nullptr;
  tbb::parallel_for(std::size_t{0}, tasks.size(), [&](std::size_t t) {
    const auto& [c, b] = tasks[t];
    const swapping::SwapSelection& selection = out.selections[b];
    const auto pairs = swapping::pair_selected(selection, out.pairs_wanted[c]);
    results[t] = swapping::evaluate_release(out.table, selection, pairs, settings.candidates[c].swap_attributes,
                                            settings.release, baseline);
  });

  ByteWriter mine;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    mine.put(static_cast<std::uint64_t>(tasks[t].candidate));
    mine.put(tasks[t].replicate);
    put_evaluation(mine, results[t]);
  }
  out.evaluations.assign(settings.candidates.size(), std::vector<swapping::ReleaseEvaluation>(settings.replicates));
  for (const auto& bytes : comm.all_gather_bytes(mine.bytes())) {
    ByteReader in(bytes);
    while (!in.done()) {
      const auto c = in.get<std::uint64_t>();
      const auto b = in.get<std::uint32_t>();
      out.evaluations[c][b] = get_evaluation(in);
    }
  }
  return out;
}

std::int64_t apply_release(const Communicator& comm, const FrontierEvaluation& evaluation,
                           const FrontierSettings& settings, std::size_t candidate, std::uint32_t replicate,
                           std::int64_t first_row_id, std::span<const std::span<std::int32_t>> columns) {
  const swapping::ReleaseTable& table = evaluation.table;
  const std::vector<std::size_t>& swapped = settings.candidates.at(candidate).swap_attributes;
  const std::int64_t records = columns.empty() ? 0 : static_cast<std::int64_t>(columns.front().size());
  const auto ranges = comm.all_gather(RowRange{first_row_id, records});
  const auto rank_of_row = [&](std::int64_t row) {
    const auto it = std::upper_bound(ranges.begin(), ranges.end(), row,
                                     [](std::int64_t r, const RowRange& range) { return r < range.first; });
    return static_cast<std::size_t>(it - ranges.begin()) - 1;
  };

  std::vector<ByteWriter> sends(static_cast<std::size_t>(comm.size()));
  if (owner_of_replicate(replicate, comm.size()) == comm.rank()) {
    const swapping::SwapSelection& selection = evaluation.selections.at(replicate);
    std::vector<std::int32_t> codes(swapped.size());
    const auto send = [&](std::uint32_t receiver, std::uint32_t giver) {
      const auto partner = selection.attributes(giver);
      for (std::size_t k = 0; k < swapped.size(); ++k)
        codes[k] = table.code_of_level[swapped[k]][static_cast<std::size_t>(partner[swapped[k]])];
      const std::int64_t row = selection.row_ids[receiver];
      ByteWriter& out = sends[rank_of_row(row)];
      out.put(row);
      out.put_span(std::span<const std::int32_t>(codes));
    };
    for (const auto& [a, b] : swapping::pair_selected(selection, evaluation.pairs_wanted.at(candidate))) {
      send(a, b);
      send(b, a);
    }
  }
  std::vector<std::vector<std::byte>> send_bytes;
  send_bytes.reserve(sends.size());
  for (auto& writer : sends) send_bytes.push_back(std::move(writer.bytes()));

  std::int64_t changed = 0;
  std::vector<std::int32_t> codes(swapped.size());
  for (const auto& bytes : comm.all_to_all_bytes(send_bytes)) {
    ByteReader in(bytes);
    while (!in.done()) {
      const auto i = static_cast<std::size_t>(in.get<std::int64_t>() - first_row_id);
      in.get_span(std::span<std::int32_t>(codes));
      bool differs = false;
      for (std::size_t k = 0; k < swapped.size(); ++k) {
        std::int32_t& value = columns[swapped[k]][i];
        differs = differs || value != codes[k];
        value = codes[k];
      }
      if (differs) ++changed;
    }
  }
  return changed;
}

}  // namespace sdc::distributed
