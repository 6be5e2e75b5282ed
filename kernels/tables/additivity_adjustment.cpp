#include "kernels/tables/additivity_adjustment.h"

#include <cholmod.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <Eigen/OrderingMethods>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

using RowMatrix = Eigen::SparseMatrix<double, Eigen::RowMajor, std::int64_t>;
using ColumnMatrix = Eigen::SparseMatrix<double, Eigen::ColMajor, std::int64_t>;
using CholeskyFactor = Eigen::SimplicialLLT<ColumnMatrix, Eigen::Lower, Eigen::AMDOrdering<std::int64_t>>;
using Vector = Eigen::VectorXd;
using Clock = std::chrono::steady_clock;

/// Terms per chunk of a reduction. Fixed, so that every sum adds the same chunks in the same order
/// whatever the thread count.
constexpr std::int64_t kReductionChunk = 4096;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Σ term(i) over i in [0, count): each chunk summed in index order, the chunks' sums in chunk order.
template <typename Term>
double ordered_sum(std::int64_t count, const Term& term) {
  const std::int64_t chunks = (count + kReductionChunk - 1) / kReductionChunk;
  std::vector<double> partial(static_cast<std::size_t>(chunks), 0.0);
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, chunks), [&](const auto& range) {
    for (std::int64_t chunk = range.begin(); chunk != range.end(); ++chunk) {
      double sum = 0.0;
      const std::int64_t end = std::min(count, (chunk + 1) * kReductionChunk);
      for (std::int64_t i = chunk * kReductionChunk; i < end; ++i) sum += term(i);
      partial[static_cast<std::size_t>(chunk)] = sum;
    }
  });
  double total = 0.0;
  for (const double sum : partial) total += sum;
  return total;
}

/// The larger of two magnitudes, NaN winning: a solve gone wrong must not pass for a small residual.
double max_keeping_nan(double a, double b) { return (std::isnan(a) || b <= a) ? a : b; }

/// max over i in [0, count) of term(i), 0 for none. A maximum does not depend on the order.
template <typename Term>
double parallel_max(std::int64_t count, const Term& term) {
  return tbb::parallel_reduce(
      tbb::blocked_range<std::int64_t>(0, count, kReductionChunk), 0.0,
      [&](const auto& range, double largest) {
        for (std::int64_t i = range.begin(); i != range.end(); ++i) largest = max_keeping_nan(largest, term(i));
        return largest;
      },
      max_keeping_nan);
}

double dot(const Vector& a, const Vector& b) {
  return ordered_sum(a.size(), [&](std::int64_t i) { return a[i] * b[i]; });
}

/// The equations must hold to this: tolerance × max(1, max_j |x~_j|).
double residual_threshold(std::span<const double> perturbed, const AdjustmentOptions& options) {
  const double largest = parallel_max(static_cast<std::int64_t>(perturbed.size()),
                                      [&](std::int64_t j) { return std::abs(perturbed[static_cast<std::size_t>(j)]); });
  return options.tolerance * std::max(1.0, largest);
}

/// δ = regularization × the mean diagonal of A W⁻¹ Aᵀ, the same in both solvers.
double regularization_of(const CsrView& matrix, std::span<const double> weights, const AdjustmentOptions& options) {
  if (matrix.rows == 0) return 0.0;
  const double trace = ordered_sum(matrix.rows, [&](std::int64_t row) {
    const auto columns = matrix.row_columns(row);
    const auto values = matrix.row_values(row);
    double sum = 0.0;
    for (std::size_t e = 0; e < columns.size(); ++e)
      sum += values[e] * values[e] / weights[static_cast<std::size_t>(columns[e])];
    return sum;
  });
  return options.regularization * trace / static_cast<double>(matrix.rows);
}

void check_solver_inputs(const CsrView& matrix, std::span<const double> perturbed, std::span<const double> weights,
                         const AdjustmentOptions& options) {
  check_adjustment_options(options);
  const auto problem = matrix.problem();
  SDC_CHECK(!problem, "additivity adjustment: the constraint matrix breaks the CSR rules: " + problem.value_or(""));
  check_adjustment_inputs(matrix, perturbed, weights);
}

/// The summaries of x* against x~.
void summarize(AdjustmentResult& result, std::span<const double> perturbed, std::span<const double> weights) {
  const auto change = [&](std::int64_t j) {
    const auto at = static_cast<std::size_t>(j);
    return result.adjusted[at] - perturbed[at];
  };
  const auto n = static_cast<std::int64_t>(perturbed.size());
  result.weighted_distance = std::sqrt(ordered_sum(n, [&](std::int64_t j) {
    const double d = change(j);
    return weights[static_cast<std::size_t>(j)] * d * d;
  }));
  result.max_absolute_change = parallel_max(n, [&](std::int64_t j) { return std::abs(change(j)); });
}

void check_residual(double residual) {
  if (!std::isfinite(residual))
    throw InternalError("additivity adjustment: the refinement produced a non-finite equation residual");
}

// ---- direct solver (CHOLMOD) ----------------------------------------------------------------------

/// A's rows times x, rows in parallel; each row's sum in column order.
void multiply_rows(const CsrView& matrix, std::span<const double> x, std::span<double> y) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, matrix.rows, kReductionChunk), [&](const auto& range) {
    for (std::int64_t row = range.begin(); row != range.end(); ++row) {
      const auto columns = matrix.row_columns(row);
      const auto values = matrix.row_values(row);
      double sum = 0.0;
      for (std::size_t e = 0; e < columns.size(); ++e) sum += values[e] * x[static_cast<std::size_t>(columns[e])];
      y[static_cast<std::size_t>(row)] = sum;
    }
  });
}

