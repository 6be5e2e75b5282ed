#include "kernels/utility/categorical_loss.h"

#include <absl/container/flat_hash_map.h>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"
#include "kernels/core/table.h"

namespace sdc::utility {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
/// Tables up to this many cells are counted in one copy per thread and added up; larger ones in one
/// shared copy with atomic increments (few collisions: the records spread over many cells).
constexpr std::uint64_t kThreadCopyCells = std::uint64_t{1} << 16;
constexpr std::size_t kRecordGrain = 16384;
constexpr std::uint64_t kBadCell = std::numeric_limits<std::uint64_t>::max();

double percent_change(double masked, double original) {
  if (!std::isfinite(masked) || !std::isfinite(original) || original == 0.0) return kNaN;
  return 100.0 * (masked - original) / original;
}

double ratio_of(double masked, double original) {
  if (!std::isfinite(masked) || !std::isfinite(original) || original == 0.0) return kNaN;
  return masked / original;
}

__extension__ using Wide = __int128;  // GCC/Clang: n(n + 1)(2n + 1) and Σ t³ pass 2^64 beyond 2^21 cells

std::vector<std::uint64_t> row_totals(std::span<const std::uint64_t> table, std::size_t rows, std::size_t columns) {
  std::vector<std::uint64_t> out(rows, 0);
  for (std::size_t k = 0; k < rows; ++k)
    for (std::size_t c = 0; c < columns; ++c) out[k] += table[k * columns + c];
  return out;
}

/// L² = 2 Σ o ln(o/ê) of independence, ê = o_k. o_.c/n; NaN for an empty table. The ratio o/ê is
/// o·n/(o_k.·o_.c) from integer margins: each product rounds once, so a cell that fits independence
/// exactly (o·n = o_k.·o_.c) adds exactly 0.
double independence_deviance(std::span<const std::uint64_t> table, std::size_t rows, std::size_t columns) {
  const std::vector<std::uint64_t> row_sums = row_totals(table, rows, columns);
  std::vector<std::uint64_t> column_sums(columns, 0);
  for (std::size_t k = 0; k < rows; ++k)
    for (std::size_t c = 0; c < columns; ++c) column_sums[c] += table[k * columns + c];
  const std::uint64_t n = std::accumulate(row_sums.begin(), row_sums.end(), std::uint64_t{0});
  if (n == 0) return kNaN;
  ExactSum deviance;
  for (std::size_t k = 0; k < rows; ++k) {
    for (std::size_t c = 0; c < columns; ++c) {
      const std::uint64_t o = table[k * columns + c];
      if (o == 0) continue;  // o ln(o/ê) → 0
      const double ratio = (static_cast<double>(o) * static_cast<double>(n)) /
                           (static_cast<double>(row_sums[k]) * static_cast<double>(column_sums[c]));
      if (ratio != 1.0) deviance.add(static_cast<double>(o) * std::log(ratio));
    }
  }
  // L² ≥ 0 (Gibbs); rounding of a table close to independence must not make it negative.
  return std::max(0.0, 2.0 * deviance.value());
}

/// BV = Σ_k (P^k(c) − P(c))²/(rows − 1) over the rows with a positive total, P^k(c) = D_k(c)/N_k and
/// P(c) = Σ_k D_k(c)/Σ_k N_k; NaN with fewer than two such rows. `used` receives their number.
double between_row_variance(std::span<const std::uint64_t> table, std::size_t rows, std::size_t columns,
                            std::size_t target, std::uint64_t& used) {
  const std::vector<std::uint64_t> totals = row_totals(table, rows, columns);
  std::uint64_t target_total = 0;
  std::uint64_t total = 0;
  used = 0;
  for (std::size_t k = 0; k < rows; ++k) {
    if (totals[k] == 0) continue;
    ++used;
    target_total += table[k * columns + target];
    total += totals[k];
  }
  if (used < 2) return kNaN;
  const double overall = static_cast<double>(target_total) / static_cast<double>(total);
  ExactSum squares;
  for (std::size_t k = 0; k < rows; ++k) {
    if (totals[k] == 0) continue;
    const double gap = static_cast<double>(table[k * columns + target]) / static_cast<double>(totals[k]) - overall;
    squares.add(gap * gap);
  }
  return squares.value() / static_cast<double>(used - 1);
}

template <typename Count>
Association association_of(std::span<const Count> table, std::size_t rows, std::size_t columns) {
  SDC_CHECK(table.size() == rows * columns, "a table of rows × columns cells");
  std::vector<double> row_sums(rows, 0.0);
  std::vector<double> column_sums(columns, 0.0);
  ExactSum total_sum;
  for (std::size_t i = 0; i < rows; ++i) {
    ExactSum row;
    for (std::size_t j = 0; j < columns; ++j) row.add(static_cast<double>(table[i * columns + j]));
    row_sums[i] = row.value();
    total_sum.add(row_sums[i]);
  }
  for (std::size_t j = 0; j < columns; ++j) {
    ExactSum column;
    for (std::size_t i = 0; i < rows; ++i) column.add(static_cast<double>(table[i * columns + j]));
    column_sums[j] = column.value();
  }
  Association out;
  const double n = total_sum.value();
  out.rows =
      static_cast<std::uint64_t>(std::count_if(row_sums.begin(), row_sums.end(), [](double s) { return s > 0; }));
  out.columns =
      static_cast<std::uint64_t>(std::count_if(column_sums.begin(), column_sums.end(), [](double s) { return s > 0; }));
  if (!(n > 0.0)) {
    out.chi_square = kNaN;
    out.cramers_v = kNaN;
    return out;
  }
  ExactSum chi;
  for (std::size_t i = 0; i < rows; ++i) {
    if (!(row_sums[i] > 0.0)) continue;
    for (std::size_t j = 0; j < columns; ++j) {
      if (!(column_sums[j] > 0.0)) continue;
      const double expected = row_sums[i] * column_sums[j] / n;
      const double gap = static_cast<double>(table[i * columns + j]) - expected;
      chi.add(gap * gap / expected);
    }
  }
  out.chi_square = chi.value();
  const std::uint64_t smaller = std::min(out.rows, out.columns);
  out.cramers_v = smaller < 2 ? kNaN : std::sqrt(out.chi_square / n / static_cast<double>(smaller - 1));
  return out;
}

}  // namespace

