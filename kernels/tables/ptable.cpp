#include "kernels/tables/ptable.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <istream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

__extension__ using Wide = unsigned __int128;  // GCC/Clang: C·10⁸ and UB·M pass 2^64 for M > ~1.8·10¹¹
using Real = long double;  // the dual's exponentials: 10⁻¹² on p needs more than double's 16 digits near 10⁻⁸

constexpr Real kMinProbability = 1e-8L;      // the ptable package's lower bound on every p
constexpr std::int64_t kMaxParameter = 100;  // D and js: a row has 2D + 1 targets, a table D + js + 2 rows
constexpr int kPstaySteps = 20;
constexpr double kPstayStep = 0.05;
constexpr double kRowSumTolerance = 1e-7;
constexpr std::int64_t kRowSumToleranceUnits = 10;  // 10⁻⁷ in units of 10⁻⁸

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// ---- one row's maximum-entropy problem ------------------------------------------------------------
//
// maximise −Σ p log p  subject to  Σp = 1, Σvp = 0, Σv²p <= V (optim 1) or = V (optim 4), p(0) >= pstay,
// p >= 10⁻⁸, and p non-decreasing along the chain (the atoms v < 0 and v = 0, when mono applies).
// The moment and pstay constraints go to the dual, λ = (λ₀, λ₁, λ₂, λ₃) with θ_k = λ₀ + λ₁v + λ₂v² + λ₃[v = 0];
// the chain and the lower bound stay in the inner problem, max Σ (θ_k p_k − p_k log p_k) over them, which
// has a closed form: pool adjacent violators of θ along the chain (a pooled block shares p = exp(mean θ − 1),
// the exponential-family optimum with equal probabilities), then clip at 10⁻⁸. Clipping after pooling is
// optimal because the lower bound is the same for every atom. The dual is convex and continuously
// differentiable, its gradient the constraint residuals; Newton with a backtracking line search converges
// quadratically once the pooled and clipped atoms settle. The sign constraints on the inequality
// multipliers (λ₂ <= 0 for Σv²p <= V, λ₃ >= 0 for pstay) are handled by trying each face: a multiplier
// either free or fixed at 0; the optimum is the face whose minimiser has the right signs and satisfies
// the constraints it leaves out.

constexpr std::size_t kDual = 4;
using DualVector = std::array<Real, kDual>;
using DualMatrix = std::array<DualVector, kDual>;
using DualMask = std::array<bool, kDual>;

struct RowProblem {
  std::vector<Real> noise;   // v of each atom, ascending
  std::size_t chain = 0;     // atoms [0, chain) are non-decreasing in p (the last is v = 0); 0: no mono
  std::ptrdiff_t zero = -1;  // the atom v = 0, -1 when the row blocks it
  Real variance = 1;
  bool variance_equal = false;
  Real pstay = 0;  // 0: no bound
};

struct DualPoint {
  Real value = 0;
  DualVector gradient{};
  DualMatrix hessian{};
  std::vector<Real> p;
};

DualVector features(const RowProblem& row, std::size_t k) {
  const Real v = row.noise[k];
  return {1, v, v * v, static_cast<std::ptrdiff_t>(k) == row.zero ? Real{1} : Real{0}};
}

