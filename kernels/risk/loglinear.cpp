#include "kernels/risk/loglinear.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "kernels/core/error.h"

namespace sdc {
namespace {

constexpr std::uint64_t kMaxMarginCells = std::uint64_t{1} << 28;
// Chunks of the streamed grid: fixed by the data shape alone, never by the thread count, and folded
// in chunk order, so every streamed sum has the same bits for any number of threads.
constexpr std::uint64_t kMinChunkCells = std::uint64_t{1} << 20;
constexpr std::size_t kChunksPerBatch = 16;

/// A dense table over a set of keys, row-major (last key fastest).
struct TableLayout {
  std::vector<std::size_t> keys;
  std::vector<std::uint64_t> strides;
  std::uint64_t size = 1;
};

TableLayout layout_of(const LogLinearModelSpec& spec, std::span<const std::size_t> keys) {
  TableLayout layout;
  layout.keys.assign(keys.begin(), keys.end());
  layout.strides.resize(keys.size());
  for (std::size_t p = keys.size(); p-- > 0;) {
    layout.strides[p] = layout.size;
    layout.size *= static_cast<std::uint64_t>(spec.level_counts[keys[p]]);
  }
  return layout;
}

std::vector<TableLayout> generator_layouts(const LogLinearModelSpec& spec) {
  std::vector<TableLayout> layouts;
  layouts.reserve(spec.generators.size());
  for (const auto& g : spec.generators) layouts.push_back(layout_of(spec, g));
  return layouts;
}

std::uint64_t table_index(const TableLayout& layout, std::span<const std::int32_t> cell) {
  std::uint64_t index = 0;
  for (std::size_t p = 0; p < layout.keys.size(); ++p) {
    index += static_cast<std::uint64_t>(cell[layout.keys[p]]) * layout.strides[p];
  }
  return index;
}

std::uint64_t linear_index(const LogLinearModelSpec& spec, std::span<const std::int32_t> cell) {
  std::uint64_t index = 0;
  for (std::size_t j = 0; j < spec.key_count(); ++j) {
    index = index * static_cast<std::uint64_t>(spec.level_counts[j]) + static_cast<std::uint64_t>(cell[j]);
  }
  return index;
}

void decode_linear_index(const LogLinearModelSpec& spec, std::uint64_t index, std::span<std::int32_t> cell) {
  for (std::size_t j = spec.key_count(); j-- > 0;) {
    const auto levels = static_cast<std::uint64_t>(spec.level_counts[j]);
    cell[j] = static_cast<std::int32_t>(index % levels);
    index /= levels;
  }
}

std::vector<std::uint64_t> structural_linear(const LogLinearModelSpec& spec) {
  std::vector<std::uint64_t> cells;
  const std::size_t m = spec.key_count();
  if (m == 0) return cells;
  for (std::size_t s = 0; s * m < spec.structural_zeros.size(); ++s) {
    cells.push_back(linear_index(spec, std::span<const std::int32_t>(spec.structural_zeros).subspan(s * m, m)));
  }
  std::sort(cells.begin(), cells.end());
  return cells;
}

double product_of_factors(const std::vector<TableLayout>& layouts, const std::vector<std::vector<double>>& factors,
                          std::span<const std::int32_t> cell) {
  double mu = 1.0;
  for (std::size_t g = 0; g < layouts.size(); ++g) mu *= factors[g][table_index(layouts[g], cell)];
  return mu;
}

/// Walks grid cells in linear order from `start`, keeping the cell index of every tracked table and μ.
/// Tables [0, generator_count) are the factors; μ re-multiplies only the factors of the last key while
/// that key alone moves.
class GridWalker {
 public:
  GridWalker(const LogLinearModelSpec& spec, std::span<const TableLayout> tables, std::size_t generator_count,
             const std::vector<std::vector<double>>& factors, std::uint64_t start)
      : levels_(spec.level_counts),
        factors_(factors),
        generator_count_(generator_count),
        codes_(spec.key_count()),
        index_(tables.size(), 0),
        touches_(spec.key_count()) {
    decode_linear_index(spec, start, codes_);
    for (std::size_t t = 0; t < tables.size(); ++t) {
      index_[t] = table_index(tables[t], codes_);
      for (std::size_t p = 0; p < tables[t].keys.size(); ++p) {
        touches_[tables[t].keys[p]].push_back({t, tables[t].strides[p]});
      }
    }
    if (!codes_.empty()) {
      for (const auto& touch : touches_.back()) {
        if (touch.table < generator_count_) last_key_factors_.push_back(touch.table);
      }
    }
  }

  double mu() {
    if (base_stale_) {
      base_ = 1.0;
      for (std::size_t g = 0; g < generator_count_; ++g) {
        if (std::find(last_key_factors_.begin(), last_key_factors_.end(), g) == last_key_factors_.end()) {
          base_ *= factors_[g][index_[g]];
        }
      }
      base_stale_ = false;
    }
    double mu = base_;
    for (std::size_t g : last_key_factors_) mu *= factors_[g][index_[g]];
    return mu;
  }

  std::uint64_t index(std::size_t table) const { return index_[table]; }

  void advance() {
    for (std::size_t j = codes_.size(); j-- > 0;) {
      if (++codes_[j] < levels_[j]) {
        for (const auto& touch : touches_[j]) index_[touch.table] += touch.stride;
        if (j + 1 != codes_.size()) base_stale_ = true;
        return;
      }
      const auto wrapped = static_cast<std::uint64_t>(levels_[j] - 1);
      codes_[j] = 0;
      for (const auto& touch : touches_[j]) index_[touch.table] -= wrapped * touch.stride;
    }
    base_stale_ = true;
  }

