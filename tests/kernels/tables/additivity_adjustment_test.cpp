#include "kernels/tables/additivity_adjustment.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <Eigen/Dense>
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/tables/block_angular.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/instance_generator.h"

namespace sdc::tables {
namespace {

// ---- instances ------------------------------------------------------------------------------------

/// A primal block-angular ordering from a column assignment: a row whose columns all lie in one block
/// belongs to it (an empty row to block 0), every other row is a linking row.
BlockAngularOrdering primal_ordering(const CsrView& matrix, std::vector<std::int32_t> column_block,
                                     std::int32_t blocks) {
  BlockAngularOrdering ordering;
  ordering.form = BlockAngularForm::kPrimal;
  ordering.blocks = blocks;
  ordering.column_block = std::move(column_block);
  ordering.row_block.assign(static_cast<std::size_t>(matrix.rows), 0);
  for (std::int64_t row = 0; row < matrix.rows; ++row) {
    const auto columns = matrix.row_columns(row);
    if (columns.empty()) continue;
    const std::int32_t first = ordering.column_block[static_cast<std::size_t>(columns.front())];
    const bool within = std::all_of(columns.begin(), columns.end(), [&](std::int64_t column) {
      return ordering.column_block[static_cast<std::size_t>(column)] == first;
    });
    ordering.row_block[static_cast<std::size_t>(row)] = within ? first : BlockAngularOrdering::kLinking;
  }
  ordering.block_rows.assign(static_cast<std::size_t>(blocks), 0);
  ordering.block_columns.assign(static_cast<std::size_t>(blocks), 0);
  for (std::int32_t block = 0; block < blocks; ++block) {
    for (std::size_t j = 0; j < ordering.column_block.size(); ++j) {
      if (ordering.column_block[j] != block) continue;
      ordering.column_order.push_back(static_cast<std::int64_t>(j));
      ++ordering.block_columns[static_cast<std::size_t>(block)];
    }
    for (std::size_t i = 0; i < ordering.row_block.size(); ++i) {
      if (ordering.row_block[i] != block) continue;
      ordering.row_order.push_back(static_cast<std::int64_t>(i));
      ++ordering.block_rows[static_cast<std::size_t>(block)];
    }
  }
  for (std::size_t i = 0; i < ordering.row_block.size(); ++i) {
    if (ordering.row_block[i] != BlockAngularOrdering::kLinking) continue;
    ordering.row_order.push_back(static_cast<std::int64_t>(i));
    ++ordering.linking_size;
  }
  const auto largest = *std::max_element(ordering.block_columns.begin(), ordering.block_columns.end());
  ordering.imbalance = static_cast<double>(largest) * blocks / static_cast<double>(matrix.columns) - 1.0;
  return ordering;
}

/// The columns split by their position in dimension 0 into `blocks` runs of layers: the equations of
/// the other dimensions stay within a layer, those of dimension 0 link the blocks.
BlockAngularOrdering layer_ordering(const CsrView& matrix, const std::vector<DimensionEquations>& dimensions,
                                    std::int32_t blocks) {
  const std::int64_t layers = dimensions.front().code_count;
  const std::int64_t cells_per_layer = matrix.columns / layers;
  std::vector<std::int32_t> column_block(static_cast<std::size_t>(matrix.columns));
  for (std::int64_t column = 0; column < matrix.columns; ++column)
    column_block[static_cast<std::size_t>(column)] =
        static_cast<std::int32_t>(column / cells_per_layer * blocks / layers);
  return primal_ordering(matrix, std::move(column_block), blocks);
}

/// An additive table of counts plus normal noise of standard deviation 2 (counter unit = column).
std::vector<double> perturbed_table(const std::vector<DimensionEquations>& dimensions, std::uint64_t seed) {
  std::vector<double> values = generate_instance(dimensions, InstanceOptions{}, seed).values;
  const RecordRng rng(seed, StepId::kKnownAnswerTest);
  for (std::size_t j = 0; j < values.size(); ++j) {
    const auto bits = rng.bits({.unit = j});
    values[j] += 2.0 * normal_pair_from_bits(bits[0], bits[1]).first;
  }
  return values;
}

enum class Weighting { kUniform, kInverse };

std::vector<double> weights_of(const std::vector<double>& perturbed, Weighting weighting) {
  std::vector<double> weights(perturbed.size(), 1.0);
  if (weighting == Weighting::kInverse)
    for (std::size_t j = 0; j < weights.size(); ++j) weights[j] = 1.0 / std::max(1.0, std::abs(perturbed[j]));
  return weights;
}

double largest_magnitude(const std::vector<double>& values) {
  double largest = 0.0;
  for (const double value : values) largest = std::max(largest, std::abs(value));
  return largest;
}

/// max_j |a_j − b_j| / max(1, max_j |b_j|).
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double largest = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) largest = std::max(largest, std::abs(a[j] - b[j]));
  return largest / std::max(1.0, largest_magnitude(b));
}