// ---- categories and tables ----

CategoryDomain match_categories(std::span<const std::string> original_levels,
                                std::span<const std::string> masked_levels) {
  CategoryDomain domain;
  domain.original_levels = static_cast<std::uint32_t>(original_levels.size());
  domain.original_category.resize(original_levels.size() + 1);
  domain.original_category[0] = 0;
  absl::flat_hash_map<std::string, std::int32_t> category_of_label;
  for (std::size_t code = 0; code < original_levels.size(); ++code) {
    const auto category = static_cast<std::int32_t>(code + 1);
    domain.original_category[code + 1] = category;
    category_of_label.emplace(original_levels[code], category);
  }
  std::int32_t next = static_cast<std::int32_t>(original_levels.size()) + 1;
  domain.masked_category.resize(masked_levels.size() + 1);
  domain.masked_category[0] = 0;
  for (std::size_t code = 0; code < masked_levels.size(); ++code) {
    const auto [it, added] = category_of_label.emplace(masked_levels[code], next);
    if (added) {
      domain.masked_only_codes.push_back(static_cast<std::uint32_t>(code));
      ++next;
    }
    domain.masked_category[code + 1] = it->second;
  }
  domain.categories = static_cast<std::uint32_t>(next);
  return domain;
}

std::uint64_t grid_cells(std::span<const std::uint32_t> categories) {
  std::uint64_t cells = 1;
  for (const std::uint32_t count : categories) {
    if (count == 0) return 0;
    if (cells > std::numeric_limits<std::uint64_t>::max() / count) return std::numeric_limits<std::uint64_t>::max();
    cells *= count;
  }
  return cells;
}

