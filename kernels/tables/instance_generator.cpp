#include "kernels/tables/instance_generator.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/risk/loglinear.h"

namespace sdc::tables {
namespace {

// The largest integer below which every integer is a double: values above it could have been rounded.
constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53
constexpr std::uint64_t kTreeDrawOffset = std::uint64_t{1} << 63;

/// Equations of a tree given by parent indices (-1 for the root's children; the root is not listed),
/// with positions in preorder (root 0, siblings in list order): one equation per internal node.
DimensionEquations tree_equations(std::string name, std::span<const std::int32_t> parent_index) {
  const auto count = static_cast<std::int32_t>(parent_index.size());
  std::vector<std::int32_t> offsets(parent_index.size() + 2, 0);
  for (const std::int32_t p : parent_index) ++offsets[static_cast<std::size_t>(p < 0 ? count : p) + 1];
  for (std::size_t i = 1; i < offsets.size(); ++i) offsets[i] += offsets[i - 1];
  std::vector<std::int32_t> kids(parent_index.size());
  {
    std::vector<std::int32_t> next(offsets.begin(), offsets.end() - 1);
    for (std::int32_t i = 0; i < count; ++i) {
      const std::int32_t p = parent_index[static_cast<std::size_t>(i)];
      kids[static_cast<std::size_t>(next[static_cast<std::size_t>(p < 0 ? count : p)]++)] = i;
    }
  }
  std::vector<std::int32_t> position(parent_index.size() + 1, -1);  // by node; node `count` is the root
  std::vector<std::int32_t> stack{count};
  std::int32_t next_position = 0;
  while (!stack.empty()) {
    const std::int32_t node = stack.back();
    stack.pop_back();
    position[static_cast<std::size_t>(node)] = next_position++;
    for (auto k = offsets[static_cast<std::size_t>(node) + 1]; k > offsets[static_cast<std::size_t>(node)]; --k)
      stack.push_back(kids[static_cast<std::size_t>(k - 1)]);
  }
  // Equations in the order of their parents' positions.
  std::vector<std::int32_t> node_at(position.size());
  for (std::size_t node = 0; node < position.size(); ++node)
    node_at[static_cast<std::size_t>(position[node])] = static_cast<std::int32_t>(node);
  DimensionEquations result;
  result.name = std::move(name);
  result.code_count = count + 1;
  for (const std::int32_t node : node_at) {
    const auto n = static_cast<std::size_t>(node);
    if (offsets[n] == offsets[n + 1]) continue;
    Equation equation{position[n], {}};
    for (auto k = offsets[n]; k < offsets[n + 1]; ++k)
      equation.children.push_back(position[static_cast<std::size_t>(kids[static_cast<std::size_t>(k)])]);
    result.equations.push_back(std::move(equation));
  }
  return result;
}

DimensionEquations flat_dimension(std::string name, std::int64_t codes) {
  if (codes < 2 || codes > kMaxGeneratedCodes) {
    throw ParameterError("table dimension '" + name + "': a flat dimension needs 2 to " +
                         std::to_string(kMaxGeneratedCodes) + " codes, not " + std::to_string(codes));
  }
  DimensionEquations result;
  result.name = std::move(name);
  result.code_count = static_cast<std::int32_t>(codes);
  Equation total{0, {}};
  for (std::int32_t c = 1; c < result.code_count; ++c) total.children.push_back(c);
  result.equations.push_back(std::move(total));
  return result;
}

// Where a dimension's cells lie in the row-major cell order, and the order in which its codes are
// aggregated.
struct DimensionPlan {
  std::int64_t length = 0;  // codes
  std::int64_t inner = 0;   // stride: Π of the sizes after this dimension
  std::int64_t lines = 0;   // cells / length
  std::vector<bool> leaf;
  std::vector<std::int32_t> first_equation;  // per code, -1 for a leaf
  std::vector<std::int32_t> order;           // internal codes, each after its first equation's children
};

DimensionPlan plan_dimension(const DimensionEquations& dimension, std::int64_t inner, std::int64_t cells) {
  DimensionPlan plan;
  plan.length = dimension.code_count;
  plan.inner = inner;
  plan.lines = cells / plan.length;
  const auto codes = static_cast<std::size_t>(dimension.code_count);
  plan.first_equation.assign(codes, -1);
  for (std::size_t e = 0; e < dimension.equations.size(); ++e) {
    auto& first = plan.first_equation[static_cast<std::size_t>(dimension.equations[e].parent)];
    if (first < 0) first = static_cast<std::int32_t>(e);
  }
  plan.leaf.assign(codes, false);
  for (std::size_t c = 0; c < codes; ++c) plan.leaf[c] = plan.first_equation[c] < 0;
  // Kahn's algorithm on the first equations (child -> parent), smallest code first among the ready ones.
  std::vector<std::int32_t> waiting(codes, 0);  // children of the first equation not yet placed
  std::vector<std::vector<std::int32_t>> parents_of(codes);
  for (std::size_t c = 0; c < codes; ++c) {
    if (plan.leaf[c]) continue;
    const Equation& equation = dimension.equations[static_cast<std::size_t>(plan.first_equation[c])];
    for (const std::int32_t child : equation.children) {
      if (plan.leaf[static_cast<std::size_t>(child)]) continue;
      ++waiting[c];
      parents_of[static_cast<std::size_t>(child)].push_back(static_cast<std::int32_t>(c));
    }
  }
  std::vector<std::int32_t> ready;
  for (std::size_t c = 0; c < codes; ++c)
    if (!plan.leaf[c] && waiting[c] == 0) ready.push_back(static_cast<std::int32_t>(c));
  std::make_heap(ready.begin(), ready.end(), std::greater<>{});
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>{});
    const std::int32_t code = ready.back();
    ready.pop_back();
    plan.order.push_back(code);
    for (const std::int32_t parent : parents_of[static_cast<std::size_t>(code)]) {
      if (--waiting[static_cast<std::size_t>(parent)] == 0) {
        ready.push_back(parent);
        std::push_heap(ready.begin(), ready.end(), std::greater<>{});
      }
    }
  }
  const auto internal = static_cast<std::size_t>(std::count(plan.leaf.begin(), plan.leaf.end(), false));
  if (plan.order.size() != internal) {
    throw ParameterError("table dimension '" + dimension.name +
                         "': the first equations of its codes form a cycle, so they cannot be aggregated");
  }
  return plan;
}