/// max_i |(A x)_i| / max(1, max_j |x~_j|), computed here independently of the solvers.
double relative_equation_residual(const CsrView& matrix, const std::vector<double>& adjusted,
                                  const std::vector<double>& perturbed) {
  std::vector<double> residual(static_cast<std::size_t>(matrix.rows));
  multiply(matrix, adjusted, residual);
  return largest_magnitude(residual) / std::max(1.0, largest_magnitude(perturbed));
}

/// The WLS optimum in dense arithmetic: x~ − W⁻¹ Aᵀ y with y the minimum-norm solution of the
/// singular system (A W⁻¹ Aᵀ) y = A x~ (complete orthogonal decomposition).
std::vector<double> dense_solution(const CsrView& matrix, const std::vector<double>& perturbed,
                                   const std::vector<double>& weights) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(matrix.rows, matrix.columns);
  for (std::int64_t row = 0; row < matrix.rows; ++row) {
    const auto columns = matrix.row_columns(row);
    const auto values = matrix.row_values(row);
    for (std::size_t e = 0; e < columns.size(); ++e) a(row, columns[e]) = values[e];
  }
  const Eigen::Map<const Eigen::VectorXd> x(perturbed.data(), static_cast<Eigen::Index>(perturbed.size()));
  Eigen::VectorXd inverse_weights(static_cast<Eigen::Index>(weights.size()));
  for (std::size_t j = 0; j < weights.size(); ++j) inverse_weights[static_cast<Eigen::Index>(j)] = 1.0 / weights[j];
  const Eigen::MatrixXd normal = a * inverse_weights.asDiagonal() * a.transpose();
  const Eigen::VectorXd y = normal.completeOrthogonalDecomposition().solve(a * x);
  const Eigen::VectorXd adjusted = x - inverse_weights.cwiseProduct(a.transpose() * y);
  return {adjusted.data(), adjusted.data() + adjusted.size()};
}

std::vector<std::int32_t> all_blocks(std::int32_t blocks) {
  std::vector<std::int32_t> owned(static_cast<std::size_t>(blocks));
  for (std::int32_t b = 0; b < blocks; ++b) owned[static_cast<std::size_t>(b)] = b;
  return owned;
}

