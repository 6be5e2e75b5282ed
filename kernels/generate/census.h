#pragma once
// The synthetic census generator (docs/generator.md): households of persons in a four-level geography
// with realistic dependencies between the variables, as a census or a household sample.
//
// Every value is a pure function of (seed, household id) through RecordRng (docs/rng.md), so any row
// range can be generated on its own, by any rank and thread. Two passes:
//   1. count_blocks(): per fixed block of kHouseholdBlock household ids, the persons of the census
//      and of the sample (one draw per household for its size, one for its selection);
//   2. generate_rows(): with the blocks' prefix sums (CensusLayout) any row range [a, b) is generated,
//      in parallel over household blocks. A household cut by a or b is generated whole and clipped.
// Shape (b), block-local: no merge step; the caller concatenates row ranges in row order.
// No MPI, no files, no logging.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernels/core/table.h"

namespace sdc::generate {

/// Household ids per block of the counting pass and of the parallel generation: fixed, so the work
/// split depends on the data size only (docs/rng.md).
inline constexpr std::int64_t kHouseholdBlock = 4096;
/// The largest household: institutional households have 10 to 60 persons, private ones 1 to 8.
inline constexpr int kMaxHouseholdSize = 60;

struct CensusOptions {
  std::uint64_t seed = 0;
  std::int64_t households = 0;   ///< households of the census, numbered 1..households; >= 1
  double sample_fraction = 1.0;  ///< (0, 1]; 1 = the full census, otherwise a stratified household sample
};

/// The counting pass's result for one block of household ids.
struct BlockCounts {
  std::int64_t persons = 0;            ///< persons of all households of the block (the census)
  std::int64_t sample_households = 0;  ///< households selected into the file
  std::int64_t sample_persons = 0;     ///< their persons: the block's rows
};

/// Where each block's rows start in the file: prefix sums of the blocks' sample persons.
class CensusLayout {
 public:
  /// `blocks` in block order, one entry for every block of the census (CensusGenerator::block_count()).
  explicit CensusLayout(std::vector<BlockCounts> blocks);

  std::int64_t block_count() const { return static_cast<std::int64_t>(blocks_.size()); }
  const BlockCounts& block(std::int64_t b) const { return blocks_[static_cast<std::size_t>(b)]; }
  /// Row of the first person of block b; first_row(block_count()) is the number of rows.
  std::int64_t first_row(std::int64_t b) const { return first_rows_[static_cast<std::size_t>(b)]; }
  /// The block holding row `row` (0 <= row < rows()).
  std::int64_t block_of_row(std::int64_t row) const;

  std::int64_t rows() const { return first_rows_.back(); }
  std::int64_t persons() const { return persons_; }
  std::int64_t sample_households() const { return sample_households_; }

 private:
  std::vector<BlockCounts> blocks_;
  std::vector<std::int64_t> first_rows_;
  std::int64_t persons_ = 0;
  std::int64_t sample_households_ = 0;
};

/// The geography: nuts1 (3 regions) > nuts2 (3 per nuts1) > nuts3 (4 per nuts2) > lau2 (areas).
/// Areas are numbered by their label order (the categorical code of lau2); household ids are given
/// out in that order, so area i holds the households first_household[i] + 1 .. first_household[i + 1].
struct CensusGeography {
  static constexpr int kNuts1 = 3;
  static constexpr int kNuts2 = 9;
  static constexpr int kNuts3 = 36;

  std::int32_t lau2_count = 0;
  std::vector<std::int64_t> first_household;  ///< lau2_count + 1 entries, from 0 to the household count
  std::vector<std::int32_t> nuts3_of_lau2;    ///< code of the area's nuts3 (0..35)
  std::vector<std::int32_t> size_rank;        ///< the area's rank by size, 0 = the largest
  std::vector<std::string> lau2_labels;       ///< nuts3 label + 4-digit number, e.g. "1110001"

  static std::int32_t nuts2_of_nuts3(std::int32_t nuts3) { return nuts3 / 4; }
  static std::int32_t nuts1_of_nuts3(std::int32_t nuts3) { return nuts3 / 12; }
  static std::vector<std::string> nuts1_labels();  ///< "1".."3"
  static std::vector<std::string> nuts2_labels();  ///< "11".."33"
  static std::vector<std::string> nuts3_labels();  ///< "111".."334"

