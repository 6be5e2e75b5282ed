#include "kernels/tables/cell_key.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::tables {
namespace {

constexpr std::uint64_t kM = kDecimalKeyModulus;

PTableEntry entry(std::int64_t target, std::uint64_t upper_bound, std::uint64_t lower_bound) {
  return PTableEntry{target, static_cast<double>(upper_bound - lower_bound) / 1e8, upper_bound};
}

// A row from its targets and printed upper bounds (units of 10^-8).
std::vector<PTableEntry> row(const std::vector<std::int64_t>& targets, const std::vector<std::uint64_t>& bounds) {
  std::vector<PTableEntry> out;
  std::uint64_t lower = 0;
  for (std::size_t e = 0; e < targets.size(); ++e) {
    out.push_back(entry(targets[e], bounds[e], lower));
    lower = bounds[e];
  }
  return out;
}

// cellkey.md §11, "E p-table D = 2, V = 1": the printed bounds.
PTable d2v1_table() {
  PTable table;
  table.rows.push_back(row({0}, {100000000}));
  table.rows.push_back(row({0, 1, 2, 3}, {36648551, 73297101, 90054348, 100000000}));
  table.rows.push_back(row({0, 1, 2, 3, 4}, {6382714, 30851859, 69148141, 93617286, 100000000}));
  return table;
}

// cellkey.md §11, "E ptab1" (D 2, V 1.08, js 1): cumulative sums of the printed probabilities.
PTable ptab1_table() {
  PTable table;
  table.blocked_threshold = 1;
  table.rows.push_back(row({0}, {100000000}));
  table.rows.push_back(row({0, 2, 3}, {51333333, 97333333, 100000000}));
  table.rows.push_back(row({0, 2, 3, 4}, {16560835, 71195827, 95682504, 100000000}));
  table.rows.push_back(row({2, 3, 4, 5}, {42078468, 69843064, 88078468, 100000000}));
  table.rows.push_back(row({2, 3, 4, 5, 6}, {7394668, 31815997, 68184003, 92605332, 100000000}));
  return table;
}

CellKey key_of(double u) { return CellKey{static_cast<std::uint64_t>(std::llround(u * 1e8)), kM}; }

FrequencyCell count_cell(std::int64_t count, CellKey key) {
  return FrequencyCell{.count = count, .weighted_count = static_cast<double>(count), .key = key};
}

// ---- §11 E hand table ----

TEST(CellKey, HandTableOracle) {
  struct Record {
    char cell;
    std::string key;
  };
  const std::vector<Record> records{{'A', "0.40"}, {'A', "0.75"}, {'B', "0.95"},
                                    {'B', "0.10"}, {'B', "0.30"}, {'B', "0.62"}};
  CellKeySum a;
  CellKeySum b;
  CellKeySum total;
  for (std::size_t r = 0; r < records.size(); ++r) {
    const std::uint64_t key = parse_compat_record_key(records[r].key, 8, static_cast<std::int64_t>(r)).key;
    (records[r].cell == 'A' ? a : b).add(key, kM);
    total.add(key, kM);
  }
  EXPECT_EQ(a.count, 2);
  EXPECT_EQ(a.key_sum, 15000000U);  // 0.15 exactly: a double sum gives 0.1499999…
  EXPECT_EQ(b.count, 4);
  EXPECT_EQ(b.key_sum, 97000000U);
  EXPECT_EQ(total.count, 6);
  EXPECT_EQ(total.key_sum, 12000000U);
  // A margin's key is the modular sum of its children's.
  CellKeySum margin = a;
  margin.merge(b, kM);
  EXPECT_EQ(margin.key_sum, total.key_sum);
  EXPECT_EQ(margin.count, total.count);

  const std::vector<FrequencyCell> cells{count_cell(a.count, a.key(kM)), count_cell(b.count, b.key(kM)),
                                         count_cell(total.count, total.key(kM))};
  const auto d2v1 = perturb_frequency_cells(cells, d2v1_table(), {});
  EXPECT_EQ(d2v1[0].count, 1);
  EXPECT_EQ(d2v1[1].count, 6);
  EXPECT_EQ(d2v1[2].count, 5);
  const auto ptab1 = perturb_frequency_cells(cells, ptab1_table(), {});
  EXPECT_EQ(ptab1[0].count, 0);
  EXPECT_EQ(ptab1[1].count, 6);
  EXPECT_EQ(ptab1[2].count, 5);

  // §8: 1 + 6 != 5 under D 2 V 1; 0 + 6 != 5 under ptab1.
  const std::vector<AdditivityRelation> relations{{2, {0, 1}}};
  const std::vector<std::int64_t> published{d2v1[0].count, d2v1[1].count, d2v1[2].count};
  const NonAdditivity gaps = non_additivity(published, relations);
  EXPECT_EQ(gaps.relations, 1);
  EXPECT_EQ(gaps.non_additive, 1);
  EXPECT_EQ(gaps.max_gap, 2);
  EXPECT_EQ(gaps.total_gap, 2);
  EXPECT_DOUBLE_EQ(gaps.mean_gap, 2.0);
}

// ---- §11 E properties ----

TEST(CellKey, PropertiesOracle) {
  constexpr std::uint64_t kSeed = 20240611;
  std::vector<std::uint64_t> keys(2000);
  native_record_keys(kSeed, 0, keys);

  // The same record set in two different tables: summed in different orders and groupings (a leaf
  // cell of one table, a margin of two cells in another), the key and the published value agree.
  CellKeySum leaf;
  for (std::size_t r = 0; r < 40; ++r) leaf.add(keys[r], kM);
  CellKeySum left;
  CellKeySum right;
  for (std::size_t r = 40; r-- > 0;) (r % 3 == 0 ? left : right).add(keys[r], kM);
  CellKeySum margin = right;
  margin.merge(left, kM);
  EXPECT_EQ(margin.key_sum, leaf.key_sum);
  for (const PTable& table : {d2v1_table(), ptab1_table()}) {
    EXPECT_EQ(perturb_frequency_cell(count_cell(leaf.count, leaf.key(kM)), table, {}).count,
              perturb_frequency_cell(count_cell(margin.count, margin.key(kM)), table, {}).count);
  }

  // Zeros stay 0, and with js = 1 nothing is published as 1, for counts 0..12 and many keys.
  const PTable ptab1 = ptab1_table();
  std::vector<FrequencyCell> cells;
  for (std::int64_t n = 0; n <= 12; ++n)
    for (std::size_t k = 0; k < 100; ++k) {
      CellKeySum sum;
      for (std::int64_t r = 0; r < n; ++r) sum.add(keys[(k * 13 + static_cast<std::size_t>(r)) % keys.size()], kM);
      cells.push_back(count_cell(sum.count, sum.key(kM)));
    }
  const auto published = perturb_frequency_cells(cells, ptab1, {});
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (cells[c].count == 0) {
      EXPECT_EQ(published[c].count, 0);
    }
    EXPECT_NE(published[c].count, 1) << "cell " << c;
    EXPECT_GE(published[c].count, 0);
    EXPECT_LE(std::abs(published[c].noise), 2);
  }

