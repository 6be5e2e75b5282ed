#include "kernels/tables/block_angular.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/parallel_sort.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <utility>

#include "kernels/core/error.h"
#include "kernels/core/huge_pages.h"
#include "kernels/core/max_flow.h"
#include "kernels/core/record_rng.h"

namespace sdc::tables {
namespace {

constexpr std::int32_t kNone = -1;

std::size_t to_size(std::int64_t value) { return static_cast<std::size_t>(value); }

// ---- the hypergraph ----------------------------------------------------------------------------
//
// Vertices are the partitioned index (rows in the dual form), nets the other one. Ids are 32-bit
// (checked on entry), offsets 64-bit. A net always has at least two pins: a net inside one vertex
// can never be cut, so it is dropped; identical nets are merged into one whose weight counts them,
// so a weighted net-cut is the number of original nets cut.

struct Hypergraph {
  std::vector<std::int64_t> vertex_weight;  // original vertices merged into each
  std::vector<std::int64_t> vertex_offsets{0};
  std::vector<std::int32_t> vertex_nets;  // increasing within a vertex
  std::vector<std::int64_t> net_offsets{0};
  std::vector<std::int32_t> net_pins;    // increasing within a net
  std::vector<std::int32_t> net_weight;  // original nets merged into each

  std::int32_t vertices() const { return static_cast<std::int32_t>(vertex_weight.size()); }
  std::int32_t nets() const { return static_cast<std::int32_t>(net_weight.size()); }
  std::span<const std::int32_t> nets_of(std::int32_t v) const {
    const std::size_t first = to_size(vertex_offsets[static_cast<std::size_t>(v)]);
    const std::size_t last = to_size(vertex_offsets[static_cast<std::size_t>(v) + 1]);
    return std::span<const std::int32_t>(vertex_nets).subspan(first, last - first);
  }
  std::span<const std::int32_t> pins_of(std::int32_t j) const {
    const std::size_t first = to_size(net_offsets[static_cast<std::size_t>(j)]);
    const std::size_t last = to_size(net_offsets[static_cast<std::size_t>(j) + 1]);
    return std::span<const std::int32_t>(net_pins).subspan(first, last - first);
  }
  std::int64_t total_vertex_weight() const {
    return std::accumulate(vertex_weight.begin(), vertex_weight.end(), std::int64_t{0});
  }
  std::int64_t total_net_weight() const {
    return std::accumulate(net_weight.begin(), net_weight.end(), std::int64_t{0});
  }
};

/// Fills the vertex → nets direction from the nets by a counting sort in net order, so that each
/// vertex lists its nets in increasing order. The nets are cut into kTransposeChunks consecutive
/// chunks counted and written in parallel; chunk c writes after chunks 0 .. c − 1 in every vertex's
/// list, so the result is that of the sequential sort.
constexpr std::size_t kTransposeChunks = 8;

void transpose_nets(Hypergraph& h) {
  const std::size_t n = h.vertex_weight.size();
  const auto nets = static_cast<std::size_t>(h.nets());
  std::array<std::vector<std::int64_t>, kTransposeChunks> cursor;
  const auto chunk_begin = [&](std::size_t c) { return static_cast<std::int32_t>(nets * c / kTransposeChunks); };
  tbb::parallel_for(std::size_t{0}, kTransposeChunks, [&](std::size_t c) {
    cursor[c] = huge_vector<std::int64_t>(n, 0);
    for (std::int32_t j = chunk_begin(c); j < chunk_begin(c + 1); ++j)
      for (const std::int32_t pin : h.pins_of(j)) ++cursor[c][static_cast<std::size_t>(pin)];
  });
  h.vertex_offsets = huge_vector<std::int64_t>(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) {
    std::int64_t offset = h.vertex_offsets[v];
    for (auto& counts : cursor) {
      const std::int64_t count = counts[v];
      counts[v] = offset;
      offset += count;
    }
    h.vertex_offsets[v + 1] = offset;
  }
  reserve_huge(h.vertex_nets, h.net_pins.size());
  h.vertex_nets.resize(h.net_pins.size());
  tbb::parallel_for(std::size_t{0}, kTransposeChunks, [&](std::size_t c) {
    for (std::int32_t j = chunk_begin(c); j < chunk_begin(c + 1); ++j)
      for (const std::int32_t pin : h.pins_of(j))
        h.vertex_nets[to_size(cursor[c][static_cast<std::size_t>(pin)]++)] = j;
  });
}

/// splitmix64's output for state x.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

/// The hypergraph of nets given as pin lists (`offsets`, `pins`: pins may repeat within a net, as
/// when two of its vertices were contracted into one) with `weights` (empty: 1 each): every net's pins
/// sorted and made unique, nets with fewer than two pins dropped, identical nets merged into the one
/// of smallest index (its weight the sum), then transposed. Identical nets are found by a counting
/// sort on the top bits of a hash of the pins (stable, so each bucket lists its nets in index order)
/// and exact comparison within a bucket. Every step writes per net, per bucket or per vertex, so the
/// result does not depend on the thread count.
Hypergraph build_hypergraph(std::vector<std::int64_t> vertex_weight, std::span<const std::int64_t> offsets,
                            std::vector<std::int32_t> pins, std::span<const std::int32_t> weights) {
  const std::size_t nets = offsets.size() - 1;
  std::vector<std::int32_t> distinct = huge_vector<std::int32_t>(nets, 0);
  std::vector<std::uint64_t> hash = huge_vector<std::uint64_t>(nets, 0);
  std::vector<std::int64_t> merged_weight = huge_vector<std::int64_t>(nets, 0);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, nets), [&](const tbb::blocked_range<std::size_t>& range) {
    for (std::size_t j = range.begin(); j != range.end(); ++j) {
      const auto first = pins.begin() + offsets[j];
      const auto last = pins.begin() + offsets[j + 1];
      std::sort(first, last);
      const auto count = std::unique(first, last) - first;
      if (count < 2) continue;
      distinct[j] = static_cast<std::int32_t>(count);
      merged_weight[j] = weights.empty() ? 1 : weights[j];
      std::uint64_t h = mix(static_cast<std::uint64_t>(count));
      for (auto pin = first; pin != first + count; ++pin) h = mix(h ^ static_cast<std::uint64_t>(*pin));
      hash[j] = h;
    }
  });
  // About eight nets per bucket; a bucket's nets are compared only when their hashes are equal.
  const auto bits = static_cast<unsigned>(std::max(1, static_cast<int>(std::bit_width(nets)) - 3));
  const auto bucket_of = [&](std::size_t j) { return static_cast<std::size_t>(hash[j] >> (64U - bits)); };
  std::vector<std::int32_t> bucket_start((std::size_t{1} << bits) + 1, 0);
  for (std::size_t j = 0; j < nets; ++j)
    if (distinct[j] > 0) ++bucket_start[bucket_of(j) + 1];
  std::partial_sum(bucket_start.begin(), bucket_start.end(), bucket_start.begin());
  // Each bucket lists its nets with their hashes, so that comparing them reads the bucket alone.
  std::vector<std::pair<std::uint64_t, std::int32_t>> bucketed =
      huge_vector<std::pair<std::uint64_t, std::int32_t>>(static_cast<std::size_t>(bucket_start.back()));
  {
    std::vector<std::int32_t> cursor(bucket_start.begin(), bucket_start.end() - 1);
    for (std::size_t j = 0; j < nets; ++j)
      if (distinct[j] > 0)
        bucketed[static_cast<std::size_t>(cursor[bucket_of(j)]++)] = {hash[j], static_cast<std::int32_t>(j)};
  }
  const auto same_pins = [&](std::size_t a, std::size_t b) {
    return distinct[a] == distinct[b] &&
           std::equal(pins.begin() + offsets[a], pins.begin() + offsets[a] + distinct[a], pins.begin() + offsets[b]);
  };
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, bucket_start.size() - 1),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t bucket = range.begin(); bucket != range.end(); ++bucket) {
                        const auto first = static_cast<std::size_t>(bucket_start[bucket]);
                        const auto last = static_cast<std::size_t>(bucket_start[bucket + 1]);
                        for (std::size_t a = first; a + 1 < last; ++a) {
                          const auto [kept_hash, kept_net] = bucketed[a];
                          const auto kept = static_cast<std::size_t>(kept_net);
                          for (std::size_t b = a + 1; b < last; ++b) {
                            if (bucketed[b].first != kept_hash) continue;
                            const auto other = static_cast<std::size_t>(bucketed[b].second);
                            if (distinct[kept] == 0 || distinct[other] == 0 || !same_pins(kept, other)) continue;
                            merged_weight[kept] += merged_weight[other];
                            distinct[other] = 0;
                          }
                        }
                      }
                    });
  Hypergraph h;
  h.vertex_weight = std::move(vertex_weight);
  std::vector<std::int32_t> kept;
  reserve_huge(kept, bucketed.size());
  for (std::size_t j = 0; j < nets; ++j)
    if (distinct[j] > 0) kept.push_back(static_cast<std::int32_t>(j));
  h.net_offsets = huge_vector<std::int64_t>(kept.size() + 1, 0);
  h.net_weight = huge_vector<std::int32_t>(kept.size());
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const auto j = static_cast<std::size_t>(kept[k]);
    h.net_offsets[k + 1] = h.net_offsets[k] + distinct[j];
    SDC_CHECK(merged_weight[j] <= std::numeric_limits<std::int32_t>::max(), "net weight overflow");
    h.net_weight[k] = static_cast<std::int32_t>(merged_weight[j]);
  }
  h.net_pins = huge_vector<std::int32_t>(to_size(h.net_offsets.back()));
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, kept.size()), [&](const tbb::blocked_range<std::size_t>& range) {
    for (std::size_t k = range.begin(); k != range.end(); ++k) {
      const auto j = static_cast<std::size_t>(kept[k]);
      std::copy_n(pins.begin() + offsets[j], distinct[j], h.net_pins.begin() + h.net_offsets[k]);
    }
  });
  pins = {};
  transpose_nets(h);
  return h;
}

