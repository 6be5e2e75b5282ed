#include "kernels/tables/cell_key.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>

#include "kernels/bootstrap/quantiles.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/tables/constraint_matrix.h"

namespace sdc::tables {
namespace {

__extension__ using Wide = unsigned __int128;

// Cells per TBB task: enough work per task for lookups of a few nanoseconds each.
constexpr std::size_t kCellGrain = 4096;

std::uint64_t reduce_word(std::uint64_t word, std::uint64_t modulus) {
  return static_cast<std::uint64_t>((static_cast<Wide>(word) * modulus) >> 64);
}

// Applies `per_cell(c)` to every cell in parallel. When cells fail, the error reported is the first
// failing cell's, whichever thread meets a failure first: the same message for any thread count.
template <typename PerCell>
void for_each_cell(std::size_t cells, const PerCell& per_cell) {
  std::atomic<std::size_t> first_failure = cells;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, cells, kCellGrain),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t c = range.begin(); c != range.end(); ++c) {
                        try {
                          per_cell(c);
                        } catch (const Error&) {
                          std::size_t seen = first_failure.load();
                          while (c < seen && !first_failure.compare_exchange_weak(seen, c)) {
                          }
                          return;
                        }
                      }
                    });
  if (first_failure.load() < cells) per_cell(first_failure.load());  // throws again, on this thread
}

std::string row_text(std::int64_t row_id) { return "row " + std::to_string(row_id); }

// 10^e for e <= 19.
std::uint64_t power_of_ten(int exponent) {
  std::uint64_t power = 1;
  for (int e = 0; e < exponent; ++e) power *= 10;
  return power;
}

// The number of decimals d when modulus = 10^d, else 0.
int decimal_digits(std::uint64_t modulus) {
  int digits = 0;
  std::uint64_t power = 1;
  while (power < modulus) {
    power *= 10;
    ++digits;
  }
  return power == modulus ? digits : 0;
}

// The first entry of `row` whose bound the key lies below (kTauArgus: ck < ub; kSas: ck <= ub).
template <typename Entry>
const Entry& entry_for_key(const std::vector<Entry>& row, CellKey key, LookupRule rule) {
  const Wide scaled_key = static_cast<Wide>(key.numerator) * kPTableBoundScale;
  for (const Entry& entry : row) {
    const Wide scaled_bound = static_cast<Wide>(entry.upper_bound) * key.modulus;
    if (rule == LookupRule::kSas ? scaled_key <= scaled_bound : scaled_key < scaled_bound) return entry;
  }
  return row.back();  // ck < 1 <= the last bound: not reached for a valid row
}

void check_noise_row(const std::vector<MagnitudeNoiseEntry>& row, const char* what) {
  if (row.empty()) throw ParameterError(std::string(what) + ": a row has no entries");
  std::uint64_t previous = 0;
  for (const MagnitudeNoiseEntry& entry : row) {
    if (entry.upper_bound < previous || !std::isfinite(entry.noise))
      throw ParameterError(std::string(what) + ": bounds must increase and noise must be finite");
    previous = entry.upper_bound;
  }
  if (previous != kPTableBoundScale) throw ParameterError(std::string(what) + ": the last bound of a row must be 1");
}

// m₁² of the small-cells table: Σ v²·p over its last row, p from the bounds.
double last_row_variance(const PTable& table) {
  if (table.rows.empty()) throw ParameterError("small-cells table: no rows");
  const auto last = static_cast<std::int64_t>(table.rows.size() - 1);
  ExactSum variance;
  std::uint64_t lower = 0;
  for (const PTableEntry& entry : table.rows.back()) {
    const double p = static_cast<double>(entry.upper_bound - lower) / static_cast<double>(kPTableBoundScale);
    const auto v = static_cast<double>(entry.target - last);
    variance.add(v * v * p);
    lower = entry.upper_bound;
  }
  return variance.value();
}

}  // namespace

// ---- §1 Record keys ----

