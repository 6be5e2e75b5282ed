#pragma once
// A table from every rank's records (kernels/tables/tabulation.h; docs/tables.md): each rank
// tabulates its leaf cells on its threads, the partial tables are merged in pairwise rounds towards
// the coordinator (rank r sends to rank r − 2^k in round k, so the merge order depends on the ranks
// alone), and the coordinator adds the subtotals and totals. Counts and key sums are integers and the
// sums exact, so the table is the same for any number of ranks and threads.
//
// Memory: each rank holds its leaf cells (about 100 bytes a cell plus 24 bytes per top contribution)
// and its records' grouping (32 bytes a record while it groups); the coordinator holds the whole table
// with its margins, up to twice during the last merge.

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "kernels/tables/tabulation.h"

namespace sdc::distributed {

/// Collective. The whole table (leaves and margins) on the coordinator; an empty table elsewhere.
/// A bad code on any rank is the same InvalidInput on every rank.
tables::CellTable distributed_tabulation(const Communicator& comm,
                                         std::span<const tables::TabulationDimension> dimensions,
                                         const tables::TabulationOptions& options);

/// Collective. The distinct tuples of `columns` (one code per column, each >= 0) over every rank's
/// records, sorted lexicographically: the nesting of geography variables, for instance.
std::vector<std::vector<std::int32_t>> distinct_tuples(const Communicator& comm,
                                                       std::span<const std::span<const std::int32_t>> columns);

}  // namespace sdc::distributed