/// The finest hypergraph of `matrix` in `form`: every vertex of weight 1.
Hypergraph finest_hypergraph(const CsrView& matrix, BlockAngularForm form) {
  if (form == BlockAngularForm::kPrimal) {
    std::vector<std::int32_t> pins = huge_vector<std::int32_t>(matrix.column_indices.size());
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, pins.size()), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t e = r.begin(); e != r.end(); ++e) pins[e] = static_cast<std::int32_t>(matrix.column_indices[e]);
    });
    return build_hypergraph(huge_vector<std::int64_t>(to_size(matrix.columns), 1), matrix.row_offsets, std::move(pins),
                            {});
  }
  std::vector<std::int64_t> offsets = huge_vector<std::int64_t>(to_size(matrix.columns) + 1, 0);
  for (const std::int64_t column : matrix.column_indices) ++offsets[to_size(column) + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<std::int32_t> pins = huge_vector<std::int32_t>(matrix.column_indices.size());
  std::vector<std::int64_t> cursor(offsets.begin(), offsets.end() - 1);
  for (std::int64_t row = 0; row < matrix.rows; ++row)
    for (const std::int64_t column : matrix.row_columns(row))
      pins[to_size(cursor[to_size(column)]++)] = static_cast<std::int32_t>(row);
  return build_hypergraph(huge_vector<std::int64_t>(to_size(matrix.rows), 1), offsets, std::move(pins), {});
}

// ---- coarsening: heavy-edge matching -------------------------------------------------------------

/// The seeded random draws of one bisection (docs/rng.md, kBlockAngularReordering).
struct Draws {
  const RecordRng* rng = nullptr;
  std::uint64_t bisection = 1;

  /// The vertices 0 .. n − 1 in the order of (word 0 at counter (vertex, draw, bisection, 0), vertex).
  std::vector<std::int32_t> order(std::int32_t n, std::uint64_t draw) const {
    std::vector<std::pair<std::uint64_t, std::int32_t>> keys =
        huge_vector<std::pair<std::uint64_t, std::int32_t>>(static_cast<std::size_t>(n));
    tbb::parallel_for(tbb::blocked_range<std::int32_t>(0, n), [&](const tbb::blocked_range<std::int32_t>& range) {
      for (std::int32_t v = range.begin(); v != range.end(); ++v)
        keys[static_cast<std::size_t>(v)] = {rng->bits({static_cast<std::uint64_t>(v), draw, bisection, 0})[0], v};
    });
    tbb::parallel_sort(keys.begin(), keys.end());
    std::vector<std::int32_t> vertices = huge_vector<std::int32_t>(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) vertices[i] = keys[i].second;
    return vertices;
  }

  /// The salt s of the matching's tie keys at level `level`: word 0 at counter (0, level, bisection, 1).
  /// Neighbour u of vertex v has the tie key splitmix64(s + v·2^32 + u), computed where it is compared.
  std::uint64_t tie_salt(std::uint64_t level) const { return rng->bits({0, level, bisection, 1})[0]; }
};

/// Cycle c of a bisection draws with the bisection's number + c·2^40 (bisection numbers stay below
/// 2^33: there are fewer than 2^31 blocks).
constexpr unsigned kCycleShift = 40;

/// Ratings are fixed point: a net of weight w adds w·2^20 (or w·2^20 / (pins − 1), rounded down, when
/// scaled), exact in integers whatever the order of the sums.
constexpr unsigned kRatingScaleBits = 20;

/// Cycles of a primal bisection by default. With one, the linking rows on bts4-sized random hierarchies
/// swung between 1.0 and 1.5 times Zoltan PHG's from seed to seed; the best of four stayed within 1.2
/// (bench/RESULTS.md). Dual bisections of the same instances varied far less.
constexpr std::int32_t kPrimalCycles = 4;

/// How many of its heaviest neighbours a vertex keeps from the parallel rating.
constexpr std::size_t kCandidates = 8;

/// Pins whose slots are fetched ahead of their addition, per batch (see heaviest_neighbours).
constexpr std::size_t kPinBatch = 64;

/// A sparse accumulator of edge weights: one slot per vertex, reset through the list of slots touched.
/// Neighbours rank by edge weight (the nets shared, by weight), then by the smaller tie key, then by
/// the smaller index.
struct EdgeWeights {
  std::vector<std::int64_t> weight;
  std::vector<std::int32_t> touched;
  bool scaled = false;                                         ///< a net counts 1 / (pins − 1) of its weight
  std::vector<std::pair<std::int32_t, std::int64_t>> pending;  ///< pins and their nets' weights, in net order

  /// Up to `count` neighbours of `v` that are `allowed`, best first, into `best`; returns how many.
  template <typename Allowed>
  std::size_t heaviest_neighbours(const Hypergraph& h, std::int32_t v, std::uint64_t salt, Allowed allowed,
                                  std::int32_t* best, std::size_t count) {
    if (weight.size() != static_cast<std::size_t>(h.vertices()))
      weight = huge_vector<std::int64_t>(static_cast<std::size_t>(h.vertices()), 0);
    // Nets, their pins and the pins' slots are scattered, and most of the time goes to waiting for
    // them: a net's offsets are fetched sixteen nets ahead of use, its pins and weight eight ahead, and
    // each pin's slot one to two batches of pins ahead, so that many fetches are in flight at once.
    const auto nets = h.nets_of(v);
    std::size_t added = 0;
    const auto add = [&](std::size_t last) {
      for (; added < last; ++added) {
        const auto [u, w] = pending[added];
        std::int64_t& slot = weight[static_cast<std::size_t>(u)];
        if (slot == 0) touched.push_back(u);
        slot += w;
      }
    };
    pending.clear();
    for (std::size_t i = 0; i < nets.size(); ++i) {
      if (i + 16 < nets.size()) __builtin_prefetch(&h.net_offsets[static_cast<std::size_t>(nets[i + 16])]);
      if (i + 8 < nets.size()) {
        __builtin_prefetch(h.pins_of(nets[i + 8]).data());
        __builtin_prefetch(&h.net_weight[static_cast<std::size_t>(nets[i + 8])]);
      }
      const auto net_pins = h.pins_of(nets[i]);
      std::int64_t w = std::int64_t{h.net_weight[static_cast<std::size_t>(nets[i])]} << kRatingScaleBits;
      if (scaled) w /= static_cast<std::int64_t>(net_pins.size() - 1);
      for (const std::int32_t u : net_pins) {
        __builtin_prefetch(&weight[static_cast<std::size_t>(u)], 1);
        pending.emplace_back(u, w);
      }
      if (pending.size() >= added + 2 * kPinBatch) add(added + kPinBatch);
    }
    add(pending.size());
    std::array<std::int64_t, kCandidates> best_weight{};
    std::array<std::uint64_t, kCandidates> best_tie{};
    std::size_t found = 0;
    for (const std::int32_t u : touched) {
      const std::int64_t w = weight[static_cast<std::size_t>(u)];
      weight[static_cast<std::size_t>(u)] = 0;
      if (u == v) continue;
      // Most neighbours lose on weight alone: their tie key is only computed when a weight ties.
      if (found == count && w < best_weight[count - 1]) continue;
      const std::uint64_t tie = mix(salt + ((static_cast<std::uint64_t>(v) << 32U) | static_cast<std::uint32_t>(u)));
      const auto before = [&](std::size_t i) {
        if (w != best_weight[i]) return w > best_weight[i];
        return tie != best_tie[i] ? tie < best_tie[i] : u < best[i];
      };
      if ((found == count && !before(count - 1)) || !allowed(u)) continue;
      std::size_t i = found < count ? found++ : count - 1;
      for (; i > 0 && before(i - 1); --i) {
        best[i] = best[i - 1];
        best_weight[i] = best_weight[i - 1];
        best_tie[i] = best_tie[i - 1];
      }
      best[i] = u;
      best_weight[i] = w;
      best_tie[i] = tie;
    }
    touched.clear();
    return found;
  }
};

/// Heavy-edge matching (tabular.md §2, step 1): the vertices visited in seeded random order, each
/// unmatched one matched with the unmatched vertex of largest edge weight (none: it stays single), as
/// long as the pair weighs at most `max_weight` (so that the coarsest level can still be balanced).
/// Ties go by a seeded key of the pair (vertex, neighbour) rather than to the smallest index: at the
/// finest level of a table's matrix almost every edge weight is 1, and the smallest index (or any one
/// ranking of the vertices) sends the vertices of a level to the same few rows, which on generated
/// tables left up to a fifth more linking columns and made the result swing widely between seeds.
///
/// The visit order is cut into chunks of kMatchingChunk vertices. For a chunk, every vertex still
/// unmatched keeps its kCandidates best neighbours among the vertices unmatched at the chunk's start
/// (rated in parallel); then the chunk is visited in order, and the first kept candidate still
/// unmatched is the vertex's best unmatched neighbour, exactly. Only a vertex whose kept candidates
/// are all matched, and which has more neighbours, is rated again. Returns each vertex's partner, or
/// itself.
constexpr std::size_t kMatchingChunk = 4096;

std::vector<std::int32_t> heavy_edge_matching(const Hypergraph& h, std::int64_t max_weight, const Draws& draws,
                                              std::uint64_t level, bool scaled) {
  const std::int32_t n = h.vertices();
  const std::uint64_t salt = draws.tie_salt(level);
  const std::vector<std::int32_t> order = draws.order(n, level);
  std::vector<std::int32_t> mate = huge_vector<std::int32_t>(static_cast<std::size_t>(n), kNone);
  const auto unmatched = [&](std::int32_t u) { return mate[static_cast<std::size_t>(u)] == kNone; };
  const auto fits = [&](std::int32_t v, std::int32_t u) {
    return h.vertex_weight[static_cast<std::size_t>(v)] + h.vertex_weight[static_cast<std::size_t>(u)] <= max_weight;
  };
  std::vector<std::int32_t> candidates(kMatchingChunk * kCandidates, kNone);
  std::array<std::uint8_t, kMatchingChunk> candidate_count{};
  tbb::enumerable_thread_specific<EdgeWeights> accumulators(EdgeWeights{{}, {}, scaled, {}});
  EdgeWeights accumulator{{}, {}, scaled, {}};
  for (std::size_t chunk = 0; chunk < order.size(); chunk += kMatchingChunk) {
    const std::size_t size = std::min(kMatchingChunk, order.size() - chunk);
    // Ratings against the matching as the chunk found it: `mate` is only read until they are done.
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, size), [&](const tbb::blocked_range<std::size_t>& range) {
      EdgeWeights& local = accumulators.local();
      for (std::size_t i = range.begin(); i != range.end(); ++i) {
        const std::int32_t v = order[chunk + i];
        candidate_count[i] = 0;
        if (!unmatched(v)) continue;
        candidate_count[i] = static_cast<std::uint8_t>(local.heaviest_neighbours(
            h, v, salt, [&](std::int32_t u) { return unmatched(u) && fits(v, u); }, &candidates[i * kCandidates],
            kCandidates));
      }
    });
    for (std::size_t i = 0; i < size; ++i) {
      const std::int32_t v = order[chunk + i];
      if (!unmatched(v)) continue;
      const std::int32_t* kept = &candidates[i * kCandidates];
      std::int32_t partner = kNone;
      for (std::size_t c = 0; c < candidate_count[i] && partner == kNone; ++c)
        if (unmatched(kept[c])) partner = kept[c];
      if (partner == kNone && candidate_count[i] == kCandidates)
        accumulator.heaviest_neighbours(
            h, v, salt, [&](std::int32_t u) { return unmatched(u) && fits(v, u); }, &partner, 1);
      mate[static_cast<std::size_t>(v)] = partner == kNone ? v : partner;
      if (partner != kNone) mate[static_cast<std::size_t>(partner)] = v;
    }
  }
  return mate;
}

