#include "kernels/generate/census.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::generate {
namespace {

// ==== the model's constants (docs/generator.md states each of them) ==============================

constexpr std::int64_t kHouseholdsPerArea = 50;  // lau2 areas = households / 50, within [36, 20000]
constexpr std::int64_t kMinAreas = CensusGeography::kNuts3;
constexpr std::int64_t kMaxAreas = 20000;

// Household type and size, jointly, per 100 000 households.
struct TypeSizeCell {
  std::int32_t type;
  std::int32_t size;  // 0 = institutional: 10..60 persons drawn apart
  double per_100000;
};
constexpr std::array<TypeSizeCell, 23> kTypeSize{{
    {code::kOnePerson, 1, 18000},
    {code::kCoupleNoChildren, 2, 20000},
    {code::kCoupleWithChildren, 3, 14000},
    {code::kCoupleWithChildren, 4, 16000},
    {code::kCoupleWithChildren, 5, 6400},
    {code::kCoupleWithChildren, 6, 2600},
    {code::kCoupleWithChildren, 7, 800},
    {code::kCoupleWithChildren, 8, 200},
    {code::kLoneParent, 2, 4400},
    {code::kLoneParent, 3, 2400},
    {code::kLoneParent, 4, 800},
    {code::kLoneParent, 5, 280},
    {code::kLoneParent, 6, 80},
    {code::kLoneParent, 7, 32},
    {code::kLoneParent, 8, 8},
    {code::kOtherPrivate, 2, 3600},
    {code::kOtherPrivate, 3, 2600},
    {code::kOtherPrivate, 4, 3200},
    {code::kOtherPrivate, 5, 2320},
    {code::kOtherPrivate, 6, 1320},
    {code::kOtherPrivate, 7, 568},
    {code::kOtherPrivate, 8, 292},
    {code::kInstitutional, 0, 100},
}};

constexpr std::array<double, kTypeSize.size()> type_size_cumulative() {
  std::array<double, kTypeSize.size()> out{};
  double total = 0;
  for (std::size_t i = 0; i < kTypeSize.size(); ++i) out[i] = (total += kTypeSize[i].per_100000);
  return out;
}
constexpr auto kTypeSizeCumulative = type_size_cumulative();
static_assert(kTypeSizeCumulative.back() == 100000.0);

constexpr int kInstitutionMinSize = 10;
constexpr int kInstitutionSizes = 51;  // 10..60

// Citizenship: F01..F15 are common (anywhere, Zipf weights 1/c); F16..F40 are rare, each living in
// 1 + (c mod 3) home areas.
constexpr double kCityForeignShare = 0.12;   // private households in the largest 5% of areas
constexpr double kOtherForeignShare = 0.05;  // elsewhere
constexpr double kForeignTarget = 0.09;      // the rare codes' target counts are shares of this
constexpr double kRareHomeCap = 0.25;        // at most this share of an area's households per code
constexpr double kRareAreaCap = 0.5;         // nor of all rare codes together
constexpr std::int64_t kRareHomeMinHouseholds = 20;
constexpr double kInstitutionNationalShare = 0.92;
constexpr double kAdultNaturalisedShare = 0.20;  // adults other than the reference person

constexpr std::array<double, code::kFirstRareCitizenship - 1> common_citizenship_cumulative() {
  std::array<double, code::kFirstRareCitizenship - 1> out{};
  double total = 0;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = (total += 1.0 / static_cast<double>(i + 1));
  return out;
}
constexpr auto kCommonCitizenshipCumulative = common_citizenship_cumulative();

double harmonic(int n) {
  double total = 0;
  for (int i = 1; i <= n; ++i) total += 1.0 / i;
  return total;
}

// Education: a latent score per person, cut at standard-normal quantiles of the reference shares
// none 2%, primary 10%, lower secondary 18%, upper secondary 40%, post-secondary 8%, tertiary 22%.
constexpr std::array<double, 5> kEducationCuts{-2.0537489, -1.1749868, -0.5244005, 0.5244005, 0.7721932};

// Activity: employment probability by education (codes 1..6), occupation groups of the employed.
constexpr std::array<double, 7> kEmployment{0, 0.40, 0.50, 0.62, 0.78, 0.83, 0.88};
constexpr std::array<std::array<double, 10>, 7> kOccupationByEducation{{
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    // managers professionals technicians clerical service agriculture craft operators elementary armed
    {{1, 0, 1, 3, 20, 10, 15, 15, 35, 0}},
    {{2, 1, 3, 6, 22, 8, 20, 15, 23, 0}},
    {{3, 2, 6, 10, 24, 5, 22, 14, 13, 1}},
    {{6, 6, 18, 16, 20, 3, 16, 9, 5, 1}},
    {{9, 12, 30, 15, 14, 2, 10, 5, 2, 1}},
    {{15, 45, 22, 8, 5, 1, 2, 1, 0.5, 0.5}},
}};
constexpr std::array<std::array<double, 10>, 7> occupation_cumulative() {
  std::array<std::array<double, 10>, 7> out{};
  for (std::size_t e = 0; e < out.size(); ++e) {
    double total = 0;
    for (std::size_t i = 0; i < out[e].size(); ++i) out[e][i] = (total += kOccupationByEducation[e][i]);
  }
  return out;
}
constexpr auto kOccupationCumulative = occupation_cumulative();

// Income (log scale): employed ln 26000 + occupation + education + age + sex + 0.15 z + 0.45 e.
constexpr std::array<double, 14> kOccupationEffect{0, 0,     0,     0,     0.55,  0.40,  0.20,
                                                   0, -0.20, -0.25, -0.05, -0.05, -0.35, 0.05};
constexpr std::array<double, 7> kEducationEffect{0, -0.25, -0.18, -0.10, 0, 0.08, 0.20};
constexpr std::array<double, 7> kPensionEffect{0, -0.35, -0.25, -0.12, 0, 0.12, 0.40};

struct Marital {
  double single, married, divorced;  // widowed: the rest
};
std::int32_t marital_from(const Marital& m, double u) {
  if (u < m.single) return code::kSingle;
  if (u < m.single + m.married) return code::kMarried;
  if (u < m.single + m.married + m.divorced) return code::kDivorced;
  return code::kWidowed;
}

/// Adults living without a partner (alone, lone parents' adult relatives, flatmates, institutions).
std::int32_t unpartnered_marital(std::int32_t age, double u) {
  if (age < 18) return code::kSingle;
  if (age < 25) return marital_from({0.97, 0.02, 0.01}, u);
  if (age < 40) return marital_from({0.70, 0.08, 0.20}, u);
  if (age < 60) return marital_from({0.35, 0.08, 0.45}, u);
  if (age < 75) return marital_from({0.15, 0.07, 0.28}, u);
  return marital_from({0.08, 0.05, 0.10}, u);
}
/// Partners of a couple who are not married to each other.
std::int32_t cohabiting_marital(std::int32_t age, double u) {
  if (age < 35) return marital_from({0.92, 0.0, 0.08}, u);
  if (age < 60) return marital_from({0.50, 0.0, 0.47}, u);
  return marital_from({0.30, 0.0, 0.50}, u);
}
std::int32_t lone_parent_marital(std::int32_t age, double u) {
  if (age < 30) return marital_from({0.70, 0.06, 0.22}, u);
  return marital_from({0.35, 0.08, 0.45}, u);
}
double married_share(std::int32_t head_age) {
  if (head_age < 25) return 0.25;
  if (head_age < 35) return 0.55;
  if (head_age < 50) return 0.75;
  return 0.85;
}

double cohort_shift(std::int32_t age) {
  if (age < 35) return 0.35;
  if (age < 45) return 0.25;
  if (age < 55) return 0.10;
  if (age < 65) return -0.10;
  if (age < 75) return -0.35;
  return -0.70;
}

std::int32_t clamp_age(double x, std::int32_t low, std::int32_t high) {
  return static_cast<std::int32_t>(
      std::clamp(std::llround(x), static_cast<long long>(low), static_cast<long long>(high)));
}
/// low + floor(u * count): a uniform integer in [low, low + count).
std::int32_t uniform_int(double u, std::int32_t low, std::int32_t count) {
  return low + std::min(count - 1, static_cast<std::int32_t>(u * count));
}
double u01(std::uint64_t word) { return RecordRng::uniform_from_bits(word); }

std::string four_digits(std::int64_t n) {
  char text[16];
  std::snprintf(text, sizeof text, "%04lld", static_cast<long long>(n));
  return text;
}

}  // namespace

