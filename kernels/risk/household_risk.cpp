#include "kernels/risk/household_risk.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include <absl/container/flat_hash_map.h>
#include <tbb/parallel_for.h>

#include "kernels/core/error.h"

namespace sdc {
namespace {

// Adds a·b exactly (the rounded product and its rounding error, by fused multiply-add).
void add_product(ExactSum& sum, double a, double b) {
  const double high = a * b;
  sum.add(high);
  sum.add(std::fma(a, b, -high));
}

// Blocks of records worked on by one task; results are combined exactly or as integer counts, so the
// block size only affects speed.
constexpr std::size_t kRecordBlock = std::size_t{1} << 18;

std::size_t block_count(std::size_t records) { return (records + kRecordBlock - 1) / kRecordBlock; }

std::span<const double> block(std::span<const double> values, std::size_t b) {
  const std::size_t begin = b * kRecordBlock;
  return values.subspan(begin, std::min(kRecordBlock, values.size() - begin));
}

RiskHistogram histogram_of_block(std::span<const double> risk) {
  // Few distinct values among many records: count by value, then sort the distinct values only.
  absl::flat_hash_map<double, std::int64_t> counts;
  for (double r : risk) ++counts[r == 0.0 ? 0.0 : r];  // -0.0 counts as 0.0
  std::vector<std::pair<double, std::int64_t>> pairs(counts.begin(), counts.end());
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  RiskHistogram histogram;
  histogram.values.reserve(pairs.size());
  histogram.counts.reserve(pairs.size());
  for (const auto& [value, count] : pairs) {
    histogram.values.push_back(value);
    histogram.counts.push_back(count);
  }
  return histogram;
}

}  // namespace

std::vector<double> household_risk(std::span<const std::int64_t> household_ids, std::span<const double> risk,
                                   RiskMode mode) {
  SDC_CHECK(household_ids.size() == risk.size(), "one household id per record");
  std::vector<double> out(risk.size());
  std::size_t begin = 0;
  while (begin < risk.size()) {
    std::size_t end = begin + 1;
    while (end < risk.size() && household_ids[end] == household_ids[begin]) ++end;
    double value = 0.0;
    if (mode == RiskMode::kCompat) {
      double survive = 1.0;
      for (std::size_t i = begin; i < end; ++i) survive *= 1.0 - risk[i];
      value = 1.0 - survive;
    } else {
      double log_survive = 0.0;
      for (std::size_t i = begin; i < end; ++i) log_survive += std::log1p(-risk[i]);
      value = -std::expm1(log_survive);
    }
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(begin), out.begin() + static_cast<std::ptrdiff_t>(end), value);
    begin = end;
  }
  return out;
}

void global_risk_merge(GlobalRiskPartial& into, const GlobalRiskPartial& from) {
  into.expected.merge(from.expected);
  into.records += from.records;
}

GlobalRiskPartial global_risk_local(std::span<const double> risk) {
  std::vector<ExactSum> sums(block_count(risk.size()));
  tbb::parallel_for(std::size_t{0}, sums.size(), [&](std::size_t b) {
    for (double r : block(risk, b)) sums[b].add(r);
  });
  GlobalRiskPartial partial;
  for (const ExactSum& sum : sums) partial.expected.merge(sum);
  partial.records = static_cast<std::int64_t>(risk.size());
  return partial;
}

GlobalRisk global_risk_finalize(const GlobalRiskPartial& total) {
  GlobalRisk out;
  out.records = total.records;
  out.expected_reidentifications = total.expected.value();
  if (total.records > 0) {
    const auto n = static_cast<double>(total.records);
    out.risk = out.expected_reidentifications / n;
    out.percent = 100.0 * out.expected_reidentifications / n;
  }
  return out;
}

RiskHistogram risk_histogram_local(std::span<const double> risk) {
  std::vector<RiskHistogram> round(block_count(risk.size()));
  if (round.empty()) return {};
  tbb::parallel_for(std::size_t{0}, round.size(),
                    [&](std::size_t b) { round[b] = histogram_of_block(block(risk, b)); });
  while (round.size() > 1) {
    std::vector<RiskHistogram> next((round.size() + 1) / 2);
    tbb::parallel_for(std::size_t{0}, next.size(), [&](std::size_t i) {
      if (2 * i + 1 < round.size()) risk_histogram_merge(round[2 * i], round[2 * i + 1]);
      next[i] = std::move(round[2 * i]);
    });
    round = std::move(next);
  }
  return std::move(round.front());
}

