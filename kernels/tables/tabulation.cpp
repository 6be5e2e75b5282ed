#include "kernels/tables/tabulation.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "kernels/core/error.h"
#include "kernels/core/key_grouping.h"

namespace sdc::tables {
namespace {

bool precedes(const Contribution& a, const Contribution& b) {
  if (a.value != b.value) return a.value > b.value;
  return a.row_id < b.row_id;
}

std::uint64_t add_mod(std::uint64_t a, std::uint64_t b, std::uint64_t modulus) {
  // a, b < modulus <= 2^63: the sum cannot wrap.
  const std::uint64_t sum = a + b;
  return sum >= modulus ? sum - modulus : sum;
}

void keep_top(std::vector<Contribution>& top, const Contribution& c, int top_count) {
  if (top_count <= 0) return;
  const auto limit = static_cast<std::size_t>(top_count);
  if (top.size() == limit && !precedes(c, top.back())) return;
  top.insert(std::upper_bound(top.begin(), top.end(), c, precedes), c);
  if (top.size() > limit) top.pop_back();
}

std::vector<std::uint64_t> strides_of(std::span<const std::int64_t> sizes) {
  std::vector<std::uint64_t> strides(sizes.size(), 1);
  for (std::size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * static_cast<std::uint64_t>(sizes[d]);
  return strides;
}

}  // namespace

bool cell_space_within(std::span<const std::int64_t> sizes, std::uint64_t limit) {
  std::uint64_t product = 1;
  for (std::int64_t size : sizes) {
    if (size <= 0) return false;
    const auto factor = static_cast<std::uint64_t>(size);
    if (product > limit / factor) return false;
    product *= factor;
  }
  return true;
}

std::vector<std::int32_t> cell_positions(std::uint64_t cell, std::span<const std::int64_t> sizes) {
  std::vector<std::int32_t> positions(sizes.size());
  for (std::size_t d = sizes.size(); d-- > 0;) {
    const auto size = static_cast<std::uint64_t>(sizes[d]);
    positions[d] = static_cast<std::int32_t>(cell % size);
    cell /= size;
  }
  return positions;
}

void merge_summary(CellSummary& into, const CellSummary& from, const TabulationOptions& options) {
  into.count += from.count;
  into.weighted_count.merge(from.weighted_count);
  into.key_sum = add_mod(into.key_sum, from.key_sum, options.key_modulus);
  into.value.merge(from.value);
  into.weighted_value.merge(from.weighted_value);
  into.contributors += from.contributors;
  into.key_sum_nonzero = add_mod(into.key_sum_nonzero, from.key_sum_nonzero, options.key_modulus);
  for (const Contribution& c : from.top) keep_top(into.top, c, options.top_count);
}

CellTable tabulate_leaves(std::span<const TabulationDimension> dimensions, const TabulationOptions& options) {
  SDC_CHECK(!dimensions.empty(), "a table has at least one dimension");
  SDC_CHECK(options.top_count >= 0 && options.top_count <= kMaxTopContributions, "top contributions in range");
  SDC_CHECK(options.key_modulus >= 1 && options.key_modulus <= (std::uint64_t{1} << 62), "key modulus in range");
  CellTable table;
  KeyColumns keys;
  const std::size_t records = dimensions.front().codes.size();
  for (const TabulationDimension& dimension : dimensions) {
    SDC_CHECK(dimension.codes.size() == records, "every dimension has a code per record");
    table.sizes.push_back(static_cast<std::int64_t>(dimension.parent.size()));
    keys.codes.push_back(dimension.codes);
    keys.level_counts.push_back(static_cast<std::int32_t>(dimension.position_of_code.size()));
  }
  SDC_CHECK(options.weights.empty() || options.weights.size() == records, "a weight per record");
  SDC_CHECK(options.values.empty() || options.values.size() == records, "a value per record");
  SDC_CHECK(options.record_keys.empty() || options.record_keys.size() == records, "a key per record");
  SDC_CHECK(cell_space_within(table.sizes, std::uint64_t{1} << 62), "the caller bounds the cell space");

  // Leaves only: an internal position would count its records twice once the margins are added.
  std::vector<std::vector<bool>> is_internal(dimensions.size());
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    is_internal[d].assign(dimensions[d].parent.size(), false);
    for (std::int32_t p : dimensions[d].parent)
      if (p >= 0) is_internal[d][static_cast<std::size_t>(p)] = true;
  }
  for (std::size_t d = 0; d < dimensions.size(); ++d)
    for (std::size_t i = 0; i < records; ++i) {
      const std::int32_t code = dimensions[d].codes[i];
      if (code < 0 || static_cast<std::size_t>(code) >= dimensions[d].position_of_code.size())
        throw InvalidInput("row id " + std::to_string(options.first_row_id + static_cast<std::int64_t>(i)) +
                           ": dimension " + std::to_string(d + 1) + " has code " + std::to_string(code) +
                           ", outside the dimension's codes");
      const std::int32_t position = dimensions[d].position_of_code[static_cast<std::size_t>(code)];
      if (position <= 0 || static_cast<std::size_t>(position) >= dimensions[d].parent.size() ||
          is_internal[d][static_cast<std::size_t>(position)])
        throw InvalidInput("row id " + std::to_string(options.first_row_id + static_cast<std::int64_t>(i)) +
                           ": dimension " + std::to_string(d + 1) + " maps code " + std::to_string(code) +
                           " to no leaf of its hierarchy");
    }