/// One coarser level: the matched pairs contracted (coarse vertices numbered in the order of their
/// smaller vertex), the nets mapped onto them.
struct Contraction {
  Hypergraph coarse;
  std::vector<std::int32_t> coarse_of;  // per vertex of the finer level
};

Contraction contract(const Hypergraph& h, const std::vector<std::int32_t>& mate) {
  Contraction result;
  result.coarse_of = huge_vector<std::int32_t>(mate.size(), kNone);
  std::vector<std::int64_t> weight;
  reserve_huge(weight, mate.size());
  for (std::size_t v = 0; v < mate.size(); ++v) {
    const auto partner = static_cast<std::size_t>(mate[v]);
    if (partner < v) continue;
    result.coarse_of[v] = static_cast<std::int32_t>(weight.size());
    result.coarse_of[partner] = static_cast<std::int32_t>(weight.size());
    weight.push_back(h.vertex_weight[v] + (partner == v ? 0 : h.vertex_weight[partner]));
  }
  std::vector<std::int32_t> pins = huge_vector<std::int32_t>(h.net_pins.size());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, pins.size()), [&](const tbb::blocked_range<std::size_t>& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p)
      pins[p] = result.coarse_of[static_cast<std::size_t>(h.net_pins[p])];
  });
  result.coarse = build_hypergraph(std::move(weight), h.net_offsets, std::move(pins), h.net_weight);
  return result;
}

// ---- bisection: Kernighan–Lin / Fiduccia–Mattheyses refinement -----------------------------------

/// The balance of one bisection: part p will hold `blocks[p]` of the final blocks and may weigh at
/// most `limit[p]`.
struct BisectionTargets {
  std::array<std::int64_t, 2> blocks{1, 1};
  std::array<std::int64_t, 2> limit{0, 0};
};

struct Bisection {
  std::vector<std::uint8_t> part;
  std::array<std::int64_t, 2> weight{0, 0};
  std::int64_t cut = 0;
};

/// What a refinement pass minimises, in this order: the weight above the limits, the net-cut, and
/// the distance from the proportional split (|w0·k1 − w1·k0|).
struct Quality {
  std::int64_t overweight = 0;
  std::int64_t cut = 0;
  std::int64_t deviation = 0;
  bool operator<(const Quality& other) const {
    if (overweight != other.overweight) return overweight < other.overweight;
    if (cut != other.cut) return cut < other.cut;
    return deviation < other.deviation;
  }
};

Quality quality(const Bisection& b, const BisectionTargets& t) {
  return {std::max<std::int64_t>(0, b.weight[0] - t.limit[0]) + std::max<std::int64_t>(0, b.weight[1] - t.limit[1]),
          b.cut, std::abs(b.weight[0] * t.blocks[1] - b.weight[1] * t.blocks[0])};
}

/// The gain buckets of tabular.md §2, as an indexed 4-ary heap per part of the free vertices, ordered
/// by gain, then by the time of their last gain change (the latest first), then by the smaller index.
/// That is the order of Fiduccia–Mattheyses buckets whose lists take a changed vertex at their head
/// (LIFO): it keeps a pass's moves together around the vertices just moved, where taking the smallest
/// index left up to a fifth more linking columns on a generated table. A heap rather than an array of
/// lists because on coarse levels a few hundred vertices have gains spread over millions of values.
/// O(log n) insertion, removal and update.
class GainHeap {
 public:
  GainHeap(const std::vector<std::int64_t>& gain, std::int32_t vertices)
      : gain_(gain),
        stamp_(huge_vector<std::int64_t>(static_cast<std::size_t>(vertices), 0)),
        position_(huge_vector<std::int32_t>(static_cast<std::size_t>(vertices), kNone)) {}

  /// Puts every vertex into the heap of its part, with no gain change seen yet.
  void fill(const std::vector<std::uint8_t>& part) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    clock_ = 0;
    for (auto& heap : heaps_) heap.clear();
    for (std::size_t v = 0; v < part.size(); ++v) {
      auto& heap = heaps_[part[v]];
      position_[v] = static_cast<std::int32_t>(heap.size());
      heap.push_back(static_cast<std::int32_t>(v));
    }
    for (std::uint8_t p = 0; p < 2; ++p)
      for (std::size_t i = heaps_[p].size() / kArity + 1; i-- > 0;)
        if (i < heaps_[p].size()) sift_down(p, i);
  }
  /// The free vertex of largest gain in `part`, or kNone.
  std::int32_t best(std::uint8_t part) const { return heaps_[part].empty() ? kNone : heaps_[part].front(); }
  bool contains(std::int32_t v) const { return position_[static_cast<std::size_t>(v)] != kNone; }
  void remove(std::uint8_t part, std::int32_t v) {
    auto& heap = heaps_[part];
    const auto i = static_cast<std::size_t>(position_[static_cast<std::size_t>(v)]);
    position_[static_cast<std::size_t>(v)] = kNone;
    const std::int32_t last = heap.back();
    heap.pop_back();
    if (i == heap.size()) return;
    place(part, i, last);
    restore(part, i);
  }
  /// Restores the order after the gain of `v`, in the heap of `part`, changed.
  void changed(std::uint8_t part, std::int32_t v) {
    stamp_[static_cast<std::size_t>(v)] = ++clock_;
    restore(part, static_cast<std::size_t>(position_[static_cast<std::size_t>(v)]));
  }
  /// Empties both heaps.
  void clear() {
    for (auto& heap : heaps_) {
      for (const std::int32_t v : heap) position_[static_cast<std::size_t>(v)] = kNone;
      heap.clear();
    }
  }

 private:
  static constexpr std::size_t kArity = 4;

  bool before(std::int32_t a, std::int32_t b) const {
    const std::int64_t ga = gain_[static_cast<std::size_t>(a)];
    const std::int64_t gb = gain_[static_cast<std::size_t>(b)];
    if (ga != gb) return ga > gb;
    const std::int64_t sa = stamp_[static_cast<std::size_t>(a)];
    const std::int64_t sb = stamp_[static_cast<std::size_t>(b)];
    return sa != sb ? sa > sb : a < b;
  }
  void place(std::uint8_t part, std::size_t i, std::int32_t v) {
    heaps_[part][i] = v;
    position_[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(i);
  }
  void restore(std::uint8_t part, std::size_t i) {
    if (i > 0 && before(heaps_[part][i], heaps_[part][(i - 1) / kArity]))
      sift_up(part, i);
    else
      sift_down(part, i);
  }
  void sift_up(std::uint8_t part, std::size_t i) {
    auto& heap = heaps_[part];
    const std::int32_t v = heap[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / kArity;
      if (!before(v, heap[parent])) break;
      place(part, i, heap[parent]);
      i = parent;
    }
    place(part, i, v);
  }
  void sift_down(std::uint8_t part, std::size_t i) {
    auto& heap = heaps_[part];
    const std::int32_t v = heap[i];
    for (;;) {
      const std::size_t first = i * kArity + 1;
      if (first >= heap.size()) break;
      const std::size_t last = std::min(first + kArity, heap.size());
      std::size_t child = first;
      for (std::size_t c = first + 1; c < last; ++c)
        if (before(heap[c], heap[child])) child = c;
      if (!before(heap[child], v)) break;
      place(part, i, heap[child]);
      i = child;
    }
    place(part, i, v);
  }

  const std::vector<std::int64_t>& gain_;
  std::vector<std::int64_t> stamp_;
  std::int64_t clock_ = 0;
  std::vector<std::int32_t> position_;
  std::array<std::vector<std::int32_t>, 2> heaps_;
};

/// In the multilevel algorithm a pass ends once this many moves in a row have not improved on its best
/// prefix. The method's pass moves every vertex, but what comes after the best prefix is rolled back
/// anyway, and on a level of millions of vertices a full pass costs seconds; on generated tables ending
/// at 1000 changed the linking size by a few percent either way and made the reordering up to four
/// times faster. The single-level algorithm, the comparison the paper makes, keeps the method's full
/// passes (kFullPasses): cut short, a pass from a poor start stops long before the good moves.
constexpr std::size_t kFruitlessMoves = 1000;
constexpr std::size_t kFullPasses = std::numeric_limits<std::size_t>::max();

std::size_t fruitless_moves(ReorderingAlgorithm algorithm) {
  return algorithm == ReorderingAlgorithm::kMultilevel ? kFruitlessMoves : kFullPasses;
}

/// How far ahead of use the gain computation fetches a net's pin counts and weight.
constexpr std::size_t kGainLookahead = 16;

/// Kernighan–Lin passes with Fiduccia–Mattheyses gain updates on one level (tabular.md §2, step 2).
class Refiner {
 public:
  Refiner(const Hypergraph& h, const BisectionTargets& targets, std::size_t fruitless_moves)
      : h_(h),
        targets_(targets),
        fruitless_moves_(fruitless_moves),
        pin_count_(huge_vector<std::int32_t>(2 * static_cast<std::size_t>(h.nets()), 0)),
        gain_(huge_vector<std::int64_t>(static_cast<std::size_t>(h.vertices()), 0)),
        delta_(huge_vector<std::int64_t>(static_cast<std::size_t>(h.vertices()), 0)),
        heap_(gain_, h.vertices()) {}

