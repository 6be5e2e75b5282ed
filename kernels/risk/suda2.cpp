#include "kernels/risk/suda2.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>

#include "kernels/core/error.h"

namespace sdc {
namespace {

// Chunks are a function of the data size only, never of the thread count (docs/rng.md).
constexpr std::size_t kChunkWords = 256;  // 16384 records
constexpr std::size_t kMaxKeys = 63;
// Dense counting when the tuple space is at most this many counters per flagged record (or small).
constexpr std::uint64_t kDenseCountersPerRecord = 4;
constexpr std::uint64_t kDenseMinimumSpace = std::uint64_t{1} << 16;
// Below this many counters, one histogram per thread instead of shared atomic counters.
constexpr std::uint64_t kPrivateHistogramSpace = std::uint64_t{1} << 12;

template <typename Body>
void for_each_word_chunk(std::size_t words, Body&& body) {
  const std::size_t chunks = (words + kChunkWords - 1) / kChunkWords;
  tbb::parallel_for(std::size_t{0}, chunks,
                    [&](std::size_t c) { body(c, c * kChunkWords, std::min(words, (c + 1) * kChunkWords)); });
}

std::uint64_t valid_bits(std::size_t records, std::size_t word) {
  const std::size_t begin = word * 64;
  if (begin + 64 <= records) return ~std::uint64_t{0};
  return (std::uint64_t{1} << (records - begin)) - 1;
}

std::uint8_t capped(std::uint64_t count) {
  return static_cast<std::uint8_t>(std::min<std::uint64_t>(count, kCountMore));
}

/// Indices of the flagged records, ascending.
std::vector<std::uint32_t> flagged_records(std::span<const std::uint64_t> flags, std::size_t records) {
  const std::size_t words = record_bit_words(records);
  const std::size_t chunks = (words + kChunkWords - 1) / kChunkWords;
  std::vector<std::size_t> before(chunks + 1, 0);
  for_each_word_chunk(words, [&](std::size_t c, std::size_t begin, std::size_t end) {
    std::size_t count = 0;
    for (std::size_t w = begin; w < end; ++w)
      count += static_cast<std::size_t>(std::popcount(flags[w] & valid_bits(records, w)));
    before[c + 1] = count;
  });
  std::partial_sum(before.begin(), before.end(), before.begin());
  std::vector<std::uint32_t> out(before.back());
  for_each_word_chunk(words, [&](std::size_t c, std::size_t begin, std::size_t end) {
    std::size_t next = before[c];
    for (std::size_t w = begin; w < end; ++w) {
      for (std::uint64_t bits = flags[w] & valid_bits(records, w); bits != 0; bits &= bits - 1)
        out[next++] = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
    }
  });
  return out;
}

void count_dense(const KeyColumns& keys, std::span<const std::size_t> subset, std::span<const std::uint32_t> records,
                 std::uint64_t space, std::span<std::uint8_t> out) {
  const std::vector<std::uint64_t> codes = subset_tuple_indices(keys, subset, records);
  std::vector<std::uint32_t> counts(space, 0);
  if (space <= kPrivateHistogramSpace) {
    tbb::enumerable_thread_specific<std::vector<std::uint32_t>> histograms(std::vector<std::uint32_t>(space, 0));
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, codes.size(), 1 << 14), [&](const auto& range) {
      auto& histogram = histograms.local();
      for (std::size_t p = range.begin(); p != range.end(); ++p) ++histogram[codes[p]];
    });
    for (const auto& histogram : histograms)
      for (std::size_t c = 0; c < space; ++c) counts[c] += histogram[c];
  } else {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, codes.size(), 1 << 14), [&](const auto& range) {
      for (std::size_t p = range.begin(); p != range.end(); ++p)
        std::atomic_ref<std::uint32_t>(counts[codes[p]]).fetch_add(1, std::memory_order_relaxed);
    });
  }
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, codes.size(), 1 << 14), [&](const auto& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p) out[records[p]] = capped(counts[codes[p]]);
  });
}