AdjustmentResult block_angular(const CsrView& matrix, const std::vector<double>& perturbed,
                               const std::vector<double>& weights, const BlockAngularOrdering& ordering,
                               const AdjustmentOptions& options = {}) {
  LocalBlockExchange exchange;
  return adjust_additivity_block_angular(matrix, perturbed, weights, ordering, all_blocks(ordering.blocks), exchange,
                                         options);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

/// Everything but the timings, bit for bit.
void expect_same_result(const AdjustmentResult& a, const AdjustmentResult& b) {
  EXPECT_TRUE(same_bits(a.adjusted, b.adjusted));
  EXPECT_TRUE(same_bits({a.max_constraint_residual, a.weighted_distance, a.max_absolute_change},
                        {b.max_constraint_residual, b.weighted_distance, b.max_absolute_change}));
  EXPECT_EQ(a.refinements, b.refinements);
  EXPECT_EQ(a.pcg_iterations, b.pcg_iterations);
}

// ---- simulated processes --------------------------------------------------------------------------

/// What the simulated processes of one run share: a buffer as large as the largest exchange and a
/// barrier for all of them.
struct SharedSegments {
  SharedSegments(std::size_t processes, std::size_t capacity)
      : barrier(static_cast<std::ptrdiff_t>(processes)), values(capacity) {}
  std::barrier<> barrier;
  std::vector<double> values;
};

/// One simulated process's exchange: it writes its own blocks' segments into the shared buffer, waits
/// for the others, reads every segment back and waits again before the buffer is reused.
class ThreadBlockExchange final : public BlockExchange {
 public:
  ThreadBlockExchange(SharedSegments& shared, std::vector<std::int32_t> owned)
      : shared_(shared), owned_(std::move(owned)) {}

  void share(std::span<double> values, std::span<const std::int64_t> offsets) override {
    EXPECT_LE(values.size(), shared_.values.size());
    for (const std::int32_t block : owned_) {
      const auto b = static_cast<std::size_t>(block);
      std::copy(values.begin() + offsets[b], values.begin() + offsets[b + 1], shared_.values.begin() + offsets[b]);
    }
    shared_.barrier.arrive_and_wait();
    std::copy(shared_.values.begin(), shared_.values.begin() + static_cast<std::ptrdiff_t>(values.size()),
              values.begin());
    shared_.barrier.arrive_and_wait();
  }

 private:
  SharedSegments& shared_;
  std::vector<std::int32_t> owned_;
};

/// The block-angular solve with the blocks dealt round-robin to `processes` threads, each its own
/// process: every process's result.
std::vector<AdjustmentResult> simulated_processes(const CsrView& matrix, const std::vector<double>& perturbed,
                                                  const std::vector<double>& weights,
                                                  const BlockAngularOrdering& ordering, std::int32_t processes) {
  const auto capacity =
      std::max(static_cast<std::size_t>(matrix.columns),
               static_cast<std::size_t>(ordering.blocks) * static_cast<std::size_t>(ordering.linking_size + 1));
  SharedSegments shared(static_cast<std::size_t>(processes), capacity);
  std::vector<AdjustmentResult> results(static_cast<std::size_t>(processes));
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(processes));
  std::vector<std::thread> threads;
  for (std::int32_t process = 0; process < processes; ++process) {
    threads.emplace_back([&, process] {
      std::vector<std::int32_t> owned;
      for (std::int32_t block = process; block < ordering.blocks; block += processes) owned.push_back(block);
      ThreadBlockExchange exchange(shared, owned);
      const auto p = static_cast<std::size_t>(process);
      try {
        results[p] = adjust_additivity_block_angular(matrix, perturbed, weights, ordering, owned, exchange, {});
      } catch (...) {
        failures[p] = std::current_exception();
        shared.barrier.arrive_and_drop();  // the others finish (with wrong numbers) instead of waiting forever
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
  return results;
}

// ---- option and input checks ----------------------------------------------------------------------

void expect_option_refused(AdjustmentOptions options, const std::string& name) {
  try {
    check_adjustment_options(options);
    ADD_FAILURE() << "accepted a bad " << name;
  } catch (const ParameterError& error) {
    EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
  }
}

TEST(AdditivityAdjustment, RefusesOptionsNamingThem) {
  EXPECT_NO_THROW(check_adjustment_options({}));
  const double infinity = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const double bad : {0.0, -1e-12, nan, infinity}) {
    expect_option_refused({.tolerance = bad}, "tolerance");
    expect_option_refused({.regularization = bad}, "regularization");
    expect_option_refused({.pcg_tolerance = bad}, "pcg_tolerance");
  }
  expect_option_refused({.max_refinements = 0}, "max_refinements");
  expect_option_refused({.max_pcg_iterations = 0}, "max_pcg_iterations");
  expect_option_refused({.preconditioner_terms = -1}, "preconditioner_terms");
}

void expect_input_refused(const CsrView& matrix, const std::vector<double>& perturbed,
                          const std::vector<double>& weights, const std::string& named) {
  try {
    check_adjustment_inputs(matrix, perturbed, weights);
    ADD_FAILURE() << "accepted inputs that should name " << named;
  } catch (const ParameterError& error) {
    EXPECT_NE(std::string(error.what()).find(named), std::string::npos) << error.what();
  }
}

TEST(AdditivityAdjustment, RefusesInputsNamingTheColumn) {
  const std::vector<DimensionEquations> dimensions{{"d1", 3, {{0, {1, 2}}}}};
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> perturbed{10, 4, 5};
  const std::vector<double> weights{1, 1, 1};
  EXPECT_NO_THROW(check_adjustment_inputs(a.view(), perturbed, weights));
  expect_input_refused(a.view(), {10, 4}, weights, "perturbed values");
  expect_input_refused(a.view(), perturbed, {1, 1, 1, 1}, "weights");
  const double infinity = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const double bad : {0.0, -1.0, nan, infinity})
    expect_input_refused(a.view(), perturbed, {1, bad, 1}, "weight of column 1");
  for (const double bad : {nan, -infinity})
    expect_input_refused(a.view(), {10, 4, bad}, weights, "perturbed value of column 2");
  EXPECT_THROW(adjust_additivity_direct(a.view(), std::vector<double>{10, 4}, weights, {}), ParameterError);
  const BlockAngularOrdering ordering = primal_ordering(a.view(), {0, 0, 1}, 2);
  EXPECT_THROW(block_angular(a.view(), perturbed, {1, 0, 1}, ordering), ParameterError);
  EXPECT_THROW(block_angular(a.view(), perturbed, weights, ordering, {.max_refinements = 0}), ParameterError);
}

TEST(AdditivityAdjustment, RefusesAnOrderingThatIsNotPrimalBlockAngular) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("4x3x3");
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> perturbed = perturbed_table(dimensions, 3);
  const std::vector<double> weights(perturbed.size(), 1.0);
  BlockAngularOrdering dual = layer_ordering(a.view(), dimensions, 2);
  dual.form = BlockAngularForm::kDual;
  EXPECT_THROW(block_angular(a.view(), perturbed, weights, dual), InternalError);

  // A linking row claimed by block 0: its columns lie in both blocks.
  BlockAngularOrdering mixed = layer_ordering(a.view(), dimensions, 2);
  const auto linking = static_cast<std::size_t>(mixed.row_order.back());
  mixed.row_block[linking] = 0;
  EXPECT_THROW(block_angular(a.view(), perturbed, weights, mixed), InternalError);

  BlockAngularOrdering wrong_size = layer_ordering(a.view(), dimensions, 2);
  ++wrong_size.block_rows[0];
  EXPECT_THROW(block_angular(a.view(), perturbed, weights, wrong_size), InternalError);

  const BlockAngularOrdering ordering = layer_ordering(a.view(), dimensions, 2);
  LocalBlockExchange exchange;
  const std::vector<std::int32_t> unordered{1, 0};
  EXPECT_THROW(adjust_additivity_block_angular(a.view(), perturbed, weights, ordering, unordered, exchange, {}),
               InternalError);
}

// ---- the solution ---------------------------------------------------------------------------------

// total = a + b with x~ = (10, 4, 5), W = I: A = (−1 1 1), A x~ = −1, A Aᵀ = 3, y = −1/3, so
// x* = x~ − Aᵀ y = (10 − 1/3, 4 + 1/3, 5 + 1/3).
// CHOLMOD's symbolic analysis of R Rᵀ: disjoint rows factor without fill (one non-zero per row);
// rows sharing columns fill in, up to a dense lower triangle.
TEST(AdditivityAdjustment, PredictsTheFactorOfTheGivenRows) {
  const CsrMatrix matrix = CsrMatrix::from_entries(
      4, 5, {{0, 0, 1.0}, {0, 1, 1.0}, {1, 1, 1.0}, {1, 2, 1.0}, {2, 2, 1.0}, {2, 0, 1.0}, {3, 3, 1.0}, {3, 4, 1.0}});
  const std::vector<std::int64_t> disjoint{0, 3};
  const FactorPrediction diagonal = predict_normal_factor(matrix.view(), disjoint);
  EXPECT_EQ(diagonal.nonzeros, 2.0);
  EXPECT_GT(diagonal.flops, 0.0);
  const std::vector<std::int64_t> cycle{0, 1, 2};  // each pair of rows shares a column
  const FactorPrediction dense = predict_normal_factor(matrix.view(), cycle);
  EXPECT_EQ(dense.nonzeros, 6.0);
  EXPECT_GT(dense.flops, diagonal.flops);
  EXPECT_EQ(predict_normal_factor(matrix.view(), {}).nonzeros, 0.0);
}

TEST(AdditivityAdjustment, SpreadsOneCellsErrorAsTheWeightedLeastSquaresFormulaSays) {
  const std::vector<DimensionEquations> dimensions{{"d1", 3, {{0, {1, 2}}}}};
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> perturbed{10, 4, 5};
  const std::vector<double> weights{1, 1, 1};
  const std::vector<double> expected{29.0 / 3, 13.0 / 3, 16.0 / 3};
  const AdjustmentResult direct = adjust_additivity_direct(a.view(), perturbed, weights, {});
  EXPECT_LE(relative_difference(direct.adjusted, expected), 1e-12);
  EXPECT_NEAR(direct.weighted_distance, std::sqrt(3.0) / 3, 1e-12);
  EXPECT_NEAR(direct.max_absolute_change, 1.0 / 3, 1e-12);
  EXPECT_GE(direct.refinements, 1);
  EXPECT_EQ(direct.pcg_iterations, 0);
  // The row spanning both blocks is the linking row; and one block holding everything.
  for (const auto& [column_block, blocks] :
       std::vector<std::pair<std::vector<std::int32_t>, std::int32_t>>{{{0, 0, 1}, 2}, {{0, 0, 0}, 1}}) {
    const AdjustmentResult result =
        block_angular(a.view(), perturbed, weights, primal_ordering(a.view(), column_block, blocks));
    EXPECT_LE(relative_difference(result.adjusted, expected), 1e-12);
    EXPECT_LE(result.max_constraint_residual, 1e-12 * 10);
  }
}

TEST(AdditivityAdjustment, ReturnsAnAdditiveTableUnchanged) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("13x13x7");
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> additive = generate_instance(dimensions, InstanceOptions{}, 5).values;
  const std::vector<double> weights = weights_of(additive, Weighting::kInverse);
  const AdjustmentResult direct = adjust_additivity_direct(a.view(), additive, weights, {});
  const AdjustmentResult blocks = block_angular(a.view(), additive, weights, layer_ordering(a.view(), dimensions, 3));
  for (const AdjustmentResult& result : {direct, blocks}) {
    EXPECT_LE(relative_difference(result.adjusted, additive), 1e-12);
    EXPECT_EQ(result.refinements, 0);
    EXPECT_EQ(result.max_absolute_change, 0.0);
  }
}