void check_key_modulus(std::uint64_t modulus) {
  if (modulus < 2 || modulus > kBinaryKeyModulus) throw ParameterError("key modulus must lie in [2, 2^32]");
}

std::uint64_t native_record_key(std::uint64_t seed, std::int64_t row_id, std::uint64_t modulus) {
  const RecordRng rng(seed, StepId::kCellKeyRecordKey);
  return reduce_word(rng.bits(DrawCounter{.unit = static_cast<std::uint64_t>(row_id)})[0], modulus);
}

void native_record_keys(std::uint64_t seed, std::int64_t first_row_id, std::span<std::uint64_t> keys,
                        const RecordKeyOptions& options) {
  check_key_modulus(options.modulus);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, keys.size(), kCellGrain),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t r = range.begin(); r != range.end(); ++r)
                        keys[r] = native_record_key(seed, first_row_id + static_cast<std::int64_t>(r), options.modulus);
                    });
}

CellKey empty_cell_key(std::uint64_t seed, std::uint64_t cell_index, std::uint64_t modulus) {
  check_key_modulus(modulus);
  const RecordRng rng(seed, StepId::kCellKeyRecordKey);
  return CellKey{reduce_word(rng.bits(DrawCounter{.unit = cell_index, .draw = 1})[0], modulus), modulus};
}

std::uint64_t compat_key_modulus(int decimals) {
  if (decimals < 1 || decimals > 9) throw ParameterError("decimals of the record keys must lie in 1..9");
  return power_of_ten(decimals);
}

ParsedRecordKey parse_compat_record_key(std::string_view text, int decimals, std::int64_t row_id) {
  const std::uint64_t one = compat_key_modulus(decimals);
  const auto not_a_number = [&] { return InvalidInput(row_text(row_id) + ": the record key is not a decimal number"); };
  const auto out_of_range = [&] { return InvalidInput(row_text(row_id) + ": the record key lies outside [0, 1]"); };

  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) throw not_a_number();
  text = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);

  std::size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') negative = text[pos++] == '-';
  // The mantissa's digits without the point; `fraction_digits` of them follow the point.
  std::string digits;
  std::int64_t fraction_digits = 0;
  bool seen_point = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c >= '0' && c <= '9') {
      digits.push_back(c);
      if (seen_point) ++fraction_digits;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (digits.empty()) throw not_a_number();
  std::int64_t exponent = 0;
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
    bool exponent_negative = false;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) exponent_negative = text[pos++] == '-';
    const std::size_t exponent_start = pos;
    for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos)
      // Saturate: any exponent beyond 10^6 is out of range or below every decimal alike.
      exponent = std::min<std::int64_t>(exponent * 10 + (text[pos] - '0'), 1000000);
    if (pos == exponent_start) throw not_a_number();
    if (exponent_negative) exponent = -exponent;
  }
  if (pos != text.size()) throw not_a_number();

  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) return {};  // zero, of either sign
  if (negative) throw out_of_range();
  // value = digits · 10^(exponent − fraction_digits); in units of 10^-d the shift is that plus d.
  const std::int64_t shift = exponent - fraction_digits + decimals;
  if (shift < 0) {
    const auto dropped = static_cast<std::size_t>(-shift);
    if (dropped >= digits.size() || digits.find_first_not_of('0', digits.size() - dropped) != std::string::npos)
      throw InvalidInput(row_text(row_id) + ": the record key has more than " + std::to_string(decimals) + " decimals");
    digits.resize(digits.size() - dropped);
  } else {
    // 10^d has d + 1 digits: a longer integer part is out of range whatever the digits.
    if (static_cast<std::int64_t>(digits.size()) + shift > decimals + 1) throw out_of_range();
    digits.append(static_cast<std::size_t>(shift), '0');
  }
  if (static_cast<int>(digits.size()) > decimals + 1) throw out_of_range();
  std::uint64_t units = 0;
  for (char c : digits) units = units * 10 + static_cast<std::uint64_t>(c - '0');
  if (units > one) throw out_of_range();
  if (units == one) return ParsedRecordKey{.key = 0, .was_one = true};
  return ParsedRecordKey{.key = units, .was_one = false};
}