template <typename Body>
void for_each_line(const DimensionPlan& plan, const Body& body) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, plan.lines), [&](const tbb::blocked_range<std::int64_t>& r) {
    for (std::int64_t line = r.begin(); line < r.end(); ++line) {
      const std::int64_t o = line / plan.inner;
      const std::int64_t i = line % plan.inner;
      body(o * plan.length * plan.inner + i);
    }
  });
}

void check_options(const InstanceOptions& options) {
  const auto fail = [](const std::string& what) { throw ParameterError("table instance: " + what); };
  if (!(options.mean_count > 0.0) || !std::isfinite(options.mean_count)) fail("the mean count must be positive");
  if (!(options.density >= 0.0 && options.density <= 1.0)) fail("the density must lie in [0, 1]");
  if (!std::isfinite(options.log_mean)) fail("the log mean must be finite");
  if (!(options.log_sd >= 0.0) || !std::isfinite(options.log_sd)) fail("the log standard deviation must be >= 0");
  if (options.frequency_threshold < 1) fail("the frequency threshold must be >= 1");
  if (!(options.protection_fraction >= 0.0 && options.protection_fraction <= 1.0))
    fail("the protection fraction must lie in [0, 1]");
}

}  // namespace

DimensionEquations balanced_tree_dimension(std::string name, int depth, int branching) {
  if (depth < 1 || branching < 1)
    throw ParameterError("table dimension '" + name + "': a balanced tree needs depth >= 1 and branching >= 1");
  // Breadth-first nodes: level l's nodes are the `branching` children of each node of level l − 1.
  std::vector<std::int32_t> parent_index;
  std::int64_t level_begin = 0;
  std::int64_t level_size = 1;  // the root, which is not listed
  for (int level = 1; level <= depth; ++level) {
    const std::int64_t next_size = level_size * branching;
    if (static_cast<std::int64_t>(parent_index.size()) + next_size + 1 > kMaxGeneratedCodes) {
      throw ParameterError("table dimension '" + name + "': a balanced tree of depth " + std::to_string(depth) +
                           " and branching " + std::to_string(branching) + " has more than " +
                           std::to_string(kMaxGeneratedCodes) + " codes");
    }
    const auto begin = static_cast<std::int64_t>(parent_index.size());
    for (std::int64_t k = 0; k < level_size; ++k) {
      const auto parent = level == 1 ? std::int32_t{-1} : static_cast<std::int32_t>(level_begin + k);
      for (int b = 0; b < branching; ++b) parent_index.push_back(parent);
    }
    level_begin = begin;
    level_size = next_size;
  }
  return tree_equations(std::move(name), parent_index);
}

