#include "distributed/row_exchange.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <numeric>
#include <variant>

#include "distributed/collective_error.h"
#include "kernels/core/error.h"
#include "kernels/core/row_order.h"

namespace sdc::distributed {
namespace {

Column::Storage empty_like(const Column& column) {
  return std::visit([](const auto& values) { return Column::Storage(std::decay_t<decltype(values)>{}); },
                    column.storage());
}

}  // namespace

Table numeric_table(std::vector<std::vector<double>> values, std::int64_t rows, std::int64_t first_row_id) {
  Table table("", rows, first_row_id);
  for (std::size_t j = 0; j < values.size(); ++j) {
    VariableInfo info;
    info.name = "c" + std::to_string(j);
    table.add_column(Column::continuous(std::move(info), std::move(values[j])));
  }
  return table;
}

MovedRows exchange_rows(const Communicator& comm, const Table& table, std::span<const std::int64_t> row_ids,
                        std::span<const int> destination, std::int64_t first_row_id,
                        std::span<const std::int64_t> tags) {
  SDC_CHECK(tags.empty() || tags.size() == row_ids.size(), "one tag per row, or none");
  const bool tagged = comm.all_reduce_max(tags.empty() ? 0 : 1) == 1;
  const auto ranks = static_cast<std::size_t>(comm.size());
  SDC_CHECK(row_ids.size() == static_cast<std::size_t>(table.row_count()) && destination.size() == row_ids.size(),
            "one row id and one destination per row");
  std::vector<std::vector<std::uint32_t>> rows_for(ranks);
  for (std::size_t i = 0; i < destination.size(); ++i)
    rows_for[static_cast<std::size_t>(destination[i])].push_back(static_cast<std::uint32_t>(i));

  std::vector<std::vector<std::byte>> send(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto& rows = rows_for[r];
    if (rows.empty()) continue;
    ByteWriter out;
    out.put(static_cast<std::uint64_t>(rows.size()));
    for (std::uint32_t i : rows) out.put(row_ids[i]);
    if (tagged)
      for (std::uint32_t i : rows) out.put(tags[i]);
    for (const Column& column : table.columns()) {
      std::visit(
          [&](const auto& values) {
            for (std::uint32_t i : rows) out.put(values[i]);
          },
          column.storage());
    }
    send[r] = std::move(out.bytes());
  }
  const auto received = comm.all_to_all_bytes(send);

  MovedRows moved{Table(table.source()), {}, {}};
  std::vector<Column::Storage> columns;
  for (const Column& column : table.columns()) columns.push_back(empty_like(column));
  for (const auto& bytes : received) {
    if (bytes.empty()) continue;
    ByteReader in(bytes);
    const auto count = static_cast<std::size_t>(in.get<std::uint64_t>());
    const std::size_t old_size = moved.row_ids.size();
    moved.row_ids.resize(old_size + count);
    in.get_span(std::span(moved.row_ids).subspan(old_size, count));
    if (tagged) {
      moved.tags.resize(old_size + count);
      in.get_span(std::span(moved.tags).subspan(old_size, count));
    }
    for (auto& storage : columns) {
      std::visit(
          [&](auto& values) {
            const std::size_t before = values.size();
            values.resize(before + count);
            in.get_span(std::span(values).subspan(before, count));
          },
          storage);
    }
    SDC_CHECK(in.done(), "every received row consumed");
  }
  moved.table = Table(table.source(), static_cast<std::int64_t>(moved.row_ids.size()), first_row_id);
  for (std::size_t j = 0; j < table.column_count(); ++j)
    moved.table.add_column(Column::of(table.columns()[j].info(), std::move(columns[j])));
  return moved;
}

int StratumAssignment::rank_of(std::int64_t stratum) const {
  const auto it = std::lower_bound(strata.begin(), strata.end(), stratum);
  SDC_CHECK(it != strata.end() && *it == stratum, "every stratum has a rank");
  return ranks[static_cast<std::size_t>(it - strata.begin())];
}

StratumAssignment assign_strata(const Communicator& comm, std::span<const std::int64_t> stratum_of_record) {
  // Local counts, sorted by stratum.
  std::vector<std::int64_t> sorted(stratum_of_record.begin(), stratum_of_record.end());
  std::sort(sorted.begin(), sorted.end());
  ByteWriter local;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    local.put(sorted[i]);
    local.put(static_cast<std::int64_t>(j - i));
    i = j;
  }
  std::vector<std::vector<std::byte>> to_coordinator(static_cast<std::size_t>(comm.size()));
  to_coordinator[0] = std::move(local.bytes());
  const auto received = comm.all_to_all_bytes(to_coordinator);

