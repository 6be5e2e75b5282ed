#include "kernels/bootstrap/replicate_risk.h"

#include <tbb/blocked_range.h>
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/core/error.h"

namespace sdc {
namespace {

// Multiplicities of one batch are stored unit-major ([unit][replicate]) in 16 bits: a record then
// reads the whole batch from one place.
using Multiplicity = std::uint16_t;

constexpr std::size_t kUnitChunk = 4096;
constexpr std::size_t kClassGrain = 2048;

struct BatchTotals {
  std::vector<std::uint64_t> records;
  std::vector<std::uint64_t> sample_uniques;
  std::vector<std::uint64_t> records_below_k;
  std::vector<FixedPointSum> expected;
  std::vector<std::uint64_t> unique_survivors;

  explicit BatchTotals(std::size_t batch)
      : records(batch), sample_uniques(batch), records_below_k(batch), expected(batch), unique_survivors(batch) {}

  void merge(const BatchTotals& other) {
    for (std::size_t b = 0; b < records.size(); ++b) {
      records[b] += other.records[b];
      sample_uniques[b] += other.sample_uniques[b];
      records_below_k[b] += other.records_below_k[b];
      expected[b].merge(other.expected[b]);
      unique_survivors[b] += other.unique_survivors[b];
    }
  }
};

/// Classes in [class_begin, class_end) for the `batch` replicates whose multiplicities are given.
void accumulate_classes(const ReplicateRiskPlan& plan, const Multiplicity* multiplicities, std::size_t batch,
                        std::size_t class_begin, std::size_t class_end, BatchTotals& totals) {
  const auto k = static_cast<std::uint64_t>(plan.options.k);
  std::vector<std::uint64_t> f(batch);
  std::vector<double> weighted(batch);
  std::vector<std::uint32_t> last_record(batch);
  // Classes with f >= 2 go through individual_risk together; f = 1 uses the record's precomputed risk.
  std::vector<double> shared_f;
  std::vector<double> shared_weighted;
  std::vector<std::uint32_t> shared_replicate;
  const auto add_record_alone = [&](std::uint32_t i, std::size_t b, std::uint64_t m) {
    totals.records[b] += m;
    if (m < k) totals.records_below_k[b] += m;
    if (m == 1) {
      ++totals.sample_uniques[b];
      totals.expected[b].add(plan.record_unique_risk[i]);
    } else if (m == 2) {
      totals.expected[b].add(2.0 * plan.record_twice_risk[i]);
    } else {
      shared_f.push_back(static_cast<double>(m));
      shared_weighted.push_back(static_cast<double>(m) * plan.record_weight[i]);
      shared_replicate.push_back(static_cast<std::uint32_t>(b));
    }
  };
  for (std::size_t c = class_begin; c < class_end; ++c) {
    const std::uint32_t first = plan.class_offsets[c];
    if (plan.class_offsets[c + 1] - first == 1) {
      // Most classes of a census file hold one record: its risks for m = 1, 2 are precomputed.
      const Multiplicity* row = multiplicities + std::size_t{plan.record_unit[first]} * batch;
      for (std::size_t b = 0; b < batch; ++b) {
        if (row[b] != 0) add_record_alone(first, b, row[b]);
        if (row[b] == 1) ++totals.unique_survivors[b];
      }
      continue;
    }
    std::fill(f.begin(), f.end(), 0);
    std::fill(weighted.begin(), weighted.end(), 0.0);
    for (std::uint32_t i = plan.class_offsets[c]; i < plan.class_offsets[c + 1]; ++i) {
      const Multiplicity* row = multiplicities + std::size_t{plan.record_unit[i]} * batch;
      const double weight = plan.record_weight[i];
      for (std::size_t b = 0; b < batch; ++b) {
        const Multiplicity m = row[b];
        if (m == 0) continue;
        f[b] += m;
        weighted[b] += static_cast<double>(m) * weight;
        last_record[b] = i;
      }
    }
    for (std::size_t b = 0; b < batch; ++b) {
      if (f[b] == 0) continue;
      totals.records[b] += f[b];
      if (f[b] < k) totals.records_below_k[b] += f[b];
      if (f[b] == 1) {
        ++totals.sample_uniques[b];
        totals.expected[b].add(plan.record_unique_risk[last_record[b]]);
      } else {
        shared_f.push_back(static_cast<double>(f[b]));
        shared_weighted.push_back(weighted[b]);
        shared_replicate.push_back(static_cast<std::uint32_t>(b));
      }
    }
  }
  if (shared_f.empty()) return;
  const IndividualRiskResult risk = individual_risk(shared_f, shared_weighted, plan.options.risk);
  SDC_CHECK(!risk.invalid_class.has_value(), "replicate classes satisfy F >= f when every weight is at least 1");
  for (std::size_t j = 0; j < shared_f.size(); ++j) {
    totals.expected[shared_replicate[j]].add(shared_f[j] * risk.risk[j]);
  }
}

BatchTotals accumulate_batch(const ReplicateRiskPlan& plan, const Multiplicity* multiplicities, std::size_t batch) {
  tbb::combinable<BatchTotals> partials([batch] { return BatchTotals(batch); });
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, plan.class_count(), kClassGrain), [&](const auto& range) {
    accumulate_classes(plan, multiplicities, batch, range.begin(), range.end(), partials.local());
  });
  // Integer sums: the order in which the threads' partials are combined does not matter.
  BatchTotals totals(batch);
  partials.combine_each([&](const BatchTotals& partial) { totals.merge(partial); });
  return totals;
}

