#include "distributed/compose/rank_swap.h"

#include <tbb/parallel_for.h>

#include <utility>

#include "distributed/collective_error.h"
#include "distributed/row_exchange.h"
#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

/// One variable as the columns of numeric_table, moved, not copied through an initializer list.
std::vector<std::vector<double>> single_column(std::vector<double> values) {
  std::vector<std::vector<double>> columns;
  columns.push_back(std::move(values));
  return columns;
}

void put_summary(ByteWriter& out, std::uint64_t variable, const swapping::RankSwapSummary& summary) {
  out.put(variable);
  out.put(summary.records);
  out.put(summary.missing);
  out.put(summary.top_coded);
  out.put(summary.bottom_coded);
  out.put(summary.swapped_pairs);
  out.put(summary.window_fraction);
  out.put(summary.window_positions);
}

std::pair<std::uint64_t, swapping::RankSwapSummary> get_summary(ByteReader& in) {
  const auto variable = in.get<std::uint64_t>();
  swapping::RankSwapSummary summary;
  summary.records = in.get<std::int64_t>();
  summary.missing = in.get<std::int64_t>();
  summary.top_coded = in.get<std::int64_t>();
  summary.bottom_coded = in.get<std::int64_t>();
  summary.swapped_pairs = in.get<std::int64_t>();
  summary.window_fraction = in.get<double>();
  summary.window_positions = in.get<std::int64_t>();
  return {variable, summary};
}

}  // namespace

RankSwappedPart rank_swap_variables(const Communicator& comm, const NumericColumns& part, const RowRange& home,
                                    const swapping::RankSwapOptions& options, std::uint64_t seed,
                                    std::uint32_t reference_seed) {
  const std::size_t p = part.variables();
  const bool compat = options.mode == swapping::RankSwapMode::kCompat;
  auto owner = [&](std::size_t v) { return compat ? 0 : static_cast<int>(v % static_cast<std::size_t>(comm.size())); };

  std::vector<MovedRows> gathered;
  for (std::size_t v = 0; v < p; ++v) {
    const std::vector<int> destination(part.records(), owner(v));
    const auto rows = static_cast<std::int64_t>(part.records());
    gathered.push_back(exchange_rows(
        comm, numeric_table(single_column({part.columns[v].begin(), part.columns[v].end()}), rows, home.first),
        part.row_ids, destination));
  }

  std::vector<std::size_t> owned;
  for (std::size_t v = 0; v < p; ++v)
    if (owner(v) == comm.rank()) owned.push_back(v);
  std::vector<std::vector<double>> swapped(p);
  std::vector<swapping::RankSwapSummary> summaries(p);
  auto swap = [&](std::size_t v, swapping::RankSwapDraws& draws) {
    swapped[v] = swapping::rank_swap(gathered[v].table.columns().front().values(), gathered[v].row_ids, options, draws,
                                     &summaries[v]);
  };
  agree_on_error(comm, [&] {
    if (compat) {
      swapping::RankSwapDraws draws = swapping::RankSwapDraws::compat(reference_seed);
      for (const std::size_t v : owned) swap(v, draws);
    } else {
      tbb::parallel_for(std::size_t{0}, owned.size(), [&](std::size_t i) {
        swapping::RankSwapDraws draws = swapping::RankSwapDraws::native(seed, owned[i]);
        swap(owned[i], draws);
      });
    }
  });

  RankSwappedPart result;
  for (std::size_t v = 0; v < p; ++v) {
    const Table returned = return_home(
        comm,
        numeric_table(single_column(std::move(swapped[v])), static_cast<std::int64_t>(gathered[v].row_ids.size()), 0),
        gathered[v].row_ids, home);
    const auto values = returned.columns().front().values();
    result.masked.emplace_back(values.begin(), values.end());
  }
  ByteWriter out;
  for (const std::size_t v : owned) put_summary(out, v, summaries[v]);
  result.summaries.resize(p);
  for (const auto& bytes : comm.all_gather_bytes(out.bytes())) {
    ByteReader in(bytes);
    while (!in.done()) {
      const auto [variable, summary] = get_summary(in);
      SDC_CHECK(variable < p, "a rank-swap summary names a variable of the step");
      result.summaries[variable] = summary;
    }
  }
  return result;
}

}  // namespace sdc::distributed