  std::int64_t households_of(std::int32_t lau2) const {
    return first_household[static_cast<std::size_t>(lau2) + 1] - first_household[static_cast<std::size_t>(lau2)];
  }
  /// The area of household `hid` (1..households), by binary search.
  std::int32_t lau2_of_household(std::int64_t hid) const;
};

/// A rare citizenship's home: the only area where it occurs, and the share of households there.
struct RareCitizenshipHome {
  std::int32_t citizenship = 0;  ///< code 16..40 (F16..F40)
  std::int32_t lau2 = 0;
  double probability = 0.0;  ///< chance that a private household of the area has this citizenship
};

// Codes of the categorical variables (labels in docs/generator.md and variables()).
namespace code {
inline constexpr std::int32_t kMale = 0, kFemale = 1;
inline constexpr std::int32_t kSingle = 0, kMarried = 1, kDivorced = 2, kWidowed = 3;
inline constexpr std::int32_t kNotApplicable = 0, kNoEducation = 1, kPrimary = 2, kLowerSecondary = 3,
                              kUpperSecondary = 4, kPostSecondary = 5, kTertiary = 6;
inline constexpr std::int32_t kChild = 0, kStudent = 1, kRetired = 2, kNotEmployed = 3, kManagers = 4,
                              kProfessionals = 5, kTechnicians = 6, kClerical = 7, kServiceSales = 8, kAgriculture = 9,
                              kCraftTrades = 10, kOperators = 11, kElementary = 12, kArmedForces = 13;
inline constexpr std::int32_t kOnePerson = 0, kCoupleNoChildren = 1, kCoupleWithChildren = 2, kLoneParent = 3,
                              kOtherPrivate = 4, kInstitutional = 5;
inline constexpr std::int32_t kNational = 0;               ///< citizenship; foreign codes 1..40 are F01..F40
inline constexpr std::int32_t kFirstRareCitizenship = 16;  ///< F16..F40 live in a few areas each
inline constexpr std::int32_t kForeignCitizenships = 40;
inline constexpr std::int32_t kInstitutionalSizeCode = 8;  ///< hsize "10+"
inline constexpr std::int32_t kMaxAge = 100;
}  // namespace code

/// The documented targets (docs/generator.md) that tests check the output against.
struct CensusTargets {
  /// Share of households by type (code::kOnePerson .. kInstitutional).
  static std::vector<double> household_type_shares();
  /// Share of households by hsize code: sizes 1..8, then institutional ("10+").
  static std::vector<double> household_size_shares();
};

class CensusGenerator {
 public:
  /// Builds the geography, the sample's inclusion probabilities and the rare citizenships' home areas
  /// (O(areas), independent of the rank and thread). Throws UsageError for options out of range.
  explicit CensusGenerator(const CensusOptions& options);

  const CensusOptions& options() const { return options_; }
  const CensusGeography& geography() const { return geography_; }
  /// Inclusion probability of a household in nuts2 region `nuts2` (1 for a census).
  double inclusion_probability(std::int32_t nuts2) const { return inclusion_[static_cast<std::size_t>(nuts2)]; }
  const std::vector<RareCitizenshipHome>& rare_citizenship_homes() const { return rare_homes_; }
  bool is_sample() const { return options_.sample_fraction < 1.0; }

  /// Blocks of kHouseholdBlock household ids: ceil(households / kHouseholdBlock).
  std::int64_t block_count() const;
  /// Pass 1 over blocks [first_block, first_block + count): one entry per block. Parallel over blocks
  /// on the current TBB arena; the result does not depend on the thread count.
  std::vector<BlockCounts> count_blocks(std::int64_t first_block, std::int64_t count) const;
  /// Rows [first_row, first_row + row_count) of the file (0 <= first_row, first_row + row_count <=
  /// layout.rows()), as a table whose first_row_id() is first_row and whose variables are
  /// variables(). Parallel over household blocks; the values do not depend on the thread count or
  /// on the range requested.
  /// `progress`, when given, is called from worker threads with the number of rows done so far
  /// (it must be thread-safe; it reports, it does not steer).
  Table generate_rows(const CensusLayout& layout, std::int64_t first_row, std::int64_t row_count,
                      const std::function<void(std::int64_t)>& progress = nullptr) const;

  /// The variables of the file, in column order, with their types, roles and levels.
  std::vector<VariableInfo> variables() const;

 private:
  struct Household;
  /// Draws household `hid`'s size and whether it is selected: its size, or minus its size when the
  /// sample leaves it out.
  int selected_size(std::int64_t hid, std::int32_t lau2) const;
  void generate_household(std::int64_t hid, std::int32_t lau2, Household& out) const;

  CensusOptions options_;
  CensusGeography geography_;
  std::vector<double> inclusion_;                ///< per nuts2
  std::vector<RareCitizenshipHome> rare_homes_;  ///< sorted by lau2, then citizenship
  std::vector<std::int32_t> rare_first_;         ///< per lau2 + 1: its entries in rare_homes_
  std::int32_t foreign_city_ranks_ = 0;          ///< areas of size rank below this have the city foreign share
};

/// Counts, layout and all rows in one process (tests, benchmarks): count_blocks over every block, then
/// generate_rows over every row.
Table generate_census(const CensusOptions& options);

}  // namespace sdc::generate