  /// Passes from `b` (its parts set) until one brings no improvement, or `max_passes` of them (0: no
  /// limit); sets its weights and net-cut.
  void refine(Bisection& b, int max_passes) {
    measure(b);
    for (int pass = 0; max_passes == 0 || pass < max_passes; ++pass)
      if (!improving_pass(b)) break;
  }

 private:
  std::int32_t& count(std::int32_t net, std::uint8_t part) {
    return pin_count_[2 * static_cast<std::size_t>(net) + part];
  }

  /// Sets the pin counts, the part weights, the net-cut of `b` and every vertex's gain from its parts.
  void measure(Bisection& b) {
    b.weight = {0, 0};
    for (std::size_t v = 0; v < b.part.size(); ++v) b.weight[b.part[v]] += h_.vertex_weight[v];
    b.cut = tbb::parallel_reduce(
        tbb::blocked_range<std::int32_t>(0, h_.nets()), std::int64_t{0},
        [&](const tbb::blocked_range<std::int32_t>& range, std::int64_t cut) {
          for (std::int32_t j = range.begin(); j != range.end(); ++j) {
            const auto pins = h_.pins_of(j);
            std::int32_t in_second = 0;
            for (const std::int32_t v : pins) in_second += b.part[static_cast<std::size_t>(v)];
            count(j, 0) = static_cast<std::int32_t>(pins.size()) - in_second;
            count(j, 1) = in_second;
            if (in_second > 0 && in_second < static_cast<std::int32_t>(pins.size()))
              cut += h_.net_weight[static_cast<std::size_t>(j)];
          }
          return cut;
        },
        std::plus<>());
    compute_gains(b);
  }

  void compute_gains(const Bisection& b) {
    tbb::parallel_for(tbb::blocked_range<std::int32_t>(0, h_.vertices()),
                      [&](const tbb::blocked_range<std::int32_t>& r) {
                        // The nets are scattered: fetch their counts and weights sixteen nets ahead.
                        const auto last = to_size(h_.vertex_offsets[static_cast<std::size_t>(r.end())]);
                        for (std::int32_t v = r.begin(); v != r.end(); ++v) {
                          const std::uint8_t own = b.part[static_cast<std::size_t>(v)];
                          std::int64_t gain = 0;
                          for (auto e = to_size(h_.vertex_offsets[static_cast<std::size_t>(v)]);
                               e < to_size(h_.vertex_offsets[static_cast<std::size_t>(v) + 1]); ++e) {
                            if (e + kGainLookahead < last) {
                              const auto ahead = static_cast<std::size_t>(h_.vertex_nets[e + kGainLookahead]);
                              __builtin_prefetch(&pin_count_[2 * ahead]);
                              __builtin_prefetch(&h_.net_weight[ahead]);
                            }
                            const std::int32_t j = h_.vertex_nets[e];
                            const std::int32_t in_own = pin_count_[2 * static_cast<std::size_t>(j) + own];
                            const std::int32_t in_other = pin_count_[2 * static_cast<std::size_t>(j) + (1U - own)];
                            if (in_own == 1 && in_other >= 1)
                              gain += h_.net_weight[static_cast<std::size_t>(j)];
                            else if (in_other == 0 && in_own >= 2)
                              gain -= h_.net_weight[static_cast<std::size_t>(j)];
                          }
                          gain_[static_cast<std::size_t>(v)] = gain;
                        }
                      });
    gains_stale_ = false;
  }

  /// Undoes a move when the gains are to be recomputed: the part, the pin counts and the weights.
  void move_back(Bisection& b, std::int32_t vertex) {
    const std::uint8_t from = b.part[static_cast<std::size_t>(vertex)];
    const auto to = static_cast<std::uint8_t>(1 - from);
    b.part[static_cast<std::size_t>(vertex)] = to;
    for (const std::int32_t j : h_.nets_of(vertex)) {
      --count(j, from);
      ++count(j, to);
    }
    const std::int64_t weight = h_.vertex_weight[static_cast<std::size_t>(vertex)];
    b.weight[from] -= weight;
    b.weight[to] += weight;
  }

  /// Rolls the moves after `prefix` back: by moving them back with their gain updates when they touch
  /// few nets, otherwise by restoring the counts alone and recomputing every gain (in parallel) before
  /// the next pass.
  void roll_back(Bisection& b, std::size_t prefix) {
    std::size_t touched_nets = 0;
    for (std::size_t i = prefix; i < moves_.size(); ++i) touched_nets += h_.nets_of(moves_[i]).size();
    const bool recompute = 4 * touched_nets > h_.vertex_nets.size();
    for (std::size_t i = moves_.size(); i-- > prefix;) {
      if (recompute)
        move_back(b, moves_[i]);
      else
        move(b, moves_[i]);
    }
    gains_stale_ = gains_stale_ || recompute;
  }

  void add_gain(std::int32_t v, std::int64_t change) {
    std::int64_t& d = delta_[static_cast<std::size_t>(v)];
    if (d == 0) touched_.push_back(v);
    d += change;
  }

  /// Moves `vertex` to the other part, updating the other vertices' gains by the FM rules of
  /// tabular.md §2. The rules are applied to every vertex, locked or not, so that the gains stay
  /// exact across passes and a move is undone by moving back; a free vertex whose gain changed moves
  /// between buckets once, after all its nets. The moved vertex's own gain changes sign.
  void move(Bisection& b, std::int32_t vertex) {
    const std::uint8_t from = b.part[static_cast<std::size_t>(vertex)];
    const auto to = static_cast<std::uint8_t>(1 - from);
    b.part[static_cast<std::size_t>(vertex)] = to;
    const auto nets = h_.nets_of(vertex);
    for (std::size_t i = 0; i < nets.size(); ++i) {
      // The nets are scattered: fetch their counts, offsets and weights eight nets ahead, their pins
      // four ahead.
      if (i + 8 < nets.size()) {
        __builtin_prefetch(&pin_count_[2 * static_cast<std::size_t>(nets[i + 8])], 1);
        __builtin_prefetch(&h_.net_offsets[static_cast<std::size_t>(nets[i + 8])]);
        __builtin_prefetch(&h_.net_weight[static_cast<std::size_t>(nets[i + 8])]);
      }
      if (i + 4 < nets.size()) __builtin_prefetch(h_.pins_of(nets[i + 4]).data());
      const std::int32_t j = nets[i];
      const std::int64_t w = h_.net_weight[static_cast<std::size_t>(j)];
      const auto pins = h_.pins_of(j);
      if (count(j, to) == 0) {
        for (const std::int32_t u : pins)
          if (u != vertex) add_gain(u, w);
      } else if (count(j, to) == 1) {
        for (const std::int32_t u : pins)
          if (u != vertex && b.part[static_cast<std::size_t>(u)] == to) {
            add_gain(u, -w);
            break;
          }
      }
      --count(j, from);
      ++count(j, to);
      if (count(j, from) == 0) {
        for (const std::int32_t u : pins)
          if (u != vertex) add_gain(u, -w);
      } else if (count(j, from) == 1) {
        for (const std::int32_t u : pins)
          if (b.part[static_cast<std::size_t>(u)] == from) {
            add_gain(u, w);
            break;
          }
      }
    }
    for (const std::int32_t u : touched_) {
      std::int64_t& d = delta_[static_cast<std::size_t>(u)];
      if (d == 0) continue;
      gain_[static_cast<std::size_t>(u)] += d;
      d = 0;
      if (heap_.contains(u)) heap_.changed(b.part[static_cast<std::size_t>(u)], u);
    }
    touched_.clear();
    gain_[static_cast<std::size_t>(vertex)] = -gain_[static_cast<std::size_t>(vertex)];
    const std::int64_t weight = h_.vertex_weight[static_cast<std::size_t>(vertex)];
    b.weight[from] -= weight;
    b.weight[to] += weight;
  }

  /// The part to move from: the heavier relative to its share of the blocks (ties: part 0).
  std::uint8_t heavier(const Bisection& b) const {
    return b.weight[0] * targets_.blocks[1] >= b.weight[1] * targets_.blocks[0] ? 0 : 1;
  }

  /// One inner pass: vertices moved and locked one at a time, from the heavier part, largest gain
  /// first, even when the gain is negative; a move that would push the other part over its limit is
  /// not taken (the vertex is locked where it is). The pass ends when every vertex is locked or after
  /// fruitless_moves_ moves without a better prefix, and is rolled back to its best prefix. True when
  /// that prefix has less weight over the limits or, with as little, a smaller net-cut than the start (a
  /// prefix that only evens the weights out is kept but ends the passes).
  bool improving_pass(Bisection& b) {
    if (gains_stale_) compute_gains(b);
    heap_.fill(b.part);
    const Quality start = quality(b, targets_);
    Quality best = start;
    std::size_t best_prefix = 0;
    moves_.clear();
    for (;;) {
      if (moves_.size() - best_prefix >= fruitless_moves_) {
        heap_.clear();
        break;
      }
      auto from = heavier(b);
      std::int32_t v = heap_.best(from);
      if (v == kNone) {
        from = static_cast<std::uint8_t>(1 - from);
        v = heap_.best(from);
      }
      if (v == kNone) break;
      heap_.remove(from, v);
      const auto to = static_cast<std::uint8_t>(1 - from);
      if (b.weight[to] + h_.vertex_weight[static_cast<std::size_t>(v)] > targets_.limit[to]) continue;
      b.cut -= gain_[static_cast<std::size_t>(v)];
      move(b, v);
      moves_.push_back(v);
      const Quality now = quality(b, targets_);
      if (now < best) {
        best = now;
        best_prefix = moves_.size();
      }
    }
    roll_back(b, best_prefix);
    b.cut = best.cut;
    return best.overweight < start.overweight || (best.overweight == start.overweight && best.cut < start.cut);
  }

  const Hypergraph& h_;
  const BisectionTargets& targets_;
  std::size_t fruitless_moves_;
  std::vector<std::int32_t> pin_count_;  // per net: pins in part 0, pins in part 1
  std::vector<std::int64_t> gain_;
  std::vector<std::int64_t> delta_;
  std::vector<std::int32_t> touched_;
  GainHeap heap_;
  std::vector<std::int32_t> moves_;
  bool gains_stale_ = false;
};