// ==== targets =====================================================================================

std::vector<double> CensusTargets::household_type_shares() {
  std::vector<double> shares(6, 0.0);
  for (const auto& cell : kTypeSize) shares[static_cast<std::size_t>(cell.type)] += cell.per_100000 / 100000.0;
  return shares;
}

std::vector<double> CensusTargets::household_size_shares() {
  std::vector<double> shares(9, 0.0);
  for (const auto& cell : kTypeSize) {
    const auto index = cell.size == 0 ? static_cast<std::size_t>(code::kInstitutionalSizeCode)
                                      : static_cast<std::size_t>(cell.size - 1);
    shares[index] += cell.per_100000 / 100000.0;
  }
  return shares;
}

// ==== layout ======================================================================================

CensusLayout::CensusLayout(std::vector<BlockCounts> blocks) : blocks_(std::move(blocks)) {
  first_rows_.reserve(blocks_.size() + 1);
  std::int64_t row = 0;
  for (const auto& block : blocks_) {
    first_rows_.push_back(row);
    row += block.sample_persons;
    persons_ += block.persons;
    sample_households_ += block.sample_households;
  }
  first_rows_.push_back(row);
}

std::int64_t CensusLayout::block_of_row(std::int64_t row) const {
  SDC_CHECK(row >= 0 && row < rows(), "row inside the layout");
  const auto it = std::upper_bound(first_rows_.begin(), first_rows_.end(), row);
  return static_cast<std::int64_t>(it - first_rows_.begin()) - 1;
}

// ==== geography ===================================================================================

std::vector<std::string> CensusGeography::nuts1_labels() {
  std::vector<std::string> labels;
  for (int a = 1; a <= 3; ++a) labels.push_back(std::to_string(a));
  return labels;
}
std::vector<std::string> CensusGeography::nuts2_labels() {
  std::vector<std::string> labels;
  for (int a = 1; a <= 3; ++a)
    for (int b = 1; b <= 3; ++b) labels.push_back(std::to_string(a) + std::to_string(b));
  return labels;
}
std::vector<std::string> CensusGeography::nuts3_labels() {
  std::vector<std::string> labels;
  for (const auto& nuts2 : nuts2_labels())
    for (int c = 1; c <= 4; ++c) labels.push_back(nuts2 + std::to_string(c));
  return labels;
}