CsrMatrix transpose_of(const CsrView& matrix) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(matrix.columns) + 1, 0);
  for (const std::int64_t column : matrix.column_indices) ++offsets[static_cast<std::size_t>(column) + 1];
  for (std::size_t c = 0; c < static_cast<std::size_t>(matrix.columns); ++c) offsets[c + 1] += offsets[c];
  std::vector<std::int64_t> next(offsets.begin(), offsets.end() - 1);
  std::vector<std::int64_t> indices(matrix.column_indices.size());
  std::vector<double> values(matrix.values.size());
  for (std::int64_t row = 0; row < matrix.rows; ++row) {
    const auto columns = matrix.row_columns(row);
    const auto row_values = matrix.row_values(row);
    for (std::size_t e = 0; e < columns.size(); ++e) {
      const auto at = static_cast<std::size_t>(next[static_cast<std::size_t>(columns[e])]++);
      indices[at] = row;
      values[at] = row_values[e];
    }
  }
  return CsrMatrix(matrix.columns, matrix.rows, std::move(offsets), std::move(indices), std::move(values));
}

/// One cholmod_common, started and finished with its owner.
struct CholmodSession {
  cholmod_common common{};
  CholmodSession() {
    cholmod_l_start(&common);
    common.print = 0;  // failures are reported through the status, as exceptions
  }
  ~CholmodSession() { cholmod_l_finish(&common); }
  CholmodSession(const CholmodSession&) = delete;
  CholmodSession& operator=(const CholmodSession&) = delete;
  CholmodSession(CholmodSession&&) = delete;
  CholmodSession& operator=(CholmodSession&&) = delete;

  void check(bool allocated, const char* step) const {
    if (!allocated || common.status != CHOLMOD_OK)
      throw InternalError(std::string("additivity adjustment: CHOLMOD ") + step + " of A W⁻¹ Aᵀ + δI failed (status " +
                          std::to_string(common.status) + ")");
  }
};

struct CholmodDeleter {
  cholmod_common* common = nullptr;
  void operator()(cholmod_sparse* matrix) const { cholmod_l_free_sparse(&matrix, common); }
  void operator()(cholmod_dense* matrix) const { cholmod_l_free_dense(&matrix, common); }
  void operator()(cholmod_factor* factor) const { cholmod_l_free_factor(&factor, common); }
};

/// The Cholesky factor of M_δ = A W⁻¹ Aᵀ + δI. CHOLMOD factors F Fᵀ + δI for F = A W^-1/2 given
/// unsymmetric, without forming the product beforehand, choosing the ordering (AMD, or METIS when the
/// fill is large) and between supernodal and simplicial itself. Memory: F (16 bytes per non-zero, the
/// transposed copy made on the way is freed) and the factor's fill.
class CholmodSolver {
 public:
  CholmodSolver(const CsrView& matrix, std::span<const double> weights, double delta) {
    cholmod_common* common = &session_.common;
    // A's CSR arrays are the compressed columns of Aᵀ, so W^-1/2 Aᵀ is filled directly and transposed.
    std::unique_ptr<cholmod_sparse, CholmodDeleter> scaled_transpose(
        cholmod_l_allocate_sparse(static_cast<std::size_t>(matrix.columns), static_cast<std::size_t>(matrix.rows),
                                  static_cast<std::size_t>(matrix.entry_count()), 1, 1, 0, CHOLMOD_REAL, common),
        CholmodDeleter{common});
    session_.check(scaled_transpose != nullptr, "allocation");
    auto* offsets = static_cast<SuiteSparse_long*>(scaled_transpose->p);
    auto* indices = static_cast<SuiteSparse_long*>(scaled_transpose->i);
    auto* values = static_cast<double*>(scaled_transpose->x);
    std::copy(matrix.row_offsets.begin(), matrix.row_offsets.end(), offsets);
    std::copy(matrix.column_indices.begin(), matrix.column_indices.end(), indices);
    for (std::size_t e = 0; e < matrix.values.size(); ++e)
      values[e] = matrix.values[e] / std::sqrt(weights[static_cast<std::size_t>(matrix.column_indices[e])]);
    std::unique_ptr<cholmod_sparse, CholmodDeleter> scaled(cholmod_l_transpose(scaled_transpose.get(), 1, common),
                                                           CholmodDeleter{common});
    session_.check(scaled != nullptr, "transposition");
    scaled_transpose.reset();
    factor_ = std::unique_ptr<cholmod_factor, CholmodDeleter>(cholmod_l_analyze(scaled.get(), common),
                                                              CholmodDeleter{common});
    session_.check(factor_ != nullptr, "analysis");
    double beta[2] = {delta, 0.0};
    const int factored = cholmod_l_factorize_p(scaled.get(), beta, nullptr, 0, factor_.get(), common);
    session_.check(factored != 0, "factorisation");
    if (factor_->minor != factor_->n)
      throw InternalError("additivity adjustment: CHOLMOD found A W⁻¹ Aᵀ + δI not positive definite at row " +
                          std::to_string(factor_->minor));
  }

  /// M_δ⁻¹ rhs.
  std::vector<double> solve(std::span<const double> rhs) {
    cholmod_common* common = &session_.common;
    std::unique_ptr<cholmod_dense, CholmodDeleter> right(
        cholmod_l_allocate_dense(rhs.size(), 1, rhs.size(), CHOLMOD_REAL, common), CholmodDeleter{common});
    session_.check(right != nullptr, "allocation");
    std::copy(rhs.begin(), rhs.end(), static_cast<double*>(right->x));
    std::unique_ptr<cholmod_dense, CholmodDeleter> solution(
        cholmod_l_solve(CHOLMOD_A, factor_.get(), right.get(), common), CholmodDeleter{common});
    session_.check(solution != nullptr, "solve");
    const auto* values = static_cast<const double*>(solution->x);
    return {values, values + rhs.size()};
  }

 private:
  CholmodSession session_;  // first member: finished after the factor is freed
  std::unique_ptr<cholmod_factor, CholmodDeleter> factor_;
};