CompatKeys parse_compat_record_keys(std::span<const std::string> texts, int decimals, std::int64_t first_row_id) {
  CompatKeys out;
  out.keys.reserve(texts.size());
  for (std::size_t r = 0; r < texts.size(); ++r) {
    const ParsedRecordKey parsed =
        parse_compat_record_key(texts[r], decimals, first_row_id + static_cast<std::int64_t>(r));
    out.keys.push_back(parsed.key);
    if (parsed.was_one) ++out.ones_read_as_zero;
  }
  return out;
}

// ---- §2 Cell keys ----

bool key_below_bound(CellKey key, std::uint64_t upper_bound) {
  return static_cast<Wide>(key.numerator) * kPTableBoundScale < static_cast<Wide>(upper_bound) * key.modulus;
}

// ---- §3 Frequency cells ----

void check_frequency_perturbation(const FrequencyPerturbationOptions& options) {
  if (options.zero_row.empty()) return;
  std::uint64_t previous = 0;
  for (const PTableEntry& entry : options.zero_row) {
    if (entry.target < 0) throw ParameterError("zero_row: targets must be >= 0");
    if (entry.upper_bound < previous) throw ParameterError("zero_row: bounds must increase");
    previous = entry.upper_bound;
  }
  if (previous != kPTableBoundScale) throw ParameterError("zero_row: the last bound must be 1");
}

PerturbedFrequencyCell perturb_frequency_cell(const FrequencyCell& cell, const PTable& table,
                                              const FrequencyPerturbationOptions& options) {
  PerturbedFrequencyCell out;
  if (cell.count <= 0) {
    // Row 0 is the identity; only the native zero_row publishes an empty cell as non-zero, and then
    // there is no mean weight to scale by: its weighted count is the count itself.
    if (options.zero_row.empty() || cell.structural_zero || cell.protected_manually) return out;
    out.noise = entry_for_key(options.zero_row, cell.key, options.rule).target;
    out.count = out.noise;
    out.weighted_count = static_cast<double>(out.count);
    return out;
  }
  if (cell.protected_manually) {
    out.count = cell.count;
    out.weighted_count = cell.weighted_count;
    return out;
  }
  out.noise = lookup_noise(table, cell.count, cell.key, options.rule);
  out.count = cell.count + out.noise;
  out.weighted_count = static_cast<double>(out.count) * cell.weighted_count / static_cast<double>(cell.count);
  return out;
}

std::vector<PerturbedFrequencyCell> perturb_frequency_cells(std::span<const FrequencyCell> cells, const PTable& table,
                                                            const FrequencyPerturbationOptions& options) {
  check_frequency_perturbation(options);
  std::vector<PerturbedFrequencyCell> out(cells.size());
  for_each_cell(cells.size(), [&](std::size_t c) { out[c] = perturb_frequency_cell(cells[c], table, options); });
  return out;
}

// ---- §6 Magnitude cells ----

MagnitudeNoiseTable symmetric_noise_table(const PTable& table) {
  if (table.rows.empty()) throw ParameterError("p-table: no rows");
  const auto last = static_cast<std::int64_t>(table.rows.size() - 1);
  MagnitudeNoiseTable out;
  out.row_positions.push_back(static_cast<double>(last));
  auto& row = out.rows.emplace_back();
  for (const PTableEntry& entry : table.rows.back())
    row.push_back(MagnitudeNoiseEntry{static_cast<double>(entry.target - last), entry.upper_bound});
  check_noise_row(row, "p-table");
  return out;
}

MagnitudeNoiseTable count_noise_table(const PTable& table) {
  if (table.rows.empty()) throw ParameterError("small-cells table: no rows");
  MagnitudeNoiseTable out;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    out.row_positions.push_back(static_cast<double>(i));
    auto& row = out.rows.emplace_back();
    for (const PTableEntry& entry : table.rows[i])
      row.push_back(
          MagnitudeNoiseEntry{static_cast<double>(entry.target - static_cast<std::int64_t>(i)), entry.upper_bound});
    check_noise_row(row, "small-cells table");
  }
  return out;
}