void count_by_grouping(const KeyColumns& keys, std::span<const std::size_t> subset,
                       std::span<const std::uint32_t> records, std::span<std::uint8_t> out) {
  std::vector<std::vector<std::int32_t>> gathered(subset.size(), std::vector<std::int32_t>(records.size()));
  KeyColumns projected;
  for (std::size_t t = 0; t < subset.size(); ++t) {
    const auto& source = keys.codes[subset[t]];
    auto& column = gathered[t];
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, records.size(), 1 << 14), [&](const auto& range) {
      for (std::size_t p = range.begin(); p != range.end(); ++p) column[p] = source[records[p]];
    });
    projected.codes.emplace_back(column);
    projected.level_counts.push_back(keys.level_counts[subset[t]]);
  }
  const KeyGrouping grouping = group_by_keys(projected);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, records.size(), 1 << 14), [&](const auto& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p)
      out[records[p]] = capped(grouping.class_size(grouping.record_class[p]));
  });
}

void count_local(const KeyColumns& keys, std::span<const std::size_t> subset, std::span<const std::uint64_t> candidates,
                 std::span<std::uint8_t> out) {
  const std::size_t n = keys.record_count();
  SDC_CHECK(candidates.size() == record_bit_words(n), "one candidate bit per record");
  SDC_CHECK(out.size() == n, "one count per record");
  const std::vector<std::uint32_t> records = flagged_records(candidates, n);
  if (records.empty()) return;
  std::uint64_t space = 1;
  bool fits = true;
  for (std::size_t j : subset) {
    SDC_CHECK(j < keys.key_count(), "subset key index within the keys");
    fits = fits && !__builtin_mul_overflow(space, static_cast<std::uint64_t>(keys.level_counts[j]) + 1U, &space);
  }
  const std::uint64_t dense_limit = std::max(kDenseMinimumSpace, kDenseCountersPerRecord * records.size());
  if (fits && space <= dense_limit)
    count_dense(keys, subset, records, space, out);
  else
    count_by_grouping(keys, subset, records, out);
}

std::vector<std::size_t> subset_keys(std::uint64_t mask) {
  std::vector<std::size_t> keys;
  for (; mask != 0; mask &= mask - 1) keys.push_back(static_cast<std::size_t>(std::countr_zero(mask)));
  return keys;
}

/// All subsets of `size` keys out of `key_count`, as bit masks in increasing order (Gosper's hack).
std::vector<std::uint64_t> subsets_of_size(std::size_t key_count, std::size_t size) {
  std::vector<std::uint64_t> out;
  const std::uint64_t end = std::uint64_t{1} << key_count;
  for (std::uint64_t x = (std::uint64_t{1} << size) - 1; x < end;) {
    out.push_back(x);
    const std::uint64_t lowest = x & (~x + 1);
    const std::uint64_t ripple = x + lowest;
    if (ripple == 0) break;
    x = (((ripple ^ x) >> 2) / lowest) | ripple;
  }
  return out;
}

double binomial(std::size_t n, std::size_t k) {
  double result = 1.0;
  for (std::size_t i = 1; i <= k; ++i) result = result * static_cast<double>(n - k + i) / static_cast<double>(i);
  return std::round(result);
}

std::size_t padded_key_count(std::size_t key_count) { return std::max<std::size_t>(key_count, 3); }

void validate(const KeyColumns& keys, const Suda2Options& options) {
  const std::size_t m = keys.key_count();
  SDC_CHECK(keys.level_counts.size() == m, "one level count per key");
  if (m == 0) throw ParameterError("suda2: no key variables given");
  if (m > kMaxKeys)
    throw ParameterError("suda2: at most " + std::to_string(kMaxKeys) + " key variables, got " + std::to_string(m));
  if (options.max_size > m)
    throw ParameterError("suda2: max_size " + std::to_string(options.max_size) +
                         " exceeds the number of key variables (" + std::to_string(m) + ")");
  if (!(options.dis_fraction > 0.0 && options.dis_fraction <= 1.0))
    throw ParameterError("suda2: DisFraction (dis_fraction) must lie in (0, 1]");
  const std::size_t max_size = options.max_size == 0 ? m : options.max_size;
  for (std::size_t k = 1; k <= max_size; ++k) {
    if (binomial(m, k - 1) + binomial(m, k) > static_cast<double>(kMaxSubsetsPerLevelPair))
      throw ParameterError("suda2: " + std::to_string(m) + " key variables with max_size " + std::to_string(max_size) +
                           " need more than " + std::to_string(kMaxSubsetsPerLevelPair) +
                           " key subsets in two adjacent levels; lower max_size");
  }
}