DimensionEquations random_tree_dimension(std::string name, const RandomTreeOptions& options, std::uint64_t seed,
                                         std::uint64_t stream) {
  if (options.depth < 1 || options.branching_min < 1 || options.branching_max < options.branching_min ||
      !(options.unary_probability >= 0.0 && options.unary_probability < 1.0)) {
    throw ParameterError("table dimension '" + name +
                         "': a random tree needs depth >= 1, 1 <= branching min <= branching max and a unary "
                         "probability in [0, 1)");
  }
  if (stream >= kTreeDrawOffset) throw ParameterError("table dimension '" + name + "': stream must be below 2^63");
  const RecordRng rng(seed, StepId::kTableInstance);
  const auto span = static_cast<std::uint64_t>(options.branching_max - options.branching_min + 1);
  // Node k of the breadth-first order is tree node k − 1 of parent_index (node 0 is the root).
  std::vector<std::int32_t> parent_index;
  std::int64_t level_begin = 0;  // breadth-first ids of the level being expanded
  std::int64_t level_end = 1;
  for (int level = 1; level <= options.depth; ++level) {
    for (std::int64_t node = level_begin; node < level_end; ++node) {
      const auto block = rng.bits({.unit = static_cast<std::uint64_t>(node), .draw = kTreeDrawOffset + stream});
      const bool unary = RecordRng::uniform_from_bits(block[0]) < options.unary_probability;
      const std::int64_t children =
          unary ? 1 : options.branching_min + static_cast<std::int64_t>(index_from_bits(block[1], span));
      if (static_cast<std::int64_t>(parent_index.size()) + children + 1 > kMaxGeneratedCodes) {
        throw ParameterError("table dimension '" + name + "': the random tree has more than " +
                             std::to_string(kMaxGeneratedCodes) + " codes");
      }
      for (std::int64_t c = 0; c < children; ++c)
        parent_index.push_back(node == 0 ? -1 : static_cast<std::int32_t>(node - 1));
    }
    level_begin = level_end;
    level_end = static_cast<std::int64_t>(parent_index.size()) + 1;
  }
  return tree_equations(std::move(name), parent_index);
}

void add_alternative_root_breakdown(DimensionEquations& dimension, int groups) {
  const auto first = std::find_if(dimension.equations.begin(), dimension.equations.end(),
                                  [](const Equation& e) { return e.parent == 0; });
  if (first == dimension.equations.end())
    throw ParameterError("table dimension '" + dimension.name + "': the root has no breakdown to regroup");
  const std::vector<std::int32_t> runs = first->children;
  const auto k = static_cast<std::int64_t>(runs.size());
  if (groups < 2 || groups > k) {
    throw ParameterError("table dimension '" + dimension.name + "': an alternative breakdown of the root's " +
                         std::to_string(k) + " children needs 2 to " + std::to_string(k) + " groups, not " +
                         std::to_string(groups));
  }
  Equation root{0, {}};
  for (std::int64_t j = 0; j < groups; ++j) {
    const std::int32_t code = dimension.code_count++;
    Equation group{code, {}};
    for (std::int64_t i = j * k / groups; i < (j + 1) * k / groups; ++i)
      group.children.push_back(runs[static_cast<std::size_t>(i)]);
    dimension.equations.push_back(std::move(group));
    root.children.push_back(code);
  }
  dimension.equations.push_back(std::move(root));
}

namespace {

/// An r × r cross (h16 is r = 3): the total over r row margins, each row margin over its r cells, and
/// r column margins over the same cells. Positions 0 T, 1..r R_i, r+1..2r C_j, 2r+1 + r(i−1) + (j−1) c_ij.
DimensionEquations cross_dimension(std::string name, std::int64_t side) {
  if (side < 2 || side > kMaxGeneratedCodes || 1 + 2 * side + side * side > kMaxGeneratedCodes)
    throw ParameterError("table shape: a cross dimension needs a side of at least 2 and at most " +
                         std::to_string(kMaxGeneratedCodes) + " codes in all");
  const auto r = static_cast<std::int32_t>(side);
  DimensionEquations result{std::move(name), 1 + 2 * r + r * r, {{0, {}}}};
  for (std::int32_t i = 0; i < r; ++i) result.equations[0].children.push_back(1 + i);
  const auto cell = [r](std::int32_t i, std::int32_t j) { return 1 + 2 * r + r * i + j; };
  for (std::int32_t i = 0; i < r; ++i) {
    Equation row{1 + i, {}};
    for (std::int32_t j = 0; j < r; ++j) row.children.push_back(cell(i, j));
    result.equations.push_back(std::move(row));
  }
  for (std::int32_t j = 0; j < r; ++j) {
    Equation column{1 + r + j, {}};
    for (std::int32_t i = 0; i < r; ++i) column.children.push_back(cell(i, j));
    result.equations.push_back(std::move(column));
  }
  return result;
}

}  // namespace