// ---- block-angular solver ------------------------------------------------------------------------

/// The primal block-angular layout of `ordering`, checked against the matrix: where every block's
/// columns and rows lie in the ordering's permutations, and each column's index within its block.
struct PrimalLayout {
  std::int32_t blocks = 0;
  std::int64_t linking = 0;  ///< l
  /// Block b's columns at [column_offsets[b], column_offsets[b + 1]) of column_order.
  std::vector<std::int64_t> column_offsets;
  /// Block b's rows likewise in row_order, the linking rows from row_offsets[blocks] to the end.
  std::vector<std::int64_t> row_offsets;
  std::vector<std::int64_t> column_position;  ///< per column: its index among its block's columns
};

[[noreturn]] void ordering_problem(const std::string& what) {
  throw InternalError("additivity adjustment: the block-angular ordering " + what);
}

/// Positions of the entities (columns or rows) by block, block by block in index order, kLinking last;
/// checks that `order` lists them so.
std::vector<std::int64_t> block_offsets(std::span<const std::int32_t> block_of, std::int32_t blocks,
                                        std::span<const std::int64_t> order, std::vector<std::int64_t>& position,
                                        const char* what) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(blocks) + 2, 0);
  position.assign(block_of.size(), 0);
  for (std::size_t i = 0; i < block_of.size(); ++i) {
    const std::int32_t block = block_of[i];
    const std::size_t slot =
        block == BlockAngularOrdering::kLinking ? static_cast<std::size_t>(blocks) : static_cast<std::size_t>(block);
    position[i] = offsets[slot + 1]++;
  }
  for (std::size_t b = 0; b <= static_cast<std::size_t>(blocks); ++b) offsets[b + 1] += offsets[b];
  if (order.size() != block_of.size()) ordering_problem(std::string("has a ") + what + " order of the wrong length");
  for (std::size_t i = 0; i < block_of.size(); ++i) {
    const std::int32_t block = block_of[i];
    const std::size_t slot =
        block == BlockAngularOrdering::kLinking ? static_cast<std::size_t>(blocks) : static_cast<std::size_t>(block);
    if (order[static_cast<std::size_t>(offsets[slot] + position[i])] != static_cast<std::int64_t>(i))
      ordering_problem(std::string("lists ") + what + " " + std::to_string(i) +
                       " out of its block's place in the permutation");
  }
  return offsets;
}

PrimalLayout primal_layout(const CsrView& matrix, const BlockAngularOrdering& ordering) {
  if (ordering.form != BlockAngularForm::kPrimal) ordering_problem("is not of the primal form (linking rows)");
  const std::int32_t blocks = ordering.blocks;
  if (blocks < 1) ordering_problem("has no block");
  if (ordering.column_block.size() != static_cast<std::size_t>(matrix.columns) ||
      ordering.row_block.size() != static_cast<std::size_t>(matrix.rows))
    ordering_problem("does not have one block per row and column of the matrix");
  if (ordering.block_rows.size() != static_cast<std::size_t>(blocks) ||
      ordering.block_columns.size() != static_cast<std::size_t>(blocks))
    ordering_problem("does not give the sizes of every block");
  for (std::size_t j = 0; j < ordering.column_block.size(); ++j)
    if (ordering.column_block[j] < 0 || ordering.column_block[j] >= blocks)
      ordering_problem("puts column " + std::to_string(j) + " in no block");
  for (std::size_t i = 0; i < ordering.row_block.size(); ++i)
    if (ordering.row_block[i] < BlockAngularOrdering::kLinking || ordering.row_block[i] >= blocks)
      ordering_problem("puts row " + std::to_string(i) + " in no block");
  for (std::int64_t row = 0; row < matrix.rows; ++row) {
    const std::int32_t block = ordering.row_block[static_cast<std::size_t>(row)];
    if (block == BlockAngularOrdering::kLinking) continue;
    for (const std::int64_t column : matrix.row_columns(row))
      if (ordering.column_block[static_cast<std::size_t>(column)] != block)
        ordering_problem("puts row " + std::to_string(row) + " in block " + std::to_string(block) + " but its column " +
                         std::to_string(column) + " in block " +
                         std::to_string(ordering.column_block[static_cast<std::size_t>(column)]));
  }

  PrimalLayout layout;
  layout.blocks = blocks;
  layout.column_offsets =
      block_offsets(ordering.column_block, blocks, ordering.column_order, layout.column_position, "column");
  std::vector<std::int64_t> row_position;
  layout.row_offsets = block_offsets(ordering.row_block, blocks, ordering.row_order, row_position, "row");
  layout.column_offsets.pop_back();  // no linking columns in the primal form
  layout.linking =
      layout.row_offsets[static_cast<std::size_t>(blocks) + 1] - layout.row_offsets[static_cast<std::size_t>(blocks)];
  for (std::size_t b = 0; b < static_cast<std::size_t>(blocks); ++b)
    if (ordering.block_columns[b] != layout.column_offsets[b + 1] - layout.column_offsets[b] ||
        ordering.block_rows[b] != layout.row_offsets[b + 1] - layout.row_offsets[b])
      ordering_problem("reports sizes of block " + std::to_string(b) + " that its assignment does not give");
  if (ordering.linking_size != layout.linking)
    ordering_problem("reports a linking size that its assignment does not give");
  return layout;
}

/// A CSR matrix's rows as an Eigen matrix (copied).
RowMatrix row_matrix(std::int64_t rows, std::int64_t columns, const std::vector<std::int64_t>& offsets,
                     const std::vector<std::int64_t>& indices, const std::vector<double>& values) {
  return RowMatrix(Eigen::Map<const RowMatrix>(rows, columns, static_cast<std::int64_t>(values.size()), offsets.data(),
                                               indices.data(), values.data()));
}