void store_batch(const BatchTotals& totals, std::size_t offset, ReplicateRiskPartial& partial) {
  std::copy(totals.records.begin(), totals.records.end(),
            partial.records.begin() + static_cast<std::ptrdiff_t>(offset));
  std::copy(totals.sample_uniques.begin(), totals.sample_uniques.end(),
            partial.sample_uniques.begin() + static_cast<std::ptrdiff_t>(offset));
  std::copy(totals.records_below_k.begin(), totals.records_below_k.end(),
            partial.records_below_k.begin() + static_cast<std::ptrdiff_t>(offset));
  std::copy(totals.expected.begin(), totals.expected.end(),
            partial.expected.begin() + static_cast<std::ptrdiff_t>(offset));
  std::copy(totals.unique_survivors.begin(), totals.unique_survivors.end(),
            partial.unique_survivors.begin() + static_cast<std::ptrdiff_t>(offset));
}

ReplicateRiskPartial empty_partial(std::uint64_t first_replicate, std::size_t replicates) {
  ReplicateRiskPartial partial;
  partial.first_replicate = first_replicate;
  partial.records.resize(replicates);
  partial.sample_uniques.resize(replicates);
  partial.records_below_k.resize(replicates);
  partial.expected.resize(replicates);
  partial.unique_survivors.resize(replicates);
  return partial;
}

}  // namespace

BootstrapValidity naive_bootstrap_validity(BootstrappedStatistic statistic) {
  switch (statistic) {
    case BootstrappedStatistic::kSampleUniques:
    case BootstrappedStatistic::kRecordsBelowK:
    case BootstrappedStatistic::kTau1:
    case BootstrappedStatistic::kTau2:
    case BootstrappedStatistic::kSuda:
      return BootstrapValidity::kNaive;
    case BootstrappedStatistic::kReplicateSize:
    case BootstrappedStatistic::kExpectedReidentifications:
    case BootstrappedStatistic::kGlobalRisk:
      return BootstrapValidity::kValid;
  }
  return BootstrapValidity::kNaive;
}

void FixedPointSum::merge(const FixedPointSum& other) {
  low += other.low;
  high += other.high + (low < other.low ? 1U : 0U);
}

double FixedPointSum::value() const { return static_cast<double>(high) + static_cast<double>(low) * 0x1p-64; }

void replicate_risk_merge(ReplicateRiskPartial& into, const ReplicateRiskPartial& from) {
  SDC_CHECK(into.first_replicate == from.first_replicate && into.replicate_count() == from.replicate_count(),
            "replicate risk partials of the same replicate range");
  for (std::size_t b = 0; b < into.records.size(); ++b) {
    into.records[b] += from.records[b];
    into.sample_uniques[b] += from.sample_uniques[b];
    into.records_below_k[b] += from.records_below_k[b];
    into.expected[b].merge(from.expected[b]);
    into.unique_survivors[b] += from.unique_survivors[b];
  }
}