DimensionEquations named_dimension(std::string_view shape, std::string name) {
  if (shape == "h13") {
    return {std::move(name),
            13,
            {{0, {1, 2}}, {0, {3, 4}}, {1, {5, 6}}, {2, {7, 8}}, {3, {5, 7}}, {4, {6, 8}}, {5, {9, 10, 11, 12}}}};
  }
  if (shape == "h16") {
    DimensionEquations result{std::move(name), 16, {{0, {1, 2, 3}}}};
    for (std::int32_t i = 0; i < 3; ++i) result.equations.push_back({1 + i, {7 + 3 * i, 8 + 3 * i, 9 + 3 * i}});
    for (std::int32_t j = 0; j < 3; ++j) result.equations.push_back({4 + j, {7 + j, 10 + j, 13 + j}});
    return result;
  }
  if (shape.size() > 1 && shape.front() == 'c') {
    std::int64_t side = 0;
    const auto digits = shape.substr(1);
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), side);
    if (error == std::errc{} && end == digits.data() + digits.size()) return cross_dimension(std::move(name), side);
  }
  if (shape.size() > 1 && shape.front() == 'f') {
    std::int64_t codes = 0;
    const auto digits = shape.substr(1);
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), codes);
    if (error == std::errc{} && end == digits.data() + digits.size()) return flat_dimension(std::move(name), codes);
  }
  throw ParameterError("table shape: unknown dimension '" + std::string(shape) +
                       "' (expected h13, h16, c<side>, f<codes> or a number of codes)");
}

std::vector<DimensionEquations> shape_dimensions(std::string_view shape) {
  if (shape.empty()) throw ParameterError("table shape: empty (expected e.g. 13x13x7)");
  std::vector<DimensionEquations> dimensions;
  while (true) {
    const std::size_t cross = shape.find('x');
    const std::string_view token = shape.substr(0, cross);
    std::string name = "d" + std::to_string(dimensions.size() + 1);
    std::int64_t codes = 0;
    const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), codes);
    if (!token.empty() && error == std::errc{} && end == token.data() + token.size()) {
      if (codes == 13)
        dimensions.push_back(named_dimension("h13", std::move(name)));
      else if (codes == 16)
        dimensions.push_back(named_dimension("h16", std::move(name)));
      else
        dimensions.push_back(flat_dimension(std::move(name), codes));
    } else if (error == std::errc::result_out_of_range) {
      throw ParameterError("table shape: dimension " + name + " has too many codes");
    } else {
      dimensions.push_back(named_dimension(token, std::move(name)));
    }
    if (cross == std::string_view::npos) break;
    shape.remove_prefix(cross + 1);
  }
  return dimensions;
}

CellListView Instance::cells() const {
  return {values,       weights,          statuses,         lower_bounds,
          upper_bounds, lower_protection, upper_protection, sliding_protection};
}

