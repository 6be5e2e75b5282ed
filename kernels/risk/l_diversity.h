#pragma once
// l-diversity of a categorical sensitive variable within the equivalence classes of the key variables:
// distinct, entropy and recursive (c,l)-diversity (docs/methods risk.md §3; reference sdcMicro
// `ldiversity`, recursion constant c = 2). Classes are exact key tuples with missing equal to missing
// (no wildcard), as KeyGrouping forms them.
//
// Shape (a), mergeable partials:
//   l_diversity_local     records of one block   -> classes with the counts of each sensitive category
//   l_diversity_merge     two class lists        -> their sorted union, counts added (associative)
//   l_diversity_finalize  global classes         -> distinct, entropy, recursive l per class
//   l_diversity_assign    per-class measures     -> the measures of each record's class
// Counts are integers, so the measures do not depend on how the records are split.
//
// Missing sensitive values (code kMissingCode = -1), u of them in a class of size g with non-missing
// category counts r_1 >= ... >= r_q:
// * distinct = q, plus 1 when u > 0 and q > 0; 0 when all are missing;
// * entropy = exp(-Σ p log p), p = count / g, over the q categories and, when u > 0 and q > 0, the
//   missing "category"; 1 when all are missing. Summed in ascending code order, missing last;
// * recursive over the non-missing categories only: start l = 1, s = c·(r_2 + ... + r_q); while a next
//   category exists and s > r_1: s -= c·r_{l+1}, l += 1. One category, or none (all missing): 1.
//   Native evaluates s exactly from integer tail sums; compat accumulates s in single precision as the
//   reference does (different only for counts beyond 2^24 or a c that is not exact in float).

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/core/key_grouping.h"

namespace sdc {

/// Classes sorted by key tuple; per class its sensitive categories ascending by code (missing first).
struct SensitiveClasses {
  std::size_t key_count = 0;
  std::vector<std::int32_t> class_keys;          ///< class c's tuple: [c*key_count, (c+1)*key_count)
  std::vector<std::size_t> category_offsets{0};  ///< class c: categories [offsets[c], offsets[c+1])
  std::vector<std::int32_t> categories;          ///< sensitive code, kMissingCode for missing
  std::vector<std::int64_t> category_counts;

  std::size_t class_count() const { return category_offsets.size() - 1; }
  std::span<const std::int32_t> key(std::size_t c) const {
    return std::span<const std::int32_t>(class_keys).subspan(c * key_count, key_count);
  }
};

struct LocalSensitiveClasses {
  SensitiveClasses classes;
  std::vector<std::uint32_t> record_class;  ///< index into classes, per record of the block
};

/// `sensitive` holds one code per record: 0.. for categories, kMissingCode (-1) for missing.
LocalSensitiveClasses l_diversity_local(const KeyColumns& keys, std::span<const std::int32_t> sensitive);
/// The same from the records' classes already formed (group_by_keys of the keys): a step that has
/// counted the classes for fk reuses them instead of grouping the records again.
LocalSensitiveClasses l_diversity_local(const KeyGrouping& grouping, std::span<const std::int32_t> sensitive);

/// The sorted union of two class lists; equal tuples get their category counts added.
void l_diversity_merge(SensitiveClasses& into, const SensitiveClasses& from);

struct LDiversityOptions {
  double c = 2.0;       ///< recursion constant of recursive (c,l)-diversity
  bool compat = false;  ///< accumulate the recursive sum in single precision, as the reference
};

/// The three measures, one entry per class (finalize) or per record (assign).
struct LDiversity {
  std::vector<std::int64_t> distinct;
  std::vector<double> entropy;
  std::vector<std::int64_t> recursive;
};

LDiversity l_diversity_finalize(const SensitiveClasses& classes, const LDiversityOptions& options = {});

LDiversity l_diversity_assign(std::span<const std::uint32_t> record_class, const LDiversity& per_class);

}  // namespace sdc