std::int32_t CensusGeography::lau2_of_household(std::int64_t hid) const {
  // The area i with first_household[i] < hid <= first_household[i + 1].
  const auto it = std::lower_bound(first_household.begin(), first_household.end(), hid);
  return static_cast<std::int32_t>(it - first_household.begin()) - 1;
}

namespace {

/// Areas ranked by size r = 0, 1, ... get Zipf weights 1/(r + 1). Rank r is area number r / 36 + 1 of
/// nuts3 region k(r mod 36), where k(j) = 12 (j mod 3) + 4 ((j / 3) mod 3) + j / 9 deals consecutive
/// ranks to the three nuts1 regions first, then to their nuts2 regions, then to their nuts3 regions, so
/// that every region has large and small areas. Households are given out in label order, in
/// proportion to the weights.
CensusGeography make_geography(std::int64_t households) {
  CensusGeography g;
  const std::int64_t areas =
      std::clamp((households + kHouseholdsPerArea / 2) / kHouseholdsPerArea, kMinAreas, kMaxAreas);
  g.lau2_count = static_cast<std::int32_t>(areas);
  const auto nuts3_labels = CensusGeography::nuts3_labels();
  std::vector<double> weights;
  std::array<std::int32_t, CensusGeography::kNuts3> first_rank{};  // j with k(j) = k
  for (std::int32_t j = 0; j < CensusGeography::kNuts3; ++j)
    first_rank[static_cast<std::size_t>(12 * (j % 3) + 4 * ((j / 3) % 3) + j / 9)] = j;
  for (std::int32_t k = 0; k < CensusGeography::kNuts3; ++k) {
    for (std::int64_t r = first_rank[static_cast<std::size_t>(k)], number = 1; r < areas;
         r += CensusGeography::kNuts3, ++number) {
      g.nuts3_of_lau2.push_back(k);
      g.size_rank.push_back(static_cast<std::int32_t>(r));
      g.lau2_labels.push_back(nuts3_labels[static_cast<std::size_t>(k)] + four_digits(number));
      weights.push_back(1.0 / static_cast<double>(r + 1));
    }
  }
  double total = 0;
  for (double w : weights) total += w;
  g.first_household.resize(weights.size() + 1);
  double cumulative = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    g.first_household[i] = std::llround(static_cast<double>(households) * (cumulative / total));
    cumulative += weights[i];
  }
  g.first_household.front() = 0;
  g.first_household.back() = households;
  return g;
}

}  // namespace

// ==== the generator ================================================================================

struct CensusGenerator::Household {
  struct Person {
    std::int32_t sex = 0, age = 0, marstat = 0, citizenship = 0, education = 0, occupation = 0;
    double income = 0, expenditure = 0, savings = 0;
  };
  std::int32_t type = 0;
  std::int32_t size = 0;
  std::array<Person, kMaxHouseholdSize> persons;
};

