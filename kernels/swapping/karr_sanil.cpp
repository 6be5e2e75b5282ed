#include "kernels/swapping/karr_sanil.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/key_grouping.h"
#include "kernels/core/record_rng.h"

namespace sdc::swapping {
namespace {

LogLinearClasses classes_of(std::size_t attribute_count, std::span<const std::int32_t> cells,
                            std::span<const std::int64_t> counts) {
  LogLinearClasses classes;
  classes.key_count = attribute_count;
  classes.keys = cells;
  classes.sample_counts = counts;
  return classes;
}

/// Σ_cells n ln(m̂/N) over the cells with n > 0: the multinomial log-likelihood without its constant.
double multinomial_log_likelihood(const LogLinearModelSpec& model, const LogLinearFit& fit, std::size_t attributes,
                                  std::span<const std::int32_t> cells, std::span<const std::int64_t> counts,
                                  std::int64_t total) {
  ExactSum sum;
  const auto n = static_cast<double>(total);
  for (std::size_t c = 0; c < counts.size(); ++c) {
    if (counts[c] == 0) continue;
    const double mu = loglinear_fitted_cell(model, fit, cells.subspan(c * attributes, attributes));
    if (!(mu > 0.0)) return -std::numeric_limits<double>::infinity();
    sum.add(static_cast<double>(counts[c]) * std::log(mu / n));
  }
  return sum.value();
}

}  // namespace

std::optional<std::size_t> ReleaseTable::find(std::span<const std::int32_t> levels) const {
  std::size_t low = 0;
  std::size_t high = cell_count();
  while (low < high) {
    const std::size_t mid = low + (high - low) / 2;
    const int order = compare_key_tuples(cell(mid), levels);
    if (order == 0) return mid;
    if (order < 0)
      low = mid + 1;
    else
      high = mid;
  }
  return std::nullopt;
}

ReleaseTable make_release_table(const FrequencyClasses& classes, std::span<const std::int32_t> code_counts) {
  const std::size_t m = classes.key_count;
  if (code_counts.size() != m) throw ParameterError("release table: one code count per attribute is needed");
  ReleaseTable table;
  table.attribute_count = m;
  table.level_of_code.resize(m);
  table.level_counts.assign(m, 0);
  table.code_of_level.resize(m);
  for (std::size_t j = 0; j < m; ++j) {
    auto& map = table.level_of_code[j];
    map.assign(static_cast<std::size_t>(code_counts[j]) + 1, -1);
    for (std::size_t c = 0; c < classes.class_count(); ++c) {
      const std::int32_t code = classes.key(c)[j];
      if (code < -1 || code >= code_counts[j])
        throw ParameterError("release table: attribute " + std::to_string(j) + " has code " + std::to_string(code) +
                             " outside its levels");
      map[static_cast<std::size_t>(code + 1)] = 0;
    }
    std::int32_t level = 0;
    for (std::size_t index = 0; index < map.size(); ++index) {
      if (map[index] != 0) continue;
      map[index] = level++;
      table.code_of_level[j].push_back(static_cast<std::int32_t>(index) - 1);
    }
    table.level_counts[j] = level;
  }
  table.cells.reserve(classes.class_keys.size());
  for (std::size_t c = 0; c < classes.class_count(); ++c) {
    for (std::size_t j = 0; j < m; ++j)
      table.cells.push_back(table.level_of_code[j][static_cast<std::size_t>(classes.key(c)[j] + 1)]);
    table.counts.push_back(classes.counts[c]);
    table.total += classes.counts[c];
  }
  return table;
}

std::int64_t pairs_for_rate(double rate, std::int64_t records) {
  if (!(rate >= 0.0 && rate <= 1.0)) throw ParameterError("swap rate outside [0, 1]");
  const double half = rate * static_cast<double>(records) / 2.0;
  auto pairs = static_cast<std::int64_t>(std::floor(half));
  if (half - static_cast<double>(pairs) > 1.0 - 1e-9 * std::max(1.0, half)) ++pairs;
  return std::min(pairs, records / 2);
}

std::uint64_t selection_key(std::uint64_t seed, std::uint64_t replicate, std::int64_t row_id) {
  const RecordRng rng(seed, StepId::kKarrSanilSelection);
  return rng.bits({static_cast<std::uint64_t>(row_id), 0, replicate, 0})[0];
}

SwapSelection make_swap_selection(std::vector<SelectedRecord> records, std::size_t wanted, const ReleaseTable& table,
                                  std::size_t within_count) {
  std::sort(records.begin(), records.end(), [](const SelectedRecord& a, const SelectedRecord& b) {
    return a.key != b.key ? a.key < b.key : a.row_id < b.row_id;
  });
  if (records.size() > wanted) records.resize(wanted);
  SwapSelection selection;
  selection.attribute_count = table.attribute_count;
  selection.within_count = within_count;
  const std::size_t width = table.attribute_count + within_count;
  selection.row_ids.reserve(records.size());
  selection.levels.reserve(records.size() * width);
  for (const SelectedRecord& record : records) {
    if (record.codes.size() != width) throw ParameterError("swap selection: a record has the wrong number of codes");
    selection.row_ids.push_back(record.row_id);
    for (std::size_t j = 0; j < table.attribute_count; ++j) {
      const std::int32_t code = record.codes[j];
      const auto& map = table.level_of_code[j];
      const auto index = static_cast<std::size_t>(code + 1);
      if (code < -1 || index >= map.size() || map[index] < 0)
        throw InvalidInput("swap selection: row id " + std::to_string(record.row_id) + " has attribute " +
                           std::to_string(j) + " outside the table's cells");
      selection.levels.push_back(map[index]);
    }
    for (std::size_t j = 0; j < within_count; ++j) selection.levels.push_back(record.codes[table.attribute_count + j]);
    const std::optional<std::size_t> cell = table.find(selection.attributes(selection.size() - 1));
    if (!cell)
      throw InvalidInput("swap selection: row id " + std::to_string(record.row_id) + " lies in no cell of the table");
    selection.cells.push_back(static_cast<std::uint32_t>(*cell));
  }
  return selection;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> pair_selected(const SwapSelection& selection,
                                                                   std::int64_t pairs_wanted) {
  const auto records =
      std::min<std::size_t>(selection.size(), static_cast<std::size_t>(std::max<std::int64_t>(0, pairs_wanted)) * 2);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  if (selection.within_count == 0) {
    for (std::size_t i = 0; i + 1 < records; i += 2)
      pairs.emplace_back(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i + 1));
    return pairs;
  }
  // Within strata: a stable sort by stratum keeps the key order inside each stratum.
  std::vector<std::uint32_t> order(records);
  std::iota(order.begin(), order.end(), 0U);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return compare_key_tuples(selection.stratum(a), selection.stratum(b)) < 0;
  });
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin + 1;
    while (end < order.size() &&
           compare_key_tuples(selection.stratum(order[begin]), selection.stratum(order[end])) == 0)
      ++end;
    for (std::size_t i = begin; i + 1 < end; i += 2) pairs.emplace_back(order[i], order[i + 1]);
    begin = end;
  }
  // Pairs in the key order of their first record, so the pairs do not depend on how strata sort.
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