double magnitude_noise(const MagnitudeNoiseTable& table, double row_position, CellKey key, LookupRule rule) {
  SDC_CHECK(!table.rows.empty() && table.rows.size() == table.row_positions.size(), "magnitude noise table shape");
  if (rule == LookupRule::kSas && key.numerator == 0) return 0.0;
  const auto& positions = table.row_positions;
  // The first row at or beyond the position; positions outside the table take its first or last row.
  const auto above = std::lower_bound(positions.begin(), positions.end(), row_position);
  if (above == positions.begin()) return entry_for_key(table.rows.front(), key, rule).noise;
  if (above == positions.end()) return entry_for_key(table.rows.back(), key, rule).noise;
  const auto hi = static_cast<std::size_t>(above - positions.begin());
  const double v_hi = entry_for_key(table.rows[hi], key, rule).noise;
  if (*above == row_position) return v_hi;
  const double v_lo = entry_for_key(table.rows[hi - 1], key, rule).noise;
  const double lambda = (row_position - positions[hi - 1]) / (positions[hi] - positions[hi - 1]);
  return (1.0 - lambda) * v_lo + lambda * v_hi;
}

CellKey scramble_key(CellKey key) {
  int digits = decimal_digits(key.modulus);
  std::uint64_t numerator = key.numerator;
  if (digits == 0) {
    digits = 8;
    numerator = static_cast<std::uint64_t>(static_cast<Wide>(key.numerator) * kDecimalKeyModulus / key.modulus);
  }
  const std::uint64_t rest = power_of_ten(digits - 1);
  return CellKey{(numerator % rest) * 10 + numerator / rest, power_of_ten(digits)};
}

double FlexFunction::operator()(double z) const {
  if (z < flex_point) return p_small;
  const double slope = (p_small * z - p_large * flex_point) / (p_large * flex_point);
  return p_large * (1.0 + slope * std::pow(2.0 * flex_point / (flex_point + z), q));
}

void check_magnitude_perturbation(const MagnitudePerturbationOptions& options) {
  const auto& eps = options.epsilon;
  if (eps.empty() || eps.size() > static_cast<std::size_t>(kMaxMagnitudeComponents))
    throw ParameterError("epsilon must have 1 to 6 entries (one per top contribution)");
  if (eps.front() != 1.0) throw ParameterError("epsilon: its first entry must be 1");
  for (std::size_t j = 1; j < eps.size(); ++j)
    if (!(eps[j] > 0.0 && eps[j] <= eps[j - 1])) throw ParameterError("epsilon must be positive and non-increasing");
  const FlexFunction& flex = options.flex;
  if (!(flex.p_small > 0.0) || !std::isfinite(flex.p_small)) throw ParameterError("p_small must be positive");
  if (!(flex.p_large > 0.0) || !std::isfinite(flex.p_large)) throw ParameterError("p_large must be positive");
  if (!(flex.flex_point > 0.0) || !std::isfinite(flex.flex_point)) throw ParameterError("flex_point must be positive");
  if (!(flex.q > 1.0) || !std::isfinite(flex.q)) throw ParameterError("q must be greater than 1");
  if (!(options.mu_c >= 0.0) || !std::isfinite(options.mu_c)) throw ParameterError("mu_c must be >= 0");
}

double separation_point(const PTable& small_cells, const MagnitudePerturbationOptions& options) {
  ExactSum energy;
  for (double e : options.epsilon) energy.add(e * e);
  return std::sqrt(last_row_variance(small_cells)) / (std::sqrt(energy.value()) * options.flex.p_small);
}