struct SolverCase {
  std::string shape;
  Weighting weighting = Weighting::kUniform;
  std::int32_t blocks = 2;
};

void PrintTo(const SolverCase& solver_case, std::ostream* out) {
  *out << solver_case.shape << (solver_case.weighting == Weighting::kUniform ? " uniform" : " inverse") << " weights, "
       << solver_case.blocks << " blocks";
}

class BothSolvers : public testing::TestWithParam<SolverCase> {};

// The acceptance points: the block-angular solution equals CHOLMOD's on the whole system, and both
// satisfy the equations.
TEST_P(BothSolvers, AgreeAndSatisfyTheEquations) {
  const SolverCase& param = GetParam();
  const std::vector<DimensionEquations> dimensions = shape_dimensions(param.shape);
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> perturbed = perturbed_table(dimensions, 11);
  const std::vector<double> weights = weights_of(perturbed, param.weighting);
  const AdjustmentResult direct = adjust_additivity_direct(a.view(), perturbed, weights, {});
  const BlockAngularOrdering ordering = layer_ordering(a.view(), dimensions, param.blocks);
  ASSERT_EQ(block_pattern_problem(a.view(), ordering), std::nullopt);
  ASSERT_GT(ordering.linking_size, 0);
  const AdjustmentResult blocks = block_angular(a.view(), perturbed, weights, ordering);
  EXPECT_LE(relative_difference(blocks.adjusted, direct.adjusted), 1e-9);
  for (const AdjustmentResult& result : {direct, blocks}) {
    EXPECT_LE(relative_equation_residual(a.view(), result.adjusted, perturbed), 1e-9);
    EXPECT_LE(result.max_constraint_residual, 1e-12 * std::max(1.0, largest_magnitude(perturbed)));
    EXPECT_GE(result.refinements, 1);
    EXPECT_GT(result.max_absolute_change, 0.0);
  }
  EXPECT_GT(blocks.pcg_iterations, 0);
  EXPECT_NEAR(blocks.weighted_distance, direct.weighted_distance, 1e-9 * direct.weighted_distance);
}