 private:
  struct Touch {
    std::size_t table;
    std::uint64_t stride;
  };
  const std::vector<std::int32_t>& levels_;
  const std::vector<std::vector<double>>& factors_;
  std::size_t generator_count_;
  std::vector<std::int32_t> codes_;
  std::vector<std::uint64_t> index_;
  std::vector<std::vector<Touch>> touches_;
  std::vector<std::size_t> last_key_factors_;
  double base_ = 1.0;
  bool base_stale_ = true;
};

/// Calls visit(chunk, walker, linear index) for every non-structural cell of [begin, end), chunk by chunk
/// in parallel; chunk c covers [begin + c·chunk_cells, …). `prepare(chunk count)` runs first.
template <typename Visit>
void stream_chunks(const LogLinearModelSpec& spec, std::span<const TableLayout> tables,
                   const std::vector<std::vector<double>>& factors, const std::vector<std::uint64_t>& structural,
                   std::uint64_t begin, std::uint64_t end, std::uint64_t chunk_cells, std::size_t first_chunk,
                   std::size_t chunk_count, Visit&& visit) {
  const std::size_t generator_count = spec.generators.size();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(first_chunk, first_chunk + chunk_count, 1),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t c = range.begin(); c != range.end(); ++c) {
                        const std::uint64_t chunk_begin = begin + c * chunk_cells;
                        const std::uint64_t chunk_end = std::min(end, chunk_begin + chunk_cells);
                        GridWalker walker(spec, tables, generator_count, factors, chunk_begin);
                        auto next_zero = std::lower_bound(structural.begin(), structural.end(), chunk_begin);
                        for (std::uint64_t cell = chunk_begin; cell < chunk_end; ++cell) {
                          if (next_zero != structural.end() && *next_zero == cell) {
                            ++next_zero;
                          } else {
                            visit(c - first_chunk, walker, cell);
                          }
                          if (cell + 1 < chunk_end) walker.advance();
                        }
                      }
                    });
}

std::vector<double> stream_fitted_margin(const LogLinearModelSpec& spec,
                                         const std::vector<std::vector<double>>& factors, const TableLayout& target,
                                         const std::vector<std::uint64_t>& structural) {
  std::vector<TableLayout> tables = generator_layouts(spec);
  tables.push_back(target);
  const std::size_t target_table = tables.size() - 1;
  const std::uint64_t grid = loglinear_grid_size(spec);
  const std::uint64_t chunk_cells = std::max(kMinChunkCells, 4 * target.size);
  const std::uint64_t chunks = (grid + chunk_cells - 1) / chunk_cells;
  std::vector<double> total(target.size, 0.0);
  std::vector<std::vector<double>> partials(kChunksPerBatch);
  for (std::uint64_t first = 0; first < chunks; first += kChunksPerBatch) {
    const auto batch = static_cast<std::size_t>(std::min<std::uint64_t>(kChunksPerBatch, chunks - first));
    for (std::size_t i = 0; i < batch; ++i) partials[i].assign(target.size, 0.0);
    stream_chunks(spec, tables, factors, structural, 0, grid, chunk_cells, static_cast<std::size_t>(first), batch,
                  [&](std::size_t slot, GridWalker& walker, std::uint64_t) {
                    partials[slot][walker.index(target_table)] += walker.mu();
                  });
    for (std::size_t i = 0; i < batch; ++i) {
      for (std::size_t k = 0; k < total.size(); ++k) total[k] += partials[i][k];
    }
  }
  return total;
}

// ---- variable elimination ----

struct Table {
  std::vector<std::size_t> keys;  // increasing
  std::vector<double> values;     // row-major over keys
};

/// Σ over key `summed` (none: a plain product) of the product of `tables`, as a table over `out_keys`.
Table product_sum(const LogLinearModelSpec& spec, const std::vector<const Table*>& tables,
                  const std::vector<std::size_t>& out_keys, std::optional<std::size_t> summed) {
  const TableLayout out = layout_of(spec, out_keys);
  const std::size_t n_tables = tables.size();
  const std::size_t n_out = out_keys.size();
  // stride[t * n_out + p]: the stride of out key p in table t (0 when absent).
  std::vector<std::uint64_t> stride(n_tables * n_out, 0);
  std::vector<std::uint64_t> summed_stride(n_tables, 0);
  for (std::size_t t = 0; t < n_tables; ++t) {
    const TableLayout layout = layout_of(spec, tables[t]->keys);
    for (std::size_t q = 0; q < layout.keys.size(); ++q) {
      const auto at = std::find(out_keys.begin(), out_keys.end(), layout.keys[q]);
      if (at != out_keys.end()) {
        stride[t * n_out + static_cast<std::size_t>(at - out_keys.begin())] = layout.strides[q];
      } else {
        summed_stride[t] = layout.strides[q];
      }
    }
  }
  const std::int32_t summed_levels = summed ? spec.level_counts[*summed] : 1;
  Table result;
  result.keys = out_keys;
  result.values.assign(out.size, 0.0);
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, out.size, 4096),
                    [&](const tbb::blocked_range<std::uint64_t>& range) {
                      std::vector<std::int32_t> codes(n_out);
                      std::vector<std::uint64_t> offset(n_tables, 0);
                      std::uint64_t rest = range.begin();
                      for (std::size_t p = 0; p < n_out; ++p) {
                        codes[p] = static_cast<std::int32_t>(rest / out.strides[p]);
                        rest %= out.strides[p];
                        for (std::size_t t = 0; t < n_tables; ++t) {
                          offset[t] += static_cast<std::uint64_t>(codes[p]) * stride[t * n_out + p];
                        }
                      }
                      for (std::uint64_t o = range.begin(); o != range.end(); ++o) {
                        double sum = 0.0;
                        for (std::int32_t x = 0; x < summed_levels; ++x) {
                          double product = 1.0;
                          for (std::size_t t = 0; t < n_tables; ++t) {
                            product *= tables[t]->values[offset[t] + static_cast<std::uint64_t>(x) * summed_stride[t]];
                          }
                          sum += product;
                        }
                        result.values[o] = sum;
                        for (std::size_t p = n_out; p-- > 0;) {
                          if (++codes[p] < spec.level_counts[out_keys[p]]) {
                            for (std::size_t t = 0; t < n_tables; ++t) offset[t] += stride[t * n_out + p];
                            break;
                          }
                          const auto wrapped = static_cast<std::uint64_t>(codes[p] - 1);
                          codes[p] = 0;
                          for (std::size_t t = 0; t < n_tables; ++t) offset[t] -= wrapped * stride[t * n_out + p];
                        }
                      }
                    });
  return result;
}

}  // namespace