std::vector<std::uint64_t> count_table_cells(std::span<const TableAxis> axes) {
  SDC_CHECK(!axes.empty(), "a table has at least one axis");
  std::vector<std::uint32_t> categories;
  for (const TableAxis& axis : axes) categories.push_back(axis.categories);
  const std::uint64_t cells = grid_cells(categories);
  if (cells > kMaxTableCells)
    throw ParameterError("a table of " + std::to_string(cells) + " cells, beyond the limit of " +
                         std::to_string(kMaxTableCells) + " (2^24)");
  const std::size_t records = axes.front().codes.size();
  std::vector<std::uint64_t> strides(axes.size(), 1);
  for (std::size_t a = axes.size() - 1; a > 0; --a) strides[a - 1] = strides[a] * axes[a].categories;
  for (const TableAxis& axis : axes) {
    SDC_CHECK(axis.codes.size() == records, "the axes of a table hold the same records");
    SDC_CHECK(!axis.category_of_code.empty(), "an axis maps the missing code");
    for (const std::int32_t category : axis.category_of_code)
      SDC_CHECK(category >= 0 && static_cast<std::uint32_t>(category) < axis.categories,
                "an axis maps its codes to its categories");
  }
  std::vector<std::uint64_t> counts(cells, 0);
  if (records == 0) return counts;

  const auto cell_of = [&](std::size_t i) {
    std::uint64_t cell = 0;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      // code + 1 as unsigned: a code below −1 wraps to a huge index and is caught with those above.
      const auto index = static_cast<std::size_t>(static_cast<std::uint32_t>(axes[a].codes[i] + 1));
      if (index >= axes[a].category_of_code.size()) return kBadCell;
      cell += strides[a] * static_cast<std::uint64_t>(axes[a].category_of_code[index]);
    }
    return cell;
  };
  std::atomic<bool> bad{false};
  const tbb::blocked_range<std::size_t> range(0, records, kRecordGrain);
  if (cells <= kThreadCopyCells) {
    tbb::enumerable_thread_specific<std::vector<std::uint64_t>> copies(
        [&] { return std::vector<std::uint64_t>(cells, 0); });
    tbb::parallel_for(range, [&](const tbb::blocked_range<std::size_t>& block) {
      auto& mine = copies.local();
      for (std::size_t i = block.begin(); i < block.end(); ++i) {
        const std::uint64_t cell = cell_of(i);
        if (cell == kBadCell) {
          bad.store(true, std::memory_order_relaxed);
          continue;
        }
        ++mine[cell];
      }
    });
    // Integer additions: the order of the copies changes nothing.
    for (const auto& copy : copies) merge_table_cells(counts, copy);
  } else {
    tbb::parallel_for(range, [&](const tbb::blocked_range<std::size_t>& block) {
      for (std::size_t i = block.begin(); i < block.end(); ++i) {
        const std::uint64_t cell = cell_of(i);
        if (cell == kBadCell) {
          bad.store(true, std::memory_order_relaxed);
          continue;
        }
        std::atomic_ref<std::uint64_t>(counts[cell]).fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  SDC_CHECK(!bad.load(), "a code outside its variable's levels reached a table");
  return counts;
}

void merge_table_cells(std::vector<std::uint64_t>& into, std::span<const std::uint64_t> from) {
  if (into.empty()) {
    into.assign(from.begin(), from.end());
    return;
  }
  SDC_CHECK(into.size() == from.size(), "merged tables have the same cells");
  for (std::size_t c = 0; c < into.size(); ++c) into[c] += from[c];
}

// ---- §3: one variable ----

double category_distance(std::uint32_t original, std::uint32_t masked, const CategoryComparisonOptions& options) {
  if (original == 0 && masked == 0) return 0.0;
  if (original == 0 || masked == 0) return 1.0;
  if (options.scale == CategoricalScale::kNominal) return original == masked ? 0.0 : 1.0;
  const std::uint32_t ordered = options.ordered_categories;
  SDC_CHECK(original <= ordered && masked <= ordered, "an ordinal distance between ranked categories");
  const std::uint32_t gap = original > masked ? original - masked : masked - original;
  if (options.ordinal_distance == OrdinalDistance::kPrinted)
    return static_cast<double>(gap + 1) / static_cast<double>(ordered);
  return ordered <= 1 ? 0.0 : static_cast<double>(gap) / static_cast<double>(ordered - 1);
}

CategoryComparison compare_categories(std::span<const std::uint64_t> cross_tabulation, std::uint32_t categories,
                                      const CategoryComparisonOptions& options) {
  const std::size_t k_count = categories;
  SDC_CHECK(cross_tabulation.size() == k_count * k_count, "a cross-tabulation of categories × categories cells");
  CategoryComparison out;
  std::vector<double> column_totals(k_count, 0.0);
  std::vector<double> counts(cross_tabulation.size());
  ExactSum distance;
  for (std::size_t k = 0; k < k_count; ++k) {
    for (std::size_t l = 0; l < k_count; ++l) {
      const std::uint64_t n = cross_tabulation[k * k_count + l];
      counts[k * k_count + l] = static_cast<double>(n);
      if (n == 0) continue;
      out.records += n;
      column_totals[l] += static_cast<double>(n);  // exact: integers far below 2^53
      if (k != l) out.records_changed += n;
      if (k == 0) out.missing_original += n;
      if (l == 0) out.missing_masked += n;
      const double d = category_distance(static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(l), options);
      if (d != 0.0) distance.add(static_cast<double>(n) * d);
    }
  }
  if (out.records == 0) throw ParameterError("categorical comparison: no records");
  out.mean_distance = distance.value() / static_cast<double>(out.records);

  const BackwardProbabilities backward = backward_probabilities(cross_tabulation, k_count);
  out.ebil = entropy_based_loss(backward, column_totals);
  if (options.record_loss_form == RecordLossForm::kText) {
    out.information_loss = summed_record_loss(backward.probability, counts);
  } else {
    std::vector<double> forward(counts.size(), 0.0);
    for (std::size_t k = 0; k < k_count; ++k) {
      std::uint64_t row_total = 0;
      for (std::size_t l = 0; l < k_count; ++l) row_total += cross_tabulation[k * k_count + l];
      if (row_total == 0) continue;
      for (std::size_t l = 0; l < k_count; ++l)
        forward[k * k_count + l] = counts[k * k_count + l] / static_cast<double>(row_total);
    }
    out.information_loss = summed_record_loss(forward, counts);
  }
  return out;
}

// ---- §3: EBIL and PRIL from given figures ----

BackwardProbabilities backward_probabilities(std::span<const double> transition, std::size_t masked_categories,
                                             std::span<const double> original_counts) {
  const std::size_t original_categories = original_counts.size();
  if (masked_categories == 0 || transition.size() != original_categories * masked_categories)
    throw ParameterError("backward probabilities: the transition matrix has " + std::to_string(transition.size()) +
                         " entries, expected " + std::to_string(original_categories) + " × " +
                         std::to_string(masked_categories));
  for (const double p : transition)
    if (!std::isfinite(p) || p < 0.0)
      throw ParameterError("backward probabilities: a transition probability is not in [0, 1]");
  for (const double t : original_counts)
    if (!std::isfinite(t) || t < 0.0) throw ParameterError("backward probabilities: an original count is negative");
  BackwardProbabilities out;
  out.original_categories = original_categories;
  out.masked_categories = masked_categories;
  out.probability.assign(transition.size(), kNaN);
  for (std::size_t l = 0; l < masked_categories; ++l) {
    ExactSum reach;
    for (std::size_t m = 0; m < original_categories; ++m) {
      const double term = transition[m * masked_categories + l] * original_counts[m];
      reach.add(term);
      reach.add(std::fma(transition[m * masked_categories + l], original_counts[m], -term));
    }
    const double denominator = reach.value();
    if (!(denominator > 0.0)) continue;
    for (std::size_t k = 0; k < original_categories; ++k)
      out.probability[k * masked_categories + l] =
          transition[k * masked_categories + l] * original_counts[k] / denominator;
  }
  return out;
}

BackwardProbabilities backward_probabilities(std::span<const std::uint64_t> transition_counts,
                                             std::size_t masked_categories) {
  SDC_CHECK(masked_categories > 0 && transition_counts.size() % masked_categories == 0,
            "transition counts of original × masked categories");
  BackwardProbabilities out;
  out.original_categories = transition_counts.size() / masked_categories;
  out.masked_categories = masked_categories;
  out.probability.assign(transition_counts.size(), kNaN);
  for (std::size_t l = 0; l < masked_categories; ++l) {
    std::uint64_t column = 0;
    for (std::size_t m = 0; m < out.original_categories; ++m) column += transition_counts[m * masked_categories + l];
    if (column == 0) continue;
    for (std::size_t k = 0; k < out.original_categories; ++k)
      out.probability[k * masked_categories + l] =
          static_cast<double>(transition_counts[k * masked_categories + l]) / static_cast<double>(column);
  }
  return out;
}

std::vector<double> conditional_entropies(const BackwardProbabilities& backward) {
  std::vector<double> out(backward.masked_categories, kNaN);
  for (std::size_t l = 0; l < backward.masked_categories; ++l) {
    if (backward.original_categories == 0 || std::isnan(backward.at(0, l))) continue;
    ExactSum entropy;
    for (std::size_t k = 0; k < backward.original_categories; ++k) {
      const double p = backward.at(k, l);
      if (p > 0.0 && p < 1.0) entropy.add(-p * std::log(p));  // 0 · ln 0 = 1 · ln 1 = 0 (and never −0)
    }
    out[l] = entropy.value();
  }
  return out;
}

double entropy_based_loss(const BackwardProbabilities& backward, std::span<const double> masked_counts) {
  if (masked_counts.size() != backward.masked_categories)
    throw ParameterError("EBIL: " + std::to_string(masked_counts.size()) + " masked counts for " +
                         std::to_string(backward.masked_categories) + " masked categories");
  const std::vector<double> entropies = conditional_entropies(backward);
  ExactSum loss;
  for (std::size_t l = 0; l < masked_counts.size(); ++l) {
    if (!(masked_counts[l] > 0.0)) continue;
    if (std::isnan(entropies[l]))
      throw ParameterError("EBIL: masked category " + std::to_string(l) +
                           " has records, but no original category reaches it");
    loss.add(masked_counts[l] * entropies[l]);
  }
  return loss.value();
}

double summed_record_loss(std::span<const double> probabilities, std::span<const double> counts) {
  if (probabilities.size() != counts.size())
    throw ParameterError("PRIL: " + std::to_string(counts.size()) + " counts for " +
                         std::to_string(probabilities.size()) + " probabilities");
  ExactSum loss;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (!(counts[i] > 0.0)) continue;
    const double p = probabilities[i];
    if (std::isnan(p)) throw ParameterError("PRIL: a pair of categories with records has no probability");
    if (!(p > 0.0)) return std::numeric_limits<double>::infinity();
    if (p < 1.0) loss.add(-counts[i] * std::log(p));  // ln 1 = 0: no −0 in a report
  }
  return loss.value();
}

// ---- §3: CTBIL ----

std::vector<std::vector<std::size_t>> table_subsets(std::size_t variables, std::size_t order) {
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t size = 1; size <= std::min(order, variables); ++size) {
    std::vector<std::size_t> subset(size);
    std::iota(subset.begin(), subset.end(), std::size_t{0});
    while (true) {
      out.push_back(subset);
      // The next combination in lexicographic order: raise the last entry that can still rise.
      std::size_t i = size;
      while (i > 0 && subset[i - 1] == variables - size + (i - 1)) --i;
      if (i == 0) break;
      ++subset[i - 1];
      for (std::size_t j = i; j < size; ++j) subset[j] = subset[j - 1] + 1;
    }
  }
  return out;
}

TableComparison compare_tables(std::span<const std::uint64_t> original, std::span<const std::uint64_t> masked) {
  SDC_CHECK(original.size() == masked.size(), "compared tables have the same cells");
  TableComparison out;
  out.cells = original.size();
  std::uint64_t original_total = 0;
  std::uint64_t masked_total = 0;
  for (std::size_t c = 0; c < original.size(); ++c) {
    out.absolute_difference += original[c] > masked[c] ? original[c] - masked[c] : masked[c] - original[c];
    original_total += original[c];
    masked_total += masked[c];
  }
  // The cells pass to table_distance.h in short blocks of doubles, so that a large table is not copied.
  constexpr std::size_t kBlock = 4096;
  std::vector<double> p(std::min(kBlock, original.size()));
  std::vector<double> q(p.size());
  TableDistancePartial partial;
  for (std::size_t begin = 0; begin < original.size(); begin += kBlock) {
    const std::size_t size = std::min(kBlock, original.size() - begin);
    for (std::size_t c = 0; c < size; ++c) {
      p[c] = static_cast<double>(original[begin + c]);
      q[c] = static_cast<double>(masked[begin + c]);
    }
    add_table_cells(partial, std::span(p).first(size), std::span(q).first(size), static_cast<double>(original_total),
                    static_cast<double>(masked_total));
  }
  out.distances = finish_table_distances(partial);
  return out;
}

Ctbil ctbil(std::span<const TableComparison> tables) {
  Ctbil out;
  out.tables = tables.size();
  for (const TableComparison& table : tables) {
    out.cells += table.cells;
    out.value += table.absolute_difference;
  }
  out.normalised = out.cells == 0 ? kNaN : static_cast<double>(out.value) / static_cast<double>(out.cells);
  return out;
}

// ---- §6 ----

Association cramers_v(std::span<const double> table, std::size_t rows, std::size_t columns) {
  for (const double x : table)
    if (!std::isfinite(x) || x < 0.0) throw ParameterError("Cramér's V: a cell count is negative or not finite");
  return association_of(table, rows, columns);
}

SignedRankTest signed_rank_test(std::span<const std::uint64_t> original, std::span<const std::uint64_t> masked) {
  SDC_CHECK(original.size() == masked.size(), "compared tables have the same cells");
  // |d| -> (cells, of them positive): ties share the average of their ranks, so the cells of one |d|
  // need no order among themselves.
  absl::flat_hash_map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> by_magnitude;
  for (std::size_t c = 0; c < original.size(); ++c) {
    if (original[c] == masked[c]) continue;
    auto& [cells, positive] = by_magnitude[original[c] > masked[c] ? original[c] - masked[c] : masked[c] - original[c]];
    ++cells;
    if (masked[c] > original[c]) ++positive;
  }
  std::vector<std::pair<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>>> magnitudes(by_magnitude.begin(),
                                                                                            by_magnitude.end());
  std::sort(magnitudes.begin(), magnitudes.end());
  Wide twice_w_plus = 0;  // 2·W+: average ranks are whole or half
  Wide ties = 0;          // Σ (t³ − t)
  Wide ranked = 0;
  for (const auto& [magnitude, counts] : magnitudes) {
    const auto [cells, positive] = counts;
    const Wide t = cells;
    // The ranks ranked + 1 .. ranked + t, on average ranked + (t + 1)/2.
    twice_w_plus += static_cast<Wide>(positive) * (2 * ranked + t + 1);
    ties += t * t * t - t;
    ranked += t;
  }
  SignedRankTest out;
  out.differences = static_cast<std::uint64_t>(ranked);
  out.w_plus = static_cast<double>(twice_w_plus) / 2.0;
  if (ranked == 0) {
    out.z = kNaN;
    out.p_value = kNaN;
    return out;
  }
  const Wide n = ranked;
  // 48·σ² = 2n(n + 1)(2n + 1) − Σ (t³ − t) > 0; 4·(W+ − n(n + 1)/4) = 2·(2W+) − n(n + 1).
  const double variance = static_cast<double>(2 * n * (n + 1) * (2 * n + 1) - ties) / 48.0;
  const Wide gap_times_four = 2 * twice_w_plus - n * (n + 1);
  const int sign = gap_times_four > 0 ? 1 : (gap_times_four < 0 ? -1 : 0);
  out.z = static_cast<double>(gap_times_four - 2 * sign) / 4.0 / std::sqrt(variance);
  out.p_value = std::erfc(std::fabs(out.z) / std::numbers::sqrt2);
  return out;
}

ShlomoYoung shlomo_young_measures(std::span<const std::uint64_t> original, std::span<const std::uint64_t> masked,
                                  std::size_t rows, std::size_t columns, const ShlomoYoungOptions& options) {
  SDC_CHECK(original.size() == rows * columns && masked.size() == original.size(),
            "two tables of rows × columns cells");
  SDC_CHECK(columns > 0, "a table has columns");
  std::vector<std::uint8_t> in_total(columns, options.total_columns.empty() ? 1 : 0);
  for (const std::size_t c : options.total_columns) {
    if (c >= columns)
      throw ParameterError("Shlomo–Young totals: column " + std::to_string(c) + " of a table of " +
                           std::to_string(columns) + " columns");
    if (in_total[c] != 0) throw ParameterError("Shlomo–Young totals: column " + std::to_string(c) + " given twice");
    in_total[c] = 1;
  }
  if (options.target_column && *options.target_column >= columns)
    throw ParameterError("Shlomo–Young BVR: target column " + std::to_string(*options.target_column) +
                         " of a table of " + std::to_string(columns) + " columns");
  ShlomoYoung out;
  out.rows = rows;
  out.columns = columns;
  const auto at = [columns](std::span<const std::uint64_t> table, std::size_t k, std::size_t c) {
    return static_cast<double>(table[k * columns + c]);
  };

  std::vector<std::size_t> compared;
  for (std::size_t k = 0; k < rows; ++k) {
    bool any = false;
    for (std::size_t c = 0; c < columns && !any; ++c)
      any = original[k * columns + c] > 0 || masked[k * columns + c] > 0;
    if (any) compared.push_back(k);
  }
  if (compared.empty()) throw ParameterError("Shlomo–Young measures: both tables are empty");
  out.rows_compared = compared.size();
  const auto n_r = static_cast<double>(compared.size());
  const auto n_k = static_cast<double>(columns);

  ExactSum hellinger, relative, average_absolute, variance_original, variance_masked, entropy_original, entropy_masked;
  ExactSum relative_total, absolute_total;
  for (const std::size_t k : compared) {
    ExactSum root_gaps, relative_row, absolute_row, total_original, total_masked;
    std::uint64_t group_original = 0;
    std::uint64_t group_masked = 0;
    for (std::size_t c = 0; c < columns; ++c) {
      if (in_total[c] != 0) {
        group_original += original[k * columns + c];
        group_masked += masked[k * columns + c];
      }
      const double o = at(original, k, c);
      const double p = at(masked, k, c);
      const double root_gap = std::sqrt(p) - std::sqrt(o);
      root_gaps.add(0.5 * root_gap * root_gap);
      absolute_row.add(std::fabs(p - o));
      if (o > 0.0)
        relative_row.add(std::fabs(p - o) / o);
      else
        ++out.zero_cells_skipped;
      total_original.add(o);
      total_masked.add(p);
      if (o == 1.0 || o == 2.0) {
        ++out.small_cells;
        if (p == o) ++out.small_cells_unchanged;
      }
    }
    const auto total_gap = static_cast<double>(group_original > group_masked ? group_original - group_masked
                                                                             : group_masked - group_original);
    absolute_total.add(total_gap);
    if (group_original > 0)
      relative_total.add(total_gap / static_cast<double>(group_original));
    else
      ++out.zero_total_rows_skipped;
    hellinger.add(std::sqrt(root_gaps.value()));
    relative.add(relative_row.value());
    average_absolute.add(absolute_row.value() / n_k);
    const auto row_variance_and_entropy = [&](std::span<const std::uint64_t> table, double total, ExactSum& variance,
                                              ExactSum& entropy) {
      const double mean = total / n_k;
      ExactSum squares, row_entropy;
      for (std::size_t c = 0; c < columns; ++c) {
        const double x = at(table, k, c);
        squares.add((x - mean) * (x - mean));
        const double share = x / total;
        if (x > 0.0 && share < 1.0) row_entropy.add(-share * std::log(share));
      }
      if (columns > 1) variance.add(squares.value() / (n_k - 1.0));
      entropy.add(row_entropy.value());
    };
    row_variance_and_entropy(original, total_original.value(), variance_original, entropy_original);
    row_variance_and_entropy(masked, total_masked.value(), variance_masked, entropy_masked);
  }
  out.hellinger = hellinger.value() / n_r;
  out.relative_absolute = relative.value() / n_r;
  out.average_absolute = average_absolute.value() / n_r;
  out.average_variance_original = columns > 1 ? variance_original.value() / n_r : kNaN;
  out.average_variance_masked = columns > 1 ? variance_masked.value() / n_r : kNaN;
  out.relative_average_variance = percent_change(out.average_variance_masked, out.average_variance_original);
  out.cramers_v_original = association_of(original, rows, columns).cramers_v;
  out.cramers_v_masked = association_of(masked, rows, columns).cramers_v;
  out.relative_cramers_v = percent_change(out.cramers_v_masked, out.cramers_v_original);
  out.entropy_original = entropy_original.value();
  out.entropy_masked = entropy_masked.value();
  out.relative_entropy = percent_change(out.entropy_masked, out.entropy_original);
  out.small_cells_unchanged_percent = out.small_cells == 0 ? kNaN
                                                           : 100.0 * static_cast<double>(out.small_cells_unchanged) /
                                                                 static_cast<double>(out.small_cells);
  out.total_columns = static_cast<std::uint64_t>(std::count(in_total.begin(), in_total.end(), std::uint8_t{1}));
  out.relative_absolute_total = out.zero_total_rows_skipped == compared.size() ? kNaN : relative_total.value();
  out.absolute_total = absolute_total.value() / n_r;
  out.between_variance_original = kNaN;
  out.between_variance_masked = kNaN;
  out.between_variance_ratio = kNaN;
  if (options.target_column) {
    out.between_variance_original =
        between_row_variance(original, rows, columns, *options.target_column, out.between_variance_rows_original);
    out.between_variance_masked =
        between_row_variance(masked, rows, columns, *options.target_column, out.between_variance_rows_masked);
    out.between_variance_ratio = ratio_of(out.between_variance_masked, out.between_variance_original);
  }
  out.likelihood_ratio_original = independence_deviance(original, rows, columns);
  out.likelihood_ratio_masked = independence_deviance(masked, rows, columns);
  out.likelihood_ratio = ratio_of(out.likelihood_ratio_masked, out.likelihood_ratio_original);
  out.bias = signed_rank_test(original, masked);

  // Rank distortion: per column, the compared rows sorted by original count (ties by row) fall into
  // kRankGroups quantile groups by position; sorted again by masked count (ties by the original
  // order), each row's group may change. Columns are independent: one slot each, counted afterwards.
  std::vector<double> rank_change(columns, 0.0);
  const std::size_t n = compared.size();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, columns, 16), [&](const tbb::blocked_range<std::size_t>& block) {
    std::vector<std::size_t> order(n);
    std::vector<std::size_t> original_position(n);
    for (std::size_t c = block.begin(); c < block.end(); ++c) {
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const std::uint64_t x = original[compared[a] * columns + c];
        const std::uint64_t y = original[compared[b] * columns + c];
        return x != y ? x < y : a < b;
      });
      for (std::size_t position = 0; position < n; ++position) original_position[order[position]] = position;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const std::uint64_t x = masked[compared[a] * columns + c];
        const std::uint64_t y = masked[compared[b] * columns + c];
        return x != y ? x < y : original_position[a] < original_position[b];
      });
      std::size_t changed = 0;
      for (std::size_t position = 0; position < n; ++position) {
        const std::size_t group_masked = position * kRankGroups / n;
        const std::size_t group_original = original_position[order[position]] * kRankGroups / n;
        if (group_masked != group_original) ++changed;
      }
      rank_change[c] = 100.0 * static_cast<double>(changed) / static_cast<double>(n);
    }
  });
  ExactSum rank_change_sum;
  for (const double rc : rank_change) {
    if (rc > kRankChangeThresholdPercent) ++out.rank_distorted_columns;
    rank_change_sum.add(rc);
  }
  out.mean_rank_change = rank_change_sum.value() / n_k;
  return out;
}