INSTANTIATE_TEST_SUITE_P(Tables, BothSolvers,
                         testing::Values(SolverCase{"13x13x7", Weighting::kUniform, 2},
                                         SolverCase{"13x13x7", Weighting::kInverse, 5},
                                         SolverCase{"9x8x7", Weighting::kUniform, 3},
                                         SolverCase{"9x8x7", Weighting::kInverse, 2}),
                         [](const testing::TestParamInfo<SolverCase>& param_info) {
                           return "Table" + param_info.param.shape +
                                  (param_info.param.weighting == Weighting::kUniform ? "Uniform" : "Inverse") +
                                  "Weights" + std::to_string(param_info.param.blocks) + "Blocks";
                         });

// The KKT condition: x* − x~ lies in W⁻¹ times A's row space. Compared with the dense solution of
// the singular normal equations, on a hierarchical table whose equations are dependent.
TEST(AdditivityAdjustment, IsTheWeightedLeastSquaresOptimum) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("13x7x7");
  const CsrMatrix a = constraint_matrix(dimensions);
  ASSERT_LT(constraint_rank(a.view()), a.rows());
  const std::vector<double> perturbed = perturbed_table(dimensions, 17);
  for (const Weighting weighting : {Weighting::kUniform, Weighting::kInverse}) {
    const std::vector<double> weights = weights_of(perturbed, weighting);
    const std::vector<double> dense = dense_solution(a.view(), perturbed, weights);
    ASSERT_LE(relative_equation_residual(a.view(), dense, perturbed), 1e-9);
    EXPECT_LE(relative_difference(adjust_additivity_direct(a.view(), perturbed, weights, {}).adjusted, dense), 1e-9);
    EXPECT_LE(relative_difference(
                  block_angular(a.view(), perturbed, weights, layer_ordering(a.view(), dimensions, 4)).adjusted, dense),
              1e-9);
  }
}

