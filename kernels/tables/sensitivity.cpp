#include "kernels/tables/sensitivity.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc::tables {
namespace {

constexpr std::size_t kCellGrain = 4096;

// Relative slack when comparing a total with the sum of its listed contributions: both are rounded
// sums of the same non-negative terms (and more), so only a negative contribution makes the total
// fall short by more than rounding.
constexpr double kTotalSlack = 1e-9;

bool magnitude_rules(const SensitivityRules& rules) { return rules.p_percent.has_value() || !rules.dominance.empty(); }

// Whether the listed contributions supply `units` units, or are all of the cell's records.
bool units_available(const SensitivityCell& cell, double units, bool weighted) {
  if (static_cast<std::int64_t>(cell.top.size()) >= cell.contributors) return true;
  double supplied = 0.0;
  for (const Contribution& c : cell.top) supplied += weighted ? c.weight : 1.0;
  return supplied >= units;
}

void check_contributions(const SensitivityCell& cell, bool weighted) {
  ExactSum listed;
  for (const Contribution& c : cell.top) {
    if (!std::isfinite(c.value) || !std::isfinite(c.weight) || (weighted && c.weight < 0.0))
      throw InvalidInput("row " + std::to_string(c.row_id) + ": a contribution or its weight is not a finite value");
    if (c.value < 0.0)
      throw InvalidInput("row " + std::to_string(c.row_id) +
                         ": a negative contribution; the p% and dominance rules need non-negative values");
    listed.add(weighted ? c.weight * c.value : c.value);
  }
  if (!std::isfinite(cell.total) || cell.total < 0.0)
    throw InvalidInput("a cell has a negative total; the p% and dominance rules need non-negative values");
  const bool all_listed = static_cast<std::int64_t>(cell.top.size()) >= cell.contributors;
  if (!all_listed && cell.total < listed.value() * (1.0 - kTotalSlack))
    throw InvalidInput(
        "a cell's total is below the sum of its largest contributions: a negative contribution; the p% and "
        "dominance rules need non-negative values");
}

}  // namespace

int top_contributions_needed(const SensitivityRules& rules) {
  int needed = rules.p_percent.has_value() ? 2 : 0;
  for (const DominanceRule& rule : rules.dominance) needed = std::max(needed, rule.n);
  return needed;
}

void check_sensitivity_rules(const SensitivityRules& rules, int top_available) {
  if (rules.minimum_frequency.has_value() && *rules.minimum_frequency < 1)
    throw ParameterError("the minimum frequency threshold must be >= 1");
  if (rules.p_percent.has_value() && !(*rules.p_percent > 0.0 && *rules.p_percent < 100.0))
    throw ParameterError("p of the p% rule must lie in (0, 100)");
  for (const DominanceRule& rule : rules.dominance) {
    if (rule.n < 1) throw ParameterError("n of a dominance rule must be >= 1");
    if (!(rule.k > 0.0 && rule.k <= 100.0)) throw ParameterError("k of a dominance rule must lie in (0, 100]");
  }
  const int needed = top_contributions_needed(rules);
  if (top_available < needed)
    throw ParameterError("top contributions: the rules need the " + std::to_string(needed) +
                         " largest contributions per cell, " + std::to_string(top_available) + " are kept");
}

bool is_sensitive(SensitivityStatus status) {
  return status == SensitivityStatus::kSensitiveFrequency || status == SensitivityStatus::kSensitivePPercent ||
         status == SensitivityStatus::kSensitiveDominance;
}

double largest_units_sum(std::span<const Contribution> top, double units, bool weighted) {
  ExactSum sum;
  double remaining = units;
  for (const Contribution& c : top) {
    if (remaining <= 0.0) break;
    const double take = std::min(weighted ? c.weight : 1.0, remaining);
    sum.add(take * c.value);
    remaining -= take;
  }
  return sum.value();
}

CellSensitivity classify_cell(const SensitivityCell& cell, const SensitivityRules& rules) {
  if (cell.contributors <= 0) return {SensitivityStatus::kEmpty, -1};
  if (rules.minimum_frequency.has_value()) {
    const auto threshold = static_cast<double>(*rules.minimum_frequency);
    const bool small = rules.weighted ? (cell.weighted_count > 0.0 && cell.weighted_count < threshold)
                                      : cell.contributors < *rules.minimum_frequency;
    if (small) return {SensitivityStatus::kSensitiveFrequency, -1};
  }
  if (!magnitude_rules(rules)) return {SensitivityStatus::kSafe, -1};
  check_contributions(cell, rules.weighted);
  const double needed = static_cast<double>(top_contributions_needed(rules));
  if (!units_available(cell, needed, rules.weighted))
    throw ParameterError("top contributions: a cell lists too few of its largest contributions for the rules");

  if (rules.p_percent.has_value()) {
    const double x1 = largest_units_sum(cell.top, 1.0, rules.weighted);
    const double x2 = largest_units_sum(cell.top, 2.0, rules.weighted) - x1;
    // The remainder X − x_1 − x_2 as an exact sum: it is a small difference of large numbers.
    ExactSum remainder;
    remainder.add(cell.total);
    remainder.add(-x1);
    remainder.add(-x2);
    if (100.0 * remainder.value() < *rules.p_percent * x1) return {SensitivityStatus::kSensitivePPercent, -1};
  }
  for (std::size_t r = 0; r < rules.dominance.size(); ++r) {
    const DominanceRule& rule = rules.dominance[r];
    const double largest = largest_units_sum(cell.top, static_cast<double>(rule.n), rules.weighted);
    if (100.0 * largest > rule.k * cell.total) return {SensitivityStatus::kSensitiveDominance, static_cast<int>(r)};
  }
  return {SensitivityStatus::kSafe, -1};
}

std::vector<CellSensitivity> classify_cells(std::span<const SensitivityCell> cells, const SensitivityRules& rules,
                                            int top_available) {
  check_sensitivity_rules(rules, top_available);
  std::vector<CellSensitivity> out(cells.size());
  // The error reported is that of the first failing cell, whichever thread meets a failure first.
  std::atomic<std::size_t> first_failure = cells.size();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, cells.size(), kCellGrain),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t c = range.begin(); c != range.end(); ++c) {
                        try {
                          out[c] = classify_cell(cells[c], rules);
                        } catch (const Error&) {
                          std::size_t seen = first_failure.load();
                          while (c < seen && !first_failure.compare_exchange_weak(seen, c)) {
                          }
                          return;
                        }
                      }
                    });
  if (first_failure.load() < cells.size()) classify_cell(cells[first_failure.load()], rules);  // throws
  return out;
}

}  // namespace sdc::tables