double exact_binomial_test(std::uint64_t successes, std::uint64_t trials, double probability) {
  if (!(probability > 0.0 && probability < 1.0))
    throw ParameterError("binomial test: the probability of a success is not in (0, 1)");
  if (successes > trials)
    throw ParameterError("binomial test: " + std::to_string(successes) + " successes in " + std::to_string(trials) +
                         " trials");
  if (trials == 0) return 1.0;
  const auto n = static_cast<double>(trials);
  const double log_p = std::log(probability);
  const double log_q = std::log1p(-probability);
  const double log_n_factorial = std::lgamma(n + 1.0);
  const auto log_probability = [&](std::uint64_t i) {
    const auto x = static_cast<double>(i);
    return log_n_factorial - std::lgamma(x + 1.0) - std::lgamma(n - x + 1.0) + x * log_p + (n - x) * log_q;
  };
  // R's binom.test: the outcomes at most as likely as the observed one, with a relative slack of 1e-7
  // so that outcomes of equal probability are not split by rounding.
  const double bound = log_probability(successes) + std::log1p(1e-7);
  ExactSum p_value;
  for (std::uint64_t i = 0;; ++i) {  // i ≤ trials without wrapping at UINT64_MAX
    const double log_pi = log_probability(i);
    if (log_pi <= bound) p_value.add(std::exp(log_pi));
    if (i == trials) break;
  }
  return std::min(1.0, p_value.value());
}

