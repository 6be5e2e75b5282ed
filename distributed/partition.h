#pragma once
// Row ranges per rank whose boundaries fall between households, so that a household is never split
// across ranks (household risk, household swapping and cluster bootstraps need whole households).
// Inputs are sorted by household id; an unsorted input is rejected naming its first bad row.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "distributed/comm.h"

namespace sdc::distributed {

struct RowRange {
  std::int64_t first = 0;
  std::int64_t count = 0;
  std::int64_t end() const { return first + count; }
};

/// Rows split as evenly as possible: rank r gets [r*n/P, (r+1)*n/P).
RowRange even_split(std::int64_t rows, int rank, int ranks);

/// Reads the household ids of rows [first, first + count).
using HouseholdIdReader = std::function<std::vector<std::int64_t>(std::int64_t first, std::int64_t count)>;

/// Collective. Moves every even-split boundary forward to the first row of the next household; reads
/// only a window of household ids around its own boundary (doubling it for very large households).
RowRange household_aligned_range(const Communicator& comm, std::int64_t rows, const HouseholdIdReader& read_ids);

/// Collective. The first global row id at which household ids decrease (over the concatenation of
/// all ranks' ranges in rank order), or -1 when the whole file is sorted.
std::int64_t first_unsorted_row(const Communicator& comm, const RowRange& range, std::span<const std::int64_t> ids);

}  // namespace sdc::distributed