std::optional<std::vector<EliminationStep>> loglinear_elimination_plan(const LogLinearModelSpec& spec,
                                                                       const std::vector<std::size_t>& target,
                                                                       std::uint64_t limit) {
  std::vector<std::vector<std::size_t>> live = spec.generators;  // the key sets of the live tables
  std::vector<std::size_t> remaining;
  for (std::size_t j = 0; j < spec.key_count(); ++j) {
    if (!std::binary_search(target.begin(), target.end(), j)) remaining.push_back(j);
  }
  std::vector<EliminationStep> plan;
  while (!remaining.empty()) {
    std::size_t best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    std::vector<std::size_t> best_union;
    for (std::size_t r = 0; r < remaining.size(); ++r) {
      const std::size_t v = remaining[r];
      std::set<std::size_t> scope;
      for (const auto& keys : live) {
        if (std::binary_search(keys.begin(), keys.end(), v)) scope.insert(keys.begin(), keys.end());
      }
      double cost = 1.0;
      for (std::size_t j : scope) cost *= spec.level_counts[j];
      if (scope.empty()) cost = 0.0;
      // Of equal work, the key with most levels leaves the smallest table.
      if (cost < best_cost || (cost == best_cost && spec.level_counts[v] > spec.level_counts[remaining[best]])) {
        best_cost = cost;
        best = r;
        best_union.assign(scope.begin(), scope.end());
      }
    }
    const std::size_t v = remaining[best];
    remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(best));
    if (best_union.empty()) {
      plan.push_back({v, {}});
      continue;
    }
    if (best_cost / spec.level_counts[v] > static_cast<double>(limit)) return std::nullopt;
    std::vector<std::size_t> reduced = best_union;
    reduced.erase(std::find(reduced.begin(), reduced.end(), v));
    std::vector<std::vector<std::size_t>> kept;
    for (auto& keys : live) {
      if (!std::binary_search(keys.begin(), keys.end(), v)) kept.push_back(std::move(keys));
    }
    kept.push_back(std::move(reduced));
    live = std::move(kept);
    plan.push_back({v, std::move(best_union)});
  }
  return plan;
}

std::uint64_t loglinear_streamed_cells_per_sweep(const LogLinearModelSpec& spec, const LogLinearFitOptions& options) {
  const std::uint64_t grid = loglinear_grid_size(spec);
  std::uint64_t cells = 0;
  for (const auto& generator : spec.generators)
    if (!loglinear_elimination_plan(spec, generator, options.elimination_limit)) cells += grid;
  return cells;
}

