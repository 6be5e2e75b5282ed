#include "kernels/tables/instance_generator.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <sstream>
#include <string>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

std::string cell_equation_list(const Instance& instance) {
  std::ostringstream out;
  write_cell_equation_list(out, instance.dimensions, instance.cells());
  return out.str();
}

void expect_additive(const Instance& instance) {
  const CsrMatrix a = constraint_matrix(instance.dimensions);
  std::vector<double> y(static_cast<std::size_t>(a.rows()));
  multiply(a.view(), instance.values, y);
  std::size_t broken = 0;
  for (const double r : y) broken += r != 0.0 ? 1U : 0U;
  EXPECT_EQ(broken, 0U) << "of " << y.size() << " equations";
  std::vector<double> counts(instance.counts.begin(), instance.counts.end());
  multiply(a.view(), counts, y);
  for (const double r : y) ASSERT_EQ(r, 0.0);
}

TEST(InstanceGenerator, NamedShapesHaveTheirEquationCounts) {
  const auto child_entries = [](const DimensionEquations& d) {
    std::size_t c = 0;
    for (const Equation& e : d.equations) c += e.children.size();
    return c;
  };
  const DimensionEquations h13 = named_dimension("h13", "a");
  EXPECT_EQ(h13.code_count, 13);
  EXPECT_EQ(h13.equations.size(), 7U);
  EXPECT_EQ(child_entries(h13), 16U);
  const DimensionEquations h16 = named_dimension("h16", "b");
  EXPECT_EQ(h16.code_count, 16);
  EXPECT_EQ(h16.equations.size(), 7U);
  EXPECT_EQ(child_entries(h16), 21U);
  const DimensionEquations f7 = named_dimension("f7", "c");
  EXPECT_EQ(f7.code_count, 7);
  EXPECT_EQ(f7.equations.size(), 1U);
  EXPECT_EQ(child_entries(f7), 6U);
  for (const auto& d : {h13, h16, f7}) EXPECT_NO_THROW(check_dimension(d));
}

TEST(InstanceGenerator, ShapeStringsName13And16AndFlatDimensions) {
  const auto shape = shape_dimensions("13x13x7x5");
  ASSERT_EQ(shape.size(), 4U);
  EXPECT_EQ(shape[0].name, "d1");
  EXPECT_EQ(shape[0].equations.size(), 7U);  // h13
  EXPECT_EQ(shape[2].code_count, 7);         // f7
  EXPECT_EQ(shape[3].code_count, 5);         // total + 4 leaves
  ASSERT_EQ(shape[3].equations.size(), 1U);
  EXPECT_EQ(shape[3].equations[0].children, (std::vector<std::int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(shape_dimensions("h16xf3")[0].code_count, 16);
  for (const char* bad : {"", "13x", "13xq", "1", "0x3", "13x-2", "f1"})
    EXPECT_THROW(shape_dimensions(bad), ParameterError) << bad;
}

TEST(InstanceGenerator, BalancedTreeInPreorder) {
  const DimensionEquations d = balanced_tree_dimension("t", 2, 3);
  EXPECT_EQ(d.code_count, 13);
  ASSERT_EQ(d.equations.size(), 4U);
  EXPECT_EQ(d.equations[0].parent, 0);
  EXPECT_EQ(d.equations[0].children, (std::vector<std::int32_t>{1, 5, 9}));
  EXPECT_EQ(d.equations[1].parent, 1);
  EXPECT_EQ(d.equations[1].children, (std::vector<std::int32_t>{2, 3, 4}));
  EXPECT_EQ(d.equations[3].parent, 9);
  EXPECT_THROW(balanced_tree_dimension("t", 0, 3), ParameterError);
  EXPECT_THROW(balanced_tree_dimension("t", 30, 10), ParameterError);
}

TEST(InstanceGenerator, RandomTreeIsASeededFunction) {
  const RandomTreeOptions options{.depth = 4, .branching_min = 2, .branching_max = 4, .unary_probability = 0.2};
  const DimensionEquations a = random_tree_dimension("r", options, 7, 0);
  const DimensionEquations b = random_tree_dimension("r", options, 7, 0);
  const DimensionEquations c = random_tree_dimension("r", options, 7, 1);
  ASSERT_EQ(a.code_count, b.code_count);
  for (std::size_t e = 0; e < a.equations.size(); ++e) EXPECT_EQ(a.equations[e].children, b.equations[e].children);
  EXPECT_NO_THROW(check_dimension(a));
  bool unary = false;
  for (const Equation& e : a.equations) {
    const auto k = e.children.size();
    EXPECT_TRUE(k == 1 || (k >= 2 && k <= 4)) << k;
    unary = unary || k == 1;
  }
  EXPECT_TRUE(unary);
  // Another stream gives another tree (with overwhelming probability at this size).
  bool differs = a.code_count != c.code_count || a.equations.size() != c.equations.size();
  for (std::size_t e = 0; !differs && e < a.equations.size(); ++e)
    differs = a.equations[e].children != c.equations[e].children;
  EXPECT_TRUE(differs);
}

TEST(InstanceGenerator, SameSeedSameBytesForAnyThreadCount) {
  const InstanceOptions options{.density = 0.7};
  std::string one_thread;
  {
    const tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 1);
    one_thread = cell_equation_list(generate_instance(shape_dimensions("13x13x7"), options, 42));
  }
  std::string four_threads;
  {
    const tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 4);
    four_threads = cell_equation_list(generate_instance(shape_dimensions("13x13x7"), options, 42));
  }
  EXPECT_EQ(one_thread, four_threads);
  EXPECT_EQ(one_thread, cell_equation_list(generate_instance(shape_dimensions("13x13x7"), options, 42)));
  EXPECT_NE(one_thread, cell_equation_list(generate_instance(shape_dimensions("13x13x7"), options, 43)));
}