/// A column-major (CSC) matrix's arrays as an Eigen matrix (copied).
ColumnMatrix column_matrix(std::int64_t rows, std::int64_t columns, const std::vector<std::int64_t>& offsets,
                           const std::vector<std::int64_t>& indices, const std::vector<double>& values) {
  return ColumnMatrix(Eigen::Map<const ColumnMatrix>(rows, columns, static_cast<std::int64_t>(values.size()),
                                                     offsets.data(), indices.data(), values.data()));
}

/// The linking rows L by column (L's transpose): for every column of the matrix, the linking rows it
/// lies in (as their index among the linking rows, increasing) and its coefficients there.
struct LinkingByColumn {
  std::vector<std::int64_t> offsets;  ///< column j's entries at [offsets[j], offsets[j + 1])
  std::vector<std::int64_t> rows;
  std::vector<double> values;
};

LinkingByColumn linking_by_column(const CsrView& matrix, std::span<const std::int64_t> linking_rows) {
  LinkingByColumn by_column;
  by_column.offsets.assign(static_cast<std::size_t>(matrix.columns) + 1, 0);
  for (const std::int64_t row : linking_rows)
    for (const std::int64_t column : matrix.row_columns(row)) ++by_column.offsets[static_cast<std::size_t>(column) + 1];
  for (std::size_t j = 0; j < static_cast<std::size_t>(matrix.columns); ++j)
    by_column.offsets[j + 1] += by_column.offsets[j];
  std::vector<std::int64_t> next(by_column.offsets.begin(), by_column.offsets.end() - 1);
  by_column.rows.resize(static_cast<std::size_t>(by_column.offsets.back()));
  by_column.values.resize(by_column.rows.size());
  for (std::size_t p = 0; p < linking_rows.size(); ++p) {
    const auto columns = matrix.row_columns(linking_rows[p]);
    const auto values = matrix.row_values(linking_rows[p]);
    for (std::size_t e = 0; e < columns.size(); ++e) {
      const auto at = static_cast<std::size_t>(next[static_cast<std::size_t>(columns[e])]++);
      by_column.rows[at] = static_cast<std::int64_t>(p);
      by_column.values[at] = values[e];
    }
  }
  return by_column;
}

/// D_δ = L W⁻¹ Lᵀ + δI. Row p gathers, over its columns j in order, the linking rows q sharing j,
/// and adds the terms of one entry in that order. Rows in parallel; Eigen's product would transpose L
/// as a whole, which for 10⁷ columns costs more than factoring all the blocks.
ColumnMatrix linking_normal_matrix(const CsrView& matrix, std::span<const std::int64_t> linking_rows,
                                   const LinkingByColumn& by_column, std::span<const double> weights, double delta) {
  constexpr std::size_t kRowsPerTask = 256;
  const std::size_t linking = linking_rows.size();
  struct Rows {
    std::vector<std::int64_t> lengths;
    std::vector<std::int64_t> indices;
    std::vector<double> values;
  };
  std::vector<Rows> parts((linking + kRowsPerTask - 1) / kRowsPerTask);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, parts.size()), [&](const auto& range) {
    std::vector<std::pair<std::int64_t, double>> terms;
    for (std::size_t part = range.begin(); part != range.end(); ++part) {
      Rows& rows = parts[part];
      for (std::size_t p = part * kRowsPerTask; p < std::min(linking, (part + 1) * kRowsPerTask); ++p) {
        const auto columns = matrix.row_columns(linking_rows[p]);
        const auto values = matrix.row_values(linking_rows[p]);
        terms.assign(1, {static_cast<std::int64_t>(p), delta});  // δ first: the diagonal, even of an empty row
        for (std::size_t e = 0; e < columns.size(); ++e) {
          const auto column = static_cast<std::size_t>(columns[e]);
          // (a_pj a_qj) / w_j: the same bits for (p, q) and (q, p), so D is exactly symmetric.
          for (auto at = static_cast<std::size_t>(by_column.offsets[column]);
               at < static_cast<std::size_t>(by_column.offsets[column + 1]); ++at)
            terms.emplace_back(by_column.rows[at], values[e] * by_column.values[at] / weights[column]);
        }
        std::stable_sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        const std::size_t first = rows.indices.size();
        for (const auto& [q, term] : terms) {
          if (rows.indices.size() > first && rows.indices.back() == q) {
            rows.values.back() += term;
          } else {
            rows.indices.push_back(q);
            rows.values.push_back(term);
          }
        }
        rows.lengths.push_back(static_cast<std::int64_t>(rows.indices.size() - first));
      }
    }
  });
  std::vector<std::int64_t> offsets{0};
  std::vector<std::int64_t> indices;
  std::vector<double> values;
  for (const Rows& rows : parts) {
    for (const std::int64_t length : rows.lengths) offsets.push_back(offsets.back() + length);
    indices.insert(indices.end(), rows.indices.begin(), rows.indices.end());
    values.insert(values.end(), rows.values.begin(), rows.values.end());
  }
  // D is symmetric: its rows are its columns.
  const auto size = static_cast<std::int64_t>(linking);
  return column_matrix(size, size, offsets, indices, values);
}

/// A block this process owns: A_i (its rows), L_i (the linking rows' entries in its columns), the
/// factor of B_i = A_i W_i⁻¹ A_iᵀ + δI, and its columns' current values and equation residuals.
/// B_i is factored by CHOLMOD (supernodal where the fill is large): on tables with hierarchical
/// dimensions a block's own lines meet many others and the factor is nearly dense per layer, where a
/// simplicial factorisation runs many times slower.
struct OwnedBlock {
  std::int32_t block = 0;
  RowMatrix equations;
  ColumnMatrix linking;
  std::vector<double> weights;
  Vector inverse_weights;
  Vector adjusted;
  Vector residual;  ///< A_i x_i
  std::unique_ptr<CholmodSolver> factor;