namespace {

/// The fitted margin over `target` by variable elimination in the order of loglinear_elimination_plan,
/// or nullopt when some intermediate table would exceed `limit` cells. Exact on any model; its cost
/// is the grid's only for dense interaction graphs (all two-way).
std::optional<std::vector<double>> eliminate_to(const LogLinearModelSpec& spec,
                                                const std::vector<std::vector<double>>& factors,
                                                const std::vector<std::size_t>& target, std::uint64_t limit) {
  const auto plan = loglinear_elimination_plan(spec, target, limit);
  if (!plan) return std::nullopt;
  std::vector<Table> live;
  for (std::size_t g = 0; g < spec.generators.size(); ++g) live.push_back({spec.generators[g], factors[g]});
  double scalar = 1.0;
  for (const EliminationStep& step : *plan) {
    const std::size_t v = step.key;
    if (step.scope.empty()) {
      scalar *= spec.level_counts[v];
      continue;
    }
    std::vector<const Table*> involved;
    for (const auto& t : live) {
      if (std::binary_search(t.keys.begin(), t.keys.end(), v)) involved.push_back(&t);
    }
    std::vector<std::size_t> kept_keys = step.scope;
    kept_keys.erase(std::find(kept_keys.begin(), kept_keys.end(), v));
    Table reduced = product_sum(spec, involved, kept_keys, v);
    std::vector<Table> kept;
    for (auto& t : live) {
      if (!std::binary_search(t.keys.begin(), t.keys.end(), v)) kept.push_back(std::move(t));
    }
    kept.push_back(std::move(reduced));
    live = std::move(kept);
  }
  std::vector<const Table*> all;
  for (const auto& t : live) all.push_back(&t);
  Table result = product_sum(spec, all, target, std::nullopt);
  for (double& value : result.values) value *= scalar;
  return std::move(result.values);
}

struct MarginResult {
  std::vector<double> values;
  FittedMarginMethod method = FittedMarginMethod::kElimination;
};

MarginResult fitted_margin(const LogLinearModelSpec& spec, const std::vector<TableLayout>& layouts,
                           const std::vector<std::vector<double>>& factors, const std::vector<std::size_t>& target,
                           const std::vector<std::uint64_t>& structural, std::uint64_t limit) {
  const TableLayout target_layout = layout_of(spec, target);
  MarginResult result;
  if (auto eliminated = eliminate_to(spec, factors, target, limit)) {
    result.values = std::move(*eliminated);
    // Structural zeros are in the elimination's grid sums: take their μ back out, in their sorted order.
    std::vector<std::int32_t> cell(spec.key_count());
    for (std::uint64_t zero : structural) {
      decode_linear_index(spec, zero, cell);
      double& value = result.values[table_index(target_layout, cell)];
      value = std::max(0.0, value - product_of_factors(layouts, factors, cell));
    }
  } else {
    result.values = stream_fitted_margin(spec, factors, target_layout, structural);
    result.method = FittedMarginMethod::kGridStream;
  }
  return result;
}

void check_fit_shape(const LogLinearModelSpec& spec, const LogLinearFit& fit) {
  SDC_CHECK(fit.factors.size() == spec.generators.size(), "one factor per generator of the canonical model");
}

void add_margins_of_cell(const std::vector<TableLayout>& layouts, std::span<const std::int32_t> cell,
                         std::int64_t count, MarginCounts& margins) {
  for (std::size_t g = 0; g < layouts.size(); ++g) margins.counts[g][table_index(layouts[g], cell)] += count;
}

MarginCounts empty_margins(const std::vector<TableLayout>& layouts) {
  MarginCounts margins;
  for (const auto& layout : layouts) margins.counts.emplace_back(layout.size, 0);
  return margins;
}

void check_class_keys(const LogLinearModelSpec& spec, const LogLinearClasses& classes) {
  if (classes.key_count != spec.key_count()) {
    throw InvalidInput("log-linear model: the sample classes have " + std::to_string(classes.key_count) +
                       " keys, the model " + std::to_string(spec.key_count()));
  }
  SDC_CHECK(classes.keys.size() == classes.class_count() * classes.key_count, "one key tuple per class");
  for (std::size_t c = 0; c < classes.class_count(); ++c) {
    for (std::size_t j = 0; j < spec.key_count(); ++j) {
      const std::int32_t code = classes.keys[c * spec.key_count() + j];
      if (code < 0 || code >= spec.level_counts[j]) {
        throw InvalidInput("log-linear model: key " + std::to_string(j) + " of sample class " + std::to_string(c) +
                           " is missing or outside its observed levels");
      }
    }
  }
}

/// μ for every class of a block, given precomputed layouts and structural cells (μ = 0 there).
std::vector<double> class_means(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                const LogLinearClasses& classes) {
  check_fit_shape(spec, fit);
  check_class_keys(spec, classes);
  const auto layouts = generator_layouts(spec);
  const auto structural = structural_linear(spec);
  std::vector<double> mu(classes.class_count());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, mu.size(), 4096), [&](const auto& range) {
    for (std::size_t c = range.begin(); c != range.end(); ++c) {
      const auto cell = classes.key(c);
      mu[c] = !structural.empty() && std::binary_search(structural.begin(), structural.end(), linear_index(spec, cell))
                  ? 0.0
                  : product_of_factors(layouts, fit.factors, cell);
    }
  });
  return mu;
}

}  // namespace

// ---- model spec ----

LogLinearModelSpec independence_model(std::span<const std::int32_t> level_counts) {
  LogLinearModelSpec spec;
  spec.level_counts.assign(level_counts.begin(), level_counts.end());
  for (std::size_t j = 0; j < level_counts.size(); ++j) spec.generators.push_back({j});
  return spec;
}

LogLinearModelSpec all_two_way_model(std::span<const std::int32_t> level_counts) {
  LogLinearModelSpec spec;
  spec.level_counts.assign(level_counts.begin(), level_counts.end());
  if (level_counts.size() == 1) spec.generators.push_back({0});
  for (std::size_t a = 0; a < level_counts.size(); ++a) {
    for (std::size_t b = a + 1; b < level_counts.size(); ++b) spec.generators.push_back({a, b});
  }
  return spec;
}

std::uint64_t loglinear_grid_size(const LogLinearModelSpec& spec) {
  std::uint64_t size = 1;
  for (std::size_t j = 0; j < spec.key_count(); ++j) {
    const auto levels = static_cast<std::uint64_t>(spec.level_counts[j]);
    if (levels != 0 && size > (std::uint64_t{1} << 62) / levels) {
      throw ParameterError("log-linear model: the grid of the key levels has more than 2^62 cells");
    }
    size *= levels;
  }
  return size;
}