ReplicateRiskPlan make_replicate_risk_plan(std::span<const std::uint32_t> record_class,
                                           std::span<const std::uint64_t> units, std::span<const double> weights,
                                           const ReplicateRiskOptions& options) {
  if (options.k < 1) throw ParameterError("replicate risk: k must be at least 1");
  if (options.batch_replicates == 0) throw ParameterError("replicate risk: batch_replicates must be at least 1");
  const std::size_t n = record_class.size();
  if (units.size() != n) throw InvalidInput("replicate risk: the unit ids have a different length than the class ids");
  const bool weighted = options.risk.weighted;
  if (weighted && weights.size() != n) {
    throw InvalidInput("replicate risk: the weights have a different length than the class ids");
  }
  if (n >= std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput("replicate risk: 2^32 or more records on one rank");
  }
  if (weighted) {
    const bool native = options.risk.mode == RiskMode::kNative;
    for (double w : weights) {
      if (!std::isfinite(w) || !(w > 0.0)) throw InvalidInput("replicate risk: a weight is not finite and positive");
      if (native && w < 1.0) {
        throw InvalidInput("replicate risk: a weight is below 1, so a class can have F < f (native mode)");
      }
    }
  }

  struct Entry {
    std::uint32_t class_id;
    std::uint64_t unit;
    std::uint64_t weight_bits;
    bool operator<(const Entry& o) const {
      if (class_id != o.class_id) return class_id < o.class_id;
      if (unit != o.unit) return unit < o.unit;
      return weight_bits < o.weight_bits;
    }
  };
  // Entries that compare equal are identical in everything the plan keeps, so an unstable sort is canonical.
  std::vector<Entry> entries(n);
  for (std::size_t i = 0; i < n; ++i) {
    entries[i] = {record_class[i], units[i], std::bit_cast<std::uint64_t>(weighted ? weights[i] : 1.0)};
  }
  tbb::parallel_sort(entries.begin(), entries.end());

  ReplicateRiskPlan plan;
  plan.options = options;
  plan.units.assign(units.begin(), units.end());
  tbb::parallel_sort(plan.units.begin(), plan.units.end());
  plan.units.erase(std::unique(plan.units.begin(), plan.units.end()), plan.units.end());

  plan.record_unit.resize(n);
  plan.record_weight.resize(n);
  plan.class_offsets.push_back(0);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && entries[i].class_id != entries[i - 1].class_id)
      plan.class_offsets.push_back(static_cast<std::uint32_t>(i));
    plan.record_unit[i] = static_cast<std::uint32_t>(
        std::lower_bound(plan.units.begin(), plan.units.end(), entries[i].unit) - plan.units.begin());
    plan.record_weight[i] = std::bit_cast<double>(entries[i].weight_bits);
  }
  if (n > 0) plan.class_offsets.push_back(static_cast<std::uint32_t>(n));

  // A class whose only drawn record has m = 1 or 2 has (f, F) = (m, m·w): the same element-wise risk
  // as individual_risk gives for it in a replicate, computed once here.
  const std::vector<double> ones(n, 1.0);
  IndividualRiskResult unique_risk = individual_risk(ones, plan.record_weight, options.risk);
  SDC_CHECK(!unique_risk.invalid_class.has_value(), "weights validated above");
  plan.record_unique_risk = std::move(unique_risk.risk);
  const std::vector<double> twos(n, 2.0);
  std::vector<double> twice_weight(n);
  for (std::size_t i = 0; i < n; ++i) twice_weight[i] = 2.0 * plan.record_weight[i];
  IndividualRiskResult twice_risk = individual_risk(twos, twice_weight, options.risk);
  SDC_CHECK(!twice_risk.invalid_class.has_value(), "weights validated above");
  plan.record_twice_risk = std::move(twice_risk.risk);
  return plan;
}

ReplicateRiskPartial replicate_risk_local(const ReplicateRiskPlan& plan, const ReplicateDesign& design,
                                          std::uint64_t first_replicate, std::uint64_t end_replicate) {
  validate_replicate_design(design);
  SDC_CHECK(end_replicate >= first_replicate, "replicate range");
  const auto replicates = static_cast<std::size_t>(end_replicate - first_replicate);
  ReplicateRiskPartial partial = empty_partial(first_replicate, replicates);
  const std::size_t unit_count = plan.unit_count();
  const std::size_t max_batch = std::min(plan.options.batch_replicates, std::max<std::size_t>(replicates, 1));
  std::vector<Multiplicity> multiplicities(unit_count * max_batch);

  for (std::size_t offset = 0; offset < replicates; offset += max_batch) {
    const std::size_t batch = std::min(max_batch, replicates - offset);
    const std::uint64_t batch_first = first_replicate + offset;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, unit_count, kUnitChunk), [&](const auto& range) {
      const std::span<const std::uint64_t> chunk =
          std::span<const std::uint64_t>(plan.units).subspan(range.begin(), range.size());
      std::vector<std::uint32_t> drawn(batch * chunk.size());
      fill_multiplicities(design, batch_first, batch_first + batch, chunk, drawn);
      for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t u = 0; u < chunk.size(); ++u) {
          const std::uint32_t m = drawn[b * chunk.size() + u];
          if (m > std::numeric_limits<Multiplicity>::max()) {
            throw ParameterError("replicate risk: a unit is drawn more than 65535 times in one replicate");
          }
          multiplicities[(range.begin() + u) * batch + b] = static_cast<Multiplicity>(m);
        }
      }
    });
    store_batch(accumulate_batch(plan, multiplicities.data(), batch), offset, partial);
  }
  return partial;
}

ReplicateRiskPartial replicate_risk_full_sample(const ReplicateRiskPlan& plan) {
  ReplicateRiskPartial partial = empty_partial(0, 1);
  const std::vector<Multiplicity> ones(plan.unit_count(), 1);
  store_batch(accumulate_batch(plan, ones.data(), 1), 0, partial);
  return partial;
}

ReplicateRiskSeries replicate_risk_finalize(const ReplicateRiskPartial& total) {
  ReplicateRiskSeries series;
  series.first_replicate = total.first_replicate;
  series.records = total.records;
  series.sample_uniques = total.sample_uniques;
  series.records_below_k = total.records_below_k;
  series.unique_survivors = total.unique_survivors;
  series.expected_reidentifications.resize(total.replicate_count());
  series.global_risk.resize(total.replicate_count());
  for (std::size_t b = 0; b < total.replicate_count(); ++b) {
    const double expected = total.expected[b].value();
    series.expected_reidentifications[b] = expected;
    series.global_risk[b] = total.records[b] == 0 ? 0.0 : expected / static_cast<double>(total.records[b]);
  }
  return series;
}

}  // namespace sdc
