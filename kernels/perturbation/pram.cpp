#include "kernels/perturbation/pram.h"

#include <tbb/parallel_for.h>
#include <Eigen/LU>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc {
namespace {

Eigen::Index index_of(std::int64_t k) { return static_cast<Eigen::Index>(k); }

double total_of(std::span<const std::int64_t> counts) {
  std::int64_t total = 0;
  for (std::int64_t c : counts) total += c;
  return static_cast<double>(total);
}

/// R's median: the mean of the two middle values of an even count; NaN for none.
double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

double maximum(const std::vector<double>& values) {
  return values.empty() ? std::numeric_limits<double>::quiet_NaN() : *std::max_element(values.begin(), values.end());
}

/// T̂ comes from a linear solve: an empty cell's estimate is "zero" up to rounding of the other cells.
double zero_of(std::span<const std::int64_t> original) { return 1e-9 * std::max(1.0, total_of(original)); }

Eigen::MatrixXd table_of(std::span<const std::int64_t> cells, std::int64_t rows, std::int64_t columns) {
  SDC_CHECK(static_cast<std::int64_t>(cells.size()) == rows * columns, "a two-way table of the wrong size");
  Eigen::MatrixXd out(index_of(rows), index_of(columns));
  for (Eigen::Index r = 0; r < out.rows(); ++r)
    for (Eigen::Index c = 0; c < out.cols(); ++c)
      out(r, c) = static_cast<double>(cells[static_cast<std::size_t>(r * out.cols() + c)]);
  return out;
}

std::optional<Eigen::MatrixXd> inverse_of(const PramMatrix& p) {
  const Eigen::MatrixXd dense = p;
  Eigen::FullPivLU<Eigen::MatrixXd> lu(dense);
  if (!lu.isInvertible()) return std::nullopt;
  return lu.inverse();
}

}  // namespace

PramMatrix pram_equal_matrix(std::int64_t categories, double p) {
  const Eigen::Index k = index_of(categories);
  if (k == 1) return PramMatrix::Ones(1, 1);
  PramMatrix m = PramMatrix::Constant(k, k, (1.0 - p) / static_cast<double>(k - 1));
  m.diagonal().setConstant(p);
  return m;
}

PramMatrix pram_band_matrix(std::int64_t categories, double p, std::int64_t band) {
  const Eigen::Index k = index_of(categories);
  PramMatrix m = PramMatrix::Zero(k, k);
  for (Eigen::Index row = 0; row < k; ++row) {
    const Eigen::Index first = std::max<Eigen::Index>(0, row - index_of(band) + 1);
    const Eigen::Index last = std::min<Eigen::Index>(k - 1, row + index_of(band) - 1);
    const Eigen::Index neighbours = last - first;  // the band's entries other than the diagonal
    if (neighbours == 0) {
      m(row, row) = 1.0;
      continue;
    }
    const double share = (1.0 - p) / static_cast<double>(neighbours);
    for (Eigen::Index col = first; col <= last; ++col) m(row, col) = col == row ? p : share;
  }
  return m;
}

PramMatrix pram_frequency_matrix(std::span<const std::int64_t> counts, double p) {
  const auto k = static_cast<Eigen::Index>(counts.size());
  SDC_CHECK(k >= 3, "the nF family needs at least 3 categories (the step checks it)");
  const double n = total_of(counts);
  PramMatrix m(k, k);
  for (Eigen::Index row = 0; row < k; ++row) {
    const double rest = n - static_cast<double>(counts[static_cast<std::size_t>(row)]);
    for (Eigen::Index col = 0; col < k; ++col) {
      if (col == row) {
        m(row, col) = p;
      } else if (rest > 0.0) {
        m(row, col) = (1.0 - p) * (rest - static_cast<double>(counts[static_cast<std::size_t>(col)])) /
                      (static_cast<double>(k - 2) * rest);
      } else {
        m(row, col) = (1.0 - p) / static_cast<double>(k - 1);
      }
    }
  }
  return m;
}