DualPoint evaluate(const RowProblem& row, const DualVector& lambda) {
  const std::size_t n = row.noise.size();
  std::vector<Real> theta(n);
  for (std::size_t k = 0; k < n; ++k) {
    const DualVector f = features(row, k);
    theta[k] = 0;
    for (std::size_t c = 0; c < kDual; ++c) theta[k] += lambda[c] * f[c];
  }
  struct Block {
    std::size_t begin = 0;
    std::size_t end = 0;
    Real sum = 0;
  };
  std::vector<Block> blocks;
  for (std::size_t k = 0; k < n; ++k) {
    blocks.push_back({k, k + 1, theta[k]});
    if (k >= row.chain) continue;
    // Pool while the previous block's mean exceeds the last one's (means compared without division).
    while (blocks.size() >= 2) {
      const Block& last = blocks.back();
      const Block& previous = blocks[blocks.size() - 2];
      const auto last_size = static_cast<Real>(last.end - last.begin);
      const auto previous_size = static_cast<Real>(previous.end - previous.begin);
      if (previous.sum * last_size <= last.sum * previous_size) break;
      const Block merged{previous.begin, last.end, previous.sum + last.sum};
      blocks.pop_back();
      blocks.back() = merged;
    }
  }
  DualPoint out;
  out.p.assign(n, 0);
  for (const Block& block : blocks) {
    const auto size = static_cast<Real>(block.end - block.begin);
    const Real q = std::exp(block.sum / size - 1);
    if (!(q > kMinProbability)) {
      for (std::size_t k = block.begin; k < block.end; ++k) out.p[k] = kMinProbability;
      continue;
    }
    DualVector mean{};
    for (std::size_t k = block.begin; k < block.end; ++k) {
      out.p[k] = q;
      const DualVector f = features(row, k);
      for (std::size_t c = 0; c < kDual; ++c) mean[c] += f[c] / size;
    }
    for (std::size_t a = 0; a < kDual; ++a) {
      for (std::size_t b = 0; b < kDual; ++b) out.hessian[a][b] += size * q * mean[a] * mean[b];
    }
  }
  const DualVector rhs{1, 0, row.variance, row.pstay};
  out.value = 0;
  for (std::size_t c = 0; c < kDual; ++c) {
    out.gradient[c] = -rhs[c];
    out.value -= lambda[c] * rhs[c];
  }
  for (std::size_t k = 0; k < n; ++k) {
    const DualVector f = features(row, k);
    out.value += theta[k] * out.p[k] - out.p[k] * std::log(out.p[k]);
    for (std::size_t c = 0; c < kDual; ++c) out.gradient[c] += out.p[k] * f[c];
  }
  return out;
}

Real max_free_gradient(const DualPoint& point, const DualMask& free) {
  Real largest = 0;
  for (std::size_t c = 0; c < kDual; ++c) {
    if (free[c]) largest = std::max(largest, std::fabs(point.gradient[c]));
  }
  return largest;
}

// The Newton direction on the free multipliers: H Δ = −g by Gaussian elimination with partial pivoting;
// a tiny ridge keeps a direction the clipped atoms leave flat from dividing by zero.
DualVector newton_direction(const DualPoint& point, const DualMask& free) {
  std::array<std::size_t, kDual> index{};
  std::size_t m = 0;
  for (std::size_t c = 0; c < kDual; ++c) {
    if (free[c]) index[m++] = c;
  }
  Real scale = 1;
  for (std::size_t a = 0; a < m; ++a) scale = std::max(scale, point.hessian[index[a]][index[a]]);
  std::array<std::array<Real, kDual + 1>, kDual> system{};
  for (std::size_t a = 0; a < m; ++a) {
    for (std::size_t b = 0; b < m; ++b) system[a][b] = point.hessian[index[a]][index[b]];
    system[a][a] += 1e-18L * scale;
    system[a][m] = -point.gradient[index[a]];
  }
  for (std::size_t col = 0; col < m; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < m; ++r) {
      if (std::fabs(system[r][col]) > std::fabs(system[pivot][col])) pivot = r;
    }
    std::swap(system[col], system[pivot]);
    for (std::size_t r = col + 1; r < m; ++r) {
      const Real factor = system[r][col] / system[col][col];
      for (std::size_t c = col; c <= m; ++c) system[r][c] -= factor * system[col][c];
    }
  }
  std::array<Real, kDual> solution{};
  for (std::size_t r = m; r-- > 0;) {
    Real sum = system[r][m];
    for (std::size_t c = r + 1; c < m; ++c) sum -= system[r][c] * solution[c];
    solution[r] = sum / system[r][r];
  }
  DualVector direction{};
  for (std::size_t a = 0; a < m; ++a) direction[index[a]] = solution[a];
  return direction;
}

bool finite(const DualPoint& point) {
  if (!std::isfinite(point.value)) return false;
  return std::all_of(point.gradient.begin(), point.gradient.end(), [](Real g) { return std::isfinite(g); });
}