// ---- bisection: flow refinement ------------------------------------------------------------------
//
// Kernighan–Lin / FM moves one vertex at a time and stops in a local minimum; a minimum s–t cut
// moves whole groups at once. Around the cut, a corridor of vertices of each part is grown by
// breadth-first search, no heavier than the other part can still take; the rest of part 0 becomes
// the source, the rest of part 1 the sink; every net with pins in the corridor becomes a node pair
// joined by an arc of the net's weight (Lawler's network), a two-pin net an edge of its weight. A
// minimum cut of that network is a bisection that keeps both parts within their limits whatever
// it moves, with the smallest net-cut of all that differ from b only in the corridor. This is the
// flow refinement of the multilevel hypergraph partitioners (Sanders and Schulz's max-flow min-cut
// refinement, as KaHyPar-MF applies it to hypergraphs).

/// The net-cut of `part`: the weight of the nets with pins in both parts.
std::int64_t net_cut_of(const Hypergraph& h, const std::vector<std::uint8_t>& part) {
  return tbb::parallel_reduce(
      tbb::blocked_range<std::int32_t>(0, h.nets()), std::int64_t{0},
      [&](const tbb::blocked_range<std::int32_t>& range, std::int64_t cut) {
        for (std::int32_t j = range.begin(); j != range.end(); ++j) {
          const auto pins = h.pins_of(j);
          const std::uint8_t first = part[static_cast<std::size_t>(pins.front())];
          for (const std::int32_t v : pins)
            if (part[static_cast<std::size_t>(v)] != first) {
              cut += h.net_weight[static_cast<std::size_t>(j)];
              break;
            }
        }
        return cut;
      },
      std::plus<>());
}

/// The corridor of `side` (part 0 or 1) in `b`: breadth-first from the pins of the cut nets (in net
/// order), through the nets of the vertices taken, vertices of that part only, as long as their
/// weight fits in `budget`. Marks them in `in_corridor`.
void grow_corridor(const Hypergraph& h, const Bisection& b, const std::vector<std::int32_t>& cut_nets,
                   std::uint8_t side, std::int64_t budget, std::vector<std::uint8_t>& in_corridor) {
  std::vector<std::int32_t> queue;
  std::vector<std::uint8_t> seen_net(static_cast<std::size_t>(h.nets()), 0);
  std::int64_t taken = 0;
  const auto take_pins = [&](std::int32_t j) {
    if (seen_net[static_cast<std::size_t>(j)] != 0) return;
    seen_net[static_cast<std::size_t>(j)] = 1;
    for (const std::int32_t u : h.pins_of(j)) {
      const auto vu = static_cast<std::size_t>(u);
      if (b.part[vu] != side || in_corridor[vu] != 0 || taken + h.vertex_weight[vu] > budget) continue;
      in_corridor[vu] = 1;
      taken += h.vertex_weight[vu];
      queue.push_back(u);
    }
  };
  for (const std::int32_t j : cut_nets) take_pins(j);
  for (std::size_t head = 0; head < queue.size() && taken < budget; ++head)
    for (const std::int32_t j : h.nets_of(queue[head])) take_pins(j);
}

/// What one flow refinement found: a better bisection, or none, and whether a side of the minimum cut
/// kept the limits (with a wider corridor, a cut need not).
struct FlowOutcome {
  std::optional<Bisection> better;
  bool within_limits = false;
};

/// One flow refinement of `b` (its weights and net-cut set) within `targets`, the corridors at most
/// `scale` times what the other part can take. The better of the two sides of the minimum cut (by
/// quality; source side first on ties) when it keeps the limits and is better than b.
FlowOutcome flow_bisection(const Hypergraph& h, const BisectionTargets& targets, const Bisection& b,
                           std::int64_t scale) {
  const auto n = static_cast<std::size_t>(h.vertices());
  std::vector<std::int32_t> cut_nets;
  for (std::int32_t j = 0; j < h.nets(); ++j) {
    const auto pins = h.pins_of(j);
    const std::uint8_t first = b.part[static_cast<std::size_t>(pins.front())];
    if (std::any_of(pins.begin(), pins.end(),
                    [&](std::int32_t v) { return b.part[static_cast<std::size_t>(v)] != first; }))
      cut_nets.push_back(j);
  }
  if (cut_nets.empty()) return {std::nullopt, true};
  std::vector<std::uint8_t> in_corridor(n, 0);
  // Part 0's corridor may all move to part 1, and the other way round.
  grow_corridor(h, b, cut_nets, 0, scale * std::max<std::int64_t>(0, targets.limit[1] - b.weight[1]), in_corridor);
  grow_corridor(h, b, cut_nets, 1, scale * std::max<std::int64_t>(0, targets.limit[0] - b.weight[0]), in_corridor);

  constexpr std::int32_t kSource = 0;
  constexpr std::int32_t kSink = 1;
  FlowNetwork network(2);
  std::vector<std::int32_t> node_of(n, kNone);
  for (std::size_t v = 0; v < n; ++v)
    if (in_corridor[v] != 0) node_of[v] = network.add_node();
  const std::int64_t unbounded = h.total_net_weight() + 1;
  std::vector<std::uint8_t> seen_net(static_cast<std::size_t>(h.nets()), 0);
  std::vector<std::int32_t> ends;
  for (std::size_t v = 0; v < n; ++v) {
    if (in_corridor[v] == 0) continue;
    for (const std::int32_t j : h.nets_of(static_cast<std::int32_t>(v))) {
      if (seen_net[static_cast<std::size_t>(j)] != 0) continue;
      seen_net[static_cast<std::size_t>(j)] = 1;
      bool source = false;
      bool sink = false;
      ends.clear();
      for (const std::int32_t u : h.pins_of(j)) {
        const auto vu = static_cast<std::size_t>(u);
        if (in_corridor[vu] != 0)
          ends.push_back(node_of[vu]);
        else if (b.part[vu] == 0)
          source = true;
        else
          sink = true;
      }
      if (source && sink) continue;  // cut whatever the corridor does
      if (source) ends.push_back(kSource);
      if (sink) ends.push_back(kSink);
      const std::int64_t w = h.net_weight[static_cast<std::size_t>(j)];
      if (ends.size() == 2) {
        network.add_arc(ends[0], ends[1], w, w);
        continue;
      }
      const std::int32_t in = network.add_node();
      const std::int32_t out = network.add_node();
      network.add_arc(in, out, w);
      for (const std::int32_t e : ends) {
        if (e != kSink) network.add_arc(e, in, unbounded);
        if (e != kSource) network.add_arc(out, e, unbounded);
      }
    }
  }
  network.max_flow(kSource, kSink);

  std::optional<Bisection> best;
  for (const bool source_side : {true, false}) {
    const std::vector<std::uint8_t> side = source_side ? network.source_side() : network.sink_side();
    Bisection candidate;
    candidate.part = b.part;
    for (std::size_t v = 0; v < n; ++v)
      if (in_corridor[v] != 0) {
        const bool on_side = side[static_cast<std::size_t>(node_of[v])] != 0;
        candidate.part[v] = static_cast<std::uint8_t>(source_side ? (on_side ? 0 : 1) : (on_side ? 1 : 0));
      }
    for (std::size_t v = 0; v < n; ++v) candidate.weight[candidate.part[v]] += h.vertex_weight[v];
    candidate.cut = net_cut_of(h, candidate.part);
    const Quality q = quality(candidate, targets);
    if (q.overweight > 0) continue;
    if (!best || q < quality(*best, targets)) best = std::move(candidate);
  }
  if (!best) return {};
  if (quality(*best, targets) < quality(b, targets)) return {std::move(best), true};
  return {std::nullopt, true};
}

/// Flow refinements of `b` alternated with FM passes until neither improves it, at most
/// kFlowRounds times. Every round first tries corridors kFlowScale times what the parts can take (a
/// wider corridor holds better cuts, but its cut may break a limit) and halves the scale while the
/// cut breaks one, down to 1, where every cut keeps them (KaHyPar-MF's adaptive corridor). On the
/// generated comparison instances a scale of 16 left no more linking than single-level KL in any
/// case, 4 and 8 did not (13x13x7x7 dual k = 8: 3 947 and 3 945 against 3 933), nor did keeping a
/// halved scale for the later rounds (3 963).
constexpr int kFlowRounds = 8;
constexpr std::int64_t kFlowScale = 16;
/// Flow refinement runs on hypergraphs of up to this many vertices. Dinic's flows on corridors of
/// hundreds of thousands of vertices take longer than the rest of the bisection (16x16x16x16 dual,
/// 65 536 rows: a corridor of 115 000 network nodes took 2.6 s, the whole multilevel bisection
/// without flows about 1 s), so on larger levels, such as those of a 10-million-cell table, the
/// bisection keeps FM alone.
constexpr std::int32_t kFlowVertices = std::int32_t{1} << 18;

void refine_by_flows(const Hypergraph& h, const BisectionTargets& targets, Bisection& b, std::size_t fruitless) {
  if (h.vertices() > kFlowVertices) return;
  Refiner refiner(h, targets, fruitless);
  for (int round = 0; round < kFlowRounds; ++round) {
    FlowOutcome outcome;
    for (std::int64_t scale = kFlowScale; scale >= 1 && !outcome.within_limits; scale /= 2)
      outcome = flow_bisection(h, targets, b, scale);
    if (!outcome.better) break;
    b = std::move(*outcome.better);
    refiner.refine(b, 0);
  }
}

/// Initial bisection `number` (tabular.md §2, step 2): the vertices in index order (number 0) or in
/// seeded random order fill part 0 until it reaches its share of the weight, the rest is part 1.
Bisection initial_bisection(const Hypergraph& h, const BisectionTargets& targets, const Draws& draws,
                            std::int32_t number) {
  std::vector<std::int32_t> order;
  if (number == 0) {
    order.resize(static_cast<std::size_t>(h.vertices()));
    std::iota(order.begin(), order.end(), 0);
  } else {
    order = draws.order(h.vertices(), (std::uint64_t{1} << 32U) + static_cast<std::uint64_t>(number));
  }
  Bisection b;
  b.part.assign(static_cast<std::size_t>(h.vertices()), 1);
  const std::int64_t total = h.total_vertex_weight();
  const std::int64_t blocks = targets.blocks[0] + targets.blocks[1];
  std::int64_t weight = 0;
  for (const std::int32_t v : order) {
    if (weight * blocks >= total * targets.blocks[0]) break;
    b.part[static_cast<std::size_t>(v)] = 0;
    weight += h.vertex_weight[static_cast<std::size_t>(v)];
  }
  return b;
}