CensusGenerator::CensusGenerator(const CensusOptions& options) : options_(options) {
  // The command bounds both before anything runs (docs/cli.md).
  SDC_CHECK(options.households >= 1 && options.households <= (std::int64_t{1} << 40), "households out of range");
  SDC_CHECK(options.sample_fraction > 0.0 && options.sample_fraction <= 1.0, "sample fraction outside (0, 1]");
  const std::int64_t n = options.households;
  geography_ = make_geography(n);
  const auto areas = static_cast<std::size_t>(geography_.lau2_count);

  // ---- sample: Bernoulli per household, stratified by nuts2 with a compromise allocation ----
  std::vector<double> stratum_households(CensusGeography::kNuts2, 0.0);
  for (std::size_t i = 0; i < areas; ++i)
    stratum_households[static_cast<std::size_t>(CensusGeography::nuts2_of_nuts3(geography_.nuts3_of_lau2[i]))] +=
        static_cast<double>(geography_.households_of(static_cast<std::int32_t>(i)));
  inclusion_.assign(CensusGeography::kNuts2, 1.0);
  if (options.sample_fraction < 1.0) {
    const double total = static_cast<double>(n);
    std::vector<double> share(CensusGeography::kNuts2);  // q_s: half proportional, half equal
    for (std::size_t s = 0; s < share.size(); ++s)
      share[s] = 0.5 * stratum_households[s] / total + 0.5 / static_cast<double>(CensusGeography::kNuts2);
    const auto probabilities = [&](double lambda) {
      std::vector<double> p(share.size(), 1.0);
      for (std::size_t s = 0; s < share.size(); ++s)
        if (stratum_households[s] > 0) p[s] = std::min(1.0, lambda * share[s] * total / stratum_households[s]);
      return p;
    };
    const auto expected = [&](const std::vector<double>& p) {
      double sum = 0;
      for (std::size_t s = 0; s < p.size(); ++s) sum += stratum_households[s] * p[s];
      return sum;
    };
    double low = 0.0;
    double high = 0.0;
    for (std::size_t s = 0; s < share.size(); ++s)
      if (stratum_households[s] > 0) high = std::max(high, stratum_households[s] / (share[s] * total));
    for (int iteration = 0; iteration < 200; ++iteration) {
      const double mid = 0.5 * (low + high);
      (expected(probabilities(mid)) < options.sample_fraction * total ? low : high) = mid;
    }
    inclusion_ = probabilities(0.5 * (low + high));
  }

  // ---- citizenship: the city share, and the rare codes' home areas ----
  foreign_city_ranks_ = std::max<std::int32_t>(1, geography_.lau2_count / 20);
  std::vector<std::int32_t> area_of_rank(areas);
  for (std::size_t i = 0; i < areas; ++i)
    area_of_rank[static_cast<std::size_t>(geography_.size_rank[i])] = static_cast<std::int32_t>(i);
  double zipf_total = 0;
  for (std::size_t i = 0; i < areas; ++i) zipf_total += 1.0 / static_cast<double>(i + 1);
  // Home areas are drawn among the ranks whose expected size is at least 20 households.
  const auto eligible = static_cast<std::int64_t>(
      std::clamp(std::floor(static_cast<double>(n) / (static_cast<double>(kRareHomeMinHouseholds) * zipf_total)), 1.0,
                 static_cast<double>(areas)));
  const double h40 = harmonic(code::kForeignCitizenships);
  const RecordRng home_rng(options.seed, StepId::kGenerateCitizenshipAreas);
  for (std::int32_t c = code::kFirstRareCitizenship; c <= code::kForeignCitizenships; ++c) {
    std::vector<std::int32_t> homes;
    const int count = 1 + c % 3;
    for (int k = 0; k < count; ++k) {
      const double u = home_rng.uniform({.unit = static_cast<std::uint64_t>(c), .draw = static_cast<std::uint64_t>(k)});
      const auto rank =
          std::min<std::int64_t>(eligible - 1, static_cast<std::int64_t>(u * static_cast<double>(eligible)));
      homes.push_back(area_of_rank[static_cast<std::size_t>(rank)]);
    }
    std::sort(homes.begin(), homes.end());
    homes.erase(std::unique(homes.begin(), homes.end()), homes.end());
    double home_households = 0;
    for (auto a : homes) home_households += static_cast<double>(geography_.households_of(a));
    if (home_households <= 0) continue;
    const double target = static_cast<double>(n) * kForeignTarget * (1.0 / c) / h40;
    const double p = std::min(kRareHomeCap, target / home_households);
    for (auto a : homes) rare_homes_.push_back({c, a, p});
  }
  std::sort(rare_homes_.begin(), rare_homes_.end(), [](const auto& a, const auto& b) {
    return a.lau2 != b.lau2 ? a.lau2 < b.lau2 : a.citizenship < b.citizenship;
  });
  rare_first_.assign(areas + 1, 0);
  for (const auto& home : rare_homes_) ++rare_first_[static_cast<std::size_t>(home.lau2) + 1];
  for (std::size_t i = 0; i < areas; ++i) rare_first_[i + 1] += rare_first_[i];
  for (std::size_t i = 0; i < areas; ++i) {
    const auto begin = rare_homes_.begin() + rare_first_[i];
    const auto end = rare_homes_.begin() + rare_first_[i + 1];
    double sum = 0;
    for (auto it = begin; it != end; ++it) sum += it->probability;
    if (sum > kRareAreaCap)
      for (auto it = begin; it != end; ++it) it->probability *= kRareAreaCap / sum;
  }
}

std::int64_t CensusGenerator::block_count() const {
  return (options_.households + kHouseholdBlock - 1) / kHouseholdBlock;
}

namespace {

struct SizeDraw {
  std::size_t cell = 0;
  std::int32_t size = 0;
};

SizeDraw draw_type_size(const RecordRng& household_rng, std::int64_t hid) {
  const auto hid_unit = static_cast<std::uint64_t>(hid);
  SizeDraw draw;
  draw.cell = categorical_from_uniform(u01(household_rng.bits({.unit = hid_unit})[0]), kTypeSizeCumulative);
  draw.size = kTypeSize[draw.cell].size;
  if (draw.size == 0)
    draw.size =
        uniform_int(u01(household_rng.bits({.unit = hid_unit, .draw = 1})[1]), kInstitutionMinSize, kInstitutionSizes);
  return draw;
}

}  // namespace

int CensusGenerator::selected_size(std::int64_t hid, std::int32_t lau2) const {
  const RecordRng household_rng(options_.seed, StepId::kGenerateHousehold);
  const int size = draw_type_size(household_rng, hid).size;
  if (!is_sample()) return size;
  const RecordRng sample_rng(options_.seed, StepId::kGenerateSample);
  const auto nuts2 = CensusGeography::nuts2_of_nuts3(geography_.nuts3_of_lau2[static_cast<std::size_t>(lau2)]);
  return sample_rng.uniform({.unit = static_cast<std::uint64_t>(hid)}) < inclusion_probability(nuts2) ? size : -size;
}

std::vector<BlockCounts> CensusGenerator::count_blocks(std::int64_t first_block, std::int64_t count) const {
  SDC_CHECK(first_block >= 0 && count >= 0 && first_block + count <= block_count(), "blocks inside the census");
  std::vector<BlockCounts> out(static_cast<std::size_t>(count));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, count), [&](const tbb::blocked_range<std::int64_t>& range) {
    for (std::int64_t i = range.begin(); i != range.end(); ++i) {
      const std::int64_t b = first_block + i;
      const std::int64_t first = b * kHouseholdBlock + 1;
      const std::int64_t last = std::min((b + 1) * kHouseholdBlock, options_.households);
      BlockCounts counts;
      std::int32_t lau2 = geography_.lau2_of_household(first);
      for (std::int64_t hid = first; hid <= last; ++hid) {
        while (geography_.first_household[static_cast<std::size_t>(lau2) + 1] < hid) ++lau2;
        const int size = selected_size(hid, lau2);
        counts.persons += std::abs(size);
        if (size > 0) {
          ++counts.sample_households;
          counts.sample_persons += size;
        }
      }
      out[static_cast<std::size_t>(i)] = counts;
    }
  });
  return out;
}