namespace {

RiskHistogram risk_histogram_merged(const RiskHistogram& a, const RiskHistogram& b) {
  RiskHistogram out;
  out.values.reserve(a.values.size() + b.values.size());
  out.counts.reserve(a.values.size() + b.values.size());
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.values.size() || j < b.values.size()) {
    if (j == b.values.size() || (i < a.values.size() && a.values[i] > b.values[j])) {
      out.values.push_back(a.values[i]);
      out.counts.push_back(a.counts[i++]);
    } else if (i == a.values.size() || b.values[j] > a.values[i]) {
      out.values.push_back(b.values[j]);
      out.counts.push_back(b.counts[j++]);
    } else {
      out.values.push_back(a.values[i]);
      out.counts.push_back(a.counts[i++] + b.counts[j++]);
    }
  }
  return out;
}

}  // namespace

void risk_histogram_merge(RiskHistogram& into, const RiskHistogram& from) { into = risk_histogram_merged(into, from); }

SampleQuantiles histogram_quantiles(const RiskHistogram& histogram, std::span<const double> probabilities,
                                    const QuantileOptions& options) {
  SDC_CHECK(histogram.values.size() == histogram.counts.size(), "one count per distinct risk");
  // Ascending: `below[i]` records have a risk smaller than values[size - 1 - i].
  const std::size_t distinct = histogram.values.size();
  std::vector<std::uint64_t> below(distinct + 1, 0);
  for (std::size_t i = 0; i < distinct; ++i)
    below[i + 1] = below[i] + static_cast<std::uint64_t>(histogram.counts[distinct - 1 - i]);
  SampleQuantiles result;
  result.count = below[distinct];
  // The k-th smallest risk (1-based): the value whose run of records holds rank k.
  const auto order_statistic = [&](std::uint64_t k) {
    const auto run = static_cast<std::size_t>(std::upper_bound(below.begin(), below.end(), k - 1) - below.begin()) - 1;
    return histogram.values[distinct - 1 - run];
  };
  for (const double p : probabilities) {
    if (result.count == 0) {
      result.values.push_back(quantile_of_sorted({}, p, options));
      continue;
    }
    const QuantilePlan plan = quantile_plan(result.count, p, options);
    result.values.push_back(apply_quantile_plan(plan, order_statistic(plan.lo), order_statistic(plan.hi)));
  }
  return result;
}

RiskThreshold risk_threshold(const RiskHistogram& histogram, double rho) {
  if (!(rho > 0.0 && rho < 1.0))
    throw ParameterError("risk threshold: the target global risk must lie strictly between 0 and 1, got " +
                         std::to_string(rho));
  const std::size_t distinct = histogram.values.size();
  // rest[d] = Σ of the risks at or below values[d] (= S_rest(j) at the run's first position j).
  std::vector<ExactSum> rest(distinct + 1);
  std::int64_t records = 0;
  for (std::size_t d = distinct; d-- > 0;) {
    rest[d] = rest[d + 1];
    add_product(rest[d], histogram.values[d], static_cast<double>(histogram.counts[d]));
    records += histogram.counts[d];
  }
  const double target = rho * static_cast<double>(records);
  RiskThreshold out;
  if (distinct > 0 && rest[0].value() < target) {
    out.already_safe = true;
    out.threshold = histogram.values[0];
    return out;
  }
  std::int64_t above = 0;  // j: records with a higher risk
  for (std::size_t d = 0; d < distinct; ++d) {
    ExactSum test = rest[d];
    add_product(test, histogram.values[d], static_cast<double>(above));
    if (test.value() < target) {
      out.threshold = histogram.values[d];
      return out;
    }
    above += histogram.counts[d];
  }
  return out;
}

void marketer_risk_merge(MarketerRiskPartial& into, const MarketerRiskPartial& from) {
  into.classes += from.classes;
  into.records += from.records;
  into.invalid_records += from.invalid_records;
  into.certain.merge(from.certain);
  into.valid.merge(from.valid);
}

MarketerRiskPartial marketer_risk_local(std::span<const std::int64_t> f, std::span<const double> F) {
  SDC_CHECK(f.size() == F.size(), "one external count per class");
  MarketerRiskPartial partial;
  partial.classes = static_cast<std::int64_t>(f.size());
  for (std::size_t k = 0; k < f.size(); ++k) {
    const auto size = static_cast<double>(f[k]);
    partial.records += f[k];
    partial.certain.add(size / std::max(F[k], size));
    if (size > F[k]) {
      partial.invalid_records += f[k];
    } else {
      partial.valid.add(size / F[k]);
    }
  }
  return partial;
}

MarketerRisk marketer_risk_finalize(const MarketerRiskPartial& total) {
  MarketerRisk out;
  if (total.records == 0) return out;
  const auto n = static_cast<double>(total.records);
  const double valid = total.valid.value();
  out.im = static_cast<double>(total.classes) / n;
  out.cem = total.certain.value() / n;
  out.arem = valid / n;
  const std::int64_t valid_records = total.records - total.invalid_records;
  if (valid_records > 0) out.orem = valid / static_cast<double>(valid_records);
  return out;
}

}  // namespace sdc