/// The best of `count` initial bisections of `h`, each refined by passes until no improvement (in
/// parallel; the winner by quality, ties to the smaller number).
Bisection best_initial_bisection(const Hypergraph& h, const BisectionTargets& targets, const Draws& draws,
                                 std::int32_t count, std::size_t fruitless) {
  std::vector<Bisection> candidates(static_cast<std::size_t>(count));
  tbb::parallel_for(0, count, [&](std::int32_t i) {
    Bisection b = initial_bisection(h, targets, draws, i);
    Refiner(h, targets, fruitless).refine(b, 0);
    candidates[static_cast<std::size_t>(i)] = std::move(b);
  });
  std::size_t best = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i)
    if (quality(candidates[i], targets) < quality(candidates[best], targets)) best = i;
  return std::move(candidates[best]);
}

/// Passes per level while uncoarsening, each ending early when it brings no improvement. The method's
/// one pass per level left up to a quarter more linking columns on a generated table; passes until one
/// brings no improvement took a fifth longer on a 2-million-cell table (c14xc14x40, k = 8: 25.5 s
/// against 21.2 s) and left about as many linking columns on the comparison's instances.
constexpr int kUncoarseningPasses = 2;

/// The levels of the multilevel hierarchy below `h` (tabular.md §2, step 1), until at most
/// `coarsest_vertices` vertices with nets remain or a level matches fewer than a
/// `minimum_coarsening_reduction` share of them. Vertices without nets are not counted: no matching
/// can pair them, and after the first bisection there are many (rows whose columns were all linking);
/// they stay single and give the refinement fine-grained balance.
std::vector<Contraction> coarsen(const Hypergraph& h, const ReorderingOptions& options, const Draws& draws) {
  std::vector<Contraction> hierarchy;
  const std::int64_t total = h.total_vertex_weight();
  const std::int64_t max_weight = (2 * total + options.coarsest_vertices - 1) / options.coarsest_vertices;
  for (;;) {
    const Hypergraph& finer = hierarchy.empty() ? h : hierarchy.back().coarse;
    std::int64_t connected = 0;
    for (std::int32_t v = 0; v < finer.vertices(); ++v) connected += finer.nets_of(v).empty() ? 0 : 1;
    if (connected <= options.coarsest_vertices) break;
    const std::vector<std::int32_t> mate =
        heavy_edge_matching(finer, max_weight, draws, static_cast<std::uint64_t>(hierarchy.size()),
                            options.form == BlockAngularForm::kPrimal);
    std::int64_t pairs = 0;
    for (std::size_t v = 0; v < mate.size(); ++v) pairs += static_cast<std::size_t>(mate[v]) > v ? 1 : 0;
    if (static_cast<double>(pairs) < options.minimum_coarsening_reduction * static_cast<double>(connected)) break;
    Contraction next = contract(finer, mate);  // `finer` may live in `hierarchy`: push after contracting
    hierarchy.push_back(std::move(next));
  }
  return hierarchy;
}

/// A bisection of `h` within `targets` (tabular.md §2, steps 1, 2 and 4): coarsened (unless the
/// algorithm is single-level), the coarsest level bisected from several starts, the best projected
/// back level by level with refinement at each. `levels`, when given, receives each level's size and
/// refined net-cut, finest first.
Bisection bisect(const Hypergraph& h, const BisectionTargets& targets, const ReorderingOptions& options,
                 const Draws& draws, std::vector<CoarseningLevel>* levels) {
  std::vector<Contraction> hierarchy;
  if (options.algorithm == ReorderingAlgorithm::kMultilevel) hierarchy = coarsen(h, options, draws);
  const auto level = [&](std::size_t i) -> const Hypergraph& { return i == 0 ? h : hierarchy[i - 1].coarse; };
  std::vector<CoarseningLevel> statistics(hierarchy.size() + 1);
  const auto record = [&](std::size_t i, const Bisection& b) {
    statistics[i] = {level(i).vertices(), level(i).total_net_weight(), b.cut};
  };
  const std::size_t fruitless = fruitless_moves(options.algorithm);
  Bisection b = best_initial_bisection(level(hierarchy.size()), targets, draws, options.initial_partitions, fruitless);
  record(hierarchy.size(), b);
  for (std::size_t i = hierarchy.size(); i-- > 0;) {
    Bisection finer;
    finer.part.resize(hierarchy[i].coarse_of.size());
    for (std::size_t v = 0; v < finer.part.size(); ++v)
      finer.part[v] = b.part[static_cast<std::size_t>(hierarchy[i].coarse_of[v])];
    hierarchy[i].coarse = {};
    Refiner(level(i), targets, fruitless).refine(finer, kUncoarseningPasses);
    b = std::move(finer);
    record(i, b);
  }
  if (levels != nullptr) *levels = std::move(statistics);
  return b;
}

/// The cycles of `options` (0: by form, 1 dual, 4 primal); 1 for the single-level algorithm, whose
/// bisections have no coarsening to vary.
std::int32_t effective_cycles(const ReorderingOptions& options) {
  if (options.algorithm == ReorderingAlgorithm::kSingleLevel) return 1;
  if (options.cycles > 0) return options.cycles;
  return options.form == BlockAngularForm::kPrimal ? kPrimalCycles : 1;
}

/// Cycles run in batches of two (in parallel); when the two of a batch reach the same quality the
/// bisection is taken as settled and the remaining cycles are skipped. On tables whose best bisection
/// is plain (16x16x16x16, primal: every cycle and every other tool found the same 12 288 linking rows)
/// that halves the time; where the cycles differ, all run. The batch size is fixed, not the thread
/// count, so the result does not depend on the threads.
constexpr std::size_t kCycleBatch = 2;

/// The best of the cycles' independent bisections of `h` (each coarsened with its own draws: the
/// cycle's number c enters the counters as the bisection's number + c·2^40), by quality, ties to the
/// smaller c. The cycles run in parallel; their hierarchies are alive at the same time.
std::vector<std::uint8_t> best_bisection(const Hypergraph& h, const BisectionTargets& targets,
                                         const ReorderingOptions& options, const RecordRng& rng,
                                         std::uint64_t bisection, std::vector<CoarseningLevel>* levels) {
  const auto cycles = static_cast<std::size_t>(effective_cycles(options));
  std::vector<Bisection> results(cycles);
  std::vector<std::vector<CoarseningLevel>> statistics(cycles);
  std::size_t best = 0;
  for (std::size_t batch = 0; batch < cycles; batch += kCycleBatch) {
    const std::size_t end = std::min(cycles, batch + kCycleBatch);
    tbb::parallel_for(batch, end, [&](std::size_t c) {
      const Draws draws{&rng, bisection + (static_cast<std::uint64_t>(c) << kCycleShift)};
      results[c] = bisect(h, targets, options, draws, levels != nullptr ? &statistics[c] : nullptr);
    });
    const Quality first = quality(results[batch], targets);
    bool agree = true;
    for (std::size_t c = batch; c < end; ++c) {
      agree = agree && !(first < quality(results[c], targets)) && !(quality(results[c], targets) < first);
      if (quality(results[c], targets) < quality(results[best], targets)) best = c;
    }
    for (std::size_t c = batch; c < end; ++c)
      if (c != best) results[c] = {};
    if (agree && end - batch > 1) break;
  }
  if (options.algorithm == ReorderingAlgorithm::kMultilevel) {
    refine_by_flows(h, targets, results[best], fruitless_moves(options.algorithm));
    if (levels != nullptr) statistics[best].front().net_cut = results[best].cut;
  }
  if (levels != nullptr) *levels = std::move(statistics[best]);
  return std::move(results[best].part);
}

// ---- k blocks: recursive bisection ---------------------------------------------------------------

/// The hypergraph of `h` on `vertices` (increasing), renumbered in their order, with the nets `keep`
/// accepts (their pins must all be among `vertices`).
template <typename Keep>
Hypergraph induced(const Hypergraph& h, const std::vector<std::int32_t>& vertices, Keep keep) {
  Hypergraph sub;
  std::vector<std::int32_t> local = huge_vector<std::int32_t>(static_cast<std::size_t>(h.vertices()), kNone);
  sub.vertex_weight.reserve(vertices.size());
  for (const std::int32_t v : vertices) {
    local[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(sub.vertex_weight.size());
    sub.vertex_weight.push_back(h.vertex_weight[static_cast<std::size_t>(v)]);
  }
  std::vector<std::uint8_t> kept = huge_vector<std::uint8_t>(static_cast<std::size_t>(h.nets()), 0);
  tbb::parallel_for(tbb::blocked_range<std::int32_t>(0, h.nets()), [&](const tbb::blocked_range<std::int32_t>& range) {
    for (std::int32_t j = range.begin(); j != range.end(); ++j) kept[static_cast<std::size_t>(j)] = keep(j) ? 1 : 0;
  });
  std::vector<std::int32_t> old_net;
  for (std::int32_t j = 0; j < h.nets(); ++j) {
    if (kept[static_cast<std::size_t>(j)] == 0) continue;
    old_net.push_back(j);
    sub.net_offsets.push_back(sub.net_offsets.back() + static_cast<std::int64_t>(h.pins_of(j).size()));
    sub.net_weight.push_back(h.net_weight[static_cast<std::size_t>(j)]);
  }
  sub.net_pins = huge_vector<std::int32_t>(to_size(sub.net_offsets.back()));
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, old_net.size()),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t k = range.begin(); k != range.end(); ++k) {
                        auto out = sub.net_pins.begin() + sub.net_offsets[k];
                        for (const std::int32_t v : h.pins_of(old_net[k])) *out++ = local[static_cast<std::size_t>(v)];
                      }
                    });
  transpose_nets(sub);
  return sub;
}