PramMatrix pram_block_matrix(std::span<const PramMatrix> blocks) {
  Eigen::Index k = 0;
  for (const auto& block : blocks) k += block.rows();
  PramMatrix m = PramMatrix::Zero(k, k);
  Eigen::Index at = 0;
  for (const auto& block : blocks) {
    m.block(at, at, block.rows(), block.cols()) = block;
    at += block.rows();
  }
  return m;
}

PramMatrix pram_family_matrix(const PramFamily& family, std::span<const std::int64_t> counts) {
  const auto k = static_cast<std::int64_t>(counts.size());
  switch (family.kind) {
    case PramFamilyKind::kEqual:
      return pram_equal_matrix(k, family.p);
    case PramFamilyKind::kBand:
      return pram_band_matrix(k, family.p, family.band);
    case PramFamilyKind::kFrequency:
      return pram_frequency_matrix(counts, family.p);
    case PramFamilyKind::kKeep:
      break;
  }
  return PramMatrix::Identity(index_of(k), index_of(k));
}

PramMatrix pram_family_block_matrix(std::span<const PramFamily> blocks, std::span<const std::int64_t> counts) {
  std::vector<PramMatrix> matrices;
  matrices.reserve(blocks.size());
  std::size_t at = 0;
  for (const PramFamily& block : blocks) {
    SDC_CHECK(block.size >= 1 && at + static_cast<std::size_t>(block.size) <= counts.size(),
              "the blocks of a Block matrix exceed its categories (the step checks the sizes)");
    matrices.push_back(pram_family_matrix(block, counts.subspan(at, static_cast<std::size_t>(block.size))));
    at += static_cast<std::size_t>(block.size);
  }
  SDC_CHECK(at == counts.size(),
            "the blocks of a Block matrix do not cover its categories (the step checks the sizes)");
  return pram_block_matrix(matrices);
}

PramMatrix pram_diagonal_matrix(std::span<const double> diagonal) {
  const auto k = static_cast<Eigen::Index>(diagonal.size());
  if (k == 1) return PramMatrix::Ones(1, 1);
  PramMatrix m(k, k);
  for (Eigen::Index row = 0; row < k; ++row) {
    const double d = diagonal[static_cast<std::size_t>(row)];
    m.row(row).setConstant((1.0 - d) / static_cast<double>(k - 1));
    m(row, row) = d;
  }
  return m;
}

std::vector<double> pram_draw_diagonal(std::uint64_t seed, std::uint64_t variable, std::uint64_t stratum,
                                       std::int64_t categories, double pd) {
  const RecordRng rng(seed, StepId::kPramMatrix);
  std::vector<double> d(static_cast<std::size_t>(categories));
  for (std::size_t k = 0; k < d.size(); ++k)
    d[k] = pd + (1.0 - pd) * rng.uniform(DrawCounter{.unit = k, .draw = stratum, .replicate = variable, .attempt = 0});
  return d;
}

PramMatrix pram_backward_matrix(const PramMatrix& p, std::span<const std::int64_t> counts) {
  const Eigen::Index k = p.rows();
  PramMatrix q = PramMatrix::Zero(k, k);
  for (Eigen::Index l = 0; l < k; ++l) {
    ExactSum reach;
    for (Eigen::Index m = 0; m < k; ++m) reach.add(p(m, l) * static_cast<double>(counts[static_cast<std::size_t>(m)]));
    const double denominator = reach.value();
    if (!(denominator > 0.0)) {
      q(l, l) = 1.0;
      continue;
    }
    for (Eigen::Index j = 0; j < k; ++j)
      q(l, j) = p(j, l) * static_cast<double>(counts[static_cast<std::size_t>(j)]) / denominator;
  }
  return q;
}

