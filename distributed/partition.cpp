#include "distributed/partition.h"

#include <algorithm>
#include <limits>

namespace sdc::distributed {

RowRange even_split(std::int64_t rows, int rank, int ranks) {
  const auto begin = rows / ranks * rank + std::min<std::int64_t>(rank, rows % ranks);
  const auto end = rows / ranks * (rank + 1) + std::min<std::int64_t>(rank + 1, rows % ranks);
  return {begin, end - begin};
}

namespace {

/// The first row >= `start` that begins a household (or `rows`).
std::int64_t next_household_start(std::int64_t start, std::int64_t rows, const HouseholdIdReader& read_ids) {
  if (start <= 0 || start >= rows) return std::clamp<std::int64_t>(start, 0, rows);
  std::int64_t window = 1024;
  for (;;) {
    const std::int64_t count = std::min(window, rows - (start - 1));
    const auto ids = read_ids(start - 1, count);
    for (std::size_t i = 1; i < ids.size(); ++i)
      if (ids[i] != ids[i - 1]) return start - 1 + static_cast<std::int64_t>(i);
    if (start - 1 + count >= rows) return rows;
    window *= 2;
  }
}

}  // namespace

RowRange household_aligned_range(const Communicator& comm, std::int64_t rows, const HouseholdIdReader& read_ids) {
  const RowRange even = even_split(rows, comm.rank(), comm.size());
  const std::int64_t my_start = comm.rank() == 0 ? 0 : next_household_start(even.first, rows, read_ids);
  const auto starts = comm.all_gather(my_start);
  // A huge household can swallow the next rank's even share: the boundaries stay non-decreasing.
  std::int64_t start = my_start;
  for (int r = 0; r < comm.rank(); ++r) start = std::max(start, starts[static_cast<std::size_t>(r)]);
  std::int64_t end = rows;
  for (std::size_t r = static_cast<std::size_t>(comm.rank()) + 1; r < starts.size(); ++r)
    end = std::min(end, std::max(starts[r], start));
  return {start, std::max<std::int64_t>(0, end - start)};
}

std::int64_t first_unsorted_row(const Communicator& comm, const RowRange& range, std::span<const std::int64_t> ids) {
  std::int64_t first_bad = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 1; i < ids.size(); ++i) {
    if (ids[i] < ids[i - 1]) {
      first_bad = range.first + static_cast<std::int64_t>(i);
      break;
    }
  }
  // Across boundaries: compare each rank's first id with the last id of the nearest non-empty rank before it.
  struct Ends {
    std::int64_t first_id, last_id, first_row, count;
  };
  const Ends mine{ids.empty() ? 0 : ids.front(), ids.empty() ? 0 : ids.back(), range.first,
                  static_cast<std::int64_t>(ids.size())};
  const auto all = comm.all_gather(mine);
  const Ends* previous = nullptr;
  for (const auto& e : all) {
    if (e.count == 0) continue;
    if (previous != nullptr && e.first_id < previous->last_id) first_bad = std::min(first_bad, e.first_row);
    previous = &e;
  }
  const std::int64_t global = comm.all_reduce_min(first_bad);
  return global == std::numeric_limits<std::int64_t>::max() ? -1 : global;
}

}  // namespace sdc::distributed