// Minimises the dual over the free multipliers (the others stay 0). No minimiser (the constraints of
// this face admit no distribution) shows as multipliers running off or a line search that cannot descend.
std::optional<std::pair<DualVector, DualPoint>> minimise_dual(const RowProblem& row, const DualMask& free) {
  constexpr int kMaxIterations = 400;
  constexpr Real kTolerance = 1e-15L;         // on the constraint residuals
  constexpr Real kStalledTolerance = 1e-12L;  // accepted when rounding stops the descent
  constexpr Real kRunaway = 1e7L;
  DualVector lambda{1 - std::log(static_cast<Real>(row.noise.size())), 0, 0, 0};
  DualPoint point = evaluate(row, lambda);
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    const Real residual = max_free_gradient(point, free);
    if (residual <= kTolerance) return std::pair{lambda, std::move(point)};
    const DualVector direction = newton_direction(point, free);
    Real slope = 0;
    for (std::size_t c = 0; c < kDual; ++c) slope += point.gradient[c] * direction[c];
    auto step_to = [&](Real t) {
      DualVector next = lambda;
      for (std::size_t c = 0; c < kDual; ++c) next[c] += t * direction[c];
      return next;
    };
    // Close to the optimum the full step is quadratically convergent, while the dual's value no longer
    // resolves the decrease: accept it on the residual.
    if (residual < 1e-6L) {
      const DualVector next = step_to(1);
      DualPoint candidate = evaluate(row, next);
      if (finite(candidate) && max_free_gradient(candidate, free) < residual) {
        lambda = next;
        point = std::move(candidate);
        continue;
      }
    }
    bool moved = false;
    if (slope < 0) {
      for (Real t = 1; t > 1e-14L; t /= 2) {
        const DualVector next = step_to(t);
        DualPoint candidate = evaluate(row, next);
        if (finite(candidate) && candidate.value <= point.value + 1e-4L * t * slope) {
          lambda = next;
          point = std::move(candidate);
          moved = true;
          break;
        }
      }
    }
    if (!moved) {
      if (residual <= kStalledTolerance) return std::pair{lambda, std::move(point)};
      return std::nullopt;
    }
    if (std::any_of(lambda.begin(), lambda.end(), [&](Real l) { return !(std::fabs(l) < kRunaway); })) {
      return std::nullopt;
    }
  }
  if (max_free_gradient(point, free) <= kStalledTolerance) return std::pair{lambda, std::move(point)};
  return std::nullopt;
}

struct RowSolution {
  std::vector<Real> p;
  Real variance = 0;
  bool variance_active = false;
  bool pstay_active = false;
};

Real row_variance(const RowProblem& row, const std::vector<Real>& p) {
  Real sum = 0;
  for (std::size_t k = 0; k < p.size(); ++k) sum += row.noise[k] * row.noise[k] * p[k];
  return sum;
}

std::optional<RowSolution> solve_row(const RowProblem& row) {
  constexpr Real kSignTolerance = 1e-12L;
  constexpr Real kFeasibilityTolerance = 1e-10L;
  std::optional<RowSolution> best;
  Real best_value = 0;
  const std::vector<bool> variance_faces =
      row.variance_equal ? std::vector<bool>{true} : std::vector<bool>{false, true};
  const std::vector<bool> pstay_faces = row.pstay > 0 ? std::vector<bool>{false, true} : std::vector<bool>{false};
  for (const bool variance_free : variance_faces) {
    for (const bool pstay_free : pstay_faces) {
      const DualMask free{true, true, variance_free, pstay_free};
      auto minimum = minimise_dual(row, free);
      if (!minimum) continue;
      const auto& [lambda, point] = *minimum;
      const Real variance = row_variance(row, point.p);
      if (!row.variance_equal) {
        if (variance_free ? lambda[2] > kSignTolerance : variance > row.variance + kFeasibilityTolerance) continue;
      }
      if (row.pstay > 0) {
        if (pstay_free ? lambda[3] < -kSignTolerance
                       : point.p[static_cast<std::size_t>(row.zero)] < row.pstay - kFeasibilityTolerance) {
          continue;
        }
      }
      if (best && point.value >= best_value) continue;
      best_value = point.value;
      best = RowSolution{point.p, variance, row.variance_equal || (variance_free && lambda[2] < -kSignTolerance),
                         pstay_free && lambda[3] > kSignTolerance};
    }
  }
  return best;
}

bool variance_fails(Real solved, double target) {
  return std::llround(static_cast<double>(solved) * 1000.0) != std::llround(target * 1000.0);
}

// ---- parameters -----------------------------------------------------------------------------------

std::int64_t row_count(const PTableParameters& parameters) {
  return parameters.js == 0 ? parameters.max_noise : parameters.max_noise + parameters.js + 1;
}

