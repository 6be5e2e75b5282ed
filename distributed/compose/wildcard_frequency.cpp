#include "distributed/compose/wildcard_frequency.h"

#include <algorithm>
#include <string>
#include <vector>

#include "distributed/compose/class_exchange.h"
#include "kernels/core/error.h"
#include "kernels/risk/wildcard_frequency.h"

namespace sdc::distributed {
namespace {

/// Places the totals of table t at a projected tuple: the fixed tuple hash over (t, tuple).
class ProjectionOwner {
 public:
  ProjectionOwner(std::size_t key_count, int ranks) : tagged_(key_count + 1), ranks_(ranks) {}
  int operator()(std::uint32_t table, std::span<const std::int32_t> projected) {
    tagged_[0] = static_cast<std::int32_t>(table);
    std::copy(projected.begin(), projected.end(), tagged_.begin() + 1);
    return owner_of(tagged_, ranks_);
  }

 private:
  std::vector<std::int32_t> tagged_;
  int ranks_;
};

/// Collective: the union of every rank's masks, so that all ranks build the same lattice.
std::vector<KeyMask> masks_of_all_ranks(const Communicator& comm, const FrequencyClasses& patterns) {
  std::vector<KeyMask> mine(patterns.class_count());
  for (std::size_t c = 0; c < mine.size(); ++c) mine[c] = observed_mask(patterns.key(c));
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  std::vector<KeyMask> all;
  for (const auto& part : comm.all_gather_bytes(std::as_bytes(std::span(mine)))) {
    ByteReader in(part);
    while (!in.done()) all.push_back(in.get<KeyMask>());
  }
  return all;
}

/// Collective: every rank throws when any rank holds a code outside its levels, so that none is left
/// waiting in a later collective.
void check_codes_on_all_ranks(const Communicator& comm, const FrequencyClasses& patterns,
                              std::span<const std::int32_t> level_counts) {
  std::string problem;
  try {
    check_pattern_codes(patterns, level_counts);
  } catch (const InvalidInput& e) {
    problem = e.what();
  }
  if (comm.all_reduce_max(problem.empty() ? 0 : 1) == 0) return;
  throw InvalidInput(problem.empty() ? "a key variable has a code outside its levels on another rank" : problem);
}

std::vector<std::vector<std::byte>> take_bytes(std::vector<ByteWriter>& writers) {
  std::vector<std::vector<std::byte>> out(writers.size());
  for (std::size_t r = 0; r < writers.size(); ++r) out[r] = std::move(writers[r].bytes());
  return out;
}

}  // namespace

DistributedFrequencies distributed_wildcard_frequency_count(const Communicator& comm, const KeyColumns& keys,
                                                            std::span<const double> weights, double alpha,
                                                            std::int64_t k) {
  check_wildcard_alpha(alpha);
  const bool missing_here = first_missing_key(keys).has_value();
  if (comm.all_reduce_max(missing_here ? 1 : 0) == 0) return distributed_frequency_count(comm, keys, weights, k);

  const LocalFrequencyCount local = frequency_count_local(keys, weights);
  check_codes_on_all_ranks(comm, local.classes, keys.level_counts);
  DistributedFrequencies out;
  if (comm.size() == 1) {  // the local patterns are the global ones
    const PatternFrequencies patterns = wildcard_frequency(local.classes, keys.level_counts, alpha);
    out.records = wildcard_frequency_assign(local.record_class, patterns);
    out.summary = wildcard_frequency_finalize(local.classes.counts, patterns.f, k);
    return out;
  }

  const auto ranks = static_cast<std::size_t>(comm.size());
  const std::size_t m = keys.key_count();
  const WildcardLattice lattice = wildcard_lattice(masks_of_all_ranks(comm, local.classes), m);

  // 1. Patterns to the owners of their tuples, merged there.
  const OwnedClasses classes = send_classes_to_owners(comm, local.classes);
  const FrequencyClasses& owned = classes.owned;
  std::vector<std::uint32_t> mask_index(owned.class_count());
  for (std::size_t g = 0; g < owned.class_count(); ++g)
    mask_index[g] = static_cast<std::uint32_t>(lattice.mask_index(observed_mask(owned.key(g))));

  // 2. Projections to the owners of (table, projected tuple), totalled there.
  ProjectionOwner projection_owner(m, comm.size());
  std::vector<std::int32_t> projected(m);
  ProjectionTables tables(lattice, keys.level_counts);
  {
    std::vector<ByteWriter> to_owner(ranks);
    for (std::size_t g = 0; g < owned.class_count(); ++g) {
      const auto [first, last] = lattice.tables_fed_by(lattice.masks[mask_index[g]]);
      for (std::uint32_t t = first; t < last; ++t) {
        project_pattern(owned.key(g), lattice.tables[t].on, projected);
        auto& to = to_owner[static_cast<std::size_t>(projection_owner(t, projected))];
        to.put(t);
        to.put_span(std::span<const std::int32_t>(projected));
        to.put(owned.counts[g]);
        put_exact_sum(to, owned.weights[g]);
      }
    }
    FrequencyClasses sources;
    sources.key_count = m;
    std::vector<std::vector<std::uint32_t>> sources_of_table(lattice.tables.size());
    for (const auto& bytes : comm.all_to_all_bytes(take_bytes(to_owner))) {
      ByteReader in(bytes);
      while (!in.done()) {
        const auto t = in.get<std::uint32_t>();
        SDC_CHECK(t < lattice.tables.size(), "a table of the lattice");
        sources_of_table[t].push_back(static_cast<std::uint32_t>(sources.class_count()));
        in.get_span(std::span(projected));
        sources.class_keys.insert(sources.class_keys.end(), projected.begin(), projected.end());
        sources.counts.push_back(in.get<std::int64_t>());
        sources.weights.push_back(get_exact_sum(in));
      }
    }
    for (std::uint32_t t = 0; t < lattice.tables.size(); ++t) tables.add_sources(t, sources, sources_of_table[t]);
  }

  // 3. Each owned pattern asks for the totals at its projections; owners answer in the order asked.
  std::vector<int> asked;  // owner of each request, in request order
  std::vector<std::vector<std::byte>> answers;
  {
    std::vector<ByteWriter> requests(ranks);
    for (std::size_t g = 0; g < owned.class_count(); ++g) {
      for (const auto& lookup : lattice.lookups[mask_index[g]]) {
        project_pattern(owned.key(g), lattice.tables[lookup.table].on, projected);
        asked.push_back(projection_owner(lookup.table, projected));
        auto& to = requests[static_cast<std::size_t>(asked.back())];
        to.put(lookup.table);
        to.put_span(std::span<const std::int32_t>(projected));
      }
    }
    std::vector<ByteWriter> replies(ranks);
    const ExactSum none;
    const auto received = comm.all_to_all_bytes(take_bytes(requests));
    for (std::size_t r = 0; r < ranks; ++r) {
      ByteReader in(received[r]);
      while (!in.done()) {
        const auto t = in.get<std::uint32_t>();
        SDC_CHECK(t < lattice.tables.size(), "a table of the lattice");
        in.get_span(std::span(projected));
        const ProjectionTotals* totals = tables.find(t, projected);
        replies[r].put(totals ? totals->count : std::int64_t{0});
        put_exact_sum(replies[r], totals ? totals->weight : none);
      }
    }
    answers = comm.all_to_all_bytes(take_bytes(replies));
  }

  // 4. f and F of each owned pattern, from its own totals and the answers, read in the order asked.
  PatternFrequencies owned_frequencies;
  owned_frequencies.f.resize(owned.class_count());
  owned_frequencies.fk_weighted.resize(owned.class_count());
  {
    std::vector<ByteReader> from_owner(answers.begin(), answers.end());
    std::size_t request = 0;
    for (std::size_t g = 0; g < owned.class_count(); ++g) {
      WildcardSum sum;
      sum.add(WildcardWeight::kFull, owned.counts[g], owned.weights[g]);
      for (const auto& lookup : lattice.lookups[mask_index[g]]) {
        auto& in = from_owner[static_cast<std::size_t>(asked[request++])];
        const auto count = in.get<std::int64_t>();
        sum.add(lookup.weight, count, get_exact_sum(in));
      }
      owned_frequencies.f[g] = sum.f(alpha);
      owned_frequencies.fk_weighted[g] = sum.weighted(alpha);
    }
    for (const auto& in : from_owner) SDC_CHECK(in.done(), "every answer consumed");
  }

  // 5. Back to the ranks holding the records, in the order each sent its patterns.
  const auto totals = answer_senders(comm, classes, [&](ByteWriter& reply, std::size_t g) {
    reply.put(owned_frequencies.f[g]);
    reply.put(owned_frequencies.fk_weighted[g]);
  });
  PatternFrequencies mine;
  mine.f.resize(local.classes.class_count());
  mine.fk_weighted.resize(local.classes.class_count());
  std::vector<ByteReader> from_owner(totals.begin(), totals.end());
  for (std::size_t c = 0; c < local.classes.class_count(); ++c) {
    auto& in = from_owner[static_cast<std::size_t>(classes.owner[c])];
    mine.f[c] = in.get<double>();
    mine.fk_weighted[c] = in.get<double>();
  }
  for (const auto& in : from_owner) SDC_CHECK(in.done(), "every pattern's f consumed");
  out.records = wildcard_frequency_assign(local.record_class, mine);
  out.summary = sum_over_ranks(comm, wildcard_frequency_finalize(owned.counts, owned_frequencies.f, k));
  return out;
}

}  // namespace sdc::distributed