  // Identical for 1, 2 and 4 threads.
  for (int threads : {1, 2, 4}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    const auto again = perturb_frequency_cells(cells, ptab1, {});
    for (std::size_t c = 0; c < cells.size(); ++c) ASSERT_EQ(again[c].count, published[c].count);
  }
}

// ---- §11 A uniformity ----

// The χ² statistic of counts over equal bins.
double chi_squared(const std::vector<std::int64_t>& counts, std::int64_t total) {
  const double expected = static_cast<double>(total) / static_cast<double>(counts.size());
  double statistic = 0.0;
  for (std::int64_t c : counts) statistic += (static_cast<double>(c) - expected) * (static_cast<double>(c) - expected);
  return statistic / expected;
}

// The two-sided 99.9% band of χ² with `df` degrees of freedom (Wilson–Hilferty; z = 3.2905).
std::pair<double, double> chi_squared_band(double df) {
  const double s = std::sqrt(2.0 / (9.0 * df));
  const auto at = [&](double z) { return df * std::pow(1.0 - 2.0 / (9.0 * df) + z * s, 3.0); };
  return {at(-3.2905), at(3.2905)};
}

TEST(CellKey, UniformityOracle) {
  constexpr std::size_t kCells = 1000000;
  constexpr std::size_t kRecordsPerCell = 5;
  constexpr std::size_t kBins = 256;
  std::vector<std::uint64_t> keys(kCells * kRecordsPerCell);
  native_record_keys(7, 0, keys);
  const auto [low, high] = chi_squared_band(kBins - 1.0);

  // u of 10^6 record keys.
  std::vector<std::int64_t> record_bins(kBins, 0);
  for (std::size_t r = 0; r < kCells; ++r) ++record_bins[keys[r] * kBins / kM];
  const double record_statistic = chi_squared(record_bins, kCells);
  EXPECT_GT(record_statistic, low);
  EXPECT_LT(record_statistic, high);

  // Cell keys of 10^6 cells of 5 records, and the noise of those cells (count 5: row 2 of D 2 V 1).
  const PTable table = d2v1_table();
  std::vector<std::int64_t> cell_bins(kBins, 0);
  std::vector<std::int64_t> noise_counts(5, 0);
  for (std::size_t c = 0; c < kCells; ++c) {
    CellKeySum sum;
    for (std::size_t r = 0; r < kRecordsPerCell; ++r) sum.add(keys[c * kRecordsPerCell + r], kM);
    ++cell_bins[sum.key_sum * kBins / kM];
    ++noise_counts[static_cast<std::size_t>(lookup_noise(table, 5, sum.key(kM), LookupRule::kTauArgus) + 2)];
  }
  const double cell_statistic = chi_squared(cell_bins, kCells);
  EXPECT_GT(cell_statistic, low);
  EXPECT_LT(cell_statistic, high);
  const std::vector<PTableEntry>& symmetric = table.rows[2];
  for (std::size_t v = 0; v < 5; ++v) {
    const double p = symmetric[v].probability;
    const double observed = static_cast<double>(noise_counts[v]) / kCells;
    EXPECT_NEAR(observed, p, 4.0 * std::sqrt(p * (1.0 - p) / kCells)) << "v = " << static_cast<int>(v) - 2;
  }
}

