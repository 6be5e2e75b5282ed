#include "distributed/compose/nb_smoothing.h"

#include <algorithm>
#include <string>

#include "distributed/compose/class_exchange.h"
#include "distributed/compose/risk_merges.h"
#include "kernels/core/error.h"
#include "kernels/risk/frequency_count.h"

namespace sdc::distributed {
namespace {

/// Collective: when some rank failed (`code` != 0 there), every rank throws the error of the lowest
/// failing rank, with its exit code and message.
void rethrow_on_every_rank(const Communicator& comm, ExitCode code, const std::string& message) {
  const std::int64_t failed = comm.all_reduce_max(code == ExitCode::kOk ? 0 : 1);
  if (failed == 0) return;
  if (comm.size() == 1) throw Error(code, message);
  ByteWriter mine;
  mine.put(static_cast<std::int32_t>(code));
  mine.put_span(std::span<const char>(message.data(), message.size()));
  const auto all = comm.all_gather_bytes(mine.bytes());
  for (const auto& bytes : all) {
    ByteReader in(bytes);
    const auto rank_code = static_cast<ExitCode>(in.get<std::int32_t>());
    if (rank_code == ExitCode::kOk) continue;
    const std::size_t length = bytes.size() - sizeof(std::int32_t);
    std::string text(length, '\0');
    in.get_span(std::span<char>(text.data(), length));
    throw Error(rank_code, text);
  }
}

/// The rank owning a class: a fixed hash of its fixed keys alone (owner_of, the frequency counts' hash).
std::vector<int> owners_by_fixed_keys(const FrequencyClasses& classes, std::size_t fixed_key_count, int ranks) {
  std::vector<int> owner(classes.class_count());
  for (std::size_t c = 0; c < owner.size(); ++c) owner[c] = owner_of(classes.key(c).first(fixed_key_count), ranks);
  return owner;
}

/// Collective. Without fixed keys: rank r owns the classes whose first ordinal code lies in
/// [cut[r], cut[r+1]) (cut has ranks + 1 entries, 0 first, L last). The ranges balance the classes
/// with one record on some rank (the candidates for a fit) over all ranks; equal ranges of codes when
/// there are none.
std::vector<std::int32_t> split_first_ordinal_key(const Communicator& comm, const FrequencyClasses& mine,
                                                  std::int32_t levels) {
  std::vector<std::int64_t> load(static_cast<std::size_t>(levels), 0);
  for (std::size_t c = 0; c < mine.class_count(); ++c)
    if (mine.counts[c] == 1) ++load[static_cast<std::size_t>(mine.key(c)[0])];
  comm.all_reduce_sum(std::span<std::int64_t>(load));
  std::int64_t total = 0;
  for (std::int64_t x : load) total += x;
  if (total == 0) {
    std::fill(load.begin(), load.end(), 1);
    total = levels;
  }
  const std::int64_t ranks = comm.size();
  std::vector<std::int32_t> cut(static_cast<std::size_t>(ranks) + 1, levels);
  cut[0] = 0;
  std::int64_t prefix = 0;
  std::int64_t r = 1;
  for (std::int32_t x = 0; x < levels && r < ranks; ++x) {
    prefix += load[static_cast<std::size_t>(x)];
    while (r < ranks && prefix * ranks >= total * r) cut[static_cast<std::size_t>(r++)] = x + 1;
  }
  return cut;
}

/// The owner of first ordinal code x: the rank whose range holds it (empty ranges hold nothing).
int range_owner(const std::vector<std::int32_t>& cut, std::int32_t x) {
  return static_cast<int>(std::upper_bound(cut.begin(), cut.end(), x) - cut.begin()) - 1;
}

}  // namespace

DistributedNbSmoothing distributed_nb_smoothing(const Communicator& comm, const NbSmoothingInput& input) {
  const std::size_t m = input.keys.key_count();
  const std::size_t fixed = input.fixed_key_count;
  SDC_CHECK(fixed <= m, "the fixed keys are among the keys");
  const std::size_t v = m - fixed;

  // 1. This rank's classes, sorted by (fixed keys, ordinal keys).
  const LocalFrequencyCount local = frequency_count_local(input.keys, input.weights);
  const FrequencyClasses& mine = local.classes;

  // 2. Classes meet at the owner of their fixed keys. Without fixed keys (and several ranks) the
  // ranks split the first ordinal key's codes into ranges instead; a rank also gets copies of the
  // classes within c of its range, so that its uniques' neighbourhoods are whole there.
  OwnedClasses exchange;
  const bool split = comm.size() > 1 && fixed == 0 && v > 0;
  std::vector<std::int32_t> cut;
  if (split) {
    const std::int64_t c = input.options.sup_radius;
    cut = split_first_ordinal_key(comm, mine, input.keys.level_counts[0]);
    std::vector<int> owner(mine.class_count());
    std::vector<std::size_t> copy_offsets{0};
    std::vector<int> copy_ranks;
    for (std::size_t k = 0; k < mine.class_count(); ++k) {
      const std::int32_t x = mine.key(k)[0];
      owner[k] = range_owner(cut, x);
      const auto lower = [&](int r) { return std::int64_t{cut[static_cast<std::size_t>(r)]}; };
      // Ranges are contiguous and ordered: the ranks whose halo holds x are the neighbours on either side.
      for (int r = owner[k] - 1; r >= 0 && x < lower(r + 1) + c; --r)
        if (lower(r) < lower(r + 1)) copy_ranks.push_back(r);
      for (int r = owner[k] + 1; r < comm.size() && x >= lower(r) - c; ++r)
        if (lower(r) < lower(r + 1)) copy_ranks.push_back(r);
      copy_offsets.push_back(copy_ranks.size());
    }
    exchange = send_classes_to_owners(comm, mine, std::move(owner), copy_offsets, copy_ranks);
  } else if (comm.size() > 1) {
    exchange = send_classes_to_owners(comm, mine, owners_by_fixed_keys(mine, fixed, comm.size()));
  }
  const FrequencyClasses& owned = comm.size() > 1 ? exchange.owned : mine;
  const std::size_t n = owned.class_count();
  // Whether this rank answers for owned class g: not for the halo copies.
  const auto answers_for = [&](std::size_t g) {
    if (!split) return true;
    const std::int32_t x = owned.key(g)[0];
    return x >= cut[static_cast<std::size_t>(comm.rank())] && x < cut[static_cast<std::size_t>(comm.rank()) + 1];
  };

  // 3. The kernel on the owned classes. π of a sample unique from the weights is 1/F: a weight below
  // 1 (or 0) would make it exceed 1. Every rank learns of such a unique before anyone fits.
  std::vector<std::int32_t> fixed_codes(n * fixed);
  std::vector<std::int32_t> ordinal_codes(n * v);
  for (std::size_t c = 0; c < n; ++c) {
    const auto key = owned.key(c);
    std::copy(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(fixed),
              fixed_codes.begin() + static_cast<std::ptrdiff_t>(c * fixed));
    std::copy(key.begin() + static_cast<std::ptrdiff_t>(fixed), key.end(),
              ordinal_codes.begin() + static_cast<std::ptrdiff_t>(c * v));
  }
  std::vector<double> sampling_fraction;
  std::int64_t light_uniques = 0;
  if (input.sampling_fraction) {
    sampling_fraction.push_back(*input.sampling_fraction);
  } else {
    // Only the uniques' π enter the risks; the others get 1, which the kernel accepts and never reads.
    sampling_fraction.assign(n, 1.0);
    for (std::size_t c = 0; c < n; ++c) {
      if (owned.counts[c] != 1) continue;
      const double weight = input.weighted ? owned.weights[c].value() : 1.0;
      if (weight >= 1.0)
        sampling_fraction[c] = 1.0 / weight;
      else if (answers_for(c))
        ++light_uniques;
    }
  }
  light_uniques = comm.all_reduce_sum(light_uniques);
  if (light_uniques > 0)
    throw InvalidInput("NB smoothing: " + std::to_string(light_uniques) + " sample unique" +
                       (light_uniques == 1 ? " has" : "s have") + " a weight below 1 in variable '" +
                       std::string(input.weight_name) +
                       "', so that the sampling fraction 1/F exceeds 1; give --nb-sampling-fraction PI instead");

  NbSampleClasses classes;
  classes.fixed_key_count = fixed;
  classes.ordinal_key_count = v;
  classes.fixed_keys = fixed_codes;
  classes.ordinal_keys = ordinal_codes;
  classes.ordinal_levels = std::span<const std::int32_t>(input.keys.level_counts).subspan(fixed, v);
  classes.counts = owned.counts;
  classes.sampling_fraction = sampling_fraction;
  classes.ordinal_key_names = input.ordinal_key_names;

  NbSmoothingLocal fitted;
  ExitCode failure = ExitCode::kOk;
  std::string message;
  try {
    fitted = nb_smoothing_local(classes, input.options);
  } catch (const Error& e) {
    failure = e.code();
    message = e.what();
  }
  rethrow_on_every_rank(comm, failure, message);

  // The risks of the owned classes (0 for classes that are not sample uniques) and their sums. The
  // kernel also fitted the uniques among the halo copies, on neighbourhoods cut at the halo's edge:
  // their owners fit them on whole ones, so they are left out here.
  std::vector<double> class_probability(n, 0.0);
  std::vector<double> class_inverse(n, 0.0);
  NbSmoothingPartial partial;
  std::int64_t iterations = 0;
  for (std::size_t u = 0; u < fitted.unique_class.size(); ++u) {
    const std::size_t g = fitted.unique_class[u];
    if (!answers_for(g)) continue;
    const NbUniqueRisk& risk = fitted.risk[u];
    class_probability[g] = risk.population_unique_probability;
    class_inverse[g] = risk.expected_inverse_population;
    partial.tau1.add(risk.population_unique_probability);
    partial.tau2.add(risk.expected_inverse_population);
    ++partial.sample_uniques;
    if (fitted.converged[u] == 0) ++partial.not_converged;
    iterations += fitted.iterations[u];
  }

  // 4. The risks of this rank's classes. A class with several records here is no sample unique; for a
  // class with one record, the owner says whether it is one over all ranks and, if so, its risks.
  DistributedNbSmoothing out;
  std::vector<double> mine_probability(mine.class_count(), 0.0);
  std::vector<double> mine_inverse(mine.class_count(), 0.0);
  if (comm.size() == 1) {
    mine_probability = std::move(class_probability);
    mine_inverse = std::move(class_inverse);
  } else {
    const auto replies = answer_senders(comm, exchange, [&](ByteWriter& reply, std::size_t g) {
      if (!answers_for(g)) return;  // a halo copy: its owner answers
      const bool unique = owned.counts[g] == 1;
      reply.put(static_cast<std::uint8_t>(unique ? 1 : 0));
      if (unique) {
        reply.put(class_probability[g]);
        reply.put(class_inverse[g]);
      }
    });
    std::vector<ByteReader> from_owner;
    for (const auto& bytes : replies) from_owner.emplace_back(bytes);
    for (std::size_t c = 0; c < mine.class_count(); ++c) {
      auto& in = from_owner[static_cast<std::size_t>(exchange.owner[c])];
      if (in.get<std::uint8_t>() == 0) continue;
      mine_probability[c] = in.get<double>();
      mine_inverse[c] = in.get<double>();
    }
    for (const auto& in : from_owner) SDC_CHECK(in.done(), "every class's risks consumed");
  }
  const std::size_t records = local.record_class.size();
  out.unique_probability.resize(records);
  out.expected_inverse.resize(records);
  for (std::size_t i = 0; i < records; ++i) {
    out.unique_probability[i] = mine_probability[local.record_class[i]];
    out.expected_inverse[i] = mine_inverse[local.record_class[i]];
  }

  // 5. Exact sums and integer counts: the same totals for any split.
  NbSmoothingPartial total;
  total.tau1 = all_reduce_exact_sum(comm, partial.tau1);
  total.tau2 = all_reduce_exact_sum(comm, partial.tau2);
  total.sample_uniques = comm.all_reduce_sum(partial.sample_uniques);
  total.not_converged = comm.all_reduce_sum(partial.not_converged);
  out.totals = nb_smoothing_finalize(total);
  out.iterations = comm.all_reduce_sum(iterations);
  out.neighbourhood_size =
      v == 0 ? 1 : nb_neighbourhood_offsets({v, input.options.sup_radius, input.options.l1_radius}).size() / v;
  return out;
}

}  // namespace sdc::distributed