void validate(const PTableParameters& parameters) {
  const std::int64_t D = parameters.max_noise;
  if (D < 1 || D > kMaxParameter) {
    throw ParameterError("p-table parameter D = " + std::to_string(D) + " is outside 1 … " +
                         std::to_string(kMaxParameter));
  }
  if (!(parameters.variance > 0.0) || !std::isfinite(parameters.variance)) {
    throw ParameterError("p-table parameter V = " + format_number(parameters.variance) + " is not a positive number");
  }
  if (parameters.js < 0 || parameters.js > kMaxParameter) {
    throw ParameterError("p-table parameter js = " + std::to_string(parameters.js) + " is outside 0 … " +
                         std::to_string(kMaxParameter));
  }
  if (parameters.js >= D) {
    // Row js + 1 would have no target below its count (0 is out of reach, 1 … js blocked): no unbiased noise.
    throw ParameterError("p-table parameter js = " + std::to_string(parameters.js) +
                         " is not below D = " + std::to_string(D) + ": row i = " + std::to_string(parameters.js + 1) +
                         " would have no target below i");
  }
  if (parameters.optim != 1 && parameters.optim != 4) {
    throw ParameterError("p-table parameter optim = " + std::to_string(parameters.optim) + " is neither 1 nor 4");
  }
  const auto rows = static_cast<std::size_t>(row_count(parameters));
  if (!parameters.pstay.empty() && parameters.pstay.size() != 1 && parameters.pstay.size() != rows) {
    throw ParameterError("p-table parameter pstay has " + std::to_string(parameters.pstay.size()) +
                         " values: give one, or one per row i = 1 … " + std::to_string(rows));
  }
  for (const double pstay : parameters.pstay) {
    if (!(pstay > 0.0 && pstay < 1.0)) {
      throw ParameterError("p-table parameter pstay = " + format_number(pstay) + " is outside (0, 1)");
    }
  }
  if (parameters.mono.size() != 1 && parameters.mono.size() != rows) {
    throw ParameterError("p-table parameter mono has " + std::to_string(parameters.mono.size()) +
                         " flags: give one, or one per row i = 1 … " + std::to_string(rows));
  }
}

// ---- rounding -------------------------------------------------------------------------------------

// The ptable package's rounding: ub = the cumulative sum rounded to 8 decimals, printed p = ub − lb.
std::vector<PTableEntry> rounded_row(const std::vector<std::int64_t>& targets, const std::vector<Real>& p) {
  std::vector<PTableEntry> entries;
  Real cumulative = 0;
  std::uint64_t lower = 0;
  for (std::size_t k = 0; k < p.size(); ++k) {
    cumulative += p[k];
    const auto upper = static_cast<std::uint64_t>(std::llround(cumulative * static_cast<Real>(kPTableBoundScale)));
    SDC_CHECK(upper > lower, "p-table rounding: a target lost its probability");
    entries.push_back({targets[k], static_cast<double>(upper - lower) / static_cast<double>(kPTableBoundScale), upper});
    lower = upper;
  }
  SDC_CHECK(lower == kPTableBoundScale, "p-table rounding: a row does not sum to 1");
  return entries;
}

// ---- text -----------------------------------------------------------------------------------------

std::string_view trim(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = line.find(';', begin);
    fields.push_back(trim(line.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin)));
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return fields;
}

std::string_view unquote(std::string_view field) {
  if (field.size() >= 2 && field.front() == '"' && field.back() == '"') return field.substr(1, field.size() - 2);
  return field;
}

constexpr std::array<std::string_view, 5> kTauArgusHeader{"i", "j", "p", "v", "p_int_ub"};
constexpr std::array<std::string_view, 6> kSasHeader{"i", "j", "p", "v", "p_int_lb", "p_int_ub"};

template <std::size_t kSize>
bool header_is(const std::vector<std::string_view>& fields, const std::array<std::string_view, kSize>& names) {
  if (fields.size() != kSize) return false;
  for (std::size_t c = 0; c < kSize; ++c) {
    if (unquote(fields[c]) != names[c]) return false;
  }
  return true;
}