/// The sub-hypergraph of the vertices in part `p`: the nets lying wholly in it. A net this bisection
/// cuts is linking whatever the later bisections do, so it drops out of them rather than being
/// restricted to the part (restricted, it would make them keep together what is cut already: on
/// generated tables that left up to a fifth more linking columns at k = 8).
std::pair<Hypergraph, std::vector<std::int32_t>> part_hypergraph(const Hypergraph& h,
                                                                 const std::vector<std::uint8_t>& part, std::uint8_t p,
                                                                 const std::vector<std::int32_t>& original) {
  std::vector<std::int32_t> vertices;
  std::vector<std::int32_t> sub_original;
  for (std::size_t v = 0; v < part.size(); ++v) {
    if (part[v] != p) continue;
    vertices.push_back(static_cast<std::int32_t>(v));
    sub_original.push_back(original[v]);
  }
  Hypergraph sub = induced(h, vertices, [&](std::int32_t j) {
    const auto pins = h.pins_of(j);
    return std::all_of(pins.begin(), pins.end(),
                       [&](std::int32_t v) { return part[static_cast<std::size_t>(v)] == p; });
  });
  return {std::move(sub), std::move(sub_original)};
}

struct Recursion {
  const ReorderingOptions& options;
  RecordRng rng;
  std::int64_t block_limit = 0;  // ⌈(1 + ε) × total / k⌉, the most a final block may weigh
  double mean_block = 0.0;       // total / k
  std::vector<std::int32_t>& vertex_block;
  std::vector<CoarseningLevel>& levels;

  /// The limits of a bisection of weight `total` into blocks[0] + blocks[1] final blocks: each part at
  /// most its blocks × the final block limit (so that its final blocks can meet it), at most its share
  /// grown by an ε' that leaves the same slack to every later bisection ((1 + ε')^depth × the mean of
  /// its blocks = (1 + ε) × the global mean block), at least its share, and light enough to leave one
  /// vertex to every final block of the other part.
  BisectionTargets targets(std::int64_t total, std::int64_t blocks) const {
    BisectionTargets t;
    t.blocks = {blocks / 2, blocks - blocks / 2};
    const double depth = std::ceil(std::log2(static_cast<double>(blocks)));
    const double ratio =
        (1.0 + options.imbalance) * mean_block * static_cast<double>(blocks) / static_cast<double>(total);
    const double epsilon = std::max(0.0, std::pow(ratio, 1.0 / depth) - 1.0);
    for (std::size_t p = 0; p < 2; ++p) {
      const std::int64_t share = (total * t.blocks[p] + blocks - 1) / blocks;
      const auto grown =
          static_cast<std::int64_t>(std::ceil((1.0 + epsilon) * static_cast<double>(total) *
                                              static_cast<double>(t.blocks[p]) / static_cast<double>(blocks)));
      t.limit[p] = std::min({t.blocks[p] * block_limit, std::max(share, grown), total - t.blocks[1 - p]});
    }
    return t;
  }

  /// Splits `h` (whose vertex v is the original vertex original[v]) into `blocks` final blocks numbered
  /// from `first_block`: part 0 takes ⌊blocks / 2⌋ of them (k = 3 splits 1 : 2). The two halves run as
  /// parallel tasks; every draw is keyed by the bisection's number (1 for the whole matrix, 2b and
  /// 2b + 1 for the parts of bisection b), so the result is that of any serial order, such as the
  /// method's heavier block first.
  void split(Hypergraph h, std::vector<std::int32_t> original, std::int32_t first_block, std::int32_t blocks,
             std::uint64_t bisection) {
    if (blocks == 1) {
      for (const std::int32_t v : original) vertex_block[static_cast<std::size_t>(v)] = first_block;
      return;
    }
    const BisectionTargets t = targets(h.total_vertex_weight(), blocks);
    const std::vector<std::uint8_t> part =
        best_bisection(h, t, options, rng, bisection, bisection == 1 ? &levels : nullptr);
    // The finest level has unit weights, and a pass from an overweight start moves from the heavier
    // part until the best prefix is within the limits; so a bisection always ends within them.
    std::array<std::int64_t, 2> weight{0, 0};
    for (std::size_t v = 0; v < part.size(); ++v) weight[part[v]] += h.vertex_weight[v];
    SDC_CHECK(weight[0] <= t.limit[0] && weight[1] <= t.limit[1], "a bisection breaks its weight limits");
    std::pair<Hypergraph, std::vector<std::int32_t>> first = part_hypergraph(h, part, 0, original);
    std::pair<Hypergraph, std::vector<std::int32_t>> second = part_hypergraph(h, part, 1, original);
    h = {};
    original = {};
    const auto first_blocks = static_cast<std::int32_t>(t.blocks[0]);
    tbb::task_group group;
    group.run(
        [&] { split(std::move(first.first), std::move(first.second), first_block, first_blocks, 2 * bisection); });
    split(std::move(second.first), std::move(second.second), first_block + first_blocks, blocks - first_blocks,
          2 * bisection + 1);
    group.wait();
  }
};

// ---- the ordering --------------------------------------------------------------------------------

/// Per net (columns in the dual form, rows in the primal): its block when all its non-zeros lie in
/// one, kLinking when they span more, 0 when it has none.
std::vector<std::int32_t> net_blocks(const CsrView& matrix, BlockAngularForm form,
                                     const std::vector<std::int32_t>& vertex_block) {
  constexpr std::int32_t kUnseen = -2;
  if (form == BlockAngularForm::kPrimal) {
    std::vector<std::int32_t> blocks(to_size(matrix.rows), 0);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, matrix.rows), [&](const tbb::blocked_range<std::int64_t>& r) {
      for (std::int64_t row = r.begin(); row != r.end(); ++row) {
        std::int32_t block = kUnseen;
        for (const std::int64_t column : matrix.row_columns(row)) {
          const std::int32_t b = vertex_block[to_size(column)];
          if (block == kUnseen) {
            block = b;
          } else if (block != b) {
            block = BlockAngularOrdering::kLinking;
            break;
          }
        }
        blocks[to_size(row)] = block == kUnseen ? 0 : block;
      }
    });
    return blocks;
  }
  std::vector<std::int32_t> blocks(to_size(matrix.columns), kUnseen);
  for (std::int64_t row = 0; row < matrix.rows; ++row) {
    const std::int32_t b = vertex_block[to_size(row)];
    for (const std::int64_t column : matrix.row_columns(row)) {
      std::int32_t& block = blocks[to_size(column)];
      if (block == kUnseen)
        block = b;
      else if (block != b)
        block = BlockAngularOrdering::kLinking;
    }
  }
  for (std::int32_t& block : blocks)
    if (block == kUnseen) block = 0;
  return blocks;
}

/// Positions → original indices: block 0's first, …, the linking ones last, each in original order.
std::vector<std::int64_t> order_by_block(const std::vector<std::int32_t>& block_of, std::int32_t blocks) {
  std::vector<std::int64_t> start(static_cast<std::size_t>(blocks) + 2, 0);
  const auto slot = [&](std::int32_t block) {
    return block == BlockAngularOrdering::kLinking ? static_cast<std::size_t>(blocks) : static_cast<std::size_t>(block);
  };
  for (const std::int32_t block : block_of) ++start[slot(block) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::int64_t> order(block_of.size());
  for (std::size_t i = 0; i < block_of.size(); ++i)
    order[to_size(start[slot(block_of[i])]++)] = static_cast<std::int64_t>(i);
  return order;
}

std::vector<std::int64_t> block_sizes(const std::vector<std::int32_t>& block_of, std::int32_t blocks) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(blocks), 0);
  for (const std::int32_t block : block_of)
    if (block != BlockAngularOrdering::kLinking) ++sizes[static_cast<std::size_t>(block)];
  return sizes;
}

double imbalance_of(const std::vector<std::int64_t>& weights) {
  const std::int64_t total = std::accumulate(weights.begin(), weights.end(), std::int64_t{0});
  const std::int64_t largest = weights.empty() ? 0 : *std::max_element(weights.begin(), weights.end());
  if (total == 0) return 0.0;
  const double mean = static_cast<double>(total) / static_cast<double>(weights.size());
  return static_cast<double>(largest) / mean - 1.0;
}

std::int64_t partitioned_count(const CsrView& matrix, BlockAngularForm form) {
  return form == BlockAngularForm::kDual ? matrix.rows : matrix.columns;
}

const char* form_name(BlockAngularForm form) { return form == BlockAngularForm::kDual ? "dual" : "primal"; }

}  // namespace

void check_reordering_options(const CsrView& matrix, const ReorderingOptions& options) {
  const std::int64_t vertices = partitioned_count(matrix, options.form);
  const std::string what = options.form == BlockAngularForm::kDual ? "rows" : "columns";
  if (options.blocks < 2)
    throw ParameterError("block-angular reordering: blocks is " + std::to_string(options.blocks) + ", give at least 2");
  if (options.blocks > vertices)
    throw ParameterError("block-angular reordering: blocks is " + std::to_string(options.blocks) + ", more than the " +
                         std::to_string(vertices) + " " + what + " the " + form_name(options.form) + " form splits");
  if (!(options.imbalance > 0.0 && options.imbalance < 1.0))
    throw ParameterError("block-angular reordering: imbalance must lie strictly between 0 and 1");
  if (options.cycles < 0) throw ParameterError("block-angular reordering: cycles must be 0 (by form) or more");
  if (options.initial_partitions < 1)
    throw ParameterError("block-angular reordering: initial_partitions must be at least 1");
  if (options.coarsest_vertices < 2)
    throw ParameterError("block-angular reordering: coarsest_vertices must be at least 2");
  if (!(options.minimum_coarsening_reduction > 0.0 && options.minimum_coarsening_reduction < 1.0))
    throw ParameterError("block-angular reordering: minimum_coarsening_reduction must lie strictly between 0 and 1");
}