void CensusGenerator::generate_household(std::int64_t hid, std::int32_t lau2, Household& out) const {
  using namespace code;
  const auto unit = static_cast<std::uint64_t>(hid);
  const RecordRng household_rng(options_.seed, StepId::kGenerateHousehold);
  const RecordRng demography_rng(options_.seed, StepId::kGeneratePersonDemography);
  const RecordRng education_rng(options_.seed, StepId::kGeneratePersonEducation);
  const RecordRng income_rng(options_.seed, StepId::kGeneratePersonIncome);

  const auto h0 = household_rng.bits({.unit = unit});
  const auto h1 = household_rng.bits({.unit = unit, .draw = 1});
  const SizeDraw type_size = draw_type_size(household_rng, hid);
  out.type = kTypeSize[type_size.cell].type;
  out.size = type_size.size;
  const auto [status, spending_noise] =
      normal_pair_from_bits(h0[1], h0[2]);  // z: the household's socio-economic latent
  const bool city = geography_.size_rank[static_cast<std::size_t>(lau2)] < foreign_city_ranks_;

  // Per-person draws: demography d, education e (with two normals), income (drawn when needed).
  struct Draws {
    RecordRng::Block d, e;
    double education_normal = 0, age_normal = 0;
  };
  std::array<Draws, kMaxHouseholdSize> draws;
  for (std::int32_t p = 0; p < out.size; ++p) {
    auto& dr = draws[static_cast<std::size_t>(p)];
    const DrawCounter counter{.unit = unit, .draw = static_cast<std::uint64_t>(p)};
    dr.d = demography_rng.bits(counter);
    dr.e = education_rng.bits(counter);
    std::tie(dr.education_normal, dr.age_normal) = normal_pair_from_bits(dr.e[0], dr.e[1]);
  }
  auto& persons = out.persons;
  const auto person = [&](std::int32_t p) -> Household::Person& { return persons[static_cast<std::size_t>(p)]; };
  const auto draw = [&](std::int32_t p) -> const Draws& { return draws[static_cast<std::size_t>(p)]; };
  const auto sex_with_female_share = [&](std::int32_t p, double female) {
    return u01(draw(p).d[0]) < female ? kFemale : kMale;
  };

  // ---- ages, sexes, marital status by household type ----
  const auto couple = [&](std::int32_t head_age) {
    person(0).sex = sex_with_female_share(0, 0.5);
    const bool same_sex = u01(h1[3]) < 0.03;
    person(1).sex = same_sex ? person(0).sex : 1 - person(0).sex;
    const double gap = same_sex ? 0.0 : (person(0).sex == kMale ? -2.0 : 2.0);
    person(0).age = head_age;
    person(1).age = clamp_age(head_age + gap + 3.5 * draw(1).age_normal, 18, kMaxAge);
    const bool married = u01(h1[2]) < married_share(head_age);
    for (std::int32_t p = 0; p < 2; ++p)
      person(p).marstat = married ? kMarried : cohabiting_marital(person(p).age, u01(draw(p).d[2]));
  };
  const auto mother_age = [&]() {
    if (person(0).sex == kFemale && person(1).sex != kFemale) return person(0).age;
    if (person(1).sex == kFemale && person(0).sex != kFemale) return person(1).age;
    return std::min(person(0).age, person(1).age);
  };
  const auto children = [&](std::int32_t from, std::int32_t parent_age, std::int32_t oldest) {
    const std::int32_t top = std::clamp(parent_age - 18, 0, oldest);
    for (std::int32_t p = from; p < out.size; ++p) {
      person(p).age = uniform_int(u01(draw(p).d[1]), 0, top + 1);
      person(p).sex = u01(draw(p).d[0]) < 0.512 ? kMale : kFemale;
      person(p).marstat = kSingle;
    }
  };
  const auto unpartnered = [&](std::int32_t p, std::int32_t age, double female) {
    person(p).age = age;
    person(p).sex = sex_with_female_share(p, female);
    person(p).marstat = unpartnered_marital(age, u01(draw(p).d[2]));
  };

  switch (out.type) {
    case kOnePerson: {
      const double u = u01(draw(0).d[1]);
      const std::int32_t age = u < 0.35   ? uniform_int(u / 0.35, 20, 25)
                               : u < 0.60 ? uniform_int((u - 0.35) / 0.25, 45, 20)
                                          : uniform_int((u - 0.60) / 0.40, 65, 31);
      unpartnered(0, age, age >= 65 ? 0.68 : 0.48);
      break;
    }
    case kCoupleNoChildren: {
      const double u = u01(draw(0).d[1]);
      couple(u < 0.25 ? uniform_int(u / 0.25, 20, 20) : uniform_int((u - 0.25) / 0.75, 50, 36));
      break;
    }
    case kCoupleWithChildren:
      couple(clamp_age(45.0 + 9.0 * draw(0).age_normal, 22, 70));
      children(2, mother_age(), 30);
      break;
    case kLoneParent: {
      const std::int32_t age = clamp_age(44.0 + 10.0 * draw(0).age_normal, 20, 80);
      person(0).age = age;
      person(0).sex = sex_with_female_share(0, 0.85);
      person(0).marstat = lone_parent_marital(age, u01(draw(0).d[2]));
      children(1, age + 1, 30);  // children up to parent age - 17
      break;
    }
    case kOtherPrivate: {
      const double kind = u01(h1[1]);
      if (out.size == 2) {
        if (kind < 0.5) {  // a parent and an adult child
          const std::int32_t parent = uniform_int(u01(draw(0).d[1]), 55, 36);
          unpartnered(0, parent, 0.65);
          unpartnered(1, std::max(18, parent - uniform_int(u01(draw(1).d[1]), 22, 14)), 0.5);
        } else {  // siblings or flatmates
          const std::int32_t first = uniform_int(u01(draw(0).d[1]), 18, 62);
          unpartnered(0, first, 0.5);
          unpartnered(1, std::clamp(first + uniform_int(u01(draw(1).d[1]), -8, 17), 18, kMaxAge), 0.5);
        }
      } else if (out.size <= 4 && kind < 0.25) {  // flatshare of young adults
        for (std::int32_t p = 0; p < out.size; ++p) unpartnered(p, uniform_int(u01(draw(p).d[1]), 18, 18), 0.5);
      } else {  // three generations: a couple, one or two elders, children
        couple(clamp_age(44.0 + 8.0 * draw(0).age_normal, 25, 64));
        const bool two_elders = out.size >= 5 && kind < 0.4;
        const std::int32_t elder = std::clamp(
            std::max(person(0).age, person(1).age) + 22 + uniform_int(u01(draw(2).d[1]), 0, 14), 50, kMaxAge);
        if (two_elders) {
          person(2).age = elder;
          person(2).sex = sex_with_female_share(2, 0.5);
          person(3).sex = 1 - person(2).sex;
          person(3).age =
              clamp_age(elder + (person(2).sex == kMale ? -2.0 : 2.0) + 3.5 * draw(3).age_normal, 50, kMaxAge);
          person(2).marstat = person(3).marstat = kMarried;
        } else {
          unpartnered(2, elder, 0.6);
        }
        children(two_elders ? 4 : 3, mother_age(), 26);
      }
      break;
    }
    case kInstitutional: {
      const double kind = u01(h1[2]);
      for (std::int32_t p = 0; p < out.size; ++p) {
        const double u = u01(draw(p).d[1]);
        if (kind < 0.60)
          unpartnered(p, uniform_int(u, 65, 36), 0.65);  // care homes
        else if (kind < 0.85)
          unpartnered(p, uniform_int(u, 18, 12), 0.45);  // student and worker hostels
        else
          unpartnered(p, uniform_int(u, 18, 63), 0.20);  // other institutions
      }
      break;
    }
    default:
      SDC_CHECK(false, "known household type");
  }

  // ---- citizenship: one per household, adults may be naturalised; residents of institutions apart ----
  const auto common_citizenship = [](double u) {
    return static_cast<std::int32_t>(1 + categorical_from_uniform(u, kCommonCitizenshipCumulative));
  };
  if (out.type == kInstitutional) {
    for (std::int32_t p = 0; p < out.size; ++p) {
      const double u = u01(draw(p).d[3]);
      person(p).citizenship =
          u < kInstitutionNationalShare
              ? kNational
              : common_citizenship((u - kInstitutionNationalShare) / (1.0 - kInstitutionNationalShare));
    }
  } else {
    std::int32_t household_citizenship = kNational;
    double u = u01(h0[3]);
    const auto first = static_cast<std::size_t>(rare_first_[static_cast<std::size_t>(lau2)]);
    const auto last = static_cast<std::size_t>(rare_first_[static_cast<std::size_t>(lau2) + 1]);
    double rare = 0;
    for (std::size_t i = first; i < last; ++i) {
      if (household_citizenship == kNational && u < rare + rare_homes_[i].probability)
        household_citizenship = rare_homes_[i].citizenship;
      rare += rare_homes_[i].probability;
    }
    if (household_citizenship == kNational) {
      u = (u - rare) / (1.0 - rare);
      if (u < (city ? kCityForeignShare : kOtherForeignShare)) household_citizenship = common_citizenship(u01(h1[0]));
    }
    for (std::int32_t p = 0; p < out.size; ++p) {
      const bool naturalised = p > 0 && person(p).age >= 18 && u01(draw(p).d[3]) < kAdultNaturalisedShare;
      person(p).citizenship = naturalised ? kNational : household_citizenship;
    }
  }

  // ---- education, activity, occupation, income, savings ----
  double household_income = 0;
  for (std::int32_t p = 0; p < out.size; ++p) {
    auto& x = person(p);
    const auto& dr = draw(p);
    SDC_CHECK(x.age >= 15 || x.marstat == kSingle, "nobody married under 15");
    if (x.age < 15) {
      x.education = kNotApplicable;
      x.occupation = kChild;
      x.income = 0;
      x.savings = 0;
      continue;
    }
    const double score = 0.55 * status + 0.835 * dr.education_normal + cohort_shift(x.age) + (city ? 0.15 : -0.10);
    std::int32_t education = kNoEducation;
    for (double cut : kEducationCuts) education += score >= cut ? 1 : 0;
    if (x.age < 17)
      education = std::min(education, kLowerSecondary);
    else if (x.age < 20)
      education = std::min(education, kUpperSecondary);
    else if (x.age < 23)
      education = std::min(education, kPostSecondary);
    x.education = education;

    double u = u01(dr.e[2]);
    const auto employment = [&](double v) {
      if (v >= kEmployment[static_cast<std::size_t>(education)]) return kNotEmployed;
      const auto& cumulative = kOccupationCumulative[static_cast<std::size_t>(education)];
      return static_cast<std::int32_t>(kManagers +
                                       static_cast<std::int32_t>(categorical_from_uniform(u01(dr.e[3]), cumulative)));
    };
    if (x.age < 18) {
      x.occupation = u < 0.90 ? kStudent : (u < 0.96 ? employment(0.0) : kNotEmployed);
    } else if (x.age < 25) {
      const double student = education >= kUpperSecondary ? 0.50 : 0.15;
      x.occupation = u < student ? kStudent : employment((u - student) / (1.0 - student));
    } else if (x.age < 60) {
      x.occupation = employment(u);
    } else if (x.age < 65) {
      x.occupation = u < 0.45 ? kRetired : employment((u - 0.45) / 0.55);
    } else {
      x.occupation = u < 0.93 ? kRetired : employment((u - 0.93) / 0.07);
    }

    const auto income_draw = income_rng.bits({.unit = unit, .draw = static_cast<std::uint64_t>(p)});
    const auto [income_normal, savings_normal] = normal_pair_from_bits(income_draw[0], income_draw[1]);
    const double zero = u01(income_draw[2]);
    double log_income = -std::numeric_limits<double>::infinity();
    switch (x.occupation) {
      case kStudent:
        if (zero >= 0.55) log_income = std::log(6000.0) + 0.6 * income_normal;
        break;
      case kNotEmployed:
        if (zero >= 0.40) log_income = std::log(9000.0) + 0.35 * income_normal;
        break;
      case kRetired:
        log_income = std::log(17000.0) + kPensionEffect[static_cast<std::size_t>(education)] + 0.10 * status +
                     0.30 * income_normal;
        break;
      default: {
        const double age_effect = 0.6 * (1.0 - std::exp(-(x.age - 18) / 12.0)) - 0.3;
        log_income = std::log(26000.0) + kOccupationEffect[static_cast<std::size_t>(x.occupation)] +
                     kEducationEffect[static_cast<std::size_t>(education)] + age_effect +
                     (x.sex == kFemale ? -0.12 : 0.0) + 0.15 * status + 0.45 * income_normal;
      }
    }
    x.income = std::isinf(log_income) ? 0.0 : std::round(std::exp(log_income));
    household_income += x.income;
    if (x.age < 18 || u01(income_draw[3]) < (x.income < 10000.0 ? 0.5 : 0.2)) {
      x.savings = 0;
    } else {
      x.savings = std::round(std::max(x.income, 5000.0) * 0.3 * (x.age - 17) / 10.0 *
                             std::exp(0.9 * savings_normal + 0.3 * status));
    }
  }

  // ---- expenditure: the household's consumption shared equally; residents of institutions their own ----
  if (out.type == kInstitutional) {
    for (std::int32_t p = 0; p < out.size; ++p)
      person(p).expenditure = std::round(4000.0 + 0.6 * person(p).income * std::exp(0.15 * spending_noise));
  } else {
    const double spending =
        6000.0 + 3000.0 * (out.size - 1) + 0.7 * household_income * std::exp(0.15 * spending_noise - 0.10 * status);
    const double each = std::round(spending / out.size);
    for (std::int32_t p = 0; p < out.size; ++p) person(p).expenditure = each;
  }
}