LogLinearModelSpec canonical_model(const LogLinearModelSpec& spec) {
  const std::size_t m = spec.key_count();
  if (m == 0) throw ParameterError("log-linear model: no key variables");
  if (m > 64) throw ParameterError("log-linear model: more than 64 key variables");
  for (std::size_t j = 0; j < m; ++j) {
    if (spec.level_counts[j] < 1) {
      throw ParameterError("log-linear model: key " + std::to_string(j) + " has no observed level");
    }
  }
  loglinear_grid_size(spec);
  LogLinearModelSpec canonical;
  canonical.level_counts = spec.level_counts;
  std::vector<std::vector<std::size_t>> sorted;
  for (std::size_t g = 0; g < spec.generators.size(); ++g) {
    auto keys = spec.generators[g];
    if (keys.empty()) throw ParameterError("log-linear model: generator " + std::to_string(g) + " is empty");
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    if (keys.back() >= m) {
      throw ParameterError("log-linear model: generator " + std::to_string(g) + " names key " +
                           std::to_string(keys.back()) + " of " + std::to_string(m));
    }
    if (layout_of(spec, keys).size > kMaxMarginCells) {
      throw ParameterError("log-linear model: the margin of generator " + std::to_string(g) +
                           " has more than 2^28 cells");
    }
    sorted.push_back(std::move(keys));
  }
  const auto contains = [](const std::vector<std::size_t>& outer, const std::vector<std::size_t>& inner) {
    return std::includes(outer.begin(), outer.end(), inner.begin(), inner.end());
  };
  for (std::size_t g = 0; g < sorted.size(); ++g) {
    bool redundant = false;
    for (std::size_t h = 0; h < sorted.size() && !redundant; ++h) {
      if (h == g || !contains(sorted[h], sorted[g])) continue;
      // A strict superset wins; of equal generators the first is kept.
      redundant = sorted[h].size() > sorted[g].size() || h < g;
    }
    if (!redundant) canonical.generators.push_back(sorted[g]);
  }
  for (std::size_t j = 0; j < m; ++j) {
    const bool covered = std::any_of(canonical.generators.begin(), canonical.generators.end(),
                                     [j](const auto& g) { return std::binary_search(g.begin(), g.end(), j); });
    if (!covered) canonical.generators.push_back({j});
  }
  if (spec.structural_zeros.size() % m != 0) {
    throw ParameterError("log-linear model: the structural zeros are not whole key tuples");
  }
  for (std::size_t i = 0; i < spec.structural_zeros.size(); ++i) {
    const std::size_t j = i % m;
    if (spec.structural_zeros[i] < 0 || spec.structural_zeros[i] >= spec.level_counts[j]) {
      throw ParameterError("log-linear model: structural zero " + std::to_string(i / m) +
                           " lies outside the levels of key " + std::to_string(j));
    }
  }
  std::vector<std::uint64_t> zeros = structural_linear(spec);
  zeros.erase(std::unique(zeros.begin(), zeros.end()), zeros.end());
  canonical.structural_zeros.resize(zeros.size() * m);
  for (std::size_t s = 0; s < zeros.size(); ++s) {
    decode_linear_index(spec, zeros[s], std::span<std::int32_t>(canonical.structural_zeros).subspan(s * m, m));
  }
  return canonical;
}

// ---- observed margins ----

std::int64_t MarginCounts::total() const {
  std::int64_t n = 0;
  if (!counts.empty()) {
    for (std::int64_t c : counts.front()) n += c;
  }
  return n;
}

MarginCounts loglinear_margins_local(const LogLinearModelSpec& spec, const KeyColumns& keys) {
  if (keys.key_count() != spec.key_count()) {
    throw InvalidInput("log-linear model: " + std::to_string(keys.key_count()) + " key columns for a model of " +
                       std::to_string(spec.key_count()) + " keys");
  }
  const auto layouts = generator_layouts(spec);
  MarginCounts margins = empty_margins(layouts);
  std::vector<std::int32_t> cell(spec.key_count());
  for (std::size_t i = 0; i < keys.record_count(); ++i) {
    for (std::size_t j = 0; j < spec.key_count(); ++j) {
      cell[j] = keys.codes[j][i];
      if (cell[j] < 0 || cell[j] >= spec.level_counts[j]) {
        throw InvalidInput("log-linear model: key " + std::to_string(j) + " of record " + std::to_string(i) +
                           " is missing or outside its observed levels");
      }
    }
    add_margins_of_cell(layouts, cell, 1, margins);
  }
  return margins;
}

MarginCounts loglinear_margins_from_classes(const LogLinearModelSpec& spec, const LogLinearClasses& classes) {
  check_class_keys(spec, classes);
  const auto layouts = generator_layouts(spec);
  MarginCounts margins = empty_margins(layouts);
  for (std::size_t c = 0; c < classes.class_count(); ++c) {
    add_margins_of_cell(layouts, classes.key(c), classes.sample_counts[c], margins);
  }
  return margins;
}

void loglinear_margins_merge(MarginCounts& into, const MarginCounts& from) {
  SDC_CHECK(into.counts.size() == from.counts.size(), "margins of the same model");
  for (std::size_t g = 0; g < into.counts.size(); ++g) {
    SDC_CHECK(into.counts[g].size() == from.counts[g].size(), "margins of the same model");
    for (std::size_t k = 0; k < into.counts[g].size(); ++k) into.counts[g][k] += from.counts[g][k];
  }
}

// ---- fitting ----