  void factorize(double delta) {
    if (equations.rows() == 0) return;
    const auto entries = static_cast<std::size_t>(equations.nonZeros());
    const CsrView view{
        equations.rows(), equations.cols(),
        std::span<const std::int64_t>(equations.outerIndexPtr(), static_cast<std::size_t>(equations.rows()) + 1),
        std::span<const std::int64_t>(equations.innerIndexPtr(), entries),
        std::span<const double>(equations.valuePtr(), entries)};
    factor = std::make_unique<CholmodSolver>(view, weights, delta);
  }

  Vector solve(const Vector& rhs) const {
    if (equations.rows() == 0) return rhs;
    const std::vector<double> solution =
        factor->solve(std::span<const double>(rhs.data(), static_cast<std::size_t>(rhs.size())));
    return Eigen::Map<const Vector>(solution.data(), static_cast<Eigen::Index>(solution.size()));
  }

  /// C_iᵀ B_i⁻¹ u = L_i W_i⁻¹ A_iᵀ B_i⁻¹ u, into `out` (l values).
  void linking_image(const Vector& u, std::span<double> out) const {
    const Vector back = inverse_weights.cwiseProduct(equations.transpose() * solve(u));
    Eigen::Map<Vector>(out.data(), static_cast<Eigen::Index>(out.size())).noalias() = linking * back;
  }

  /// W_i⁻¹ L_iᵀ v: the block columns' share of the linking rows' solution.
  Vector linking_columns(std::span<const double> v) const {
    return inverse_weights.cwiseProduct(linking.transpose() *
                                        Eigen::Map<const Vector>(v.data(), static_cast<Eigen::Index>(v.size())));
  }
};

class BlockAngularSolver {
 public:
  BlockAngularSolver(const CsrView& matrix, std::span<const double> perturbed, std::span<const double> weights,
                     const BlockAngularOrdering& ordering, std::span<const std::int32_t> owned_blocks,
                     BlockExchange& exchange, const AdjustmentOptions& options)
      : matrix_(matrix),
        perturbed_(perturbed),
        weights_(weights),
        ordering_(ordering),
        exchange_(exchange),
        options_(options),
        layout_(primal_layout(matrix, ordering)) {
    for (std::size_t i = 0; i < owned_blocks.size(); ++i)
      if (owned_blocks[i] < 0 || owned_blocks[i] >= layout_.blocks || (i > 0 && owned_blocks[i] <= owned_blocks[i - 1]))
        throw InternalError("additivity adjustment: the owned blocks are not increasing block numbers below " +
                            std::to_string(layout_.blocks));
    const Clock::time_point start = Clock::now();
    delta_ = regularization_of(matrix, weights, options);
    blocks_.resize(owned_blocks.size());
    for (std::size_t i = 0; i < owned_blocks.size(); ++i) blocks_[i].block = owned_blocks[i];
    build_blocks();
    factor_seconds_ = seconds_since(start);
  }

  AdjustmentResult run() {
    AdjustmentResult result;
    const double threshold = residual_threshold(perturbed_, options_);
    const Clock::time_point start = Clock::now();
    for (;;) {
      result.max_constraint_residual = evaluate_residual();
      check_residual(result.max_constraint_residual);
      if (result.max_constraint_residual <= threshold || result.refinements == options_.max_refinements) break;
      if (!factored_) factorize();
      Vector linking_solution;
      result.pcg_iterations += solve_linking(schur_right_hand_side(), 0.5 * threshold, linking_solution);
      update(linking_solution);
      ++result.refinements;
    }
    result.adjusted = gather_adjusted();
    result.solve_seconds = seconds_since(start) - factor_in_loop_seconds_;
    result.factor_seconds = factor_seconds_ + factor_in_loop_seconds_;
    summarize(result, perturbed_, weights_);
    return result;
  }

 private:
  /// The linking rows in order (the tail of the row order).
  std::span<const std::int64_t> linking_rows() const {
    return std::span<const std::int64_t>(ordering_.row_order)
        .subspan(static_cast<std::size_t>(layout_.row_offsets[static_cast<std::size_t>(layout_.blocks)]));
  }

  std::int64_t block_column_count(std::int32_t block) const {
    const auto b = static_cast<std::size_t>(block);
    return layout_.column_offsets[b + 1] - layout_.column_offsets[b];
  }