PramMatrix pram_invariant_matrix(const PramMatrix& p, std::span<const std::int64_t> counts) {
  return p * pram_backward_matrix(p, counts);
}

PramMatrix pram_blend_with_identity(const PramMatrix& r, double alpha) {
  PramMatrix out = alpha * r;
  out.diagonal().array() += 1.0 - alpha;
  return out;
}

ReferencePram pram_reference_matrices(std::span<const double> diagonal, std::span<const std::int64_t> counts,
                                      double alpha) {
  ReferencePram out;
  out.p = pram_diagonal_matrix(diagonal);
  out.drawn = pram_blend_with_identity(pram_invariant_matrix(out.p, counts), alpha);
  return out;
}

double pram_default_row_sum_tolerance(std::int64_t categories) {
  return 2.2e-16 * static_cast<double>(std::max<std::int64_t>(1, categories));
}

std::optional<MatrixRowProblem> pram_check_matrix(const PramMatrix& p, double tolerance) {
  for (Eigen::Index row = 0; row < p.rows(); ++row) {
    ExactSum sum;
    for (Eigen::Index col = 0; col < p.cols(); ++col) {
      const double v = p(row, col);
      if (!std::isfinite(v))
        return MatrixRowProblem{row, "entry " + std::to_string(col + 1) + " is not a finite number"};
      if (v < 0.0) return MatrixRowProblem{row, "entry " + std::to_string(col + 1) + " is negative"};
      sum.add(v);
    }
    if (std::fabs(sum.value() - 1.0) > tolerance) {
      // Twelve digits read well ("0.9"); the deviation shows what they round away.
      std::ostringstream what;
      what.precision(12);
      what << "sums to " << sum.value();
      what.precision(3);
      what << " (off by " << sum.value() - 1.0 << "), not 1 within " << tolerance;
      return MatrixRowProblem{row, what.str()};
    }
  }
  return std::nullopt;
}

PramSampler::PramSampler(const PramMatrix& p) : categories_(p.rows()) {
  const auto k = static_cast<std::size_t>(categories_);
  totals_.assign(k, 0);
  thresholds_.assign(k * k, 0);
  aliases_.assign(k * k, 0);
  std::vector<std::uint64_t> weights(k);
  std::vector<PramWide> scaled(k);
  std::vector<std::size_t> small;
  std::vector<std::size_t> large;
  for (std::size_t row = 0; row < k; ++row) {
    std::uint64_t total = 0;
    for (std::size_t col = 0; col < k; ++col) {
      const double v = p(static_cast<Eigen::Index>(row), static_cast<Eigen::Index>(col));
      weights[col] = v > 0.0 ? std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(v * 0x1.0p53))) : 0;
      total += weights[col];
    }
    if (total == 0) {  // a row no record can use (not a distribution); keep the category
      weights[row] = 1;
      total = 1;
    }
    totals_[row] = total;
    // Vose's pairing in integers: every column holds mass `total` (scaled by K); a column below it is
    // topped up from one above, so the sums stay exact and the last columns hold exactly `total`.
    small.clear();
    large.clear();
    for (std::size_t col = 0; col < k; ++col) {
      scaled[col] = static_cast<PramWide>(weights[col]) * k;
      (scaled[col] < total ? small : large).push_back(col);
    }
    std::uint64_t* thresholds = thresholds_.data() + row * k;
    std::int32_t* aliases = aliases_.data() + row * k;
    while (!small.empty() && !large.empty()) {
      const std::size_t s = small.back();
      small.pop_back();
      const std::size_t l = large.back();
      thresholds[s] = static_cast<std::uint64_t>(scaled[s]);
      aliases[s] = static_cast<std::int32_t>(l);
      scaled[l] -= total - scaled[s];
      if (scaled[l] < total) {
        large.pop_back();
        small.push_back(l);
      }
    }
    for (std::size_t col : large) {
      thresholds[col] = total;
      aliases[col] = static_cast<std::int32_t>(col);
    }
    // Exact arithmetic leaves no small column unpaired; kept for safety, as a column always kept.
    for (std::size_t col : small) {
      thresholds[col] = total;
      aliases[col] = static_cast<std::int32_t>(col);
    }
  }
}