class LineReader {
 public:
  LineReader(const std::string& source, std::int64_t line) : source_(source), line_(line) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw InvalidInput(source_ + " line " + std::to_string(line_) + ": " + message);
  }

  std::int64_t integer(std::string_view field, const char* column) const {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || error != std::errc() || end != field.data() + field.size()) {
      fail(std::string("column ") + column + " is not an integer");
    }
    return value;
  }

  double number(std::string_view field, const char* column) const {
    double value = 0.0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || error != std::errc() || end != field.data() + field.size() || !std::isfinite(value)) {
      fail(std::string("column ") + column + " is not a number");
    }
    return value;
  }

  // A bound in [0, 1] (10⁻⁷ of slack above 1) as units of 10⁻⁸.
  std::uint64_t bound(std::string_view field, const char* column) const {
    const double value = number(field, column);
    if (value < 0.0 || value > 1.0 + kRowSumTolerance) fail(std::string("column ") + column + " is outside [0, 1]");
    return static_cast<std::uint64_t>(std::llround(value * static_cast<double>(kPTableBoundScale)));
  }

 private:
  const std::string& source_;
  std::int64_t line_;
};

void write_units(std::ostream& out, std::uint64_t units) {
  const std::string fraction = std::to_string(units % kPTableBoundScale);
  out << units / kPTableBoundScale << '.' << std::string(8 - fraction.size(), '0') << fraction;
}

}  // namespace

// ---- table ----------------------------------------------------------------------------------------

std::int64_t PTable::max_noise() const {
  std::int64_t largest = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (const PTableEntry& entry : rows[i]) {
      largest = std::max(largest, std::abs(entry.target - static_cast<std::int64_t>(i)));
    }
  }
  return largest;
}

std::int64_t lookup_noise(const PTable& table, std::int64_t count, CellKey key, LookupRule rule) {
  if (table.rows.empty()) throw ParameterError("cell key lookup: the p-table has no rows");
  if (count < 0) throw ParameterError("cell key lookup: a negative count");
  if (key.modulus == 0 || key.numerator >= key.modulus) {
    throw ParameterError("cell key lookup: a cell key outside [0, 1) (numerator not below the modulus)");
  }
  if (count == 0) return 0;
  if (rule == LookupRule::kSas && key.numerator == 0) return 0;
  const std::size_t row = std::min(static_cast<std::size_t>(count), table.rows.size() - 1);
  const std::vector<PTableEntry>& entries = table.rows[row];
  if (entries.empty()) throw ParameterError("cell key lookup: p-table row " + std::to_string(row) + " is empty");
  // ck < ub  <=>  C/M < UB/10⁸  <=>  C·10⁸ < UB·M, exact in 128 bits.
  const Wide scaled_key = Wide{key.numerator} * kPTableBoundScale;
  for (const PTableEntry& entry : entries) {
    const Wide scaled_bound = Wide{entry.upper_bound} * key.modulus;
    const bool inside = rule == LookupRule::kTauArgus ? scaled_key < scaled_bound : scaled_key <= scaled_bound;
    if (inside) return entry.target - static_cast<std::int64_t>(row);
  }
  return entries.back().target - static_cast<std::int64_t>(row);  // unreachable when the last ub is 1
}

PTableRowMoments ptable_row_moments(const PTable& table, std::size_t row) {
  if (row >= table.rows.size()) throw ParameterError("p-table row " + std::to_string(row) + " does not exist");
  // Printed probabilities are integers in units of 10⁻⁸: with |v| below 10⁵ every product and sum below is an
  // integer under 2⁶⁴, exact in long double's 64-bit mantissa.
  Real first = 0;
  Real second = 0;
  std::uint64_t lower = 0;
  for (const PTableEntry& entry : table.rows[row]) {
    const auto mass = static_cast<Real>(entry.upper_bound - lower);
    const auto v = static_cast<Real>(entry.target - static_cast<std::int64_t>(row));
    first += mass * v;
    second += mass * v * v;
    lower = entry.upper_bound;
  }
  const Real scale = kPTableBoundScale;
  const Real mean = first / scale;
  return {static_cast<double>(mean), static_cast<double>(second / scale - mean * mean)};
}

// ---- construction ---------------------------------------------------------------------------------

