#include "distributed/compose/rank_swap.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
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

/// Chains `step` through the ranks in rank order: rank 0 steps from `state`, each later rank from what the
/// rank before it gave; every rank returns the last state. P rounds of a small all-gather: for sums
/// that must be added in one sequence (the bits of a single pass) and for the scan's taken positions.
template <typename State, typename Step>
State chain_in_rank_order(const Communicator& comm, State state, Step step) {
  static_assert(std::is_trivially_copyable_v<State>);
  for (int r = 0; r < comm.size(); ++r) {
    ByteWriter out;
    if (r == comm.rank()) out.put(step(state));
    const auto gathered = comm.all_gather_bytes(out.bytes());
    ByteReader in(gathered[static_cast<std::size_t>(r)]);
    state = in.get<State>();
  }
  return state;
}

/// swapping::sorted_before as a function object, so that the sorts inline it.
constexpr auto kSortedBefore = [](const swapping::SortedValue& a, const swapping::SortedValue& b) {
  return swapping::sorted_before(a, b);
};

/// The sorted order of one variable's non-missing values split over the ranks: rank r holds the r-th
/// contiguous segment, from global position `first` (a sample sort: local sort, splitters from an
/// all-gathered regular sample, one all-to-all, a merge).
struct SortedSegment {
  std::vector<swapping::SortedValue> values;
  std::int64_t first = 0;
  std::int64_t total = 0;
};

SortedSegment sample_sort(const Communicator& comm, std::vector<swapping::SortedValue> local) {
  // The order is total (row ids break ties), so a parallel sort gives the one result.
  tbb::parallel_sort(local.begin(), local.end(), kSortedBefore);
  const auto ranks = static_cast<std::size_t>(comm.size());
  // A regular sample of 32 entries a rank: each segment then holds at most about twice its share.
  constexpr std::size_t kSamples = 32;
  ByteWriter sample;
  for (std::size_t k = 0; k < kSamples && !local.empty(); ++k) sample.put(local[k * local.size() / kSamples]);
  std::vector<swapping::SortedValue> samples;
  for (const auto& bytes : comm.all_gather_bytes(sample.bytes())) {
    ByteReader in(bytes);
    while (!in.done()) samples.push_back(in.get<swapping::SortedValue>());
  }
  std::sort(samples.begin(), samples.end(), kSortedBefore);
  std::vector<swapping::SortedValue> splitters;
  for (std::size_t r = 1; r < ranks && !samples.empty(); ++r) splitters.push_back(samples[r * samples.size() / ranks]);
  std::vector<std::vector<std::byte>> sends(ranks);
  std::size_t begin = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    // Rank r takes the entries before splitter r (the last rank the rest): the order is total, so the
    // segments do not depend on which rank held an entry.
    const std::size_t end =
        r < splitters.size()
            ? static_cast<std::size_t>(std::lower_bound(local.begin() + static_cast<std::ptrdiff_t>(begin), local.end(),
                                                        splitters[r], kSortedBefore) -
                                       local.begin())
            : local.size();
    ByteWriter out;
    out.reserve((end - begin) * sizeof(swapping::SortedValue));
    for (std::size_t k = begin; k < end; ++k) out.put(local[k]);
    sends[r] = std::move(out.bytes());
    begin = end;
  }
  SortedSegment segment;
  for (const auto& bytes : comm.all_to_all_bytes(sends)) {
    const std::size_t count = bytes.size() / sizeof(swapping::SortedValue);
    const std::size_t old = segment.values.size();
    segment.values.resize(old + count);
    ByteReader in(bytes);
    in.get_span(std::span<swapping::SortedValue>(segment.values).subspan(old, count));
  }
  tbb::parallel_sort(segment.values.begin(), segment.values.end(), kSortedBefore);
  const auto sizes = comm.all_gather(static_cast<std::int64_t>(segment.values.size()));
  for (int r = 0; r < comm.size(); ++r) {
    if (r < comm.rank()) segment.first += sizes[static_cast<std::size_t>(r)];
    segment.total += sizes[static_cast<std::size_t>(r)];
  }
  return segment;
}