TEST(CellKey, NativeKeysFollowTheRandomNumberContract) {
  const RecordRng rng(99, StepId::kCellKeyRecordKey);
  const std::uint64_t word = rng.bits(DrawCounter{.unit = 12345})[0];
  __extension__ using Wide = unsigned __int128;
  EXPECT_EQ(native_record_key(99, 12345, kM), static_cast<std::uint64_t>((static_cast<Wide>(word) * kM) >> 64));
  EXPECT_EQ(native_record_key(99, 12345, kBinaryKeyModulus), word >> 32);

  std::vector<std::uint64_t> batch(10000);
  native_record_keys(99, 500, batch, RecordKeyOptions{.modulus = kBinaryKeyModulus});
  for (std::size_t r = 0; r < batch.size(); ++r) {
    ASSERT_EQ(batch[r], native_record_key(99, 500 + static_cast<std::int64_t>(r), kBinaryKeyModulus));
    ASSERT_LT(batch[r], kBinaryKeyModulus);
  }
  // With M = 2^32 cell-key sums are uint32 wrap-around.
  CellKeySum sum;
  sum.add(batch[0], kBinaryKeyModulus);
  sum.add(batch[1], kBinaryKeyModulus);
  EXPECT_EQ(sum.key_sum, static_cast<std::uint32_t>(batch[0] + batch[1]));

  EXPECT_THROW(native_record_keys(1, 0, batch, RecordKeyOptions{.modulus = 1}), ParameterError);
  EXPECT_THROW(native_record_keys(1, 0, batch, RecordKeyOptions{.modulus = kBinaryKeyModulus + 1}), ParameterError);
}

// ---- §1 compat keys ----

TEST(CellKey, CompatKeyParsing) {
  EXPECT_EQ(parse_compat_record_key("6.534e-05", 8, 0).key, 6534U);
  EXPECT_EQ(parse_compat_record_key("  0.99994136 ", 8, 0).key, 99994136U);
  EXPECT_EQ(parse_compat_record_key("2.505E-5", 8, 0).key, 2505U);
  EXPECT_EQ(parse_compat_record_key("0.40", 8, 0).key, 40000000U);
  EXPECT_EQ(parse_compat_record_key(".5", 2, 0).key, 50U);
  EXPECT_EQ(parse_compat_record_key("0.1234567800", 8, 0).key, 12345678U);  // trailing zeros beyond d
  EXPECT_EQ(parse_compat_record_key("0", 8, 0).key, 0U);
  EXPECT_EQ(parse_compat_record_key("-0.0", 8, 0).key, 0U);
  EXPECT_EQ(parse_compat_record_key("5e-1", 3, 0).key, 500U);

  const ParsedRecordKey one = parse_compat_record_key("1", 8, 0);
  EXPECT_EQ(one.key, 0U);
  EXPECT_TRUE(one.was_one);
  EXPECT_TRUE(parse_compat_record_key("1.00000000", 8, 0).was_one);
  EXPECT_TRUE(parse_compat_record_key("0.1e1", 8, 0).was_one);
  EXPECT_FALSE(parse_compat_record_key("0.5", 8, 0).was_one);

  const std::vector<std::string> texts{"0.25", "1", "0.75", "1.0"};
  const CompatKeys parsed = parse_compat_record_keys(texts, 2, 100);
  EXPECT_EQ(parsed.keys, (std::vector<std::uint64_t>{25, 0, 75, 0}));
  EXPECT_EQ(parsed.ones_read_as_zero, 2);

  for (const std::string bad : {"1.5", "-0.25", "2", "0.123456789", "abc", "", "  ", "0.5x", "1e", "nan", "inf", "0..5",
                                "+", "1e999999999", "1e-999999999", "0.5 0.5"}) {
    try {
      parse_compat_record_key(bad, 8, 7);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidInput& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("row 7"), std::string::npos) << message;
      if (bad.size() > 2) {
        EXPECT_EQ(message.find(bad), std::string::npos) << "quotes the value: " << message;
      }
    }
  }
}