LogLinearBaseline make_loglinear_baseline(const ReleaseTable& table, const LogLinearModelSpec& model, bool refit,
                                          const LogLinearFitOptions& options) {
  LogLinearBaseline baseline;
  baseline.model = canonical_model(model);
  baseline.refit = refit;
  const LogLinearClasses classes = classes_of(table.attribute_count, table.cells, table.counts);
  baseline.fit = fit_loglinear(baseline.model, loglinear_margins_from_classes(baseline.model, classes), options);
  baseline.log_likelihood = multinomial_log_likelihood(baseline.model, baseline.fit, table.attribute_count, table.cells,
                                                       table.counts, table.total);
  return baseline;
}

double original_disclosure_risk(const ReleaseTable& table) {
  std::int64_t small = 0;
  for (std::int64_t count : table.counts)
    if (count <= 2) small += count;
  return table.total == 0 ? 0.0 : static_cast<double>(small) / static_cast<double>(table.total);
}

ReleaseEvaluation evaluate_release(const ReleaseTable& table, const SwapSelection& selection,
                                   std::span<const std::pair<std::uint32_t, std::uint32_t>> pairs,
                                   std::span<const std::size_t> swap_attributes, const ReleaseOptions& options,
                                   const LogLinearBaseline* baseline, const LogLinearFitOptions& fit_options) {
  const std::size_t m = table.attribute_count;
  const std::size_t cells = table.cell_count();
  std::vector<std::int64_t> swapped_out(cells, 0);  // records of a pair taken out of the cell (for DR)
  std::vector<std::int64_t> delta(cells, 0);        // post − pre
  std::vector<std::int32_t> new_cells;              // swapped tuples outside the original table
  ReleaseEvaluation out;
  out.pairs = static_cast<std::int64_t>(pairs.size());

  std::vector<std::int32_t> swapped(m);
  const auto add_record = [&](std::uint32_t record, std::uint32_t partner_record) {
    const auto own = selection.attributes(record);
    const auto partner = selection.attributes(partner_record);
    std::copy(own.begin(), own.end(), swapped.begin());
    for (std::size_t j : swap_attributes) swapped[j] = partner[j];
    const std::size_t from = selection.cells[record];
    ++out.swapped_records;
    const bool changed = !std::equal(own.begin(), own.end(), swapped.begin());
    if (!changed) {
      if (!options.unchanged_count_as_unswapped) ++swapped_out[from];
      return;
    }
    ++out.changed_records;
    ++swapped_out[from];
    --delta[from];
    if (const std::optional<std::size_t> to = table.find(swapped))
      ++delta[*to];
    else
      new_cells.insert(new_cells.end(), swapped.begin(), swapped.end());
  };
  for (const auto& [a, b] : pairs) {
    add_record(a, b);
    add_record(b, a);
  }

  // New cells, sorted and counted.
  std::vector<std::int32_t> new_tuples;
  std::vector<std::int64_t> new_counts;
  {
    const std::size_t count = m == 0 ? 0 : new_cells.size() / m;
    std::vector<std::uint32_t> order(count);
    std::iota(order.begin(), order.end(), 0U);
    const auto tuple = [&](std::uint32_t i) { return std::span<const std::int32_t>(new_cells).subspan(i * m, m); };
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      const int c = compare_key_tuples(tuple(a), tuple(b));
      return c != 0 ? c < 0 : a < b;
    });
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (i > 0 && compare_key_tuples(tuple(order[i - 1]), tuple(order[i])) == 0) {
        ++new_counts.back();
        continue;
      }
      const auto t = tuple(order[i]);
      new_tuples.insert(new_tuples.end(), t.begin(), t.end());
      new_counts.push_back(1);
    }
  }

  // DR and the distances over the union of cells: the original cells, then the new ones.
  std::vector<double> before(cells + new_counts.size(), 0.0);
  std::vector<double> after(before.size(), 0.0);
  std::int64_t unswapped = 0;
  for (std::size_t c = 0; c < cells; ++c) {
    const std::int64_t post = table.counts[c] + delta[c];
    const std::int64_t stayed = table.counts[c] - swapped_out[c];
    unswapped += stayed;
    if (post == 1 || post == 2) out.unswapped_in_small_cells += stayed;
    before[c] = static_cast<double>(table.counts[c]);
    after[c] = static_cast<double>(post);
  }
  for (std::size_t c = 0; c < new_counts.size(); ++c) after[cells + c] = static_cast<double>(new_counts[c]);
  out.unswapped_records = unswapped;
  out.disclosure_risk =
      unswapped == 0 ? 0.0 : static_cast<double>(out.unswapped_in_small_cells) / static_cast<double>(unswapped);
  out.distances = utility::table_distances(before, after);

  out.loglinear_utility = std::numeric_limits<double>::quiet_NaN();
  if (baseline != nullptr) {
    // The swapped table as classes (cells with a count), the original cells first then the new ones:
    // the order does not matter to the margins or the sum.
    std::vector<std::int32_t> post_cells;
    std::vector<std::int64_t> post_counts;
    post_cells.reserve(table.cells.size() + new_tuples.size());
    for (std::size_t c = 0; c < cells; ++c) {
      const std::int64_t post = table.counts[c] + delta[c];
      if (post == 0) continue;
      const auto t = table.cell(c);
      post_cells.insert(post_cells.end(), t.begin(), t.end());
      post_counts.push_back(post);
    }
    post_cells.insert(post_cells.end(), new_tuples.begin(), new_tuples.end());
    post_counts.insert(post_counts.end(), new_counts.begin(), new_counts.end());
    double post_log_likelihood = 0.0;
    if (baseline->refit) {
      const LogLinearClasses classes = classes_of(m, post_cells, post_counts);
      const LogLinearFit fit =
          fit_loglinear(baseline->model, loglinear_margins_from_classes(baseline->model, classes), fit_options);
      post_log_likelihood = multinomial_log_likelihood(baseline->model, fit, m, post_cells, post_counts, table.total);
    } else {
      post_log_likelihood =
          multinomial_log_likelihood(baseline->model, baseline->fit, m, post_cells, post_counts, table.total);
    }
    out.loglinear_utility = post_log_likelihood - baseline->log_likelihood;
  }
  return out;
}