/// Per-record flags of one subset and where to find them.
struct Level {
  std::vector<std::uint64_t> masks;  ///< increasing
  std::vector<RecordBits> dead;      ///< per subset: unique on it or a subset of it, or missing on a key of it

  std::size_t index_of(std::uint64_t mask) const {
    const auto it = std::lower_bound(masks.begin(), masks.end(), mask);
    SDC_CHECK(it != masks.end() && *it == mask, "immediate subset present in the previous level");
    return static_cast<std::size_t>(it - masks.begin());
  }
};

struct ChunkSums {
  ExactSum inverse_power;
  ExactSum score;
  std::int64_t scored = 0;
  std::vector<ExactSum> key;
  std::vector<ExactSum> level;
};

}  // namespace

std::vector<std::uint64_t> subset_tuple_indices(const KeyColumns& keys, std::span<const std::size_t> subset,
                                                std::span<const std::uint32_t> records) {
  std::vector<std::uint64_t> radix(subset.size());
  std::uint64_t scale = 1;
  for (std::size_t t = subset.size(); t-- > 0;) {
    radix[t] = scale;
    scale *= static_cast<std::uint64_t>(keys.level_counts[subset[t]]) + 1U;
  }
  std::vector<std::uint64_t> codes(records.size());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, records.size(), 1 << 14), [&](const auto& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p) {
      std::uint64_t code = 0;
      for (std::size_t t = 0; t < subset.size(); ++t)
        code += static_cast<std::uint64_t>(static_cast<std::int64_t>(keys.codes[subset[t]][records[p]]) + 1) * radix[t];
      codes[p] = code;
    }
  });
  return codes;
}

SubsetCounter make_local_subset_counter(const KeyColumns& keys) {
  SDC_CHECK(keys.level_counts.size() == keys.key_count(), "one level count per key");
  for (std::size_t j = 0; j < keys.key_count(); ++j) {
    SDC_CHECK(keys.codes[j].size() == keys.record_count(), "key columns of equal length");
    const std::int32_t levels = keys.level_counts[j];
    const bool in_range = tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, keys.record_count(), 1 << 16), true,
        [&](const auto& range, bool ok) {
          for (std::size_t i = range.begin(); ok && i != range.end(); ++i)
            ok = keys.codes[j][i] >= -1 && keys.codes[j][i] < levels;
          return ok;
        },
        [](bool a, bool b) { return a && b; });
    if (!in_range) throw InvalidInput("suda2: key variable " + std::to_string(j) + " has a code outside its levels");
  }
  return [&keys](std::span<const std::size_t> subset, std::span<const std::uint64_t> candidates,
                 std::span<std::uint8_t> out) { count_local(keys, subset, candidates, out); };
}

double suda2_q(std::size_t key_count) { return 1.0 + (8.0 - static_cast<double>(padded_key_count(key_count))) / 20.0; }

double suda2_msu_weight(std::size_t key_count, std::size_t size, Suda2Weights weights) {
  const std::size_t m = padded_key_count(key_count);
  SDC_CHECK(size >= 1 && size <= m, "MSU size within 1..M");
  if (weights == Suda2Weights::kElliot) {
    double factorial = 1.0;
    for (std::size_t i = 2; i <= m - size; ++i) factorial *= static_cast<double>(i);
    return factorial;
  }
  return (std::ldexp(1.0, static_cast<int>(m - size)) - 1.0) / binomial(m, size);
}