TEST(InstanceGenerator, CountTablesAreAdditive) {
  for (const char* shape : {"13x13x13", "13x7x7", "16x16x16", "13x13x7"}) {
    const Instance instance = generate_instance(shape_dimensions(shape), {.mean_count = 2.0, .density = 0.6}, 3);
    SCOPED_TRACE(shape);
    expect_additive(instance);
    EXPECT_EQ(instance.values, std::vector<double>(instance.counts.begin(), instance.counts.end()));
  }
}

TEST(InstanceGenerator, MagnitudeTablesAreAdditive) {
  const InstanceOptions options{.leaf_values = LeafValues::kMagnitudes, .mean_count = 3.0, .density = 0.8};
  const Instance instance = generate_instance(shape_dimensions("16x13x5"), options, 11);
  expect_additive(instance);
  bool larger = false;
  for (std::size_t c = 0; c < instance.cell_count(); ++c) {
    EXPECT_GE(instance.values[c], static_cast<double>(instance.counts[c]));  // every contribution >= 1
    larger = larger || instance.values[c] > static_cast<double>(instance.counts[c]);
  }
  EXPECT_TRUE(larger);
}

TEST(InstanceGenerator, TreesAndAnAlternativeRootBreakdownStayAdditive) {
  std::vector<DimensionEquations> dimensions;
  dimensions.push_back(balanced_tree_dimension("a", 2, 3));
  dimensions.push_back(random_tree_dimension("b", {.depth = 3, .unary_probability = 0.3}, 5, 1));
  DimensionEquations c = balanced_tree_dimension("c", 1, 4);
  add_alternative_root_breakdown(c, 2);
  EXPECT_EQ(c.code_count, 7);
  ASSERT_EQ(c.equations.size(), 4U);
  EXPECT_EQ(c.equations[1].children, (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(c.equations[3].children, (std::vector<std::int32_t>{5, 6}));
  dimensions.push_back(c);
  const Instance instance = generate_instance(dimensions, {.density = 0.9}, 8);
  expect_additive(instance);
  EXPECT_THROW(add_alternative_root_breakdown(c, 9), ParameterError);
}

TEST(InstanceGenerator, StatusesFollowTheFrequencyRule) {
  const Instance instance = generate_instance(shape_dimensions("13x7x7"), {.mean_count = 1.0, .density = 0.5}, 1);
  int sensitive = 0;
  for (std::size_t c = 0; c < instance.cell_count(); ++c) {
    const std::int64_t count = instance.counts[c];
    const CellStatus expected =
        count == 0 ? CellStatus::kZero : (count < 3 ? CellStatus::kSensitive : CellStatus::kSafe);
    EXPECT_EQ(instance.statuses[c], expected);
    if (expected == CellStatus::kSensitive) {
      ++sensitive;
      EXPECT_EQ(instance.upper_protection[c], 1.0);
      EXPECT_LE(instance.values[c] - instance.lower_protection[c], instance.values[c]);
      EXPECT_GE(instance.values[c] - instance.lower_protection[c], instance.lower_bounds[c]);
      EXPECT_LE(instance.values[c] + instance.upper_protection[c], instance.upper_bounds[c]);
    } else {
      EXPECT_EQ(instance.upper_protection[c], 0.0);
    }
  }
  EXPECT_GT(sensitive, 0);
}

TEST(InstanceGenerator, RefusesEquationsThatDoNotHoldAfterAggregation) {
  // The second breakdown of the total leaves out a code that is not zero.
  std::vector<DimensionEquations> dimensions{{"x", 3, {{0, {1, 2}}, {0, {1}}}}};
  try {
    generate_instance(dimensions, {.mean_count = 50.0}, 1);
    FAIL() << "no ParameterError";
  } catch (const ParameterError& e) {
    EXPECT_NE(std::string(e.what()).find("'x', equation 2"), std::string::npos) << e.what();
  }
  // First equations in a cycle cannot be aggregated.
  std::vector<DimensionEquations> cycle{{"y", 4, {{0, {1, 3}}, {1, {2}}, {2, {1}}}}};
  EXPECT_THROW(generate_instance(cycle, {}, 1), ParameterError);
  EXPECT_THROW(generate_instance(shape_dimensions("16x16x16"), {.max_cells = 4095}, 1), ParameterError);
  EXPECT_THROW(generate_instance(shape_dimensions("7"), {.density = 1.5}, 1), ParameterError);
}

}  // namespace
}  // namespace sdc::tables