// With the multilevel reordering's blocks instead of the tables' layers.
TEST(AdditivityAdjustment, SolvesWithTheMultilevelReordering) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("13x13x7");
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> perturbed = perturbed_table(dimensions, 19);
  const std::vector<double> weights = weights_of(perturbed, Weighting::kInverse);
  const BlockAngularOrdering ordering =
      reorder_block_angular(a.view(), {.blocks = 4, .form = BlockAngularForm::kPrimal, .seed = 3});
  ASSERT_GT(ordering.linking_size, 0);
  const AdjustmentResult direct = adjust_additivity_direct(a.view(), perturbed, weights, {});
  const AdjustmentResult blocks = block_angular(a.view(), perturbed, weights, ordering);
  EXPECT_LE(relative_difference(blocks.adjusted, direct.adjusted), 1e-9);
  EXPECT_LE(relative_equation_residual(a.view(), blocks.adjusted, perturbed), 1e-9);
  for (const AdjustmentResult& result : simulated_processes(a.view(), perturbed, weights, ordering, 3))
    expect_same_result(result, blocks);
}

TEST(AdditivityAdjustment, PreconditionerTermsChangeTheIterationsNotTheSolution) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("13x13x7");
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> perturbed = perturbed_table(dimensions, 23);
  const std::vector<double> weights = weights_of(perturbed, Weighting::kInverse);
  const BlockAngularOrdering ordering = layer_ordering(a.view(), dimensions, 4);
  const AdjustmentResult plain = block_angular(a.view(), perturbed, weights, ordering);
  const AdjustmentResult series = block_angular(a.view(), perturbed, weights, ordering, {.preconditioner_terms = 2});
  EXPECT_LE(relative_difference(series.adjusted, plain.adjusted), 1e-9);
  EXPECT_LT(series.pcg_iterations, plain.pcg_iterations);
}

// ---- determinism ----------------------------------------------------------------------------------

TEST(AdditivityAdjustment, SameBitsWhateverProcessOwnsWhichBlock) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("13x13x7");
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> perturbed = perturbed_table(dimensions, 29);
  const std::vector<double> weights = weights_of(perturbed, Weighting::kInverse);
  const BlockAngularOrdering ordering = layer_ordering(a.view(), dimensions, 6);
  const AdjustmentResult single = block_angular(a.view(), perturbed, weights, ordering);
  ASSERT_GT(single.pcg_iterations, 0);
  for (const std::int32_t processes : {2, 3, 7}) {  // with 7, one process owns no block
    SCOPED_TRACE(std::to_string(processes) + " processes");
    for (const AdjustmentResult& result : simulated_processes(a.view(), perturbed, weights, ordering, processes))
      expect_same_result(result, single);
  }
}

TEST(AdditivityAdjustment, SameBitsForOneAndTwoThreads) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("9x8x7");
  const CsrMatrix a = constraint_matrix(dimensions);
  const std::vector<double> perturbed = perturbed_table(dimensions, 31);
  const std::vector<double> weights = weights_of(perturbed, Weighting::kInverse);
  const BlockAngularOrdering ordering = layer_ordering(a.view(), dimensions, 3);
  const auto run = [&](int threads, bool direct) {
    tbb::task_arena arena(threads);
    return arena.execute([&] {
      return direct ? adjust_additivity_direct(a.view(), perturbed, weights, {})
                    : block_angular(a.view(), perturbed, weights, ordering);
    });
  };
  expect_same_result(run(1, false), run(2, false));
  expect_same_result(run(1, true), run(2, true));
}

}  // namespace
}  // namespace sdc::tables