Suda2Local suda2_local(const KeyColumns& keys, const SubsetCounter& counter, const Suda2Options& options) {
  validate(keys, options);
  const std::size_t n = keys.record_count();
  const std::size_t m = keys.key_count();
  const std::size_t max_size = options.max_size == 0 ? m : options.max_size;
  const std::size_t words = record_bit_words(n);

  Suda2Local local;
  local.score.assign(n, 0.0);
  if (options.contributions) local.contribution.assign(n * m, 0.0);
  Suda2Partial& partial = local.partial;
  partial.msus_by_size.assign(max_size, 0);

  std::vector<std::uint8_t> counts(n, 0);
  RecordBits candidates(words);

  // U and D: every record, whole key tuples.
  {
    for (std::size_t w = 0; w < words; ++w) candidates[w] = valid_bits(n, w);
    std::vector<std::size_t> all_keys(m);
    std::iota(all_keys.begin(), all_keys.end(), std::size_t{0});
    counter(all_keys, candidates, counts);
    for (std::uint8_t c : counts) {
      partial.unique_records += c == kCountUnique ? 1 : 0;
      partial.pair_records += c == kCountPair ? 1 : 0;
    }
  }

  Level previous;
  for (std::size_t size = 1; size <= max_size; ++size) {
    Level current;
    current.masks = subsets_of_size(m, size);
    const bool last_level = size == max_size;
    if (!last_level) current.dead.resize(current.masks.size());
    const double weight = suda2_msu_weight(m, size, options.weights);

    for (std::size_t s = 0; s < current.masks.size(); ++s) {
      const std::uint64_t mask = current.masks[s];
      const std::vector<std::size_t> subset = subset_keys(mask);
      std::vector<const std::uint64_t*> parents;
      for (std::size_t key : subset)
        if (size > 1) parents.push_back(previous.dead[previous.index_of(mask & ~(std::uint64_t{1} << key))].data());

      for_each_word_chunk(words, [&](std::size_t, std::size_t begin, std::size_t end) {
        for (std::size_t w = begin; w < end; ++w) {
          std::uint64_t alive = valid_bits(n, w);
          if (size == 1) {
            const auto column = keys.codes[subset[0]];
            for (std::uint64_t bits = alive; bits != 0; bits &= bits - 1) {
              const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
              if (column[i] < 0) alive &= ~(std::uint64_t{1} << (i - w * 64));
            }
          }
          for (const std::uint64_t* dead : parents) alive &= ~dead[w];
          candidates[w] = alive;
        }
      });

      counter(subset, candidates, counts);

      std::vector<std::int64_t> chunk_msus((words + kChunkWords - 1) / kChunkWords, 0);
      for_each_word_chunk(words, [&](std::size_t c, std::size_t begin, std::size_t end) {
        for (std::size_t w = begin; w < end; ++w) {
          std::uint64_t unique = 0;
          for (std::uint64_t bits = candidates[w]; bits != 0; bits &= bits - 1) {
            const auto bit = static_cast<std::size_t>(std::countr_zero(bits));
            if (counts[w * 64 + bit] == kCountUnique) unique |= std::uint64_t{1} << bit;
          }
          for (std::uint64_t bits = unique; bits != 0; bits &= bits - 1) {
            const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
            local.score[i] += weight;
            if (options.contributions)
              for (std::size_t key : subset) local.contribution[i * m + key] += weight;
          }
          chunk_msus[c] += std::popcount(unique);
          candidates[w] = (~candidates[w] | unique) & valid_bits(n, w);  // now: dead on this subset
        }
      });
      if (!last_level) current.dead[s] = candidates;
      for (std::int64_t msus : chunk_msus) partial.msus_by_size[size - 1] += msus;
    }
    previous = std::move(current);
  }

  // Record-local sums, folded in chunk order (exact sums: the order does not change the bits anyway).
  const double q = suda2_q(m);
  std::vector<std::size_t> level_offsets(m + 1, 0);
  for (std::size_t j = 0; j < m; ++j)
    level_offsets[j + 1] = level_offsets[j] + static_cast<std::size_t>(keys.level_counts[j]);
  constexpr std::size_t kChunkRecords = kChunkWords * 64;
  std::vector<ChunkSums> chunks((n + kChunkRecords - 1) / kChunkRecords);
  tbb::parallel_for(std::size_t{0}, chunks.size(), [&](std::size_t c) {
    ChunkSums& sums = chunks[c];
    if (options.contributions) {
      sums.key.resize(m);
      sums.level.resize(level_offsets[m]);
    }
    for (std::size_t i = c * kChunkRecords; i < std::min(n, (c + 1) * kChunkRecords); ++i) {
      const double score = local.score[i];
      if (score == 0.0) continue;
      ++sums.scored;
      sums.score.add(score);
      sums.inverse_power.add(1.0 / std::pow(score, q));
      if (!options.contributions) continue;
      for (std::size_t j = 0; j < m; ++j) {
        const double share = local.contribution[i * m + j];
        if (share == 0.0) continue;
        sums.key[j].add(share);
        sums.level[level_offsets[j] + static_cast<std::size_t>(keys.codes[j][i])].add(share);
      }
    }
  });
  if (options.contributions) {
    partial.key_contribution.resize(m);
    partial.level_contribution.resize(level_offsets[m]);
    partial.level_offsets.assign(level_offsets.begin(), level_offsets.end() - 1);
  }
  for (const ChunkSums& sums : chunks) {
    partial.scored_records += sums.scored;
    partial.score_sum.merge(sums.score);
    partial.inverse_score_power_sum.merge(sums.inverse_power);
    for (std::size_t j = 0; j < sums.key.size(); ++j) partial.key_contribution[j].merge(sums.key[j]);
    for (std::size_t l = 0; l < sums.level.size(); ++l) partial.level_contribution[l].merge(sums.level[l]);
  }
  for (std::int64_t msus : partial.msus_by_size) partial.msu_count += msus;
  return local;
}