namespace {

struct MagnitudeContext {
  const MagnitudeNoiseTable& noise;
  const MagnitudeNoiseTable* small_cells = nullptr;
  double separation = 0.0;
  const MagnitudePerturbationOptions& options;
};

PerturbedMagnitudeCell perturb_magnitude(const MagnitudeCell& cell, const MagnitudeContext& context) {
  const MagnitudePerturbationOptions& options = context.options;
  const std::size_t components = std::min(cell.top.size(), options.epsilon.size());
  double value = cell.total;
  CellKey key = options.scramble_first_key ? scramble_key(cell.key) : cell.key;
  for (std::size_t j = 0; j < components; ++j, key = scramble_key(key)) {
    // A zero value has no sign to keep and no noise to scale: it stays zero (§7), as does every
    // remaining component.
    if (value == 0.0) break;
    double x = cell.top[j];
    if (x == 0.0) continue;
    const double epsilon = options.epsilon[j];
    bool small = std::fabs(x) < context.separation;
    double scale = small ? 1.0 : epsilon * x * options.flex(std::fabs(x));
    if (!small && std::fabs(value) < std::fabs(scale)) {
      // The component would exceed the cell: scale to the cell, as if x were the value that gives it.
      scale = value;
      x = value / (options.flex.p_small * epsilon);
      small = std::fabs(x) < context.separation;
      if (small) scale = 1.0;
    }
    // Below the separation point only the first component is perturbed, like a count.
    if (small && (j > 0 || context.small_cells == nullptr)) continue;
    const double v = small ? magnitude_noise(*context.small_cells, std::fabs(x), key, options.rule)
                           : magnitude_noise(context.noise, std::fabs(x / scale), key, options.rule);
    if (v == 0.0) continue;
    const double mu = (j == 0 && cell.sensitive) ? options.mu_c : 0.0;
    const double sign_value = value > 0.0 ? 1.0 : -1.0;
    const double sign_v = v > 0.0 ? 1.0 : -1.0;
    double component = sign_value * std::fabs(scale) * sign_v * (mu + std::fabs(v));
    // A negative noise may bring the value to 0 but never past it.
    if (v < 0.0) component = value > 0.0 ? std::max(component, -value) : std::min(component, -value);
    value += component;
  }
  return PerturbedMagnitudeCell{.value = value, .noise = value - cell.total};
}

}  // namespace

PerturbedMagnitudeCell perturb_magnitude_cell(const MagnitudeCell& cell, const MagnitudeNoiseTable& noise,
                                              const PTable* small_cells, const MagnitudePerturbationOptions& options) {
  return perturb_magnitude_cells(std::span(&cell, 1), noise, small_cells, options).front();
}

std::vector<PerturbedMagnitudeCell> perturb_magnitude_cells(std::span<const MagnitudeCell> cells,
                                                            const MagnitudeNoiseTable& noise, const PTable* small_cells,
                                                            const MagnitudePerturbationOptions& options) {
  check_magnitude_perturbation(options);
  if (noise.rows.empty() || noise.rows.size() != noise.row_positions.size())
    throw ParameterError("magnitude p-table: one position per row and at least one row");
  for (std::size_t i = 0; i < noise.rows.size(); ++i) {
    check_noise_row(noise.rows[i], "magnitude p-table");
    if (i > 0 && !(noise.row_positions[i] > noise.row_positions[i - 1]))
      throw ParameterError("magnitude p-table: row positions must increase");
  }
  MagnitudeNoiseTable small_table;
  double separation = 0.0;
  if (small_cells != nullptr) {
    small_table = count_noise_table(*small_cells);
    separation = separation_point(*small_cells, options);
  }
  const MagnitudeContext context{noise, small_cells != nullptr ? &small_table : nullptr, separation, options};
  std::vector<PerturbedMagnitudeCell> out(cells.size());
  for_each_cell(cells.size(), [&](std::size_t c) { out[c] = perturb_magnitude(cells[c], context); });
  return out;
}

// ---- §9 Measures ----

namespace {

void check_cells(std::span<const std::int64_t> original, std::span<const std::int64_t> perturbed) {
  if (original.size() != perturbed.size())
    throw ParameterError("cell-key measures: the original and perturbed tables have different numbers of cells");
}

double root_distance(std::int64_t n, std::int64_t n_hat) {
  return std::fabs(std::sqrt(static_cast<double>(n_hat)) - std::sqrt(static_cast<double>(n)));
}

double relative_distance(std::int64_t n, std::int64_t ad) {
  return n > 0 ? static_cast<double>(ad) / static_cast<double>(n) : 0.0;
}

}  // namespace