PTableBuild build_ptable_with_report(const PTableParameters& parameters) {
  validate(parameters);
  const std::int64_t D = parameters.max_noise;
  const std::int64_t js = parameters.js;
  const std::int64_t last_row = row_count(parameters);
  PTableBuild build;
  build.table.blocked_threshold = js;
  build.table.rows.push_back({PTableEntry{0, 1.0, kPTableBoundScale}});
  for (std::int64_t i = 1; i <= last_row; ++i) {
    const auto index = static_cast<std::size_t>(i - 1);
    RowProblem row;
    std::vector<std::int64_t> targets;
    for (std::int64_t j = std::max<std::int64_t>(i - D, 0); j <= i + D; ++j) {
      if (j >= 1 && j <= js) continue;
      if (j == i) row.zero = static_cast<std::ptrdiff_t>(targets.size());
      targets.push_back(j);
      row.noise.push_back(static_cast<Real>(j - i));
    }
    const bool mono = parameters.mono.size() == 1 ? parameters.mono[0] : parameters.mono[index];
    const bool has_zero = row.zero >= 0;
    if (mono && has_zero) row.chain = static_cast<std::size_t>(row.zero) + 1;
    row.variance = parameters.variance;
    row.variance_equal = parameters.optim == 4;
    double pstay = 0.0;
    if (has_zero && !parameters.pstay.empty()) {
      pstay = parameters.pstay.size() == 1 ? parameters.pstay[0] : parameters.pstay[index];
    }

    // ptable's loop: a row whose variance misses V gets its pstay lowered by 0.05, at most 20 times.
    // Lowering a bound that is not active changes nothing, so the loop stops there.
    std::optional<RowSolution> solution;
    int steps = 0;
    double used_pstay = pstay;
    for (int step = 0; step <= kPstaySteps; ++step) {
      const double current = pstay - kPstayStep * step;
      used_pstay = current > 0.0 ? current : 0.0;
      row.pstay = used_pstay;
      steps = step;
      solution = solve_row(row);
      if (solution && !variance_fails(solution->variance, parameters.variance)) break;
      if (used_pstay <= 0.0 || (solution && !solution->pstay_active)) break;
    }
    if (!solution) {
      throw ParameterError("p-table parameter V = " + format_number(parameters.variance) +
                           " is infeasible with D = " + std::to_string(D) + ", js = " + std::to_string(js) +
                           ", optim " + std::to_string(parameters.optim) + ": row i = " + std::to_string(i) +
                           " admits no unbiased distribution with variance " + (row.variance_equal ? "= V" : "<= V") +
                           " within its bounds (p >= 1e-8" + (mono && has_zero ? ", mono" : "") +
                           (pstay > 0.0 ? ", pstay" : "") + ")");
    }
    build.table.rows.push_back(rounded_row(targets, solution->p));

    PTableRowReport report;
    report.i = i;
    const PTableRowMoments moments = ptable_row_moments(build.table, static_cast<std::size_t>(i));
    report.mean = moments.mean;
    report.variance = moments.variance;
    report.solved_variance = static_cast<double>(solution->variance);
    report.variance_binds = solution->variance_active;
    report.variance_fails = variance_fails(solution->variance, parameters.variance);
    report.mono = row.chain > 0;
    report.pstay = used_pstay;
    report.pstay_steps = steps;
    build.rows.push_back(report);
  }
  return build;
}

PTable build_ptable(const PTableParameters& parameters) { return build_ptable_with_report(parameters).table; }

// ---- files ----------------------------------------------------------------------------------------