BlockAngularOrdering reorder_block_angular(const CsrView& matrix, const ReorderingOptions& options) {
  check_reordering_options(matrix, options);
  if (const auto problem = matrix.problem()) throw ParameterError("block-angular reordering: the matrix: " + *problem);
  constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max() - 1;
  if (matrix.rows > kMaxIndex || matrix.columns > kMaxIndex)
    throw ParameterError("block-angular reordering: " + std::to_string(matrix.rows) + " rows and " +
                         std::to_string(matrix.columns) + " columns; at most 2^31 - 2 of each");
  const std::int64_t vertices = partitioned_count(matrix, options.form);

  BlockAngularOrdering ordering;
  ordering.form = options.form;
  ordering.blocks = options.blocks;
  std::vector<std::int32_t> vertex_block(to_size(vertices), 0);
  {
    Hypergraph finest = finest_hypergraph(matrix, options.form);
    std::vector<std::int32_t> original(to_size(vertices));
    std::iota(original.begin(), original.end(), 0);
    const double mean = static_cast<double>(vertices) / static_cast<double>(options.blocks);
    Recursion recursion{options,
                        RecordRng(options.seed, StepId::kBlockAngularReordering),
                        static_cast<std::int64_t>(std::ceil((1.0 + options.imbalance) * mean)),
                        mean,
                        vertex_block,
                        ordering.levels};
    recursion.split(std::move(finest), std::move(original), 0, options.blocks, 1);
  }
  std::vector<CoarseningLevel> levels = std::move(ordering.levels);
  ordering = block_angular_ordering(matrix, options.form, options.blocks, std::move(vertex_block));
  ordering.levels = std::move(levels);
  return ordering;
}

std::int64_t net_cut(const CsrView& matrix, BlockAngularForm form, const std::vector<std::int32_t>& vertex_block) {
  if (static_cast<std::int64_t>(vertex_block.size()) != partitioned_count(matrix, form))
    throw ParameterError("net_cut: vertex_block has " + std::to_string(vertex_block.size()) + " entries for " +
                         std::to_string(partitioned_count(matrix, form)) + " vertices");
  if (std::any_of(vertex_block.begin(), vertex_block.end(), [](std::int32_t b) { return b < 0; }))
    throw ParameterError("net_cut: vertex_block holds a negative block");
  const std::vector<std::int32_t> blocks = net_blocks(matrix, form, vertex_block);
  return std::count(blocks.begin(), blocks.end(), BlockAngularOrdering::kLinking);
}

std::optional<std::string> block_pattern_problem(const CsrView& matrix, const BlockAngularOrdering& o) {
  const bool dual = o.form == BlockAngularForm::kDual;
  const std::int32_t k = o.blocks;
  if (k < 1) return "blocks is " + std::to_string(k);
  if (o.row_block.size() != to_size(matrix.rows) || o.column_block.size() != to_size(matrix.columns))
    return std::string("row_block or column_block does not have one entry per row or column");
  if (o.row_order.size() != to_size(matrix.rows) || o.column_order.size() != to_size(matrix.columns))
    return std::string("row_order or column_order does not have one entry per row or column");
  if (o.block_rows.size() != static_cast<std::size_t>(k) || o.block_columns.size() != static_cast<std::size_t>(k))
    return std::string("block_rows or block_columns does not have one entry per block");
  const auto check_blocks = [&](const std::vector<std::int32_t>& block_of, bool linking_allowed,
                                const char* what) -> std::optional<std::string> {
    for (std::size_t i = 0; i < block_of.size(); ++i) {
      const std::int32_t b = block_of[i];
      if (b == BlockAngularOrdering::kLinking ? !linking_allowed : (b < 0 || b >= k))
        return std::string(what) + " " + std::to_string(i) + " has block " + std::to_string(b) +
               (b == BlockAngularOrdering::kLinking ? ", linking in the " + std::string(form_name(o.form)) + " form"
                                                    : ", outside 0 .. " + std::to_string(k - 1));
    }
    return std::nullopt;
  };
  if (auto problem = check_blocks(o.row_block, !dual, "row")) return problem;
  if (auto problem = check_blocks(o.column_block, dual, "column")) return problem;
  // Each order a permutation in which (block, linking last; original index) increases.
  const auto check_order = [&](const std::vector<std::int64_t>& order, const std::vector<std::int32_t>& block_of,
                               const char* what) -> std::optional<std::string> {
    std::vector<std::uint8_t> seen(order.size(), 0);
    const auto key = [&](std::int64_t i) {
      const std::int32_t b = block_of[to_size(i)];
      return std::pair<std::int64_t, std::int64_t>(b == BlockAngularOrdering::kLinking ? k : b, i);
    };
    for (std::size_t p = 0; p < order.size(); ++p) {
      const std::int64_t i = order[p];
      if (i < 0 || i >= static_cast<std::int64_t>(order.size()) || seen[to_size(i)] != 0)
        return std::string(what) + "_order is not a permutation (position " + std::to_string(p) + ")";
      seen[to_size(i)] = 1;
      if (p > 0 && !(key(order[p - 1]) < key(i)))
        return std::string(what) + "_order breaks the block order at position " + std::to_string(p);
    }
    return std::nullopt;
  };
  if (auto problem = check_order(o.row_order, o.row_block, "row")) return problem;
  if (auto problem = check_order(o.column_order, o.column_block, "column")) return problem;
  // Every non-zero inside a diagonal block or the linking part; the blocks each linking net spans.
  const std::vector<std::int32_t>& net_block = dual ? o.column_block : o.row_block;
  constexpr std::int32_t kUnseen = -2;
  constexpr std::int32_t kSeveral = -3;
  std::vector<std::int32_t> spanned(net_block.size(), kUnseen);
  for (std::int64_t row = 0; row < matrix.rows; ++row) {
    for (const std::int64_t column : matrix.row_columns(row)) {
      const std::int32_t row_block = o.row_block[to_size(row)];
      const std::int32_t column_block = o.column_block[to_size(column)];
      const bool inside = dual ? (column_block == BlockAngularOrdering::kLinking || column_block == row_block)
                               : (row_block == BlockAngularOrdering::kLinking || row_block == column_block);
      if (!inside)
        return "row " + std::to_string(row) + " (block " + std::to_string(row_block) + ") and column " +
               std::to_string(column) + " (block " + std::to_string(column_block) +
               ") share a non-zero outside the linking part";
      const std::size_t net = dual ? to_size(column) : to_size(row);
      const std::int32_t vertex_block = dual ? row_block : column_block;
      std::int32_t& s = spanned[net];
      if (s == kUnseen)
        s = vertex_block;
      else if (s != vertex_block)
        s = kSeveral;
    }
  }
  std::int64_t linking = 0;
  std::int64_t made_linking = 0;
  for (std::size_t j = 0; j < net_block.size(); ++j) {
    if (net_block[j] != BlockAngularOrdering::kLinking) continue;
    ++linking;
    if (spanned[j] != kSeveral && ++made_linking > o.made_linking)
      return std::string(dual ? "linking column " : "linking row ") + std::to_string(j) + " lies in one block or none";
  }
  if (made_linking != o.made_linking)
    return "made_linking is " + std::to_string(o.made_linking) + " but " + std::to_string(made_linking) + " " +
           (dual ? "columns" : "rows") + " in one block are linking";
  if (linking != o.linking_size)
    return "linking_size is " + std::to_string(o.linking_size) + " but " + std::to_string(linking) + " " +
           (dual ? "columns" : "rows") + " are linking";
  const std::vector<std::int64_t> rows = block_sizes(o.row_block, k);
  const std::vector<std::int64_t> columns = block_sizes(o.column_block, k);
  for (std::size_t b = 0; b < rows.size(); ++b) {
    if (rows[b] != o.block_rows[b])
      return "block " + std::to_string(b) + " has " + std::to_string(rows[b]) + " rows, reported " +
             std::to_string(o.block_rows[b]);
    if (columns[b] != o.block_columns[b])
      return "block " + std::to_string(b) + " has " + std::to_string(columns[b]) + " columns, reported " +
             std::to_string(o.block_columns[b]);
  }
  const double imbalance = imbalance_of(dual ? rows : columns);
  if (imbalance > o.imbalance + 1e-12)
    return "the imbalance is " + std::to_string(imbalance) + ", above the " + std::to_string(o.imbalance) + " reported";
  return std::nullopt;
}

BlockAngularOrdering block_angular_ordering(const CsrView& matrix, BlockAngularForm form, std::int32_t blocks,
                                            std::vector<std::int32_t> vertex_block,
                                            std::span<const std::int64_t> linking_nets) {
  if (blocks < 1 || static_cast<std::int64_t>(vertex_block.size()) != partitioned_count(matrix, form))
    throw ParameterError("block_angular_ordering: " + std::to_string(vertex_block.size()) +
                         " vertex blocks for a matrix of " + std::to_string(partitioned_count(matrix, form)) +
                         " vertices");
  for (const std::int32_t block : vertex_block)
    if (block < 0 || block >= blocks)
      throw ParameterError("block_angular_ordering: a vertex block outside 0 .. " + std::to_string(blocks - 1));
  BlockAngularOrdering ordering;
  ordering.form = form;
  ordering.blocks = blocks;
  std::vector<std::int32_t> nets = net_blocks(matrix, form, vertex_block);
  for (const std::int64_t net : linking_nets) {
    if (net < 0 || net >= static_cast<std::int64_t>(nets.size()))
      throw ParameterError("block_angular_ordering: linking net " + std::to_string(net) + " outside 0 .. " +
                           std::to_string(nets.size() - 1));
    if (nets[to_size(net)] != BlockAngularOrdering::kLinking) {
      nets[to_size(net)] = BlockAngularOrdering::kLinking;
      ++ordering.made_linking;
    }
  }
  if (form == BlockAngularForm::kDual) {
    ordering.row_block = std::move(vertex_block);
    ordering.column_block = std::move(nets);
  } else {
    ordering.row_block = std::move(nets);
    ordering.column_block = std::move(vertex_block);
  }
  ordering.row_order = order_by_block(ordering.row_block, ordering.blocks);
  ordering.column_order = order_by_block(ordering.column_block, ordering.blocks);
  ordering.block_rows = block_sizes(ordering.row_block, ordering.blocks);
  ordering.block_columns = block_sizes(ordering.column_block, ordering.blocks);
  const std::vector<std::int32_t>& net_block =
      form == BlockAngularForm::kDual ? ordering.column_block : ordering.row_block;
  ordering.linking_size = std::count(net_block.begin(), net_block.end(), BlockAngularOrdering::kLinking);
  ordering.imbalance = imbalance_of(form == BlockAngularForm::kDual ? ordering.block_rows : ordering.block_columns);
  return ordering;
}

}  // namespace sdc::tables