TEST(CellKey, CompatDecimalsAreValidated) {
  EXPECT_EQ(compat_key_modulus(8), kM);
  EXPECT_EQ(compat_key_modulus(9), 1000000000U);
  EXPECT_THROW(compat_key_modulus(0), ParameterError);
  EXPECT_THROW(compat_key_modulus(10), ParameterError);
  EXPECT_THROW(parse_compat_record_key("0.5", 12, 0), ParameterError);
}

// ---- §3 frequency cells ----

TEST(CellKey, FrequencyCellsScaleWeightsAndHonourOptions) {
  const PTable table = d2v1_table();
  // n 4 with key 0.97: v = +2; Ŵ = 6 · 10 / 4.
  FrequencyCell cell{.count = 4, .weighted_count = 10.0, .key = key_of(0.97)};
  PerturbedFrequencyCell out = perturb_frequency_cell(cell, table, {});
  EXPECT_EQ(out.noise, 2);
  EXPECT_EQ(out.count, 6);
  EXPECT_DOUBLE_EQ(out.weighted_count, 15.0);

  cell.protected_manually = true;
  out = perturb_frequency_cell(cell, table, {});
  EXPECT_EQ(out.noise, 0);
  EXPECT_EQ(out.count, 4);
  EXPECT_DOUBLE_EQ(out.weighted_count, 10.0);

  // The rule reaches the lookup: (1, 0.36648551) is a bound hit, 0 under tau-Argus, −1 under SAS.
  const FrequencyCell bound_hit = count_cell(1, key_of(0.36648551));
  EXPECT_EQ(perturb_frequency_cell(bound_hit, table, {}).count, 1);
  FrequencyPerturbationOptions sas;
  sas.rule = LookupRule::kSas;
  EXPECT_EQ(perturb_frequency_cell(bound_hit, table, sas).count, 0);

  // Empty cells publish 0, whatever their key, unless the native zero_row is on.
  const FrequencyCell empty = count_cell(0, key_of(0.95));
  EXPECT_EQ(perturb_frequency_cell(empty, table, {}).count, 0);
  FrequencyPerturbationOptions zero_row;
  zero_row.zero_row = row({0, 1}, {90000000, 100000000});
  check_frequency_perturbation(zero_row);
  EXPECT_EQ(perturb_frequency_cell(empty, table, zero_row).count, 1);
  EXPECT_EQ(perturb_frequency_cell(count_cell(0, key_of(0.5)), table, zero_row).count, 0);
  FrequencyCell structural = empty;
  structural.structural_zero = true;
  EXPECT_EQ(perturb_frequency_cell(structural, table, zero_row).count, 0);

  // Keys of empty cells for zero_row: a pure function of (seed, cell index).
  const CellKey first = empty_cell_key(5, 17, kM);
  EXPECT_EQ(first.numerator, empty_cell_key(5, 17, kM).numerator);
  EXPECT_NE(first.numerator, empty_cell_key(5, 18, kM).numerator);
  EXPECT_NE(first.numerator, native_record_key(5, 17, kM));

  FrequencyPerturbationOptions bad;
  bad.zero_row = row({0, 1}, {90000000, 99999999});
  EXPECT_THROW(check_frequency_perturbation(bad), ParameterError);
  bad.zero_row = row({-1, 1}, {90000000, 100000000});
  EXPECT_THROW(perturb_frequency_cells(std::vector<FrequencyCell>{empty}, table, bad), ParameterError);
}

// ---- §6 magnitude cells ----

MagnitudePerturbationOptions magnitude_options() {
  MagnitudePerturbationOptions options;
  options.flex = FlexFunction{.p_small = 0.3, .p_large = 0.03, .flex_point = 1000.0, .q = 3.0};
  options.epsilon = {1.0, 0.5, 0.2};
  return options;
}

TEST(CellKey, ScrambledKeysMoveTheFirstDecimalToTheEnd) {
  EXPECT_EQ(scramble_key(CellKey{15000000, kM}).numerator, 50000001U);
  EXPECT_EQ(scramble_key(CellKey{12345678, kM}).numerator, 23456781U);
  EXPECT_EQ(scramble_key(CellKey{1234, 10000}).numerator, 2341U);
  EXPECT_EQ(scramble_key(CellKey{1234, 10000}).modulus, 10000U);
  // M = 2^32: the 8 decimals of the key (0.5 -> 0.50000000 -> 0.00000005).
  const CellKey binary = scramble_key(CellKey{std::uint64_t{1} << 31, kBinaryKeyModulus});
  EXPECT_EQ(binary.numerator, 5U);
  EXPECT_EQ(binary.modulus, kM);
}

