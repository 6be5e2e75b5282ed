// Runs under mpirun with any number of ranks (CTest: 1 and 3): every rank builds its share of a
// table from global row ids, so expectations are known everywhere without gathering.

#include "distributed/row_exchange.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "distributed/comm.h"
#include "distributed/partition.h"

namespace sdc::distributed {
namespace {

constexpr std::int64_t kRows = 10007;

std::int64_t stratum_of(std::int64_t row) { return (row * 7919) % 23 + (row % 3 == 0 ? 100 : 0); }

Table part_of(const Communicator& comm, RowRange* range) {
  *range = even_split(kRows, comm.rank(), comm.size());
  std::vector<std::int64_t> ids(static_cast<std::size_t>(range->count));
  std::vector<double> values(ids.size());
  std::vector<std::int32_t> codes(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t row = range->first + static_cast<std::int64_t>(i);
    ids[i] = row;
    values[i] = static_cast<double>(row) * 0.5;
    codes[i] = static_cast<std::int32_t>(row % 5);
  }
  Table table("test", range->count, range->first);
  VariableInfo id_info{"id", VariableType::kId, VariableRole::kIdentifier, 0, {}, {}, {}, -1};
  VariableInfo value_info{"value", VariableType::kContinuous, VariableRole::kOther, 0, {}, {}, {}, -1};
  VariableInfo code_info{"code", VariableType::kCategorical, VariableRole::kKey, 0, {"a", "b", "c", "d", "e"}, {}, {},
                         -1};
  table.add_column(Column::id(id_info, std::move(ids)));
  table.add_column(Column::continuous(value_info, std::move(values)));
  table.add_column(Column::categorical(code_info, std::move(codes)));
  return table;
}

TEST(AShuffleByStratum, PutsEveryStratumWhollyOnOneRankSortedByStratumAndRowId) {
  const auto comm = Communicator::world();
  RowRange range;
  const Table part = part_of(comm, &range);
  std::vector<std::int64_t> strata(static_cast<std::size_t>(part.row_count()));
  for (std::size_t i = 0; i < strata.size(); ++i) strata[i] = stratum_of(range.first + static_cast<std::int64_t>(i));

  const StratumAssignment assignment = assign_strata(comm, strata);
  EXPECT_EQ(std::accumulate(assignment.records.begin(), assignment.records.end(), std::int64_t{0}), kRows);
  const MovedRows moved = shuffle_by_stratum(comm, part, strata, assignment);
  const auto& sorted_strata = moved.tags;

  const auto ids = moved.table.require("id").ids();
  const auto values = moved.table.require("value").values();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(ids[i], moved.row_ids[i]) << "rows travel with their ids";
    ASSERT_EQ(values[i], static_cast<double>(ids[i]) * 0.5);
    ASSERT_EQ(sorted_strata[i], stratum_of(ids[i]));
    ASSERT_EQ(assignment.rank_of(sorted_strata[i]), comm.rank());
    if (i > 0) {
      ASSERT_TRUE(std::pair(sorted_strata[i - 1], ids[i - 1]) < std::pair(sorted_strata[i], ids[i]));
    }
  }
  EXPECT_EQ(comm.all_reduce_sum(moved.table.row_count()), kRows);

  // Largest-first assignment keeps every rank within 4/3 of the even share plus one stratum.
  const std::int64_t largest = *std::max_element(assignment.records.begin(), assignment.records.end());
  EXPECT_LE(moved.table.row_count(), kRows / comm.size() * 4 / 3 + largest);
}

TEST(ReturnHome, RestoresEveryRowToItsRankInRowOrder) {
  const auto comm = Communicator::world();
  RowRange range;
  const Table part = part_of(comm, &range);
  std::vector<std::int64_t> strata(static_cast<std::size_t>(part.row_count()));
  for (std::size_t i = 0; i < strata.size(); ++i) strata[i] = stratum_of(range.first + static_cast<std::int64_t>(i));
  const MovedRows moved = shuffle_by_stratum(comm, part, strata, assign_strata(comm, strata));

  const Table back = return_home(comm, moved.table, moved.row_ids, range);
  ASSERT_EQ(back.row_count(), part.row_count());
  EXPECT_EQ(back.first_row_id(), range.first);
  for (std::size_t j = 0; j < part.column_count(); ++j) {
    const auto& before = part.columns()[j].storage();
    const auto& after = back.columns()[j].storage();
    EXPECT_TRUE(before == after) << part.columns()[j].name();
  }
}

TEST(ExchangeRows, MovesRowsToTheirDestinationsInSourceOrder) {
  const auto comm = Communicator::world();
  RowRange range;
  const Table part = part_of(comm, &range);
  std::vector<std::int64_t> row_ids(static_cast<std::size_t>(part.row_count()));
  std::iota(row_ids.begin(), row_ids.end(), range.first);
  std::vector<int> destination(row_ids.size());
  for (std::size_t i = 0; i < destination.size(); ++i) destination[i] = static_cast<int>(row_ids[i] % comm.size());
  const MovedRows moved = exchange_rows(comm, part, row_ids, destination);
  for (std::size_t i = 0; i < moved.row_ids.size(); ++i) {
    ASSERT_EQ(moved.row_ids[i] % comm.size(), comm.rank());
    if (i > 0) {
      ASSERT_LT(moved.row_ids[i - 1], moved.row_ids[i]);
    }
  }
}

}  // namespace
}  // namespace sdc::distributed

int main(int argc, char** argv) {
  sdc::distributed::MpiRuntime mpi(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  // Only the coordinator prints, so that N ranks give one readable report; every rank's failures
  // still fail the run through the exit code.
  if (sdc::distributed::Communicator::world().rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  const auto comm = sdc::distributed::Communicator::world();
  return comm.all_reduce_max(failed) == 0 ? 0 : 1;
}