double PramSampler::probability(std::int32_t from, std::int32_t to) const {
  const auto k = static_cast<std::size_t>(categories_);
  const auto total = static_cast<double>(totals_[static_cast<std::size_t>(from)]);
  double mass = 0.0;
  for (std::size_t col = 0; col < k; ++col) {
    const std::size_t cell = static_cast<std::size_t>(from) * k + col;
    const auto kept = static_cast<double>(thresholds_[cell]);
    if (col == static_cast<std::size_t>(to)) mass += kept;
    if (aliases_[cell] == to) mass += total - kept;
  }
  return mass / (total * static_cast<double>(k));
}

std::int64_t pram_draw(std::span<const std::int32_t> original, std::span<const std::int32_t> strata,
                       std::span<const PramSampler> samplers, std::uint64_t seed, std::uint64_t variable,
                       std::int64_t first_row_id, std::span<std::int32_t> released, std::span<std::uint8_t> changed) {
  const RecordRng rng(seed, StepId::kPram);
  std::int64_t count = 0;
  for (std::size_t i = 0; i < original.size(); ++i) {
    const std::int32_t from = original[i];
    if (from < 0) {
      released[i] = from;
      continue;
    }
    const PramSampler& sampler = samplers[strata.empty() ? 0 : static_cast<std::size_t>(strata[i])];
    const auto words = rng.bits(DrawCounter{
        .unit = static_cast<std::uint64_t>(first_row_id) + i, .draw = variable, .replicate = 0, .attempt = 0});
    const std::int32_t to = sampler.draw(from, words[0], words[1]);
    released[i] = to;
    if (to != from) {
      changed[i] = 1;
      ++count;
    }
  }
  return count;
}

Eigen::VectorXd pram_expected_counts(const PramMatrix& p, std::span<const std::int64_t> original) {
  Eigen::VectorXd t(static_cast<Eigen::Index>(original.size()));
  for (std::size_t k = 0; k < original.size(); ++k) t(static_cast<Eigen::Index>(k)) = static_cast<double>(original[k]);
  return p.transpose() * t;
}

std::optional<Eigen::VectorXd> pram_unbiased_estimate(const PramMatrix& p, std::span<const std::int64_t> released) {
  const Eigen::MatrixXd transposed = p.transpose();
  Eigen::FullPivLU<Eigen::MatrixXd> lu(transposed);
  if (!lu.isInvertible()) return std::nullopt;
  Eigen::VectorXd t(static_cast<Eigen::Index>(released.size()));
  for (std::size_t k = 0; k < released.size(); ++k) t(static_cast<Eigen::Index>(k)) = static_cast<double>(released[k]);
  return Eigen::VectorXd(lu.solve(t));
}

std::optional<Eigen::VectorXd> pram_unbiased_totals(const PramMatrix& p, std::span<const double> released) {
  const Eigen::MatrixXd transposed = p.transpose();
  Eigen::FullPivLU<Eigen::MatrixXd> lu(transposed);
  if (!lu.isInvertible()) return std::nullopt;
  const Eigen::Map<const Eigen::VectorXd> s(released.data(), static_cast<Eigen::Index>(released.size()));
  return Eigen::VectorXd(lu.solve(s));
}

Eigen::MatrixXd pram_two_way_expected(const PramMatrix& p_row, const PramMatrix& p_column,
                                      std::span<const std::int64_t> original, std::int64_t rows, std::int64_t columns) {
  Eigen::MatrixXd out = table_of(original, rows, columns);
  if (p_row.size() > 0) out = p_row.transpose() * out;
  if (p_column.size() > 0) out = out * p_column;
  return out;
}