CellDistances cell_distances(std::span<const std::int64_t> original, std::span<const std::int64_t> perturbed) {
  check_cells(original, perturbed);
  CellDistances out;
  out.absolute.reserve(original.size());
  out.relative.reserve(original.size());
  out.root.reserve(original.size());
  for (std::size_t c = 0; c < original.size(); ++c) {
    const std::int64_t ad = std::abs(perturbed[c] - original[c]);
    out.absolute.push_back(static_cast<double>(ad));
    out.relative.push_back(relative_distance(original[c], ad));
    out.root.push_back(root_distance(original[c], perturbed[c]));
  }
  return out;
}

CkmMeasurePartial ckm_measures_local(std::span<const std::int64_t> original, std::span<const std::int64_t> perturbed,
                                     std::int64_t original_total, std::int64_t perturbed_total) {
  check_cells(original, perturbed);
  CkmMeasurePartial out;
  std::map<std::int64_t, std::int64_t> noise_counts;
  std::vector<double> original_counts;
  std::vector<double> perturbed_counts;
  original_counts.reserve(original.size());
  perturbed_counts.reserve(original.size());
  for (std::size_t c = 0; c < original.size(); ++c) {
    const std::int64_t n = original[c];
    const std::int64_t n_hat = perturbed[c];
    if (n < 0 || n_hat < 0) throw ParameterError("cell-key measures: a count is negative");
    const std::int64_t v = n_hat - n;
    const std::int64_t ad = std::abs(v);
    if (ad > kMaxReportedNoise) throw ParameterError("cell-key measures: a cell's noise exceeds 2^20");
    ++out.cells;
    ++noise_counts[v];
    if (v == 0) ++out.cells_unchanged;
    if (n == 0) ++out.empty_cells;
    if (n > 0 && n_hat == 0) ++out.false_zeros;
    if (n == 0 && n_hat != 0) ++out.false_nonzeros;
    if (n == 1) {
      ++out.original_ones;
      if (v == 0) ++out.ones_unchanged;
    }
    if (n == 2) {
      ++out.original_twos;
      if (v == 0) ++out.twos_unchanged;
    }
    const double relative = relative_distance(n, ad);
    const double root = root_distance(n, n_hat);
    out.absolute_all.add(static_cast<double>(ad));
    out.relative_all.add(relative);
    out.root_all.add(root);
    if (n > 0) {
      out.absolute_nonempty.add(static_cast<double>(ad));
      out.relative_nonempty.add(relative);
      out.root_nonempty.add(root);
    }
    for (std::size_t b = 0; b < kCkmRatioBreaks.size(); ++b) {
      // RAD <= k/100 exactly: 100·AD <= k·n (an empty cell has RAD 0).
      if (n == 0 ||
          static_cast<Wide>(ad) * 100 <= static_cast<Wide>(kCkmRatioBreakHundredths[b]) * static_cast<Wide>(n))
        ++out.relative_at_most[b];
      if (root <= kCkmRatioBreaks[b]) ++out.root_at_most[b];
    }
    original_counts.push_back(static_cast<double>(n));
    perturbed_counts.push_back(static_cast<double>(n_hat));
  }
  for (const auto& [noise, cells] : noise_counts) out.noise_counts.push_back(NoiseCount{noise, cells});
  if (original_total > 0 && perturbed_total > 0)
    utility::add_table_cells(out.distance, original_counts, perturbed_counts, static_cast<double>(original_total),
                             static_cast<double>(perturbed_total));
  return out;
}