  ByteWriter answer;
  if (comm.is_coordinator()) {
    std::vector<std::pair<std::int64_t, std::int64_t>> counts;  // (stratum, records)
    for (const auto& bytes : received) {
      ByteReader in(bytes);
      while (!in.done()) {
        const auto stratum = in.get<std::int64_t>();
        counts.emplace_back(stratum, in.get<std::int64_t>());
      }
    }
    std::sort(counts.begin(), counts.end());
    std::vector<std::pair<std::int64_t, std::int64_t>> merged;
    for (const auto& [stratum, records] : counts) {
      if (!merged.empty() && merged.back().first == stratum)
        merged.back().second += records;
      else
        merged.emplace_back(stratum, records);
    }
    // Largest first to the least loaded rank: within 4/3 of the best balance (Graham's LPT bound).
    std::vector<std::size_t> by_size(merged.size());
    std::iota(by_size.begin(), by_size.end(), 0U);
    std::sort(by_size.begin(), by_size.end(), [&](std::size_t a, std::size_t b) {
      return merged[a].second != merged[b].second ? merged[a].second > merged[b].second
                                                  : merged[a].first < merged[b].first;
    });
    std::vector<std::int64_t> load(static_cast<std::size_t>(comm.size()), 0);
    std::vector<int> rank_of_stratum(merged.size());
    for (std::size_t s : by_size) {
      const auto least = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      rank_of_stratum[s] = static_cast<int>(least);
      load[least] += merged[s].second;
    }
    for (std::size_t s = 0; s < merged.size(); ++s) {
      answer.put(merged[s].first);
      answer.put(merged[s].second);
      answer.put(static_cast<std::int64_t>(rank_of_stratum[s]));
    }
  }
  const auto shared = comm.broadcast_bytes(answer.bytes());
  StratumAssignment assignment;
  ByteReader in(shared);
  while (!in.done()) {
    assignment.strata.push_back(in.get<std::int64_t>());
    assignment.records.push_back(in.get<std::int64_t>());
    assignment.ranks.push_back(static_cast<int>(in.get<std::int64_t>()));
  }
  return assignment;
}

MovedRows shuffle_by_stratum(const Communicator& comm, const Table& part,
                             std::span<const std::int64_t> stratum_of_record, const StratumAssignment& assignment) {
  std::vector<std::int64_t> row_ids(static_cast<std::size_t>(part.row_count()));
  std::iota(row_ids.begin(), row_ids.end(), part.first_row_id());
  std::vector<int> destination(row_ids.size());
  for (std::size_t i = 0; i < destination.size(); ++i) destination[i] = assignment.rank_of(stratum_of_record[i]);
  MovedRows moved = exchange_rows(comm, part, row_ids, destination, 0, stratum_of_record);

  // The strata travelled as tags; they order the received rows.
  std::vector<std::uint64_t> order(moved.row_ids.size());
  std::iota(order.begin(), order.end(), 0U);
  std::sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) {
    return moved.tags[a] != moved.tags[b] ? moved.tags[a] < moved.tags[b] : moved.row_ids[a] < moved.row_ids[b];
  });
  reorder_rows(moved.table, order);
  std::vector<std::int64_t> ids(order.size()), strata(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    ids[i] = moved.row_ids[order[i]];
    strata[i] = moved.tags[order[i]];
  }
  moved.row_ids = std::move(ids);
  moved.tags = std::move(strata);
  return moved;
}

Table return_home(const Communicator& comm, const Table& rows, std::span<const std::int64_t> row_ids,
                  const RowRange& home) {
  const auto homes = comm.all_gather(home);
  std::vector<int> destination(row_ids.size());
  for (std::size_t i = 0; i < row_ids.size(); ++i) {
    // Home ranges are contiguous and in rank order: the home is the first range ending after the row.
    const auto it =
        std::partition_point(homes.begin(), homes.end(), [&](const RowRange& h) { return h.end() <= row_ids[i]; });
    SDC_CHECK(it != homes.end() && row_ids[i] >= it->first, "every row has a home rank");
    destination[i] = static_cast<int>(it - homes.begin());
  }
  MovedRows moved = exchange_rows(comm, rows, row_ids, destination, home.first);
  SDC_CHECK(moved.table.row_count() == home.count, "every home row came back");
  std::vector<std::uint64_t> order(moved.row_ids.size());
  for (std::size_t i = 0; i < moved.row_ids.size(); ++i)
    order[static_cast<std::size_t>(moved.row_ids[i] - home.first)] = i;
  reorder_rows(moved.table, order);
  return std::move(moved.table);
}

std::vector<std::vector<double>> transform_whole_columns(
    const Communicator& comm, const std::vector<std::vector<std::span<const double>>>& inputs,
    std::span<const std::int64_t> row_ids, const RowRange& home, const WholeColumnTransform& transform) {
  const auto owner = [&](std::size_t task) { return static_cast<int>(task % static_cast<std::size_t>(comm.size())); };
  const auto rows = static_cast<std::int64_t>(row_ids.size());
  std::vector<MovedRows> gathered;
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    std::vector<std::vector<double>> values;
    for (const auto& column : inputs[t]) values.emplace_back(column.begin(), column.end());
    const std::vector<int> destination(row_ids.size(), owner(t));
    gathered.push_back(exchange_rows(comm, numeric_table(std::move(values), rows, home.first), row_ids, destination));
  }
  std::vector<std::size_t> owned;
  for (std::size_t t = 0; t < inputs.size(); ++t)
    if (owner(t) == comm.rank()) owned.push_back(t);
  std::vector<std::vector<double>> results(inputs.size());
  agree_on_error(comm, [&] {
    tbb::parallel_for(std::size_t{0}, owned.size(), [&](std::size_t k) {
      const std::size_t t = owned[k];
      std::vector<std::span<const double>> columns;
      for (const Column& column : gathered[t].table.columns()) columns.push_back(column.values());
      results[t] = transform(t, columns, gathered[t].row_ids);
      SDC_CHECK(results[t].size() == gathered[t].row_ids.size(), "one result per record of a whole column");
    });
  });
  std::vector<std::vector<double>> out;
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    std::vector<std::vector<double>> result;
    result.push_back(std::move(results[t]));
    const Table returned =
        return_home(comm, numeric_table(std::move(result), static_cast<std::int64_t>(gathered[t].row_ids.size()), 0),
                    gathered[t].row_ids, home);
    const auto values = returned.columns().front().values();
    out.emplace_back(values.begin(), values.end());
  }
  return out;
}

}  // namespace sdc::distributed