/// Native rank swapping of one variable over all ranks: the sorted order in segments (sample sort), the
/// coding sums and the scan chained through the segments in order, partners' values exchanged, every
/// value back to its record's rank. The same bits as swapping::rank_swap on the whole variable.
std::vector<double> swap_in_segments(const Communicator& comm, std::span<const double> values,
                                     std::span<const std::int64_t> row_ids, const RowRange& home,
                                     const swapping::RankSwapOptions& options, std::uint64_t seed,
                                     std::uint64_t variable, swapping::RankSwapSummary& summary) {
  swapping::check_rank_swap_options(options);
  std::vector<swapping::SortedValue> local;
  std::optional<RowProblem> infinite;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    if (std::isinf(values[i]) && !infinite)
      infinite = RowProblem{row_ids[i], "rank swapping: the value of row id " + std::to_string(row_ids[i]) +
                                            " is infinite; only finite values and missing values (NaN) can be "
                                            "swapped"};
    local.push_back({values[i], row_ids[i]});
  }
  throw_first_row_problem(comm, infinite);
  const SortedSegment segment = sample_sort(comm, std::move(local));
  const std::int64_t n = segment.total;
  const std::int64_t top = swapping::rank_swap_coded_count(n, options.top_percent);
  const std::int64_t bottom = swapping::rank_swap_coded_count(n, options.bottom_percent);
  const std::int64_t bottom_start = n - bottom;
  const std::int64_t free_count = std::max<std::int64_t>(0, bottom_start - top);
  const auto at = [&](std::int64_t position) {
    return segment.values[static_cast<std::size_t>(position - segment.first)].value;
  };
  const std::int64_t end = segment.first + static_cast<std::int64_t>(segment.values.size());
  const auto mine = [&](std::int64_t position) { return position >= segment.first && position < end; };

  // The top sum, then (with the top mean known) the bottom and free sums, each in sorted order.
  struct TopPass {
    double sum = 0.0;
    double top_value = 0.0;
  };
  const TopPass top_pass = chain_in_rank_order(comm, TopPass{}, [&](TopPass state) {
    for (std::int64_t j = segment.first; j < std::min(end, top); ++j) state.sum += at(j);
    if (n > 0 && mine(top > 0 ? top - 1 : 0)) state.top_value = at(top > 0 ? top - 1 : 0);
    return state;
  });
  const double top_mean = top > 0 ? top_pass.sum / static_cast<double>(top) : 0.0;
  const auto coded = [&](std::int64_t j) { return j < top ? top_mean : at(j); };
  struct RestPass {
    swapping::RankSwapSums sums;
    double bottom_value = 0.0;
  };
  const RestPass rest = chain_in_rank_order(comm, RestPass{}, [&](RestPass state) {
    for (std::int64_t j = std::max(segment.first, bottom_start); j < end; ++j) state.sums.bottom += coded(j);
    for (std::int64_t j = std::max(segment.first, top); j < std::min(end, bottom_start); ++j) {
      state.sums.free += at(j);
      const double square = at(j) * at(j);  // its own statement: never fused into a multiply-add
      state.sums.free_squares += square;
    }
    if (n > 0 && mine(bottom > 0 ? bottom_start : n - 1)) state.bottom_value = coded(bottom > 0 ? bottom_start : n - 1);
    return state;
  });
  const double bottom_mean = rest.sums.bottom != 0.0 ? rest.sums.bottom / static_cast<double>(bottom) : 0.0;
  const float p =
      swapping::rank_swap_window_fraction(options, rest.sums, free_count, top_pass.top_value, rest.bottom_value);

  // The coded values of this segment; the scan over its free positions, chained in rank order.
  std::vector<double> masked(segment.values.size());
  for (std::int64_t j = segment.first; j < end; ++j)
    masked[static_cast<std::size_t>(j - segment.first)] = j >= bottom_start ? bottom_mean : coded(j);
  const std::int64_t free_first = std::clamp(segment.first - top, std::int64_t{0}, free_count);
  const std::int64_t free_end = std::clamp(end - top, std::int64_t{0}, free_count);
  std::vector<std::int64_t> scan_rows;
  for (std::int64_t f = free_first; f < free_end; ++f)
    scan_rows.push_back(segment.values[static_cast<std::size_t>(top + f - segment.first)].row_id);
  swapping::RankSwapDraws draws = swapping::RankSwapDraws::native(seed, variable);
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  std::vector<std::int64_t> taken;
  for (int r = 0; r < comm.size(); ++r) {
    std::vector<std::vector<std::byte>> sends(static_cast<std::size_t>(comm.size()));
    if (r == comm.rank()) {
      swapping::SegmentScan scanned =
          swapping::rank_swap_scan_segment(free_first, scan_rows, free_count, p, taken, draws);
      pairs = std::move(scanned.pairs);
      if (r + 1 < comm.size()) {
        ByteWriter out;
        out.put_vector(scanned.taken_after);
        sends[static_cast<std::size_t>(r + 1)] = std::move(out.bytes());
      }
    }
    const auto received = comm.all_to_all_bytes(sends);
    if (r + 1 == comm.rank()) {
      ByteReader in(received[static_cast<std::size_t>(r)]);
      taken = in.get_vector<std::int64_t>();
    }
  }
  summary.swapped_pairs = comm.all_reduce_sum(static_cast<std::int64_t>(pairs.size()));

  // Partners' values: a pair's first position is here; its partner may lie on a later rank.
  const auto free_firsts = comm.all_gather(free_first);
  const auto owner_of_free = [&](std::int64_t f) {
    // The last rank whose segment starts at or before f (empty segments start where the next does).
    const auto it = std::upper_bound(free_firsts.begin(), free_firsts.end(), f);
    return static_cast<std::size_t>(it - free_firsts.begin()) - 1;
  };
  const auto masked_at = [&](std::int64_t f) -> double& {
    return masked[static_cast<std::size_t>(top + f - segment.first)];
  };
  std::vector<double> original_free(static_cast<std::size_t>(free_end - free_first));
  for (std::int64_t f = free_first; f < free_end; ++f)
    original_free[static_cast<std::size_t>(f - free_first)] = masked_at(f);
  std::vector<ByteWriter> asks(static_cast<std::size_t>(comm.size()));
  for (const auto& [a, b] : pairs) {
    ByteWriter& out = asks[owner_of_free(b)];
    out.put(b);
    out.put(a);
    out.put(original_free[static_cast<std::size_t>(a - free_first)]);
  }
  std::vector<std::vector<std::byte>> ask_bytes;
  for (auto& writer : asks) ask_bytes.push_back(std::move(writer.bytes()));
  const auto asked = comm.all_to_all_bytes(ask_bytes);
  std::vector<std::vector<std::byte>> replies(static_cast<std::size_t>(comm.size()));
  for (std::size_t r = 0; r < asked.size(); ++r) {
    ByteReader in(asked[r]);
    ByteWriter reply;
    while (!in.done()) {
      const auto b = in.get<std::int64_t>();
      const auto a = in.get<std::int64_t>();
      const auto value_a = in.get<double>();
      reply.put(a);
      reply.put(original_free[static_cast<std::size_t>(b - free_first)]);
      masked_at(b) = value_a;
    }
    replies[r] = std::move(reply.bytes());
  }
  for (const auto& bytes : comm.all_to_all_bytes(replies)) {
    ByteReader in(bytes);
    while (!in.done()) {
      const auto a = in.get<std::int64_t>();
      masked_at(a) = in.get<double>();
    }
  }

  // Every value back to its record's rank; missing values never left.
  const auto homes = comm.all_gather(home);
  const auto home_of = [&](std::int64_t row) {
    const auto it = std::upper_bound(homes.begin(), homes.end(), row,
                                     [](std::int64_t r, const RowRange& range) { return r < range.first; });
    return static_cast<std::size_t>(it - homes.begin()) - 1;
  };
  std::vector<ByteWriter> back(static_cast<std::size_t>(comm.size()));
  for (std::size_t k = 0; k < segment.values.size(); ++k) {
    ByteWriter& out = back[home_of(segment.values[k].row_id)];
    out.put(segment.values[k].row_id);
    out.put(masked[k]);
  }
  std::vector<std::vector<std::byte>> back_bytes;
  for (auto& writer : back) back_bytes.push_back(std::move(writer.bytes()));
  std::vector<double> out(values.begin(), values.end());
  for (const auto& bytes : comm.all_to_all_bytes(back_bytes)) {
    ByteReader in(bytes);
    while (!in.done()) {
      const auto row = in.get<std::int64_t>();
      out[static_cast<std::size_t>(row - home.first)] = in.get<double>();
    }
  }
  summary.records = comm.all_reduce_sum(static_cast<std::int64_t>(values.size()));
  summary.missing = summary.records - n;
  summary.top_coded = top;
  summary.bottom_coded = bottom;
  summary.window_fraction = swapping::rank_swap_reported_fraction(p);
  summary.window_positions = swapping::rank_swap_window_end(0, free_count, p);
  return out;
}

}  // namespace

RankSwappedPart rank_swap_variables(const Communicator& comm, const NumericColumns& part, const RowRange& home,
                                    const swapping::RankSwapOptions& options, std::uint64_t seed,
                                    std::uint32_t reference_seed) {
  const std::size_t p = part.variables();
  const bool compat = options.mode == swapping::RankSwapMode::kCompat;
  if (!compat) {
    RankSwappedPart result;
    result.summaries.resize(p);
    if (comm.size() == 1) {
      // One rank holds every variable whole: the kernel itself, the variables on the rank's threads.
      result.masked.resize(p);
      tbb::parallel_for(std::size_t{0}, p, [&](std::size_t v) {
        swapping::RankSwapDraws draws = swapping::RankSwapDraws::native(seed, v);
        result.masked[v] = swapping::rank_swap(part.columns[v], part.row_ids, options, draws, &result.summaries[v]);
      });
      return result;
    }
    for (std::size_t v = 0; v < p; ++v)
      result.masked.push_back(
          swap_in_segments(comm, part.columns[v], part.row_ids, home, options, seed, v, result.summaries[v]));
    return result;
  }
  // Compat: every variable on the coordinator, in order, from the reference's one taus88 stream.
  auto owner = [](std::size_t) { return 0; };

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