void ckm_measures_merge(CkmMeasurePartial& into, const CkmMeasurePartial& from) {
  into.cells += from.cells;
  into.empty_cells += from.empty_cells;
  into.cells_unchanged += from.cells_unchanged;
  into.false_zeros += from.false_zeros;
  into.false_nonzeros += from.false_nonzeros;
  into.original_ones += from.original_ones;
  into.ones_unchanged += from.ones_unchanged;
  into.original_twos += from.original_twos;
  into.twos_unchanged += from.twos_unchanged;
  into.absolute_all.merge(from.absolute_all);
  into.relative_all.merge(from.relative_all);
  into.root_all.merge(from.root_all);
  into.absolute_nonempty.merge(from.absolute_nonempty);
  into.relative_nonempty.merge(from.relative_nonempty);
  into.root_nonempty.merge(from.root_nonempty);
  std::map<std::int64_t, std::int64_t> noise_counts;
  for (const NoiseCount& count : into.noise_counts) noise_counts[count.noise] += count.cells;
  for (const NoiseCount& count : from.noise_counts) noise_counts[count.noise] += count.cells;
  into.noise_counts.clear();
  for (const auto& [noise, cells] : noise_counts) into.noise_counts.push_back(NoiseCount{noise, cells});
  for (std::size_t b = 0; b < kCkmRatioBreaks.size(); ++b) {
    into.relative_at_most[b] += from.relative_at_most[b];
    into.root_at_most[b] += from.root_at_most[b];
  }
  into.distance.merge(from.distance);
}

CkmPercentiles ckm_percentiles(const CellDistances& distances) {
  const QuantileOptions options{.type = QuantileType::kType7, .arithmetic = QuantileArithmetic::kExact};
  CkmPercentiles out;
  if (distances.absolute.empty()) {
    out.absolute.assign(kCkmPercentiles.size(), 0.0);
    out.relative = out.absolute;
    out.root = out.absolute;
    return out;
  }
  out.absolute = sample_quantiles(distances.absolute, kCkmPercentiles, options).values;
  out.relative = sample_quantiles(distances.relative, kCkmPercentiles, options).values;
  out.root = sample_quantiles(distances.root, kCkmPercentiles, options).values;
  return out;
}

CkmMeasures ckm_measures_finalize(const CkmMeasurePartial& total, const CkmPercentiles& percentiles) {
  CkmMeasures out;
  out.cells = total.cells;
  out.empty_cells = total.empty_cells;
  const std::int64_t nonempty = total.cells - total.empty_cells;
  const auto summary = [&](const ExactSum& all, const ExactSum& nonempty_sum, const std::vector<double>& values) {
    DistanceSummary s;
    s.mean_all = total.cells > 0 ? all.value() / static_cast<double>(total.cells) : 0.0;
    s.mean_nonempty = nonempty > 0 ? nonempty_sum.value() / static_cast<double>(nonempty) : 0.0;
    s.percentiles = values;
    return s;
  };
  out.absolute = summary(total.absolute_all, total.absolute_nonempty, percentiles.absolute);
  out.relative = summary(total.relative_all, total.relative_nonempty, percentiles.relative);
  out.root = summary(total.root_all, total.root_nonempty, percentiles.root);

  std::int64_t max_absolute = 0;
  for (const NoiseCount& count : total.noise_counts) max_absolute = std::max(max_absolute, std::abs(count.noise));
  std::vector<std::int64_t> per_absolute(static_cast<std::size_t>(max_absolute) + 1, 0);
  for (const NoiseCount& count : total.noise_counts)
    per_absolute[static_cast<std::size_t>(std::abs(count.noise))] += count.cells;
  std::int64_t running = 0;
  for (const std::int64_t cells : per_absolute) out.absolute_at_most.push_back(running += cells);

  out.relative_at_most = total.relative_at_most;
  out.root_at_most = total.root_at_most;
  out.noise_counts = total.noise_counts;
  out.cells_unchanged = total.cells_unchanged;
  out.false_zeros = total.false_zeros;
  out.false_nonzeros = total.false_nonzeros;
  out.hellinger = utility::finish_table_distances(total.distance).hellinger;
  out.original_ones = total.original_ones;
  out.ones_unchanged = total.ones_unchanged;
  out.original_twos = total.original_twos;
  out.twos_unchanged = total.twos_unchanged;
  const auto share = [](std::int64_t part, std::int64_t whole) {
    return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
  };
  out.ones_unchanged_share = share(total.ones_unchanged, total.original_ones);
  out.twos_unchanged_share = share(total.twos_unchanged, total.original_twos);
  return out;
}