TEST(CellKey, FlexFunctionAndSeparationPoint) {
  const FlexFunction flex = magnitude_options().flex;
  EXPECT_DOUBLE_EQ(flex(10.0), 0.3);
  EXPECT_DOUBLE_EQ(flex(1000.0), 0.3);
  EXPECT_NEAR(flex(1e9), 0.03, 1e-6);
  EXPECT_LT(flex(1e4), flex(2e3));
  // m₁² of row 2 of D 2 V 1 is 1.00000002 (printed probabilities); ε = (1, 0.5, 0.2): E = 1.29.
  EXPECT_NEAR(separation_point(d2v1_table(), magnitude_options()), 1.0 / (std::sqrt(1.29) * 0.3), 1e-7);
}

TEST(CellKey, MagnitudeNoiseInterpolatesBetweenRows) {
  MagnitudeNoiseTable table;
  table.row_positions = {1.0, 3.0};
  table.rows = {{{1.0, 100000000}}, {{3.0, 100000000}}};
  const CellKey key = key_of(0.5);
  EXPECT_DOUBLE_EQ(magnitude_noise(table, 2.0, key, LookupRule::kTauArgus), 2.0);
  EXPECT_DOUBLE_EQ(magnitude_noise(table, 2.5, key, LookupRule::kTauArgus), 2.5);
  EXPECT_DOUBLE_EQ(magnitude_noise(table, 3.0, key, LookupRule::kTauArgus), 3.0);
  EXPECT_DOUBLE_EQ(magnitude_noise(table, 0.2, key, LookupRule::kTauArgus), 1.0);
  EXPECT_DOUBLE_EQ(magnitude_noise(table, 9.0, key, LookupRule::kTauArgus), 3.0);
  EXPECT_DOUBLE_EQ(magnitude_noise(table, 2.0, CellKey{0, kM}, LookupRule::kSas), 0.0);

  // The frequency fallback: the symmetric row of D 2 V 1, V = j − 2.
  const MagnitudeNoiseTable symmetric = symmetric_noise_table(d2v1_table());
  EXPECT_DOUBLE_EQ(magnitude_noise(symmetric, 7.0, key_of(0.01), LookupRule::kTauArgus), -2.0);
  EXPECT_DOUBLE_EQ(magnitude_noise(symmetric, 7.0, key_of(0.80), LookupRule::kTauArgus), 1.0);
  EXPECT_DOUBLE_EQ(magnitude_noise(symmetric, 7.0, key_of(0.99), LookupRule::kTauArgus), 2.0);
}