  const KeyGrouping grouping = group_by_keys(keys);
  const std::size_t classes = grouping.class_count();
  const std::vector<std::uint64_t> strides = strides_of(table.sizes);
  std::vector<std::pair<std::uint64_t, std::size_t>> order(classes);
  std::vector<CellSummary> summaries(classes);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, classes, 256), [&](const auto& range) {
    for (std::size_t c = range.begin(); c != range.end(); ++c) {
      const auto key = grouping.key(c);
      std::uint64_t cell = 0;
      for (std::size_t d = 0; d < key.size(); ++d)
        cell +=
            static_cast<std::uint64_t>(dimensions[d].position_of_code[static_cast<std::size_t>(key[d])]) * strides[d];
      order[c] = {cell, c};
      CellSummary& s = summaries[c];
      for (std::uint32_t k = grouping.class_offsets[c]; k < grouping.class_offsets[c + 1]; ++k) {
        const std::size_t i = grouping.sorted_records[k];
        const double w = options.weights.empty() ? 1.0 : options.weights[i];
        ++s.count;
        if (!options.weights.empty()) s.weighted_count.add(w);
        const std::uint64_t key_value = options.record_keys.empty() ? 0 : options.record_keys[i];
        if (!options.record_keys.empty()) s.key_sum = add_mod(s.key_sum, key_value, options.key_modulus);
        if (options.values.empty()) continue;
        const double x = options.values[i];
        s.value.add(x);
        if (!options.weights.empty()) s.weighted_value.add(w * x);
        if (x != 0.0) {
          ++s.contributors;
          s.key_sum_nonzero = add_mod(s.key_sum_nonzero, key_value, options.key_modulus);
          keep_top(s.top, {x, w, options.first_row_id + static_cast<std::int64_t>(i)}, options.top_count);
        }
      }
    }
  });
  tbb::parallel_sort(order.begin(), order.end());
  table.cells.resize(classes);
  table.summaries.resize(classes);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, classes, 4096), [&](const auto& range) {
    for (std::size_t k = range.begin(); k != range.end(); ++k) {
      table.cells[k] = order[k].first;
      table.summaries[k] = std::move(summaries[order[k].second]);
    }
  });
  return table;
}

void merge_cell_tables(CellTable& into, CellTable from, const TabulationOptions& options) {
  SDC_CHECK(into.sizes == from.sizes, "merged tables have the same dimensions");
  std::vector<std::uint64_t> cells;
  std::vector<CellSummary> summaries;
  cells.reserve(into.cells.size() + from.cells.size());
  summaries.reserve(into.cells.size() + from.cells.size());
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < into.cells.size() || j < from.cells.size()) {
    if (j == from.cells.size() || (i < into.cells.size() && into.cells[i] < from.cells[j])) {
      cells.push_back(into.cells[i]);
      summaries.push_back(std::move(into.summaries[i++]));
    } else if (i == into.cells.size() || from.cells[j] < into.cells[i]) {
      cells.push_back(from.cells[j]);
      summaries.push_back(std::move(from.summaries[j++]));
    } else {
      cells.push_back(into.cells[i]);
      summaries.push_back(std::move(into.summaries[i++]));
      merge_summary(summaries.back(), from.summaries[j++], options);
    }
  }
  into.cells = std::move(cells);
  into.summaries = std::move(summaries);
}

void add_margins(CellTable& table, std::span<const TabulationDimension> dimensions, const TabulationOptions& options) {
  SDC_CHECK(dimensions.size() == table.sizes.size(), "a hierarchy per dimension");
  const std::vector<std::uint64_t> strides = strides_of(table.sizes);
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    const std::vector<std::int32_t>& parent = dimensions[d].parent;
    const auto size = static_cast<std::uint64_t>(table.sizes[d]);
    const auto position_of = [&](std::uint64_t cell) { return (cell / strides[d]) % size; };
    const auto ancestors_of = [&](std::uint64_t position) {
      std::size_t n = 0;
      for (std::int32_t p = parent[position]; p >= 0; p = parent[static_cast<std::size_t>(p)]) ++n;
      return n;
    };
    // (target cell, source cell) for every ancestor of every cell's position in dimension d. Before
    // this pass every cell's position in d is a leaf, so no target is a cell already present.
    const std::size_t n = table.cells.size();
    std::vector<std::size_t> offsets(n + 1, 0);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 4096), [&](const auto& range) {
      for (std::size_t k = range.begin(); k != range.end(); ++k)
        offsets[k + 1] = ancestors_of(position_of(table.cells[k]));
    });
    std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
    std::vector<std::pair<std::uint64_t, std::size_t>> emitted(offsets.back());
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 4096), [&](const auto& range) {
      for (std::size_t k = range.begin(); k != range.end(); ++k) {
        const std::uint64_t cell = table.cells[k];
        const std::uint64_t position = position_of(cell);
        std::size_t e = offsets[k];
        for (std::int32_t p = parent[position]; p >= 0; p = parent[static_cast<std::size_t>(p)])
          emitted[e++] = {cell - position * strides[d] + static_cast<std::uint64_t>(p) * strides[d], k};
      }
    });
    tbb::parallel_sort(emitted.begin(), emitted.end());
    std::vector<std::size_t> starts;
    for (std::size_t e = 0; e < emitted.size(); ++e)
      if (e == 0 || emitted[e].first != emitted[e - 1].first) starts.push_back(e);
    starts.push_back(emitted.size());
    const std::size_t groups = starts.size() - 1;
    std::vector<std::uint64_t> cells(groups);
    std::vector<CellSummary> summaries(groups);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, groups, 1024), [&](const auto& range) {
      for (std::size_t g = range.begin(); g != range.end(); ++g) {
        cells[g] = emitted[starts[g]].first;
        for (std::size_t e = starts[g]; e < starts[g + 1]; ++e)
          merge_summary(summaries[g], table.summaries[emitted[e].second], options);
      }
    });
    merge_cell_tables(table, CellTable{table.sizes, std::move(cells), std::move(summaries)}, options);
  }
}

}  // namespace sdc::tables