  /// A_i, L_i, the inverse weights and x~ of every owned block; L by column first.
  void build_blocks() {
    const std::size_t owned = blocks_.size();
    const std::int64_t linking = layout_.linking;
    linking_by_column_ = linking_by_column(matrix_, linking_rows());
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, owned, 1), [&](const auto& range) {
      for (std::size_t i = range.begin(); i != range.end(); ++i) {
        OwnedBlock& block = blocks_[i];
        const auto b = static_cast<std::size_t>(block.block);
        const std::int64_t columns = block_column_count(block.block);
        block.weights.resize(static_cast<std::size_t>(columns));
        block.inverse_weights.resize(columns);
        block.adjusted.resize(columns);
        std::vector<std::int64_t> offsets{0};
        std::vector<std::int64_t> indices;
        std::vector<double> values;
        for (std::int64_t p = 0; p < columns; ++p) {
          const auto column =
              static_cast<std::size_t>(ordering_.column_order[static_cast<std::size_t>(layout_.column_offsets[b] + p)]);
          block.weights[static_cast<std::size_t>(p)] = weights_[column];
          block.inverse_weights[p] = 1.0 / weights_[column];
          block.adjusted[p] = perturbed_[column];
          const auto begin = static_cast<std::ptrdiff_t>(linking_by_column_.offsets[column]);
          const auto end = static_cast<std::ptrdiff_t>(linking_by_column_.offsets[column + 1]);
          indices.insert(indices.end(), linking_by_column_.rows.begin() + begin, linking_by_column_.rows.begin() + end);
          values.insert(values.end(), linking_by_column_.values.begin() + begin,
                        linking_by_column_.values.begin() + end);
          offsets.push_back(static_cast<std::int64_t>(values.size()));
        }
        block.linking = column_matrix(linking, columns, offsets, indices, values);
        offsets.assign(1, 0);
        indices.clear();
        values.clear();
        const auto first_row = static_cast<std::size_t>(layout_.row_offsets[b]);
        const auto last_row = static_cast<std::size_t>(layout_.row_offsets[b + 1]);
        std::size_t entries = 0;
        for (std::size_t position = first_row; position < last_row; ++position)
          entries += matrix_.row_columns(ordering_.row_order[position]).size();
        indices.reserve(entries);
        values.reserve(entries);
        for (std::int64_t position = layout_.row_offsets[b]; position < layout_.row_offsets[b + 1]; ++position) {
          const std::int64_t row = ordering_.row_order[static_cast<std::size_t>(position)];
          const auto row_columns = matrix_.row_columns(row);
          const auto row_values = matrix_.row_values(row);
          for (std::size_t e = 0; e < row_columns.size(); ++e) {
            indices.push_back(layout_.column_position[static_cast<std::size_t>(row_columns[e])]);
            values.push_back(row_values[e]);
          }
          offsets.push_back(static_cast<std::int64_t>(values.size()));
        }
        block.equations = row_matrix(static_cast<std::int64_t>(offsets.size()) - 1, columns, offsets, indices, values);
      }
    });
  }

  /// Factors the owned blocks (in parallel) and D_δ = L W⁻¹ Lᵀ + δI, which every process forms from
  /// the linking rows of the whole matrix.
  void factorize() {
    const Clock::time_point start = Clock::now();
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks_.size(), 1), [&](const auto& range) {
      for (std::size_t i = range.begin(); i != range.end(); ++i) blocks_[i].factorize(delta_);
    });
    if (layout_.linking > 0) {
      linking_matrix_ = linking_normal_matrix(matrix_, linking_rows(), linking_by_column_, weights_, delta_);
      linking_factor_.compute(linking_matrix_);
      if (linking_factor_.info() != Eigen::Success)
        throw InternalError("additivity adjustment: the Cholesky factorisation of the linking rows' D failed");
    }
    linking_by_column_ = {};
    factored_ = true;
    factor_in_loop_seconds_ += seconds_since(start);
  }

  /// Runs fill(block, segment) for every owned block, `length` values each, shares the segments and
  /// returns them all, block b's at [b × length, (b + 1) × length).
  std::vector<double>& share_segments(std::int64_t length,
                                      const std::function<void(OwnedBlock&, std::span<double>)>& fill) {
    const auto count = static_cast<std::size_t>(layout_.blocks);
    segments_.assign(count * static_cast<std::size_t>(length), 0.0);
    segment_offsets_.resize(count + 1);
    for (std::size_t b = 0; b <= count; ++b) segment_offsets_[b] = static_cast<std::int64_t>(b) * length;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks_.size(), 1), [&](const auto& range) {
      for (std::size_t i = range.begin(); i != range.end(); ++i) {
        const auto b = static_cast<std::size_t>(blocks_[i].block);
        fill(blocks_[i], std::span<double>(segments_).subspan(b * static_cast<std::size_t>(length),
                                                              static_cast<std::size_t>(length)));
      }
    });
    exchange_.share(segments_, segment_offsets_);
    return segments_;
  }

  /// Σ_b of the first `count` values of the segments of `length`, in block order.
  Vector sum_segments(const std::vector<double>& segments, std::int64_t length, std::int64_t count) const {
    Vector sum(count);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, count, kReductionChunk), [&](const auto& range) {
      for (std::int64_t p = range.begin(); p != range.end(); ++p) {
        double total = 0.0;
        for (std::int32_t b = 0; b < layout_.blocks; ++b) total += segments[static_cast<std::size_t>(b * length + p)];
        sum[p] = total;
      }
    });
    return sum;
  }

  /// Sets every owned block's A_i x_i and the linking residual Σ_i L_i x_i; returns max |A x|.
  double evaluate_residual() {
    const std::int64_t linking = layout_.linking;
    const std::vector<double>& segments = share_segments(linking + 1, [&](OwnedBlock& block, std::span<double> out) {
      block.residual = block.equations * block.adjusted;
      Eigen::Map<Vector>(out.data(), linking).noalias() = block.linking * block.adjusted;
      double largest = 0.0;
      for (Eigen::Index r = 0; r < block.residual.size(); ++r)
        largest = max_keeping_nan(largest, std::abs(block.residual[r]));
      out[static_cast<std::size_t>(linking)] = largest;
    });
    linking_residual_ = sum_segments(segments, linking + 1, linking);
    double largest = 0.0;
    for (std::int32_t b = 0; b < layout_.blocks; ++b)
      largest = max_keeping_nan(largest, segments[static_cast<std::size_t>(b * (linking + 1) + linking)]);
    for (Eigen::Index p = 0; p < linking_residual_.size(); ++p)
      largest = max_keeping_nan(largest, std::abs(linking_residual_[p]));
    return largest;
  }

  /// g₂ − Σ_i C_iᵀ B_i⁻¹ g₁ᵢ, with g = A x the current residual.
  Vector schur_right_hand_side() {
    const std::vector<double>& segments = share_segments(
        layout_.linking, [](OwnedBlock& block, std::span<double> out) { block.linking_image(block.residual, out); });
    return linking_residual_ - sum_segments(segments, layout_.linking, layout_.linking);
  }

  /// S v = D_δ v − Σ_i C_iᵀ B_i⁻¹ C_i v.
  Vector schur_product(const Vector& v) { return linking_matrix_ * v - coupling_product(v); }

  /// Σ_i C_iᵀ B_i⁻¹ C_i v, C_i v = A_i W_i⁻¹ L_iᵀ v.
  Vector coupling_product(const Vector& v) {
    const std::span<const double> shared(v.data(), static_cast<std::size_t>(v.size()));
    const std::vector<double>& segments =
        share_segments(layout_.linking, [&](OwnedBlock& block, std::span<double> out) {
          block.linking_image(block.equations * block.linking_columns(shared), out);
        });
    return sum_segments(segments, layout_.linking, layout_.linking);
  }

  /// The truncated power series Σ_{i ≤ h} (D⁻¹ Q)^i D⁻¹ r, Q = Σ_i C_iᵀ B_i⁻¹ C_i, by Horner's rule:
  /// z ← D⁻¹ (r + Q z), h times from z = D⁻¹ r.
  Vector precondition(const Vector& r) {
    Vector z = linking_factor_.solve(r);
    for (std::int32_t term = 0; term < options_.preconditioner_terms; ++term)
      z = linking_factor_.solve(Vector(r + coupling_product(z)));
    return z;
  }

  /// Preconditioned conjugate gradients on S y = rhs from y = 0, until ‖r‖ ≤ pcg_tolerance × ‖rhs‖
  /// or max_i |r_i| ≤ `enough`. The second test is what makes the solve affordable: with y₁ from
  /// y₂, the step leaves the equations the residual δ y + (0, r), so an r below the equations'
  /// threshold is all the refinement can use, while going further means resolving S's eigenvalues
  /// of order δ (the table's dependent equations), hundreds of iterations for nothing.
  /// Every process runs the same iterations on the same shared numbers. Returns the iterations.
  std::int64_t solve_linking(const Vector& rhs, double enough, Vector& solution) {
    solution = Vector::Zero(rhs.size());
    const double rhs_norm = std::sqrt(dot(rhs, rhs));
    const auto small = [&](const Vector& r) {
      return parallel_max(r.size(), [&](std::int64_t i) { return std::abs(r[i]); }) <= enough;
    };
    if (rhs_norm == 0.0 || small(rhs)) return 0;
    Vector residual = rhs;
    Vector z = precondition(residual);
    Vector direction = z;
    double rz = dot(residual, z);
    std::int64_t iteration = 0;
    while (iteration < options_.max_pcg_iterations) {
      ++iteration;
      const Vector product = schur_product(direction);
      const double curvature = dot(direction, product);
      // S is positive definite; a non-positive curvature means rounding has taken over, and the
      // refinement around this solve corrects what is left.
      if (!(curvature > 0.0)) break;
      const double step = rz / curvature;
      solution += step * direction;
      residual -= step * product;
      if (std::sqrt(dot(residual, residual)) <= options_.pcg_tolerance * rhs_norm || small(residual)) break;
      z = precondition(residual);
      const double next_rz = dot(residual, z);
      direction = z + (next_rz / rz) * direction;
      rz = next_rz;
    }
    return iteration;
  }

  /// x_i ← x_i − W_i⁻¹ (A_iᵀ y₁ᵢ + L_iᵀ y₂) with B_i y₁ᵢ = g₁ᵢ − C_i y₂, on the owned blocks.
  void update(const Vector& linking_solution) {
    const std::span<const double> shared(linking_solution.data(), static_cast<std::size_t>(linking_solution.size()));
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks_.size(), 1), [&](const auto& range) {
      for (std::size_t i = range.begin(); i != range.end(); ++i) {
        OwnedBlock& block = blocks_[i];
        const Vector from_linking = block.linking_columns(shared);
        const Vector own = block.solve(block.residual - block.equations * from_linking);
        block.adjusted -= block.inverse_weights.cwiseProduct(block.equations.transpose() * own) + from_linking;
      }
    });
  }

  /// Every block's x_i shared, in the original column order.
  std::vector<double> gather_adjusted() {
    std::vector<double> values(static_cast<std::size_t>(matrix_.columns), 0.0);
    for (const OwnedBlock& block : blocks_) {
      const auto begin = static_cast<std::size_t>(layout_.column_offsets[static_cast<std::size_t>(block.block)]);
      std::copy(block.adjusted.begin(), block.adjusted.end(), values.begin() + static_cast<std::ptrdiff_t>(begin));
    }
    exchange_.share(values, layout_.column_offsets);
    std::vector<double> adjusted(values.size());
    for (std::size_t p = 0; p < values.size(); ++p)
      adjusted[static_cast<std::size_t>(ordering_.column_order[p])] = values[p];
    return adjusted;
  }

  const CsrView& matrix_;
  std::span<const double> perturbed_;
  std::span<const double> weights_;
  const BlockAngularOrdering& ordering_;
  BlockExchange& exchange_;
  const AdjustmentOptions& options_;
  PrimalLayout layout_;
  double delta_ = 0.0;
  std::vector<OwnedBlock> blocks_;
  LinkingByColumn linking_by_column_;  ///< until D_δ is formed
  bool factored_ = false;
  ColumnMatrix linking_matrix_;  ///< D_δ
  CholeskyFactor linking_factor_;
  Vector linking_residual_;
  std::vector<double> segments_;
  std::vector<std::int64_t> segment_offsets_;
  double factor_seconds_ = 0.0;
  double factor_in_loop_seconds_ = 0.0;
};

}  // namespace