TEST(CellKey, MagnitudeProperties) {
  const MagnitudeNoiseTable noise = symmetric_noise_table(d2v1_table());
  MagnitudePerturbationOptions options = magnitude_options();

  // Bigger contributions -> bigger noise: one contribution, the same key (V = +1).
  double previous = 0.0;
  for (double x : {10.0, 100.0, 1000.0, 1e4, 1e5, 1e6}) {
    const std::vector<double> top{x};
    const MagnitudeCell cell{.total = x, .top = top, .key = key_of(0.80)};
    const PerturbedMagnitudeCell out = perturb_magnitude_cell(cell, noise, nullptr, options);
    EXPECT_NEAR(out.noise, x * options.flex(x), 1e-12 * x);
    EXPECT_GT(out.noise, previous);
    previous = out.noise;
  }

  // Zero cells stay zero, even with contributions of both signs.
  const std::vector<double> mixed{5.0, -5.0};
  EXPECT_EQ(
      perturb_magnitude_cell(MagnitudeCell{.total = 0.0, .top = mixed, .key = key_of(0.99)}, noise, nullptr, options)
          .value,
      0.0);

  // The sign is never flipped: a contribution far above the cell value, the most negative noise.
  const std::vector<double> large{100.0, 80.0};
  for (double total : {5.0, -5.0}) {
    const MagnitudeCell cell{.total = total, .top = large, .key = key_of(0.01)};
    const double value = perturb_magnitude_cell(cell, noise, nullptr, options).value;
    EXPECT_TRUE(value == 0.0 || (value > 0.0) == (total > 0.0)) << total << " -> " << value;
  }

  // Many cells: deterministic for 1 and 4 threads, signs kept, μ_C adds to sensitive cells' first
  // component.
  std::vector<std::vector<double>> tops;
  std::vector<MagnitudeCell> cells;
  for (std::uint64_t c = 0; c < 20000; ++c) {
    const double x1 = static_cast<double>((c * 7919) % 5000 + 1);
    const double x2 = x1 * 0.5;
    tops.push_back({x1, x2, 1.0});
  }
  for (std::uint64_t c = 0; c < tops.size(); ++c) {
    const double sign = c % 5 == 0 ? -1.0 : 1.0;
    cells.push_back(MagnitudeCell{.total = sign * (tops[c][0] + tops[c][1] + 1.0),
                                  .top = tops[c],
                                  .key = CellKey{native_record_key(3, static_cast<std::int64_t>(c), kM), kM},
                                  .sensitive = c % 2 == 0});
  }
  options.mu_c = 0.5;
  const PTable small_cells = d2v1_table();
  std::vector<PerturbedMagnitudeCell> reference;
  for (int threads : {1, 4}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    const auto out = perturb_magnitude_cells(cells, noise, &small_cells, options);
    if (reference.empty()) {
      reference = out;
      continue;
    }
    for (std::size_t c = 0; c < cells.size(); ++c) ASSERT_EQ(out[c].value, reference[c].value);
  }
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const double value = reference[c].value;
    EXPECT_TRUE(value == 0.0 || (value > 0.0) == (cells[c].total > 0.0)) << c;
  }

  // μ_C: a sensitive cell of one contribution with V = +1 gets (μ_C + 1)·δ.
  const std::vector<double> one{200.0};
  MagnitudeCell sensitive{.total = 200.0, .top = one, .key = key_of(0.80), .sensitive = true};
  EXPECT_DOUBLE_EQ(perturb_magnitude_cell(sensitive, noise, nullptr, options).noise, 1.5 * 0.3 * 200.0);

  // Below the separation point (≈ 2.93) the first contribution is perturbed like a count: row 2 of the
  // small-cells table, V = +1 for key 0.80.
  const std::vector<double> tiny{2.0};
  const MagnitudeCell small{.total = 2.0, .top = tiny, .key = key_of(0.80)};
  EXPECT_DOUBLE_EQ(perturb_magnitude_cell(small, noise, &small_cells, options).value, 3.0);
}

