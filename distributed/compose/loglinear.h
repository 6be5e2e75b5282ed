#pragma once
// The distributed steps of the log-linear model risk (kernels/risk/loglinear.h, docs/risk.md
// "Log-linear model risk"): the observed levels of the keys, the observed margins of a model and the
// histogram of class sizes, each a local step and an integer all-reduce, so every rank gets the same
// result for any split of the records. The fit itself runs on every rank from the merged margins.

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/key_grouping.h"
#include "kernels/risk/loglinear.h"

namespace sdc::distributed {

/// The keys' codes renumbered to the levels observed on some rank: level j of the result is the j-th
/// observed code in code order, a missing code (-1) observed anywhere being the last level.
struct ObservedKeys {
  std::vector<std::vector<std::int32_t>> codes;  ///< codes[j][i]: key j of record i, in 0..level_counts[j]-1
  std::vector<std::int32_t> level_counts;        ///< observed levels per key (0 when no record at all)
  bool has_missing = false;                      ///< some rank holds a missing key value

  KeyColumns columns() const;
};
ObservedKeys distributed_observed_keys(const Communicator& comm, const KeyColumns& keys);

/// The observed margins of `spec` (canonical) over the records of all ranks: local counts and one
/// all-reduce of the int64 tables.
MarginCounts distributed_loglinear_margins(const Communicator& comm, const LogLinearModelSpec& spec,
                                           const KeyColumns& observed);

/// Classes of each size among the records that `selected` marks, from the records' class sizes: a
/// class of s records contributes s records of size s, so its count is records / s, exactly.
struct ClassSizeCount {
  std::int64_t size = 0;
  std::int64_t classes = 0;
};
/// `class_size[i]` is the (whole) size of record i's class; `selected` empty selects every record.
/// Sorted by size; the same on every rank.
std::vector<ClassSizeCount> distributed_class_sizes(const Communicator& comm, std::span<const double> class_size,
                                                    std::span<const std::uint8_t> selected = {});

}  // namespace sdc::distributed