Table CensusGenerator::generate_rows(const CensusLayout& layout, std::int64_t first_row, std::int64_t row_count,
                                     const std::function<void(std::int64_t)>& progress) const {
  std::atomic<std::int64_t> rows_done{0};
  SDC_CHECK(layout.block_count() == block_count(), "layout of this census");
  SDC_CHECK(first_row >= 0 && row_count >= 0 && first_row + row_count <= layout.rows(), "rows inside the census");
  const auto rows = static_cast<std::size_t>(row_count);
  std::vector<std::int64_t> hid(rows);
  // The categorical columns, in the order of variables().
  constexpr std::size_t kNuts1 = 0, kNuts2 = 1, kNuts3 = 2, kLau2 = 3, kSex = 4, kAge = 5, kAgegroup = 6, kMarstat = 7,
                        kCitizenship = 8, kEducation = 9, kOccupation = 10, kHtype = 11, kHsize = 12, kCats = 13;
  std::array<std::vector<std::int32_t>, kCats> cat;
  for (auto& c : cat) c.resize(rows);
  std::vector<double> income(rows), expenditure(rows), savings(rows), weight(rows);

  if (row_count > 0) {
    const std::int64_t end_row = first_row + row_count;
    const std::int64_t first_block = layout.block_of_row(first_row);
    const std::int64_t last_block = layout.block_of_row(end_row - 1) + 1;
    tbb::parallel_for(
        tbb::blocked_range<std::int64_t>(first_block, last_block), [&](const tbb::blocked_range<std::int64_t>& range) {
          Household household;
          for (std::int64_t b = range.begin(); b != range.end(); ++b) {
            const std::int64_t first = b * kHouseholdBlock + 1;
            const std::int64_t last = std::min((b + 1) * kHouseholdBlock, options_.households);
            std::int64_t row = layout.first_row(b);
            std::int32_t lau2 = geography_.lau2_of_household(first);
            for (std::int64_t h = first; h <= last && row < end_row; ++h) {
              while (geography_.first_household[static_cast<std::size_t>(lau2) + 1] < h) ++lau2;
              const int size = selected_size(h, lau2);
              if (size <= 0) continue;
              if (row + size <= first_row) {
                row += size;
                continue;
              }
              generate_household(h, lau2, household);
              SDC_CHECK(household.size == size, "the counting pass and the generation agree");
              const std::int32_t nuts3 = geography_.nuts3_of_lau2[static_cast<std::size_t>(lau2)];
              const std::int32_t nuts2 = CensusGeography::nuts2_of_nuts3(nuts3);
              const double w = is_sample() ? 1.0 / inclusion_probability(nuts2) : 1.0;
              const std::int32_t hsize =
                  household.type == code::kInstitutional ? code::kInstitutionalSizeCode : size - 1;
              for (std::int32_t p = 0; p < size; ++p, ++row) {
                if (row < first_row || row >= end_row) continue;
                const auto i = static_cast<std::size_t>(row - first_row);
                const auto& x = household.persons[static_cast<std::size_t>(p)];
                hid[i] = h;
                cat[kNuts1][i] = CensusGeography::nuts1_of_nuts3(nuts3);
                cat[kNuts2][i] = nuts2;
                cat[kNuts3][i] = nuts3;
                cat[kLau2][i] = lau2;
                cat[kSex][i] = x.sex;
                cat[kAge][i] = x.age;
                cat[kAgegroup][i] = x.age / 5;
                cat[kMarstat][i] = x.marstat;
                cat[kCitizenship][i] = x.citizenship;
                cat[kEducation][i] = x.education;
                cat[kOccupation][i] = x.occupation;
                cat[kHtype][i] = household.type;
                cat[kHsize][i] = hsize;
                income[i] = x.income;
                expenditure[i] = x.expenditure;
                savings[i] = x.savings;
                weight[i] = w;
              }
            }
            if (progress) {
              const std::int64_t block_rows = std::max<std::int64_t>(
                  0, std::min(end_row, layout.first_row(b + 1)) - std::max(first_row, layout.first_row(b)));
              progress(rows_done.fetch_add(block_rows) + block_rows);
            }
          }
        });
  }

  auto infos = variables();
  Table table("generated census", row_count, first_row);
  std::size_t next_cat = 0;
  for (auto& info : infos) {
    if (info.type == VariableType::kId)
      table.add_column(Column::id(std::move(info), std::move(hid)));
    else if (info.type == VariableType::kCategorical)
      table.add_column(Column::categorical(std::move(info), std::move(cat[next_cat++])));
    else if (info.name == "income")
      table.add_column(Column::continuous(std::move(info), std::move(income)));
    else if (info.name == "expenditure")
      table.add_column(Column::continuous(std::move(info), std::move(expenditure)));
    else if (info.name == "savings")
      table.add_column(Column::continuous(std::move(info), std::move(savings)));
    else
      table.add_column(Column::continuous(std::move(info), std::move(weight)));
  }
  return table;
}