LogLinearFit fit_loglinear(const LogLinearModelSpec& spec, const MarginCounts& observed,
                           const LogLinearFitOptions& options, const LogLinearFit* start) {
  const auto layouts = generator_layouts(spec);
  SDC_CHECK(observed.counts.size() == layouts.size(), "observed margins of the canonical model");
  for (std::size_t g = 0; g < layouts.size(); ++g) {
    SDC_CHECK(observed.counts[g].size() == layouts[g].size, "observed margin of the generator's size");
  }
  if (options.max_sweeps < 1 || !(options.tolerance > 0.0)) {
    throw ParameterError("log-linear fit: max_sweeps must be >= 1 and tolerance > 0");
  }
  const auto structural = structural_linear(spec);
  LogLinearFit fit;
  if (start != nullptr) {
    check_fit_shape(spec, *start);
    fit.factors = start->factors;
  } else {
    for (const auto& layout : layouts) fit.factors.emplace_back(layout.size, 1.0);
  }
  for (int sweep = 1; sweep <= options.max_sweeps; ++sweep) {
    double max_change = 0.0;
    for (std::size_t g = 0; g < layouts.size(); ++g) {
      MarginResult fitted =
          fitted_margin(spec, layouts, fit.factors, spec.generators[g], structural, options.elimination_limit);
      fit.method = fitted.method;
      auto& factor = fit.factors[g];
      for (std::size_t k = 0; k < factor.size(); ++k) {
        const auto obs = static_cast<double>(observed.counts[g][k]);
        const double expected = fitted.values[k];
        max_change = std::max(max_change, std::fabs(expected - obs) / std::max(obs, 1.0));
        if (expected > 0.0) {
          factor[k] *= obs / expected;
        } else if (obs == 0.0) {
          factor[k] = 0.0;
        }
      }
    }
    fit.sweeps = sweep;
    fit.max_relative_change = max_change;
    if (max_change < options.tolerance) {
      fit.converged = true;
      break;
    }
  }
  const auto total = fitted_margin(spec, layouts, fit.factors, {}, structural, options.elimination_limit);
  fit.fitted_total = total.values.at(0);
  return fit;
}

std::vector<double> loglinear_fitted_margin(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                            std::span<const std::size_t> keys, const LogLinearFitOptions& options) {
  check_fit_shape(spec, fit);
  std::vector<std::size_t> target(keys.begin(), keys.end());
  for (std::size_t p = 0; p < target.size(); ++p) {
    if (target[p] >= spec.key_count() || (p > 0 && target[p] <= target[p - 1])) {
      throw ParameterError("log-linear fitted margin: keys must be increasing key indices");
    }
  }
  return fitted_margin(spec, generator_layouts(spec), fit.factors, target, structural_linear(spec),
                       options.elimination_limit)
      .values;
}

double loglinear_fitted_cell(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                             std::span<const std::int32_t> cell) {
  check_fit_shape(spec, fit);
  SDC_CHECK(cell.size() == spec.key_count(), "one code per key");
  const auto structural = structural_linear(spec);
  if (std::binary_search(structural.begin(), structural.end(), linear_index(spec, cell))) return 0.0;
  return product_of_factors(generator_layouts(spec), fit.factors, cell);
}

// ---- model selection ----

std::int64_t loglinear_parameter_count(const LogLinearModelSpec& spec) {
  std::set<std::uint64_t> terms;
  for (const auto& g : spec.generators) {
    if (g.size() > 24) throw ParameterError("log-linear model: a generator of more than 24 keys");
    const std::uint64_t subsets = std::uint64_t{1} << g.size();
    for (std::uint64_t s = 0; s < subsets; ++s) {
      std::uint64_t mask = 0;
      for (std::size_t p = 0; p < g.size(); ++p) {
        if ((s >> p) & 1U) mask |= std::uint64_t{1} << g[p];
      }
      terms.insert(mask);
    }
  }
  std::int64_t count = 0;
  for (std::uint64_t mask : terms) {
    std::int64_t term = 1;
    for (std::size_t j = 0; j < spec.key_count(); ++j) {
      if ((mask >> j) & 1U) term *= spec.level_counts[j] - 1;
    }
    count += term;
  }
  return count;
}

LogLikelihoodPartial loglinear_loglik_local(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                            const LogLinearClasses& classes) {
  const auto mu = class_means(spec, fit, classes);
  LogLikelihoodPartial partial;
  for (std::size_t c = 0; c < mu.size(); ++c) {
    const auto f = static_cast<double>(classes.sample_counts[c]);
    if (mu[c] > 0.0) {
      partial.class_term.add(f * std::log(mu[c]) - std::lgamma(f + 1.0));
    } else {
      ++partial.impossible_classes;
    }
  }
  return partial;
}

ExactSum loglinear_saturated_local(const LogLinearClasses& classes) {
  ExactSum sum;
  for (std::size_t c = 0; c < classes.class_count(); ++c) {
    const auto f = static_cast<double>(classes.sample_counts[c]);
    sum.add(f * std::log(f) - std::lgamma(f + 1.0));
  }
  return sum;
}

LogLinearScore score_loglinear_model(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                     const LogLikelihoodPartial& loglik, const ExactSum& saturated_term,
                                     std::int64_t sample_size) {
  LogLinearScore score;
  score.parameters = loglinear_parameter_count(spec);
  score.sweeps = fit.sweeps;
  score.converged = fit.converged;
  const double n = static_cast<double>(sample_size);
  if (loglik.impossible_classes > 0) {
    score.log_likelihood = -std::numeric_limits<double>::infinity();
    score.deviance = std::numeric_limits<double>::infinity();
  } else {
    ExactSum logl = loglik.class_term;
    logl.add(-fit.fitted_total);
    score.log_likelihood = logl.value();
    ExactSum deviance = saturated_term;
    deviance.add(-n);
    for (double p : loglik.class_term.partials()) deviance.add(-p);
    deviance.add(fit.fitted_total);
    score.deviance = 2.0 * deviance.value();
  }
  const auto parameters = static_cast<double>(score.parameters);
  score.aic = -2.0 * score.log_likelihood + 2.0 * parameters;
  score.bic = -2.0 * score.log_likelihood + parameters * std::log(n);
  return score;
}