std::vector<std::size_t> undominated_points(std::span<const RiskUtilityPoint> points) {
  // A point without a risk or a utility (NaN) is on no frontier.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (!std::isnan(points[i].risk) && !std::isnan(points[i].utility)) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (points[a].risk != points[b].risk) return points[a].risk < points[b].risk;
    if (points[a].utility != points[b].utility) return points[a].utility > points[b].utility;
    return a < b;
  });
  std::vector<std::size_t> kept;
  double best = -std::numeric_limits<double>::infinity();
  bool any = false;
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin + 1;
    while (end < order.size() && points[order[end]].risk == points[order[begin]].risk) ++end;
    const double top = points[order[begin]].utility;
    if (!any || top > best) {
      for (std::size_t i = begin; i < end && points[order[i]].utility == top; ++i) kept.push_back(order[i]);
      best = top;
      any = true;
    }
    begin = end;
  }
  return kept;
}

std::optional<std::size_t> best_under_risk_bound(std::span<const RiskUtilityPoint> points, double bound) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!(points[i].risk <= bound)) continue;
    if (!best || points[i].utility > points[*best].utility ||
        (points[i].utility == points[*best].utility && points[i].risk < points[*best].risk))
      best = i;
  }
  return best;
}

}  // namespace sdc::swapping