namespace {

Suda2Partial suda2_merged(const Suda2Partial& a, const Suda2Partial& b) {
  SDC_CHECK(a.msus_by_size.size() == b.msus_by_size.size(), "merging SUDA2 partials of different max_size");
  SDC_CHECK(a.key_contribution.size() == b.key_contribution.size() && a.level_offsets == b.level_offsets,
            "merging SUDA2 partials of different keys");
  Suda2Partial out = a;
  out.unique_records += b.unique_records;
  out.pair_records += b.pair_records;
  out.inverse_score_power_sum.merge(b.inverse_score_power_sum);
  out.score_sum.merge(b.score_sum);
  out.scored_records += b.scored_records;
  out.msu_count += b.msu_count;
  for (std::size_t s = 0; s < out.msus_by_size.size(); ++s) out.msus_by_size[s] += b.msus_by_size[s];
  for (std::size_t j = 0; j < out.key_contribution.size(); ++j) out.key_contribution[j].merge(b.key_contribution[j]);
  for (std::size_t l = 0; l < out.level_contribution.size(); ++l)
    out.level_contribution[l].merge(b.level_contribution[l]);
  return out;
}

}  // namespace

void suda2_merge(Suda2Partial& into, const Suda2Partial& from) { into = suda2_merged(into, from); }

std::vector<double> suda2_dis_scores(std::span<const double> scores, const Suda2Partial& total, std::size_t key_count,
                                     const Suda2Options& options) {
  if (!(options.dis_fraction > 0.0 && options.dis_fraction <= 1.0))
    throw ParameterError("suda2: DisFraction (dis_fraction) must lie in (0, 1]");
  std::vector<double> dis(scores.size(), 0.0);
  if (total.scored_records == 0) return dis;
  // A record with a positive score is unique on all keys, so U >= 1 and A > 0 here.
  SDC_CHECK(total.unique_records > 0, "records with a positive SUDA score are sample uniques");
  const double phi = options.dis_fraction;
  const auto u = static_cast<double>(total.unique_records);
  const auto d = static_cast<double>(total.pair_records);
  const double dis_probability = u * phi / (u * phi + d * (1.0 - phi));
  const double excess = u / dis_probability - u;
  const double a = total.inverse_score_power_sum.value();
  const double q = suda2_q(key_count);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, scores.size(), 1 << 14), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i)
      if (scores[i] > 0.0) dis[i] = 1.0 / (1.0 + excess / (std::pow(scores[i], q) * a));
  });
  return dis;
}

Suda2AttributeContributions suda2_attribute_contributions(const Suda2Partial& total) {
  Suda2AttributeContributions out;
  const double score_total = total.score_sum.value();
  const std::size_t m = total.key_contribution.size();
  out.key_percent.assign(m, 0.0);
  out.level_percent.assign(total.level_contribution.size(), 0.0);
  for (std::size_t j = 0; j < m; ++j) {
    const double key_total = total.key_contribution[j].value();
    if (score_total > 0.0) out.key_percent[j] = 100.0 * key_total / score_total;
    if (key_total == 0.0) continue;
    const std::size_t end = j + 1 < m ? total.level_offsets[j + 1] : total.level_contribution.size();
    for (std::size_t l = total.level_offsets[j]; l < end; ++l)
      out.level_percent[l] = 100.0 * total.level_contribution[l].value() / key_total;
  }
  return out;
}

}  // namespace sdc