CkmMeasures ckm_measures(std::span<const std::int64_t> original, std::span<const std::int64_t> perturbed) {
  check_cells(original, perturbed);
  std::int64_t original_total = 0;
  std::int64_t perturbed_total = 0;
  for (std::size_t c = 0; c < original.size(); ++c) {
    original_total += original[c];
    perturbed_total += perturbed[c];
  }
  const CkmMeasurePartial partial = ckm_measures_local(original, perturbed, original_total, perturbed_total);
  return ckm_measures_finalize(partial, ckm_percentiles(cell_distances(original, perturbed)));
}

// ---- §8 Non-additivity ----

namespace {

void add_gap(NonAdditivity& out, std::int64_t gap) {
  gap = std::abs(gap);
  ++out.relations;
  if (gap != 0) ++out.non_additive;
  out.max_gap = std::max(out.max_gap, gap);
  out.total_gap += gap;
}

void finish_mean_gap(NonAdditivity& out) {
  if (out.relations > 0) out.mean_gap = static_cast<double>(out.total_gap) / static_cast<double>(out.relations);
}

}  // namespace

NonAdditivity non_additivity(std::span<const std::int64_t> published, std::span<const AdditivityRelation> relations) {
  NonAdditivity out;
  for (const AdditivityRelation& relation : relations) {
    SDC_CHECK(relation.parent < published.size(), "additivity relation: parent cell out of range");
    std::int64_t gap = -published[relation.parent];
    for (const std::size_t child : relation.children) {
      SDC_CHECK(child < published.size(), "additivity relation: child cell out of range");
      gap += published[child];
    }
    add_gap(out, gap);
  }
  finish_mean_gap(out);
  return out;
}

NonAdditivity table_non_additivity(std::span<const DimensionEquations> dimensions, std::span<const std::int64_t> cells,
                                   std::span<const std::int64_t> published) {
  if (cells.size() != published.size())
    throw ParameterError("non-additivity: the cells and their published counts differ in number");
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  for (std::size_t c = 0; c < cells.size(); ++c)
    if (cells[c] < 0 || cells[c] >= sizes.cells || (c > 0 && cells[c] <= cells[c - 1]))
      throw ParameterError("non-additivity: the cells are not ascending cell indices of the table");
  const auto published_at = [&](std::int64_t cell) -> std::int64_t {
    const auto it = std::lower_bound(cells.begin(), cells.end(), cell);
    return it != cells.end() && *it == cell ? published[static_cast<std::size_t>(it - cells.begin())] : 0;
  };
  NonAdditivity out;
  std::int64_t stride = sizes.cells;
  for (const DimensionEquations& dimension : dimensions) {
    stride /= dimension.code_count;
    std::vector<std::vector<const Equation*>> equations_of_parent(static_cast<std::size_t>(dimension.code_count));
    for (const Equation& equation : dimension.equations)
      equations_of_parent[static_cast<std::size_t>(equation.parent)].push_back(&equation);
    std::int64_t relations_here = 0;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const auto position = static_cast<std::size_t>((cells[c] / stride) % dimension.code_count);
      for (const Equation* equation : equations_of_parent[position]) {
        std::int64_t gap = -published[c];
        for (const std::int32_t child : equation->children)
          gap += published_at(cells[c] + (child - equation->parent) * stride);
        add_gap(out, gap);
        ++relations_here;
      }
    }
    // A relation whose parent cell is empty has empty children (zeros stay zero): no gap.
    const std::int64_t lines = sizes.cells / dimension.code_count;
    out.relations += static_cast<std::int64_t>(dimension.equations.size()) * lines - relations_here;
  }
  finish_mean_gap(out);
  return out;
}

}  // namespace sdc::tables