LogLinearSelection choose_loglinear_model(std::span<const LogLinearScore> scores) {
  if (scores.empty()) throw ParameterError("log-linear model selection: no candidate models");
  LogLinearSelection selection;
  selection.candidates.assign(scores.begin(), scores.end());
  for (std::size_t i = 1; i < scores.size(); ++i) {
    if (scores[i].aic < scores[selection.best_by_aic].aic) selection.best_by_aic = i;
    if (scores[i].bic < scores[selection.best_by_bic].bic) selection.best_by_bic = i;
  }
  return selection;
}

LogLinearSelection select_loglinear_model(std::span<const LogLinearModelSpec> candidates,
                                          const LogLinearClasses& classes, const LogLinearFitOptions& options) {
  std::vector<LogLinearScore> scores;
  const ExactSum saturated = loglinear_saturated_local(classes);
  for (const auto& candidate : candidates) {
    const LogLinearModelSpec spec = canonical_model(candidate);
    const MarginCounts observed = loglinear_margins_from_classes(spec, classes);
    const LogLinearFit fit = fit_loglinear(spec, observed, options);
    scores.push_back(
        score_loglinear_model(spec, fit, loglinear_loglik_local(spec, fit, classes), saturated, observed.total()));
  }
  return choose_loglinear_model(scores);
}

// ---- risk ----

UniqueRisk loglinear_unique_risk(double mu, double sampling_fraction) {
  const double v = mu * (1.0 - sampling_fraction) / sampling_fraction;
  return {std::exp(-v), v == 0.0 ? 1.0 : -std::expm1(-v) / v};
}

LogLinearRiskPartial loglinear_risk_local(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                          const LogLinearClasses& classes, const LogLinearRiskOptions& options) {
  const bool native = options.mode == RiskMode::kNative;
  if (native) {
    if (options.sampling_fraction) {
      const double pi = *options.sampling_fraction;
      if (!(pi > 0.0 && pi <= 1.0)) throw ParameterError("log-linear risk: sampling fraction outside (0, 1]");
    } else if (classes.weight_sums.size() != classes.class_count()) {
      throw ParameterError("log-linear risk: neither a sampling fraction nor the classes' weight sums");
    }
  } else if (classes.inverse_weight_sums.size() != classes.class_count()) {
    throw ParameterError("log-linear risk (compat): the classes' sums of inverse weights are missing");
  }
  const auto mu = class_means(spec, fit, classes);
  LogLinearRiskPartial partial;
  for (std::size_t c = 0; c < mu.size(); ++c) {
    const std::int64_t f = classes.sample_counts[c];
    if (native) {
      if (f != 1) continue;
      const double pi = options.sampling_fraction ? *options.sampling_fraction : 1.0 / classes.weight_sums[c];
      if (!(pi > 0.0 && pi <= 1.0)) {
        throw InvalidInput("log-linear risk: sample class " + std::to_string(c) +
                           " has weights summing below its sample count (sampling fraction outside (0, 1])");
      }
      if (!(mu[c] > 0.0)) {
        throw InvalidInput("log-linear risk: sample unique " + std::to_string(c) +
                           " has a fitted mean of 0 (a structural zero or an empty fitted margin)");
      }
      const UniqueRisk risk = loglinear_unique_risk(mu[c], pi);
      partial.tau1.add(risk.reidentification);
      partial.tau2.add(risk.expected_inverse);
      ++partial.sample_uniques;
    } else {
      const auto fd = static_cast<double>(f);
      if (!(fd > 0.0 && fd <= options.bound) || (mu[c] == 0.0 && fd > 0.0)) continue;
      ++partial.kept_classes;
      const double inclusion = classes.inverse_weight_sums[c];
      if (inclusion == 1.0) partial.unit_inclusion = true;
      if (f != 1) continue;
      ++partial.sample_uniques;
      const double v = (1.0 - inclusion) * mu[c];
      partial.tau1.add(std::exp(-v));
      if (v != 0.0) partial.tau2.add(-std::expm1(-v) / v);
    }
  }
  return partial;
}

void loglinear_risk_merge(LogLinearRiskPartial& into, const LogLinearRiskPartial& from) {
  into.tau1.merge(from.tau1);
  into.tau2.merge(from.tau2);
  into.sample_uniques += from.sample_uniques;
  into.kept_classes += from.kept_classes;
  into.unit_inclusion = into.unit_inclusion || from.unit_inclusion;
}

LogLinearRisk loglinear_risk_finalize(const LogLinearRiskPartial& total, const LogLinearRiskOptions& options) {
  LogLinearRisk risk;
  risk.sample_uniques = total.sample_uniques;
  risk.kept_classes = total.kept_classes;
  if (options.mode == RiskMode::kNative) {
    risk.tau1 = total.tau1.value();
    risk.tau2 = total.tau2.value();
  } else {
    // The reference divides by K' (NaN when nothing is kept) and gets 0/0 · 0 = NaN from a π̃ = 1 cell.
    const auto kept = static_cast<double>(total.kept_classes);
    risk.tau1 = total.tau1.value() / kept;
    risk.tau2 = total.unit_inclusion ? std::numeric_limits<double>::quiet_NaN() : total.tau2.value() / kept;
  }
  return risk;
}

// ---- parametric bootstrap ----

