#pragma once
// Moving records between ranks: the realignment of outputs to chunk boundaries and the shuffle by
// stratum key that block-local methods need (microaggregation within strata, swapping within areas).

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "distributed/partition.h"
#include "kernels/core/table.h"

namespace sdc::distributed {

/// Rows received from other ranks: in source-rank order, each source's rows in the order it sent them.
struct MovedRows {
  Table table;                        ///< every rank's table has the same variables
  std::vector<std::int64_t> row_ids;  ///< global row id of each row
  std::vector<std::int64_t> tags;     ///< the tag each row travelled with (empty when none were given)
};

/// A table of continuous columns named c0, c1, ... holding `values` (values[j][i]), `rows` rows from
/// `first_row_id`: numbers on their way between ranks.
Table numeric_table(std::vector<std::vector<double>> values, std::int64_t rows, std::int64_t first_row_id);

/// Collective. Sends row i of `table` (global row id `row_ids[i]`, and `tags[i]` when tags are given)
/// to rank `destination[i]`. The received table's first_row_id() is `first_row_id` (meaningful when
/// the rows are contiguous).
MovedRows exchange_rows(const Communicator& comm, const Table& table, std::span<const std::int64_t> row_ids,
                        std::span<const int> destination, std::int64_t first_row_id = 0,
                        std::span<const std::int64_t> tags = {});

/// Which rank holds each stratum: whole strata, balanced by record count.
struct StratumAssignment {
  std::vector<std::int64_t> strata;  ///< sorted
  std::vector<std::int64_t> records;
  std::vector<int> ranks;
  int rank_of(std::int64_t stratum) const;
};

/// Collective. Counts the records of every stratum and lets the coordinator assign whole strata to
/// ranks, largest first to the least loaded rank (ties: smaller stratum id, then lower rank). The
/// coordinator holds the table of strata (16 bytes per stratum per rank while merging); every rank
/// receives the assignment (16 bytes per stratum).
StratumAssignment assign_strata(const Communicator& comm, std::span<const std::int64_t> stratum_of_record);

/// Collective. Moves every record to the rank of its stratum; the result is sorted by (stratum, row id)
/// and its tags are the records' strata.
MovedRows shuffle_by_stratum(const Communicator& comm, const Table& part,
                             std::span<const std::int64_t> stratum_of_record, const StratumAssignment& assignment);

/// Collective. Sends rows back to the rank whose `home` range holds their row id (every rank passes
/// its own home range) and restores row order there: the inverse of a shuffle, for per-record results.
Table return_home(const Communicator& comm, const Table& rows, std::span<const std::int64_t> row_ids,
                  const RowRange& home);

/// A per-record result that needs a whole variable at once (its ranks, its sorted order): `transform`
/// gets a task's input columns whole (sources in rank order, each in row order) with their row ids
/// and returns one value per record. Task t runs on rank t mod P, a rank's tasks on its threads.
using WholeColumnTransform = std::function<std::vector<double>(
    std::size_t task, const std::vector<std::span<const double>>& columns, std::span<const std::int64_t> row_ids)>;

/// Collective. One result column per task, for this rank's records (row ids of `home`, in row order).
/// `inputs[t]` are the task's input columns (this rank's values, `row_ids` order). A transform's error
/// reaches every rank (agree_on_error).
std::vector<std::vector<double>> transform_whole_columns(
    const Communicator& comm, const std::vector<std::vector<std::span<const double>>>& inputs,
    std::span<const std::int64_t> row_ids, const RowRange& home, const WholeColumnTransform& transform);

}  // namespace sdc::distributed