TEST(CellKey, MagnitudeParametersAreValidated) {
  const MagnitudeNoiseTable noise = symmetric_noise_table(d2v1_table());
  const auto rejects = [&](const MagnitudePerturbationOptions& options, const std::string& name) {
    try {
      check_magnitude_perturbation(options);
      ADD_FAILURE() << "accepted a bad " << name;
    } catch (const ParameterError& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
  };
  MagnitudePerturbationOptions options = magnitude_options();
  options.epsilon = {0.9};
  rejects(options, "epsilon");
  options.epsilon = {1.0, 0.5, 0.7};
  rejects(options, "epsilon");
  options.epsilon = std::vector<double>(7, 1.0);
  rejects(options, "epsilon");
  options = magnitude_options();
  options.flex.q = 1.0;
  rejects(options, "q");
  options = magnitude_options();
  options.flex.flex_point = 0.0;
  rejects(options, "flex_point");
  options = magnitude_options();
  options.flex.p_small = -0.1;
  rejects(options, "p_small");
  options = magnitude_options();
  options.mu_c = -1.0;
  rejects(options, "mu_c");
}

// ---- §9 measures, §8 non-additivity ----

// original 0 1 2 4 10 3, perturbed 0 0 3 4 8 3: v 0 −1 +1 0 −2 0.
const std::vector<std::int64_t> kOriginal{0, 1, 2, 4, 10, 3};
const std::vector<std::int64_t> kPerturbed{0, 0, 3, 4, 8, 3};

TEST(CellKey, MeasuresOnAHandComputedTable) {
  const CkmMeasures m = ckm_measures(kOriginal, kPerturbed);
  EXPECT_EQ(m.cells, 6);
  EXPECT_EQ(m.empty_cells, 1);
  // AD 0 1 1 0 2 0; RAD 0 1 0.5 0 0.2 0; DR 0 1 √3−√2 0 √10−√8 0.
  EXPECT_DOUBLE_EQ(m.absolute.mean_all, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(m.absolute.mean_nonempty, 4.0 / 5.0);
  EXPECT_DOUBLE_EQ(m.relative.mean_all, 1.7 / 6.0);
  EXPECT_DOUBLE_EQ(m.relative.mean_nonempty, 1.7 / 5.0);
  const double dr_sum = 1.0 + (std::sqrt(3.0) - std::sqrt(2.0)) + (std::sqrt(10.0) - std::sqrt(8.0));
  EXPECT_NEAR(m.root.mean_all, dr_sum / 6.0, 1e-15);
  EXPECT_NEAR(m.root.mean_nonempty, dr_sum / 5.0, 1e-15);

  EXPECT_EQ(m.absolute_at_most, (std::vector<std::int64_t>{3, 5, 6}));
  EXPECT_EQ(m.relative_at_most, (std::array<std::int64_t, 9>{3, 3, 3, 3, 4, 4, 4, 5, 6}));
  EXPECT_EQ(m.root_at_most, (std::array<std::int64_t, 9>{3, 3, 3, 3, 3, 3, 5, 5, 6}));
  EXPECT_EQ(m.noise_counts, (std::vector<NoiseCount>{{-2, 1}, {-1, 1}, {0, 3}, {1, 1}}));
  EXPECT_EQ(m.cells_unchanged, 3);
  EXPECT_EQ(m.false_zeros, 1);
  EXPECT_EQ(m.false_nonzeros, 0);
  EXPECT_EQ(m.original_ones, 1);
  EXPECT_EQ(m.ones_unchanged, 0);
  EXPECT_EQ(m.original_twos, 1);
  EXPECT_EQ(m.twos_unchanged, 0);
  EXPECT_DOUBLE_EQ(m.ones_unchanged_share, 0.0);
  // sqrt(½ Σ (√(n/20) − √(n̂/18))²).
  EXPECT_NEAR(m.hellinger, 0.174824599668, 1e-12);

  // Type 7 percentiles, e.g. the median of AD {0 0 0 1 1 2} is 0.5 and its 90th percentile 1.5.
  ASSERT_EQ(m.absolute.percentiles.size(), kCkmPercentiles.size());
  EXPECT_DOUBLE_EQ(m.absolute.percentiles[0], 0.0);
  EXPECT_DOUBLE_EQ(m.absolute.percentiles[4], 0.5);
  EXPECT_DOUBLE_EQ(m.absolute.percentiles[8], 1.5);
  EXPECT_DOUBLE_EQ(m.absolute.percentiles[9], 1.75);
  EXPECT_NEAR(m.absolute.percentiles[10], 1.95, 1e-15);
  EXPECT_NEAR(m.relative.percentiles[4], 0.1, 1e-15);
  EXPECT_NEAR(m.relative.percentiles[8], 0.75, 1e-15);
  EXPECT_NEAR(m.root.percentiles[4], 0.15891862259789102, 1e-15);
}

TEST(CellKey, MeasuresMergeInAnyOrder) {
  std::vector<std::int64_t> original;
  std::vector<std::int64_t> perturbed;
  std::int64_t original_total = 0;
  std::int64_t perturbed_total = 0;
  const PTable table = ptab1_table();
  for (std::int64_t c = 0; c < 5000; ++c) {
    const std::int64_t n = (c * 7919) % 23;
    const CellKey key{native_record_key(11, c, kM), kM};
    original.push_back(n);
    perturbed.push_back(perturb_frequency_cell(count_cell(n, key), table, {}).count);
    original_total += n;
    perturbed_total += perturbed.back();
  }
  const CkmMeasures whole = ckm_measures(original, perturbed);
  CkmMeasurePartial forward;
  CkmMeasurePartial backward;
  std::vector<CkmMeasurePartial> blocks;
  for (std::size_t begin = 0; begin < original.size(); begin += 377) {
    const std::size_t size = std::min<std::size_t>(377, original.size() - begin);
    blocks.push_back(ckm_measures_local(std::span(original).subspan(begin, size),
                                        std::span(perturbed).subspan(begin, size), original_total, perturbed_total));
  }
  for (const auto& block : blocks) ckm_measures_merge(forward, block);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) ckm_measures_merge(backward, *it);
  const CkmPercentiles percentiles = ckm_percentiles(cell_distances(original, perturbed));
  for (const CkmMeasurePartial* partial : {&forward, &backward}) {
    const CkmMeasures merged = ckm_measures_finalize(*partial, percentiles);
    EXPECT_EQ(merged.absolute.mean_all, whole.absolute.mean_all);
    EXPECT_EQ(merged.relative.mean_all, whole.relative.mean_all);
    EXPECT_EQ(merged.root.mean_nonempty, whole.root.mean_nonempty);
    EXPECT_EQ(merged.hellinger, whole.hellinger);
    EXPECT_EQ(merged.noise_counts, whole.noise_counts);
    EXPECT_EQ(merged.absolute_at_most, whole.absolute_at_most);
    EXPECT_EQ(merged.relative_at_most, whole.relative_at_most);
    EXPECT_EQ(merged.root_at_most, whole.root_at_most);
    EXPECT_EQ(merged.cells_unchanged, whole.cells_unchanged);
    EXPECT_EQ(merged.false_zeros, whole.false_zeros);
  }
  // js = 1: no published 1s; every empty cell stays 0.
  EXPECT_EQ(whole.false_nonzeros, 0);
  EXPECT_EQ(whole.ones_unchanged, 0);
}

TEST(CellKey, MeasuresRejectMismatchedTables) {
  EXPECT_THROW(ckm_measures(std::vector<std::int64_t>{1, 2}, std::vector<std::int64_t>{1}), ParameterError);
  EXPECT_THROW(ckm_measures(std::vector<std::int64_t>{-1}, std::vector<std::int64_t>{1}), ParameterError);
  const CkmMeasures empty = ckm_measures(std::vector<std::int64_t>{}, std::vector<std::int64_t>{});
  EXPECT_EQ(empty.cells, 0);
  EXPECT_EQ(empty.hellinger, 0.0);
}

TEST(CellKey, NonAdditivityOfPublishedCells) {
  // Two relations: 10 = 4 + 5 (gap 1), 9 = 4 + 5 (gap 0); three: a gap of 3.
  const std::vector<std::int64_t> published{4, 5, 10, 9, 6};
  const std::vector<AdditivityRelation> relations{{2, {0, 1}}, {3, {0, 1}}, {4, {0, 1, 4}}};
  const NonAdditivity gaps = non_additivity(published, relations);
  EXPECT_EQ(gaps.relations, 3);
  EXPECT_EQ(gaps.non_additive, 2);
  EXPECT_EQ(gaps.max_gap, 9);
  EXPECT_EQ(gaps.total_gap, 10);
  EXPECT_DOUBLE_EQ(gaps.mean_gap, 10.0 / 3.0);
  EXPECT_THROW(non_additivity(published, std::vector<AdditivityRelation>{{7, {0}}}), InternalError);
}

// The sparse form over the non-empty cells of a 5 x 3 x 4 table (geography with two levels, a flat
// dimension, a dimension with two breakdowns of its total) gives the gaps of the dense form over every
// row of the constraint matrix, empty cells publishing 0.
TEST(CellKey, NonAdditivityOfATableFromItsNonEmptyCells) {
  std::vector<DimensionEquations> dimensions{
      {"geo", 5, {{0, {1, 2}}, {1, {3, 4}}}}, {"sex", 3, {{0, {1, 2}}}}, {"age", 4, {{0, {1, 2}}, {0, {3}}}}};
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  std::vector<std::int64_t> dense(static_cast<std::size_t>(sizes.cells), 0);
  std::vector<std::int64_t> cells;
  std::vector<std::int64_t> published;
  for (std::int64_t c = 0; c < sizes.cells; ++c) {
    if (c % 7 == 3 || c % 11 == 5) continue;  // empty
    dense[static_cast<std::size_t>(c)] = (c * 37) % 13;
    cells.push_back(c);
    published.push_back(dense[static_cast<std::size_t>(c)]);
  }
  std::vector<AdditivityRelation> relations;
  for_each_constraint_row(dimensions, [&](const ConstraintRow& row) {
    AdditivityRelation relation{static_cast<std::size_t>(row.parent_column), {}};
    for (const std::int64_t child : row.child_columns) relation.children.push_back(static_cast<std::size_t>(child));
    bool parent_empty = true;
    for (const std::int64_t c : cells) parent_empty = parent_empty && c != row.parent_column;
    if (parent_empty)  // an empty parent has empty children in any table the sparse form reads
      for (const std::size_t child : relation.children) dense[child] = 0;
    relations.push_back(std::move(relation));
  });
  for (std::size_t i = 0; i < cells.size(); ++i) published[i] = dense[static_cast<std::size_t>(cells[i])];
  const NonAdditivity expected = non_additivity(dense, relations);
  const NonAdditivity sparse = table_non_additivity(dimensions, cells, published);
  EXPECT_EQ(sparse.relations, sizes.equations);
  EXPECT_EQ(sparse.relations, expected.relations);
  EXPECT_EQ(sparse.non_additive, expected.non_additive);
  EXPECT_GT(sparse.non_additive, 0);
  EXPECT_EQ(sparse.max_gap, expected.max_gap);
  EXPECT_EQ(sparse.total_gap, expected.total_gap);
  EXPECT_DOUBLE_EQ(sparse.mean_gap, expected.mean_gap);
  std::vector<std::int64_t> descending{cells[1], cells[0]};
  EXPECT_THROW(table_non_additivity(dimensions, descending, std::vector<std::int64_t>{1, 1}), ParameterError);
}

}  // namespace
}  // namespace sdc::tables