std::vector<VariableInfo> CensusGenerator::variables() const {
  std::vector<VariableInfo> out;
  const auto add = [&](std::string name, VariableType type, VariableRole role, std::vector<std::string> levels = {},
                       int level = 0) {
    VariableInfo info;
    info.name = std::move(name);
    info.type = type;
    info.role = role;
    info.levels = std::move(levels);
    info.geography_level = level;
    out.push_back(std::move(info));
  };
  const auto key = [&](std::string name, std::vector<std::string> levels) {
    add(std::move(name), VariableType::kCategorical, VariableRole::kKey, std::move(levels));
  };
  add("hid", VariableType::kId, VariableRole::kHousehold);
  add("nuts1", VariableType::kCategorical, VariableRole::kGeography, CensusGeography::nuts1_labels(), 1);
  add("nuts2", VariableType::kCategorical, VariableRole::kGeography, CensusGeography::nuts2_labels(), 2);
  add("nuts3", VariableType::kCategorical, VariableRole::kGeography, CensusGeography::nuts3_labels(), 3);
  add("lau2", VariableType::kCategorical, VariableRole::kGeography, geography_.lau2_labels, 4);
  key("sex", {"male", "female"});
  std::vector<std::string> ages, bands;
  for (int a = 0; a <= code::kMaxAge; ++a) ages.push_back(std::to_string(a));
  for (int a = 0; a <= code::kMaxAge; a += 5)
    bands.push_back("[" + std::to_string(a) + "," + std::to_string(a + 5) + ")");
  key("age", ages);
  key("agegroup", bands);
  key("marstat", {"single", "married", "divorced", "widowed"});
  std::vector<std::string> citizenship{"NAT"};
  for (int c = 1; c <= code::kForeignCitizenships; ++c)
    citizenship.push_back((c < 10 ? "F0" : "F") + std::to_string(c));
  key("citizenship", citizenship);
  key("education",
      {"not-applicable", "none", "primary", "lower-secondary", "upper-secondary", "post-secondary", "tertiary"});
  key("occupation",
      {"child", "student", "retired", "not-employed", "managers", "professionals", "technicians", "clerical",
       "service-sales", "agriculture", "craft-trades", "operators", "elementary", "armed-forces"});
  key("htype",
      {"one-person", "couple-no-children", "couple-with-children", "lone-parent", "other-private", "institutional"});
  key("hsize", {"1", "2", "3", "4", "5", "6", "7", "8", "10+"});
  add("income", VariableType::kContinuous, VariableRole::kContinuous);
  add("expenditure", VariableType::kContinuous, VariableRole::kContinuous);
  add("savings", VariableType::kContinuous, VariableRole::kContinuous);
  add("weight", VariableType::kContinuous, VariableRole::kWeight);
  return out;
}

Table generate_census(const CensusOptions& options) {
  const CensusGenerator generator(options);
  const CensusLayout layout(generator.count_blocks(0, generator.block_count()));
  return generator.generate_rows(layout, 0, layout.rows());
}

}  // namespace sdc::generate