PTable read_ptable(std::istream& in, const std::string& source, PTableFormat* detected) {
  std::optional<PTableFormat> format;
  PTable table;
  std::vector<PTableEntry> current;
  std::int64_t current_i = -1;
  std::uint64_t sum_units = 0;
  std::int64_t line_number = 0;
  std::int64_t last_entry_line = 0;
  std::string line;

  const auto finish_row = [&]() {
    if (current.empty()) return;
    const LineReader reader(source, last_entry_line);
    const auto distance = static_cast<std::int64_t>(sum_units) - static_cast<std::int64_t>(kPTableBoundScale);
    if (std::abs(distance) > kRowSumToleranceUnits) {
      reader.fail("the probabilities of row i = " + std::to_string(current_i) + " do not sum to 1 (within 1e-7)");
    }
    // The last bound is 1 by definition: a row written with 8 decimals may end a few units off.
    PTableEntry& last = current.back();
    const std::uint64_t lower = current.size() >= 2 ? current[current.size() - 2].upper_bound : 0;
    if (lower >= kPTableBoundScale)
      reader.fail("p_int_ub is not increasing within row i = " + std::to_string(current_i));
    last.upper_bound = kPTableBoundScale;
    last.probability = static_cast<double>(kPTableBoundScale - lower) / static_cast<double>(kPTableBoundScale);
    table.rows.push_back(std::move(current));
    current.clear();
  };

  while (std::getline(in, line)) {
    ++line_number;
    if (trim(line).empty()) continue;
    const std::vector<std::string_view> fields = split_fields(line);
    const LineReader reader(source, line_number);
    if (!format) {
      if (header_is(fields, kTauArgusHeader)) {
        format = PTableFormat::kTauArgus;
      } else if (header_is(fields, kSasHeader)) {
        format = PTableFormat::kSas;
      } else {
        reader.fail("the header is neither i;j;p;v;p_int_ub (tau-Argus) nor i;j;p;v;p_int_lb;p_int_ub (SAS)");
      }
      continue;
    }
    const bool sas = *format == PTableFormat::kSas;
    const std::size_t expected = sas ? kSasHeader.size() : kTauArgusHeader.size();
    if (fields.size() != expected) {
      reader.fail("expected " + std::to_string(expected) + " fields, found " + std::to_string(fields.size()));
    }
    const std::int64_t i = reader.integer(fields[0], "i");
    const std::int64_t j = reader.integer(fields[1], "j");
    reader.number(fields[2], "p");  // tau-Argus ignores p and v; they must still be numbers
    reader.number(fields[3], "v");
    const std::uint64_t lower_read = sas ? reader.bound(fields[4], "p_int_lb") : 0;
    const std::uint64_t upper = reader.bound(fields[sas ? 5 : 4], "p_int_ub");
    if (i != current_i) {
      const std::int64_t expected_i = current_i + 1;
      if (i < expected_i) {
        reader.fail("row i = " + std::to_string(i) + " appears after row i = " + std::to_string(current_i) +
                    " (rows must be in ascending order, each in one group)");
      }
      if (i > expected_i) reader.fail("row i = " + std::to_string(expected_i) + " is missing");
      finish_row();
      current_i = i;
      sum_units = 0;
    }
    if (j < 0) reader.fail("column j is negative");
    const std::uint64_t lower = current.empty() ? 0 : current.back().upper_bound;
    if (!current.empty() && j <= current.back().target) {
      reader.fail("column j is not ascending within row i = " + std::to_string(i));
    }
    if (upper <= lower) reader.fail("p_int_ub is not increasing within row i = " + std::to_string(i));
    if (sas && lower_read != lower) {
      reader.fail(current.empty() ? "p_int_lb of the first target of a row is not 0"
                                  : "p_int_lb is not the p_int_ub of the line before");
    }
    sum_units += upper - lower;
    current.push_back({j, static_cast<double>(upper - lower) / static_cast<double>(kPTableBoundScale), upper});
    last_entry_line = line_number;
  }
  if (!format) throw InvalidInput(source + ": the p-table is empty (no header line)");
  finish_row();
  if (table.rows.empty()) throw InvalidInput(source + ": the p-table has a header but no rows");
  if (detected != nullptr) *detected = *format;
  return table;
}

PTable parse_ptable(const std::string& text, const std::string& source, PTableFormat* detected) {
  std::istringstream in(text);
  return read_ptable(in, source, detected);
}

void write_ptable(std::ostream& out, const PTable& table, PTableFormat format) {
  const bool sas = format == PTableFormat::kSas;
  out << (sas ? "i;j;p;v;p_int_lb;p_int_ub" : "i;j;p;v;p_int_ub") << '\n';
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    std::uint64_t lower = 0;
    for (const PTableEntry& entry : table.rows[i]) {
      out << i << ';' << entry.target << ';';
      write_units(out, entry.upper_bound - lower);
      out << ';' << entry.target - static_cast<std::int64_t>(i) << ';';
      if (sas) {
        write_units(out, lower);
        out << ';';
      }
      write_units(out, entry.upper_bound);
      out << '\n';
      lower = entry.upper_bound;
    }
  }
}

std::string format_ptable(const PTable& table, PTableFormat format) {
  std::ostringstream out;
  write_ptable(out, table, format);
  return out.str();
}

}  // namespace sdc::tables