void check_adjustment_options(const AdjustmentOptions& options) {
  const auto positive = [](double value, const char* name) {
    if (!(value > 0.0) || !std::isfinite(value))
      throw ParameterError(std::string("additivity adjustment: ") + name + " must be positive and finite");
  };
  positive(options.tolerance, "tolerance");
  positive(options.regularization, "regularization");
  positive(options.pcg_tolerance, "pcg_tolerance");
  if (options.max_refinements < 1) throw ParameterError("additivity adjustment: max_refinements must be at least 1");
  if (options.max_pcg_iterations < 1)
    throw ParameterError("additivity adjustment: max_pcg_iterations must be at least 1");
  if (options.preconditioner_terms < 0)
    throw ParameterError("additivity adjustment: preconditioner_terms must not be negative");
}

void check_adjustment_inputs(const CsrView& matrix, std::span<const double> perturbed,
                             std::span<const double> weights) {
  const auto columns = std::to_string(matrix.columns);
  if (perturbed.size() != static_cast<std::size_t>(matrix.columns))
    throw ParameterError("additivity adjustment: " + std::to_string(perturbed.size()) +
                         " perturbed values for a constraint matrix of " + columns + " columns");
  if (weights.size() != static_cast<std::size_t>(matrix.columns))
    throw ParameterError("additivity adjustment: " + std::to_string(weights.size()) +
                         " weights for a constraint matrix of " + columns + " columns");
  for (std::size_t j = 0; j < weights.size(); ++j) {
    if (!(weights[j] > 0.0) || !std::isfinite(weights[j]))
      throw ParameterError("additivity adjustment: the weight of column " + std::to_string(j) +
                           " is not positive and finite");
    if (!std::isfinite(perturbed[j]))
      throw ParameterError("additivity adjustment: the perturbed value of column " + std::to_string(j) +
                           " is not finite");
  }
}