std::optional<Eigen::MatrixXd> pram_two_way_estimate(const PramMatrix& p_row, const PramMatrix& p_column,
                                                     std::span<const std::int64_t> released, std::int64_t rows,
                                                     std::int64_t columns) {
  Eigen::MatrixXd out = table_of(released, rows, columns);
  // (P_X⁻¹)ᵀ T: solve P_Xᵀ A = T. Then A P_Y⁻¹ = B: solve P_Yᵀ Bᵀ = Aᵀ.
  if (p_row.size() > 0) {
    Eigen::FullPivLU<Eigen::MatrixXd> lu(Eigen::MatrixXd(p_row.transpose()));
    if (!lu.isInvertible()) return std::nullopt;
    out = lu.solve(out);
  }
  if (p_column.size() > 0) {
    Eigen::FullPivLU<Eigen::MatrixXd> lu(Eigen::MatrixXd(p_column.transpose()));
    if (!lu.isInvertible()) return std::nullopt;
    out = Eigen::MatrixXd(lu.solve(out.transpose())).transpose();
  }
  return out;
}

Eigen::MatrixXd pram_released_variance(const PramMatrix& p, std::span<const std::int64_t> original) {
  const Eigen::Index k = p.rows();
  Eigen::MatrixXd v = Eigen::MatrixXd::Zero(k, k);
  for (Eigen::Index m = 0; m < k; ++m) {
    const double t = static_cast<double>(original[static_cast<std::size_t>(m)]);
    if (t == 0.0) continue;
    const Eigen::VectorXd row = p.row(m).transpose();
    v.diagonal() += t * row;
    v -= t * row * row.transpose();
  }
  return v;
}

std::optional<Eigen::MatrixXd> pram_estimate_variance(const PramMatrix& p, std::span<const std::int64_t> original) {
  const auto inverse = inverse_of(p);
  if (!inverse) return std::nullopt;
  return Eigen::MatrixXd(inverse->transpose() * pram_released_variance(p, original) * *inverse);
}

std::optional<Eigen::VectorXd> pram_estimate_variance_diagonal(const PramMatrix& p,
                                                               std::span<const std::int64_t> original) {
  const auto inverse = inverse_of(p);
  if (!inverse) return std::nullopt;
  const Eigen::MatrixXd squared = inverse->array().square().matrix();
  Eigen::VectorXd t(p.rows());
  for (Eigen::Index k = 0; k < p.rows(); ++k) t(k) = static_cast<double>(original[static_cast<std::size_t>(k)]);
  // Σ_m T_m (P (P⁻¹ ∘ P⁻¹))_mk − T_k
  Eigen::VectorXd out = (p * squared).transpose() * t - t;
  return out;
}

PramRisk pram_risk(const PramMatrix& p, std::span<const std::int64_t> original, double tau) {
  const std::size_t k = original.size();
  PramRisk out;
  out.risk.assign(k, std::numeric_limits<double>::quiet_NaN());
  out.rare.assign(k, false);
  out.safe.assign(k, false);
  for (std::size_t c = 0; c < k; ++c) {
    const double t = static_cast<double>(original[c]);
    if (t == 0.0) continue;
    ExactSum reach;
    for (std::size_t l = 0; l < k; ++l)
      reach.add(p(static_cast<Eigen::Index>(l), static_cast<Eigen::Index>(c)) * static_cast<double>(original[l]));
    const double risk = p(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(c)) * t / reach.value();
    out.risk[c] = std::isfinite(risk) ? risk : std::numeric_limits<double>::quiet_NaN();
    out.rare[c] = t < tau;
    // A category that no record can be released as (p_cc = 0 and no inflow) has no risk: it is safe.
    out.safe[c] = out.rare[c] && (!std::isfinite(risk) || risk <= t / tau);
  }
  return out;
}