std::vector<double> impute_suppressed_cells(std::span<const double> row, std::span<const std::uint8_t> suppressed,
                                            double row_total, SuppressedCellImputation method,
                                            std::span<const double> column_weights) {
  if (suppressed.size() != row.size())
    throw ParameterError("suppressed cells: " + std::to_string(suppressed.size()) + " marks for a row of " +
                         std::to_string(row.size()) + " cells");
  if (method == SuppressedCellImputation::kColumnWeighted && column_weights.size() != row.size())
    throw ParameterError("suppressed cells: " + std::to_string(column_weights.size()) +
                         " column weights for a row of " + std::to_string(row.size()) + " cells");
  for (const double w : column_weights)
    if (!std::isfinite(w) || w < 0.0)
      throw ParameterError("suppressed cells: a column weight is negative or not finite");
  std::vector<double> out(row.begin(), row.end());
  ExactSum published;
  std::size_t hidden = 0;
  ExactSum hidden_weight;
  for (std::size_t j = 0; j < row.size(); ++j) {
    if (suppressed[j] == 0) {
      published.add(row[j]);
    } else {
      ++hidden;
      if (method == SuppressedCellImputation::kColumnWeighted) hidden_weight.add(column_weights[j]);
    }
  }
  if (hidden == 0) return out;
  const double residual = row_total - published.value();
  const double weight_total = hidden_weight.value();
  for (std::size_t j = 0; j < row.size(); ++j) {
    if (suppressed[j] == 0) continue;
    switch (method) {
      case SuppressedCellImputation::kZero:
        out[j] = 0.0;
        break;
      case SuppressedCellImputation::kRowAverage:
        out[j] = residual / static_cast<double>(hidden);
        break;
      case SuppressedCellImputation::kColumnWeighted:
        out[j] =
            weight_total > 0.0 ? residual * column_weights[j] / weight_total : residual / static_cast<double>(hidden);
        break;
    }
  }
  return out;
}

}  // namespace sdc::utility