std::int64_t poisson_draw(const RecordRng& rng, DrawCounter counter, double mean) {
  if (!(mean > 0.0)) return 0;
  if (mean < 10.0) {
    // Inversion: the first k with u < P(X <= k). P(X > 60 | mean < 10) < 1e-25, far below the
    // resolution of u, so the search stops there at the latest.
    const double u = rng.uniform(counter);
    double probability = std::exp(-mean);
    double cumulative = probability;
    std::int64_t k = 0;
    while (u >= cumulative && k < 60) {
      ++k;
      probability *= mean / static_cast<double>(k);
      cumulative += probability;
    }
    return k;
  }
  // PTRS: transformed rejection with squeeze (W. Hörmann, "The transformed rejection method for
  // generating Poisson random variables", Insurance: Mathematics and Economics 12, 1993). Each attempt
  // takes two words of one Philox block; the block's `attempt` word moves on every second attempt.
  const double sqrt_mean = std::sqrt(mean);
  const double log_mean = std::log(mean);
  const double b = 0.931 + 2.53 * sqrt_mean;
  const double a = -0.059 + 0.02483 * b;
  const double inverse_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double v_r = 0.9277 - 3.6224 / (b - 2.0);
  const std::uint64_t first_attempt = counter.attempt;
  for (std::uint64_t attempt = 0;; ++attempt) {
    counter.attempt = first_attempt + attempt / 2;
    const auto block = rng.bits(counter);
    const unsigned word = (attempt % 2 == 0) ? 0U : 2U;
    const double u = RecordRng::uniform_from_bits(block[word]) - 0.5;
    const double v = RecordRng::uniform_from_bits(block[word + 1]);
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2.0 * a / us + b) * u + mean + 0.43);
    if (us >= 0.07 && v <= v_r) return static_cast<std::int64_t>(k);
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inverse_alpha) - std::log(a / (us * us) + b) <=
        -mean + k * log_mean - std::lgamma(k + 1.0)) {
      return static_cast<std::int64_t>(k);
    }
  }
}

ParametricDraw draw_parametric_replicate(const LogLinearModelSpec& spec, const LogLinearFit& fit, std::uint64_t seed,
                                         std::uint64_t replicate, std::uint64_t cell_begin, std::uint64_t cell_end) {
  check_fit_shape(spec, fit);
  const std::uint64_t grid = loglinear_grid_size(spec);
  if (cell_begin > cell_end || cell_end > grid)
    throw ParameterError("parametric bootstrap: cell range outside the grid");
  const auto layouts = generator_layouts(spec);
  const auto structural = structural_linear(spec);
  const RecordRng rng(seed, StepId::kBootstrapParametric);
  std::uint64_t margin_cells = 0;
  for (const auto& layout : layouts) margin_cells += layout.size;
  const std::uint64_t chunk_cells = std::max(kMinChunkCells, 4 * margin_cells);
  const std::uint64_t chunks = (cell_end - cell_begin + chunk_cells - 1) / chunk_cells;
  ParametricDraw draw;
  draw.margins = empty_margins(layouts);
  std::vector<MarginCounts> partial_margins(kChunksPerBatch);
  std::vector<std::vector<std::uint64_t>> partial_uniques(kChunksPerBatch);
  for (std::uint64_t first = 0; first < chunks; first += kChunksPerBatch) {
    const auto batch = static_cast<std::size_t>(std::min<std::uint64_t>(kChunksPerBatch, chunks - first));
    for (std::size_t i = 0; i < batch; ++i) {
      partial_margins[i] = empty_margins(layouts);
      partial_uniques[i].clear();
    }
    stream_chunks(spec, layouts, fit.factors, structural, cell_begin, cell_end, chunk_cells,
                  static_cast<std::size_t>(first), batch,
                  [&](std::size_t slot, GridWalker& walker, std::uint64_t cell) {
                    const std::int64_t count =
                        poisson_draw(rng, {.unit = cell, .draw = 0, .replicate = replicate, .attempt = 0}, walker.mu());
                    if (count == 0) return;
                    auto& margins = partial_margins[slot].counts;
                    for (std::size_t g = 0; g < layouts.size(); ++g) margins[g][walker.index(g)] += count;
                    if (count == 1) partial_uniques[slot].push_back(cell);
                  });
    for (std::size_t i = 0; i < batch; ++i) {
      loglinear_margins_merge(draw.margins, partial_margins[i]);
      draw.unique_cells.insert(draw.unique_cells.end(), partial_uniques[i].begin(), partial_uniques[i].end());
    }
  }
  return draw;
}

TauReplicate tau_replicate(const LogLinearModelSpec& spec, const LogLinearFit& fit, std::uint64_t replicate,
                           std::uint64_t seed, double sampling_fraction, const LogLinearFitOptions& options) {
  if (!(sampling_fraction > 0.0 && sampling_fraction <= 1.0)) {
    throw ParameterError("parametric bootstrap of tau: sampling fraction outside (0, 1]");
  }
  const ParametricDraw draw = draw_parametric_replicate(spec, fit, seed, replicate, 0, loglinear_grid_size(spec));
  const LogLinearFit refit = fit_loglinear(spec, draw.margins, options, &fit);
  const auto layouts = generator_layouts(spec);
  ExactSum tau1;
  ExactSum tau2;
  std::vector<std::int32_t> cell(spec.key_count());
  for (std::uint64_t unique : draw.unique_cells) {
    decode_linear_index(spec, unique, cell);
    const UniqueRisk risk = loglinear_unique_risk(product_of_factors(layouts, refit.factors, cell), sampling_fraction);
    tau1.add(risk.reidentification);
    tau2.add(risk.expected_inverse);
  }
  return {tau1.value(), tau2.value(), static_cast<std::int64_t>(draw.unique_cells.size()), refit.sweeps,
          refit.converged};
}

}  // namespace sdc
