#include "distributed/compose/linkage.h"

#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "distributed/collective_error.h"
#include "distributed/compose/class_exchange.h"
#include "distributed/compose/moments.h"
#include "distributed/compose/pairwise_merge.h"
#include "distributed/compose/risk_merges.h"
#include "distributed/row_exchange.h"
#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc::distributed {
namespace {

std::vector<std::byte> serialize(const distance::PointSet& points) {
  ByteWriter out;
  out.put(static_cast<std::uint64_t>(points.size()));
  out.put(static_cast<std::uint64_t>(points.dimension()));
  out.put_span(std::span<const std::int64_t>(points.ids));
  out.put_span(std::span<const double>(points.coordinates.data(), static_cast<std::size_t>(points.coordinates.size())));
  return std::move(out.bytes());
}

distance::PointSet deserialize(std::span<const std::byte> bytes) {
  ByteReader in(bytes);
  const auto n = in.get<std::uint64_t>();
  const auto p = in.get<std::uint64_t>();
  std::vector<std::int64_t> ids(n);
  in.get_span(std::span<std::int64_t>(ids));
  distance::CoordinateMatrix coordinates(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(p));
  in.get_span(std::span<double>(coordinates.data(), static_cast<std::size_t>(coordinates.size())));
  // The norms are recomputed serially from the same coordinates: the same bits as the sender's.
  return distance::make_point_set(std::move(coordinates), std::move(ids));
}

std::vector<std::byte> serialize(const linkage::IntervalSdPartial& partial) {
  ByteWriter out;
  out.put(static_cast<std::uint64_t>(partial.counts.size()));
  out.put_span(std::span<const std::int64_t>(partial.counts));
  for (const ExactSum& sum : partial.sums) put_exact_sum(out, sum);
  for (const ExactSum& sum : partial.squares) put_exact_sum(out, sum);
  return std::move(out.bytes());
}

linkage::IntervalSdPartial deserialize_sd(std::span<const std::byte> bytes) {
  ByteReader in(bytes);
  linkage::IntervalSdPartial partial;
  const auto p = in.get<std::uint64_t>();
  partial.counts.resize(p);
  in.get_span(std::span<std::int64_t>(partial.counts));
  partial.sums.resize(p);
  partial.squares.resize(p);
  for (ExactSum& sum : partial.sums) sum = get_exact_sum(in);
  for (ExactSum& sum : partial.squares) sum = get_exact_sum(in);
  return partial;
}

/// A table of the columns of `x` (names kept) for a row exchange.
Table table_of(const NumericColumns& x, const std::string& prefix) {
  Table table("", static_cast<std::int64_t>(x.records()), x.row_ids.empty() ? 0 : x.row_ids.front());
  for (std::size_t j = 0; j < x.variables(); ++j) {
    VariableInfo info;
    info.name = prefix + std::to_string(j);
    table.add_column(
        Column::continuous(std::move(info), std::vector<double>(x.columns[j].begin(), x.columns[j].end())));
  }
  return table;
}

Column id_column(const char* name, std::vector<std::int64_t> values) {
  VariableInfo info;
  info.name = name;
  info.type = VariableType::kId;
  return Column::id(std::move(info), std::move(values));
}

/// The points of rows [first, first + count) of `dimension` columns of `moved` from `first_column`.
distance::PointSet block_points(const Table& moved, std::size_t first_column, std::size_t dimension, std::size_t first,
                                std::size_t count, std::span<const std::int64_t> ids) {
  distance::CoordinateMatrix coordinates(static_cast<Eigen::Index>(count), static_cast<Eigen::Index>(dimension));
  for (std::size_t j = 0; j < dimension; ++j) {
    const auto values = moved.columns()[first_column + j].values();
    for (std::size_t i = 0; i < count; ++i)
      coordinates(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = values[first + i];
  }
  return distance::make_point_set(std::move(coordinates), std::vector<std::int64_t>(ids.begin(), ids.end()));
}

/// Linkage over all records: the reference slices travel round the ranks.
std::vector<distance::NearestPartial> ring_nearest(const Communicator& comm, const linkage::PreparedLinkage& prepared) {
  std::vector<distance::NearestPartial> nearest(prepared.queries.size());
  for (auto& partial : nearest) partial.distance = std::numeric_limits<double>::infinity();
  const int ranks = comm.size();
  const std::vector<std::byte> mine = ranks > 1 ? serialize(prepared.references) : std::vector<std::byte>{};
  for (int t = 0; t < ranks; ++t) {
    if (t == 0) {
      distance::nearest_merge(nearest,
                              distance::nearest_partial(prepared.queries, prepared.references, prepared.tiles));
      continue;
    }
    std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(ranks));
    send[static_cast<std::size_t>((comm.rank() + t) % ranks)] = mine;
    const auto received = comm.all_to_all_bytes(send);
    const auto& slice = received[static_cast<std::size_t>((comm.rank() - t + ranks) % ranks)];
    distance::nearest_merge(nearest, distance::nearest_partial(prepared.queries, deserialize(slice), prepared.tiles));
  }
  return nearest;
}

/// Linkage within blocks: the prepared coordinates of each record (query and reference) travel to the
/// rank of the record's block, every block is searched on its own, and each record's answer (its
/// nearest distance and tie set, or rather whether the set holds its counterpart, its size and its
/// smallest id) returns home.
linkage::LinkageResult link_within_blocks(const Communicator& comm, const linkage::PreparedLinkage& prepared,
                                          std::span<const std::int64_t> block_of_record) {
  const std::size_t n = prepared.queries.size();
  const std::size_t p = prepared.queries.dimension();
  const std::span<const std::int64_t> ids = prepared.queries.ids;
  Table coordinates("", static_cast<std::int64_t>(n), ids.empty() ? 0 : ids.front());
  for (const auto* points : {&prepared.queries, &prepared.references}) {
    for (std::size_t j = 0; j < p; ++j) {
      std::vector<double> column(n);
      for (std::size_t i = 0; i < n; ++i)
        column[i] = points->coordinates(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      VariableInfo info;
      info.name = (points == &prepared.queries ? "q" : "r") + std::to_string(j);
      coordinates.add_column(Column::continuous(std::move(info), std::move(column)));
    }
  }
  const StratumAssignment assignment = assign_strata(comm, block_of_record);
  const MovedRows moved = shuffle_by_stratum(comm, coordinates, block_of_record, assignment);
  const std::size_t rows = moved.row_ids.size();
  std::vector<std::int64_t> linked(rows), tie_size(rows), nearest_id(rows);
  std::vector<double> nearest_distance(rows);
  for (std::size_t first = 0; first < rows;) {
    std::size_t end = first;
    while (end < rows && moved.tags[end] == moved.tags[first]) ++end;
    const auto block_ids = std::span<const std::int64_t>(moved.row_ids).subspan(first, end - first);
    const distance::PointSet queries = block_points(moved.table, 0, p, first, end - first, block_ids);
    const distance::PointSet references = block_points(moved.table, p, p, first, end - first, block_ids);
    const auto nearest = distance::nearest_partial(queries, references, prepared.tiles);
    for (std::size_t i = 0; i < nearest.size(); ++i) {
      const auto& ties = nearest[i].ties;
      linked[first + i] = std::binary_search(ties.begin(), ties.end(), block_ids[i]) ? 1 : 0;
      tie_size[first + i] = static_cast<std::int64_t>(ties.size());
      nearest_id[first + i] = ties.empty() ? -1 : ties.front();
      nearest_distance[first + i] = nearest[i].distance;
    }
    first = end;
  }
  Table answers("", static_cast<std::int64_t>(rows));
  answers.add_column(id_column("linked", std::move(linked)));
  answers.add_column(id_column("tie_size", std::move(tie_size)));
  answers.add_column(id_column("nearest_id", std::move(nearest_id)));
  VariableInfo distance_info;
  distance_info.name = "distance";
  answers.add_column(Column::continuous(std::move(distance_info), std::move(nearest_distance)));
  const RowRange home = ids.empty() ? RowRange{0, 0} : RowRange{ids.front(), static_cast<std::int64_t>(n)};
  const Table returned = return_home(comm, answers, moved.row_ids, home);

  linkage::LinkageResult result;
  result.records = static_cast<std::int64_t>(n);
  const auto returned_linked = returned.columns()[0].ids();
  const auto returned_ties = returned.columns()[1].ids();
  const auto returned_nearest = returned.columns()[2].ids();
  const auto returned_distance = returned.columns()[3].values();
  for (std::size_t i = 0; i < n; ++i) {
    result.linked.push_back(returned_linked[i] != 0 ? 1 : 0);
    result.tie_size.push_back(returned_ties[i]);
    result.nearest_id.push_back(returned_nearest[i]);
    result.nearest_distance.push_back(returned_distance[i]);
    if (returned_linked[i] == 0) continue;
    ++result.optimistic;
    if (returned_ties[i] == 1) ++result.strict;
  }
  return result;
}

}  // namespace

linkage::LinkageResult distributed_record_linkage(const Communicator& comm, const NumericColumns& original,
                                                  const NumericColumns& masked, const linkage::LinkageOptions& options,
                                                  std::span<const std::int64_t> block_of_record) {
  linkage::LinkageMomentsPartial local;
  agree_on_error(comm, [&] { local = linkage::linkage_moments_local(original, masked, options); });
  linkage::LinkageMomentsPartial total;
  total.original = merged_moments(comm, local.original);
  total.masked = merged_moments(comm, local.masked);
  total.difference = merged_moments(comm, local.difference);
  linkage::PreparedLinkage prepared;
  agree_on_error(comm, [&] { prepared = linkage::prepare_linkage_with(total, original, masked, options); });

  linkage::LinkageResult result = block_of_record.empty()
                                      ? linkage::linkage_count(prepared.queries.ids, ring_nearest(comm, prepared))
                                      : link_within_blocks(comm, prepared, block_of_record);
  result.regularisation_epsilon = prepared.regularisation_epsilon;
  ExactSum fractional;
  for (std::size_t i = 0; i < result.linked.size(); ++i)
    if (result.linked[i] != 0) fractional.add(1.0 / static_cast<double>(result.tie_size[i]));
  result.fractional = all_reduce_exact_sum(comm, fractional).value();
  result.records = comm.all_reduce_sum(result.records);
  result.strict = comm.all_reduce_sum(result.strict);
  result.optimistic = comm.all_reduce_sum(result.optimistic);
  return result;
}

linkage::IntervalDisclosure distributed_interval_disclosure(const Communicator& comm, const NumericColumns& original,
                                                            const NumericColumns& masked, double k) {
  std::vector<linkage::IntervalSdPartial> parts;
  for (const auto& bytes : comm.all_gather_bytes(serialize(linkage::interval_sd_local(masked))))
    parts.push_back(deserialize_sd(bytes));
  const std::vector<double> sd =
      linkage::interval_sd_finalize(merge_pairwise(std::move(parts), linkage::interval_sd_merge));
  linkage::IntervalDisclosure result;
  agree_on_error(comm, [&] { result = linkage::interval_disclosure_check(original, masked, sd, k); });
  result.records = comm.all_reduce_sum(result.records);
  result.disclosed = comm.all_reduce_sum(result.disclosed);
  return result;
}

linkage::RankIntervalDisclosure distributed_rank_interval_disclosure(const Communicator& comm,
                                                                     const NumericColumns& original,
                                                                     const NumericColumns& masked, double percent) {
  Table both = table_of(original, "o");
  Table masked_table = table_of(masked, "m");
  for (Column& column : masked_table.mutable_columns()) both.add_column(std::move(column));
  const std::vector<int> destination(original.records(), 0);
  const MovedRows gathered = exchange_rows(comm, both, original.row_ids, destination);
  std::array<std::int64_t, 4> counts{};
  agree_on_error(comm, [&] {
    if (!comm.is_coordinator()) return;
    const std::size_t p = original.variables();
    NumericColumns all_original;
    NumericColumns all_masked;
    for (std::size_t j = 0; j < p; ++j) {
      all_original.names.push_back(original.names[j]);
      all_masked.names.push_back(original.names[j]);
      all_original.columns.push_back(gathered.table.columns()[j].values());
      all_masked.columns.push_back(gathered.table.columns()[p + j].values());
    }
    all_original.row_ids = gathered.row_ids;
    all_masked.row_ids = gathered.row_ids;
    const linkage::RankIntervalDisclosure result = linkage::interval_disclosure_rank(all_original, all_masked, percent);
    counts = {result.values_compared, result.values_inside, result.records, result.records_disclosed};
  });
  const auto shared = comm.broadcast_bytes(std::as_bytes(std::span<const std::int64_t>(counts)));
  std::memcpy(counts.data(), shared.data(), sizeof counts);
  return {counts[0], counts[1], counts[2], counts[3]};
}

}  // namespace sdc::distributed