AdjustmentResult adjust_additivity_direct(const CsrView& matrix, std::span<const double> perturbed,
                                          std::span<const double> weights, const AdjustmentOptions& options) {
  check_solver_inputs(matrix, perturbed, weights, options);
  const double threshold = residual_threshold(perturbed, options);
  AdjustmentResult result;
  result.adjusted.assign(perturbed.begin(), perturbed.end());
  std::vector<double> residual(static_cast<std::size_t>(matrix.rows));
  std::vector<double> correction(static_cast<std::size_t>(matrix.columns));
  std::unique_ptr<CholmodSolver> solver;
  CsrMatrix transpose;
  const Clock::time_point start = Clock::now();
  for (;;) {
    multiply_rows(matrix, result.adjusted, residual);
    result.max_constraint_residual =
        parallel_max(matrix.rows, [&](std::int64_t row) { return std::abs(residual[static_cast<std::size_t>(row)]); });
    check_residual(result.max_constraint_residual);
    if (result.max_constraint_residual <= threshold || result.refinements == options.max_refinements) break;
    if (!solver) {
      const Clock::time_point factor_start = Clock::now();
      transpose = transpose_of(matrix);
      solver = std::make_unique<CholmodSolver>(matrix, weights, regularization_of(matrix, weights, options));
      result.factor_seconds = seconds_since(factor_start);
    }
    const std::vector<double> multipliers = solver->solve(residual);
    multiply_rows(transpose.view(), multipliers, correction);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, correction.size(), kReductionChunk), [&](const auto& range) {
      for (std::size_t j = range.begin(); j != range.end(); ++j) result.adjusted[j] -= correction[j] / weights[j];
    });
    ++result.refinements;
  }
  result.solve_seconds = seconds_since(start) - result.factor_seconds;
  summarize(result, perturbed, weights);
  return result;
}

FactorPrediction predict_normal_factor(const CsrView& matrix, std::span<const std::int64_t> rows) {
  if (rows.empty()) return {};
  CholmodSession session;
  cholmod_common* common = &session.common;
  std::size_t entries = 0;
  for (const std::int64_t row : rows) entries += matrix.row_columns(row).size();
  // The rows' CSR pattern is the compressed columns of Rᵀ; transposed, R itself.
  std::unique_ptr<cholmod_sparse, CholmodDeleter> pattern_transpose(
      cholmod_l_allocate_sparse(static_cast<std::size_t>(matrix.columns), rows.size(), entries, 1, 1, 0,
                                CHOLMOD_PATTERN, common),
      CholmodDeleter{common});
  session.check(pattern_transpose != nullptr, "allocation");
  auto* offsets = static_cast<SuiteSparse_long*>(pattern_transpose->p);
  auto* indices = static_cast<SuiteSparse_long*>(pattern_transpose->i);
  offsets[0] = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto columns = matrix.row_columns(rows[r]);
    std::copy(columns.begin(), columns.end(), indices + offsets[r]);
    offsets[r + 1] = offsets[r] + static_cast<SuiteSparse_long>(columns.size());
  }
  std::unique_ptr<cholmod_sparse, CholmodDeleter> pattern(cholmod_l_transpose(pattern_transpose.get(), 0, common),
                                                          CholmodDeleter{common});
  session.check(pattern != nullptr, "transposition");
  pattern_transpose.reset();
  std::unique_ptr<cholmod_factor, CholmodDeleter> factor(cholmod_l_analyze(pattern.get(), common),
                                                         CholmodDeleter{common});
  session.check(factor != nullptr, "analysis");
  return {common->fl, common->lnz};
}

double predicted_block_angular_work(const FactorPrediction& blocks, const FactorPrediction& linking,
                                    std::int64_t matrix_nonzeros) {
  const double per_iteration = 4.0 * (blocks.nonzeros + linking.nonzeros) + 4.0 * static_cast<double>(matrix_nonzeros);
  return blocks.flops + linking.flops + kPredictedSchurIterations * per_iteration;
}

AdjustmentResult adjust_additivity_block_angular(const CsrView& matrix, std::span<const double> perturbed,
                                                 std::span<const double> weights, const BlockAngularOrdering& ordering,
                                                 std::span<const std::int32_t> owned_blocks, BlockExchange& exchange,
                                                 const AdjustmentOptions& options) {
  check_solver_inputs(matrix, perturbed, weights, options);
  BlockAngularSolver solver(matrix, perturbed, weights, ordering, owned_blocks, exchange, options);
  return solver.run();
}

}  // namespace sdc::tables