Instance generate_instance(std::vector<DimensionEquations> dimensions, const InstanceOptions& options,
                           std::uint64_t seed) {
  check_options(options);
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  if (sizes.cells > options.max_cells) {
    throw ParameterError("table instance: " + std::to_string(sizes.cells) + " cells exceed the limit of " +
                         std::to_string(options.max_cells));
  }
  std::vector<DimensionPlan> plans;
  std::int64_t inner = sizes.cells;
  for (const DimensionEquations& dimension : dimensions) {
    inner /= dimension.code_count;
    plans.push_back(plan_dimension(dimension, inner, sizes.cells));
  }
  Instance instance;
  const auto n = static_cast<std::size_t>(sizes.cells);
  instance.values.assign(n, 0.0);
  instance.counts.assign(n, 0);

  // ---- leaves ----
  const RecordRng rng(seed, StepId::kTableInstance);
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, sizes.cells), [&](const tbb::blocked_range<std::int64_t>& r) {
    for (std::int64_t cell = r.begin(); cell < r.end(); ++cell) {
      bool leaf = true;
      for (const DimensionPlan& plan : plans) {
        if (!plan.leaf[static_cast<std::size_t>((cell / plan.inner) % plan.length)]) {
          leaf = false;
          break;
        }
      }
      if (!leaf) continue;
      const auto unit = static_cast<std::uint64_t>(cell);
      if (!(rng.uniform({.unit = unit}) < options.density)) continue;
      const std::int64_t count = poisson_draw(rng, {.unit = unit, .draw = 1}, options.mean_count);
      double value = static_cast<double>(count);
      if (options.leaf_values == LeafValues::kMagnitudes) {
        value = 0.0;
        for (std::int64_t j = 0; j < count; j += 4) {
          const auto block = rng.bits({.unit = unit, .draw = 2 + static_cast<std::uint64_t>(j / 4)});
          const auto [z0, z1] = normal_pair_from_bits(block[0], block[1]);
          const auto [z2, z3] = normal_pair_from_bits(block[2], block[3]);
          const double z[4] = {z0, z1, z2, z3};
          for (std::int64_t k = j; k < std::min(count, j + 4); ++k)
            value += std::max(1.0, std::round(std::exp(options.log_mean + options.log_sd * z[k - j])));
        }
      }
      instance.values[static_cast<std::size_t>(cell)] = value;
      instance.counts[static_cast<std::size_t>(cell)] = count;
    }
  });

  // ---- aggregation: each line of a dimension is one task's, so the cells it writes are its own ----
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    const DimensionPlan& plan = plans[d];
    const DimensionEquations& dimension = dimensions[d];
    for_each_line(plan, [&](std::int64_t base) {
      for (const std::int32_t code : plan.order) {
        const Equation& equation =
            dimension.equations[static_cast<std::size_t>(plan.first_equation[static_cast<std::size_t>(code)])];
        double value = 0.0;
        std::int64_t count = 0;
        for (const std::int32_t child : equation.children) {
          const auto at = static_cast<std::size_t>(base + child * plan.inner);
          value += instance.values[at];
          count += instance.counts[at];
        }
        const auto at = static_cast<std::size_t>(base + code * plan.inner);
        instance.values[at] = value;
        instance.counts[at] = count;
      }
    });
  }
  const double largest = tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, n), 0.0,
      [&](const tbb::blocked_range<std::size_t>& r, double m) {
        for (std::size_t c = r.begin(); c < r.end(); ++c) m = std::max(m, instance.values[c]);
        return m;
      },
      [](double a, double b) { return std::max(a, b); });
  if (largest > kExactIntegerLimit)
    throw ParameterError("table instance: a cell value exceeds 2^53, so its sums would not be exact");

  // ---- every equation on every line, the alternative breakdowns included ----
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    const DimensionPlan& plan = plans[d];
    const DimensionEquations& dimension = dimensions[d];
    std::vector<std::atomic<bool>> broken(dimension.equations.size());
    for_each_line(plan, [&](std::int64_t base) {
      for (std::size_t e = 0; e < dimension.equations.size(); ++e) {
        const Equation& equation = dimension.equations[e];
        double value = 0.0;
        std::int64_t count = 0;
        for (const std::int32_t child : equation.children) {
          const auto at = static_cast<std::size_t>(base + child * plan.inner);
          value += instance.values[at];
          count += instance.counts[at];
        }
        const auto at = static_cast<std::size_t>(base + equation.parent * plan.inner);
        if (value != instance.values[at] || count != instance.counts[at])
          broken[e].store(true, std::memory_order_relaxed);
      }
    });
    for (std::size_t e = 0; e < broken.size(); ++e) {
      if (broken[e].load()) {
        throw ParameterError("table dimension '" + dimension.name + "', equation " + std::to_string(e + 1) +
                             " (parent position " + std::to_string(dimension.equations[e].parent) +
                             ") does not hold once the codes are aggregated along their first equations: its "
                             "children are no breakdown of its parent");
      }
    }
  }

  // ---- statuses and protection attributes ----
  instance.statuses.assign(n, CellStatus::kSafe);
  instance.weights.assign(n, 0.0);
  instance.lower_bounds.assign(n, 0.0);
  instance.upper_bounds.assign(n, 2.0 * std::max(largest, 1.0));
  instance.lower_protection.assign(n, 0.0);
  instance.upper_protection.assign(n, 0.0);
  instance.sliding_protection.assign(n, 0.0);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n), [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t c = r.begin(); c < r.end(); ++c) {
      const std::int64_t count = instance.counts[c];
      const double value = instance.values[c];
      instance.weights[c] = std::max(1.0, value);
      if (count == 0) {
        instance.statuses[c] = CellStatus::kZero;
      } else if (count < options.frequency_threshold) {
        instance.statuses[c] = CellStatus::kSensitive;
        const double level = std::min(value, std::max(1.0, std::ceil(options.protection_fraction * value)));
        instance.lower_protection[c] = level;
        instance.upper_protection[c] = level;
      }
    }
  });
  instance.dimensions = std::move(dimensions);
  return instance;
}

}  // namespace sdc::tables