PramRelativeDifference pram_relative_difference(std::span<const std::int64_t> original,
                                                std::span<const double> estimate) {
  std::vector<double> rd;
  PramRelativeDifference out;
  const double zero = zero_of(original);
  for (std::size_t k = 0; k < original.size(); ++k) {
    const double t = static_cast<double>(original[k]);
    if (t == 0.0) {
      if (std::fabs(estimate[k]) > zero) ++out.infinite;
      continue;
    }
    rd.push_back(std::fabs(t - estimate[k]) / t);
  }
  out.rd = median(rd);
  out.mrd = maximum(rd);
  return out;
}

PramInformationLoss pram_information_loss(std::span<const std::int64_t> original, std::span<const double> estimate,
                                          std::span<const double> variance) {
  const PramRelativeDifference differences = pram_relative_difference(original, estimate);
  std::vector<double> cv;
  for (std::size_t k = 0; k < original.size(); ++k) {
    const double t = static_cast<double>(original[k]);
    if (t > 0.0) cv.push_back(std::sqrt(std::max(0.0, variance[k])) / t);
  }
  PramInformationLoss out;
  out.rd = differences.rd;
  out.mrd = differences.mrd;
  out.infinite = differences.infinite;
  out.cv = median(cv);
  out.mcv = maximum(cv);
  return out;
}

PramRegressionLoss pram_regression_loss(std::span<const std::int64_t> counts, std::span<const double> sums,
                                        std::span<const double> estimated_counts,
                                        std::span<const double> estimated_sums) {
  const std::size_t k = counts.size();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  PramRegressionLoss out;
  out.beta.assign(k, kNaN);
  out.beta_estimate.assign(k, kNaN);
  const double zero = zero_of(counts);
  std::vector<double> lrd;
  std::vector<double> finite;
  for (std::size_t c = 0; c < k; ++c) {
    if (std::fabs(estimated_counts[c]) > zero) out.beta_estimate[c] = estimated_sums[c] / estimated_counts[c];
    if (counts[c] == 0) {
      ++out.empty;
      continue;
    }
    const double beta = sums[c] / static_cast<double>(counts[c]);
    out.beta[c] = beta;
    if (beta == 0.0) {
      ++out.zero_mean;
      continue;
    }
    ++out.measured;
    if (std::isnan(out.beta_estimate[c])) {
      // No estimated record carries the category: its mean is lost entirely.
      ++out.infinite;
      lrd.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    const double d = std::fabs(beta - out.beta_estimate[c]) / std::fabs(beta);
    lrd.push_back(d);
    finite.push_back(d);
  }
  out.lrd = median(lrd);
  out.mlrd = maximum(finite);
  return out;
}

std::int64_t pram_draw_in_blocks(std::span<const std::int32_t> original, std::span<const std::int32_t> strata,
                                 std::span<const PramSampler> samplers, std::uint64_t seed, std::uint64_t variable,
                                 std::int64_t first_row_id, std::span<std::int32_t> released,
                                 std::span<std::uint8_t> changed) {
  constexpr std::size_t kDrawBlock = std::size_t{1} << 16;
  const std::size_t n = original.size();
  const std::size_t blocks = (n + kDrawBlock - 1) / kDrawBlock;
  std::vector<std::int64_t> changes(blocks, 0);
  tbb::parallel_for(std::size_t{0}, blocks, [&](std::size_t b) {
    const std::size_t begin = b * kDrawBlock;
    const std::size_t size = std::min(kDrawBlock, n - begin);
    changes[b] = pram_draw(original.subspan(begin, size), strata.empty() ? strata : strata.subspan(begin, size),
                           samplers, seed, variable, first_row_id + static_cast<std::int64_t>(begin),
                           released.subspan(begin, size), changed.subspan(begin, size));
  });
  std::int64_t total = 0;
  for (std::int64_t c : changes) total += c;
  return total;
}

}  // namespace sdc
