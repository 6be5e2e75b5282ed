#include "kernels/swapping/targeted_swap.h"

#include <tbb/parallel_sort.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/risk/frequency_count.h"

namespace sdc::swapping {
namespace {

/// E ~ Exp(1) from one Philox word: −ln u with u = (k + 1/2)·2^-53 in (0, 1), never 0 or infinite.
double exponential_from_bits(std::uint64_t bits) {
  return -std::log((static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53);
}

bool same_codes(std::span<const std::int32_t> codes, std::size_t a, std::size_t b) { return codes[a] == codes[b]; }

/// Households in lexicographic order of their geography, ties by household id.
std::vector<std::uint32_t> geography_order(const HouseholdSummaries& households) {
  std::vector<std::uint32_t> order(households.size());
  std::iota(order.begin(), order.end(), 0U);
  tbb::parallel_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const auto ga = households.geography_of(a);
    const auto gb = households.geography_of(b);
    const auto c = std::lexicographical_compare_three_way(ga.begin(), ga.end(), gb.begin(), gb.end());
    return c != 0 ? c < 0 : households.ids[a] < households.ids[b];
  });
  return order;
}

/// Areas of one level as runs of the geography order: area_of[i] for household i, and the runs.
struct LevelAreas {
  std::vector<std::uint32_t> area_of;
  std::vector<std::uint32_t> begins;  ///< area a is order[begins[a], begins[a + 1])
};

LevelAreas level_areas(const HouseholdSummaries& households, std::span<const std::uint32_t> order, std::size_t level) {
  LevelAreas areas;
  areas.area_of.resize(households.size());
  for (std::size_t position = 0; position < order.size(); ++position) {
    const std::uint32_t i = order[position];
    bool fresh = position == 0;
    if (!fresh) {
      const auto here = households.geography_of(i).first(level + 1);
      const auto before = households.geography_of(order[position - 1]).first(level + 1);
      fresh = !std::equal(here.begin(), here.end(), before.begin());
    }
    if (fresh) areas.begins.push_back(static_cast<std::uint32_t>(position));
    areas.area_of[i] = static_cast<std::uint32_t>(areas.begins.size() - 1);
  }
  areas.begins.push_back(static_cast<std::uint32_t>(order.size()));
  return areas;
}

/// Each household's dense id of its values on `profile` (ids in lexicographic order of the values).
std::vector<std::uint32_t> profile_ids(const HouseholdSummaries& households, std::span<const std::size_t> profile) {
  std::vector<std::uint32_t> ids(households.size(), 0);
  if (profile.empty()) return ids;
  auto value = [&](std::uint32_t i, std::size_t v) { return households.similar[i * households.similar_count + v]; };
  std::vector<std::uint32_t> order(households.size());
  std::iota(order.begin(), order.end(), 0U);
  tbb::parallel_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    for (const std::size_t v : profile)
      if (value(a, v) != value(b, v)) return value(a, v) < value(b, v);
    return a < b;
  });
  std::uint32_t id = 0;
  for (std::size_t position = 1; position < order.size(); ++position) {
    const bool same = std::all_of(profile.begin(), profile.end(), [&](std::size_t v) {
      return value(order[position], v) == value(order[position - 1], v);
    });
    if (!same) ++id;
    ids[order[position]] = id;
  }
  return ids;
}

/// The donors of one level and profile: per (profile values, area) a run of households sorted by κ
/// descending with a head that skips used households lazily, and per profile values the ordered heads.
class DonorIndex {
 public:
  /// `profile_of`: each household's dense id of its profile values (profile_ids).
  DonorIndex(const HouseholdSummaries& households, std::span<const std::uint32_t> profile_of,
             std::span<const std::uint32_t> area_of, std::span<const double> kappa)
      : households_(households), kappa_(kappa), bucket_of_(households.size()) {
    // Sorted as packed entries, not as indexes into the summaries: the comparisons then read one cache
    // line instead of four arrays.
    struct Entry {
      std::uint64_t profile_area = 0;
      double kappa = 0.0;
      std::int64_t id = 0;
      std::uint32_t index = 0;
    };
    std::vector<Entry> entries(households.size());
    for (std::uint32_t i = 0; i < entries.size(); ++i)
      entries[i] = {(std::uint64_t{profile_of[i]} << 32) | area_of[i], kappa[i], households.ids[i], i};
    tbb::parallel_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      if (a.profile_area != b.profile_area) return a.profile_area < b.profile_area;
      if (a.kappa != b.kappa) return a.kappa > b.kappa;
      return a.id < b.id;
    });
    donors_.resize(entries.size());
    for (std::size_t position = 0; position < entries.size(); ++position) {
      const Entry& entry = entries[position];
      donors_[position] = entry.index;
      const bool new_bucket = position == 0 || (entry.profile_area >> 32) != (entries[position - 1].profile_area >> 32);
      if (new_bucket) heads_.emplace_back();
      if (new_bucket || entry.profile_area != entries[position - 1].profile_area) {
        if (!runs_.empty()) runs_.back().end = static_cast<std::uint32_t>(position);
        runs_.push_back({static_cast<std::uint32_t>(position), 0, static_cast<std::uint32_t>(position),
                         area_of[entry.index], static_cast<std::uint32_t>(heads_.size() - 1)});
      }
      bucket_of_[entry.index] = static_cast<std::uint32_t>(heads_.size() - 1);
    }
    if (!runs_.empty()) runs_.back().end = static_cast<std::uint32_t>(donors_.size());
    for (std::uint32_t r = 0; r < runs_.size(); ++r) heads_[runs_[r].bucket].insert(head_key(r));
  }

  /// The unused household of largest κ with `household`'s profile values outside `area`, if any.
  std::optional<std::uint32_t> best_donor(std::uint32_t household, std::uint32_t area,
                                          const std::vector<std::uint8_t>& used) {
    auto& heads = heads_[bucket_of_[household]];
    auto it = heads.begin();
    while (it != heads.end()) {
      Run& run = runs_[it->run];
      if (run.area == area) {
        ++it;
        continue;
      }
      std::uint32_t head = run.head;
      while (head < run.end && used[donors_[head]] != 0) ++head;
      if (head == run.head) return donors_[head];
      // The stored key was stale (its household is used): refile the run under its new head and look
      // again from the top, so the first fresh head found outside `area` is the largest.
      const std::uint32_t r = it->run;
      heads.erase(it);
      run.head = head;
      if (head < run.end) heads.insert(head_key(r));
      it = heads.begin();
    }
    return std::nullopt;
  }

 private:
  struct Run {
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
    std::uint32_t head = 0;
    std::uint32_t area = 0;
    std::uint32_t bucket = 0;
  };
  struct HeadKey {
    double kappa = 0.0;
    std::int64_t id = 0;
    std::uint32_t run = 0;
    bool operator<(const HeadKey& other) const {
      if (kappa != other.kappa) return kappa > other.kappa;
      return id < other.id;
    }
  };

  HeadKey head_key(std::uint32_t r) const {
    const std::uint32_t i = donors_[runs_[r].head];
    return {kappa_[i], households_.ids[i], r};
  }

  const HouseholdSummaries& households_;
  std::span<const double> kappa_;
  std::vector<std::uint32_t> donors_;
  std::vector<std::uint32_t> bucket_of_;
  std::vector<Run> runs_;
  std::vector<std::set<HeadKey>> heads_;
};

}  // namespace

std::uint64_t value_word(const RecordValues& values, std::size_t row) {
  return std::visit(
      [row](const auto& span) -> std::uint64_t {
        using T = typename std::decay_t<decltype(span)>::value_type;
        if constexpr (std::is_same_v<T, double>)
          return std::bit_cast<std::uint64_t>(span[row]);
        else
          return static_cast<std::uint64_t>(static_cast<std::int64_t>(span[row]));
      },
      values);
}

double targeted_swap_threshold(double risk_threshold, std::int64_t k_anonymity) {
  if (risk_threshold > 0.0) return risk_threshold;
  if (k_anonymity <= 0) return 2.0;
  return 1.0 / static_cast<double>(k_anonymity);
}

KeyColumns level_keys(const KeyColumns& risk_variables, const KeyColumns& geography, std::size_t level) {
  KeyColumns keys = risk_variables;
  for (std::size_t h = 0; h <= level; ++h) {
    keys.codes.push_back(geography.codes[h]);
    keys.level_counts.push_back(geography.level_counts[h]);
  }
  return keys;
}

std::vector<double> person_risk_from_counts(std::span<const double> counts) {
  std::vector<double> risk(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r) risk[r] = 1.0 / counts[r];
  return risk;
}

std::vector<std::vector<double>> person_risk_per_level(const KeyColumns& risk_variables, const KeyColumns& geography) {
  std::vector<std::vector<double>> risk;
  for (std::size_t h = 0; h < geography.key_count(); ++h) {
    const LocalFrequencyCount counted = frequency_count_local(level_keys(risk_variables, geography, h), {});
    std::vector<double> class_weights(counted.classes.class_count());
    const RecordFrequencies frequencies =
        frequency_count_assign(counted.record_class, counted.classes.counts, class_weights);
    risk.push_back(person_risk_from_counts(frequencies.fk));
  }
  return risk;
}

std::optional<HouseholdDisagreement> first_household_disagreement(const HouseholdRecords& records) {
  const std::size_t n = records.household_ids.size();
  std::size_t first = 0;
  for (std::size_t r = 1; r < n; ++r) {
    if (records.household_ids[r] != records.household_ids[first]) {
      first = r;
      continue;
    }
    for (std::size_t h = 0; h < records.geography.key_count(); ++h)
      if (!same_codes(records.geography.codes[h], first, r)) return HouseholdDisagreement{first, r, h};
    for (std::size_t c = 0; c < records.carry_along.size(); ++c)
      if (value_word(records.carry_along[c], first) != value_word(records.carry_along[c], r))
        return HouseholdDisagreement{first, r, records.geography.key_count() + c};
  }
  return std::nullopt;
}

HouseholdSummaries summarise_households(const HouseholdRecords& records) {
  HouseholdSummaries out;
  out.levels = records.geography.key_count();
  out.similar_count = records.similar.size();
  out.carry_count = records.carry_along.size();
  SDC_CHECK(records.person_risk.size() == out.levels, "one person risk column per level");
  const std::size_t n = records.household_ids.size();
  for (std::size_t r = 0; r < n; ++r) {
    if (r > 0 && records.household_ids[r] == records.household_ids[r - 1]) {
      ++out.members.back();
      double* risk = out.risk.data() + (out.size() - 1) * out.levels;
      for (std::size_t h = 0; h < out.levels; ++h) risk[h] = std::max(risk[h], records.person_risk[h][r]);
      continue;
    }
    out.ids.push_back(records.household_ids[r]);
    out.first_rows.push_back(static_cast<std::int64_t>(r));
    out.members.push_back(1);
    for (std::size_t h = 0; h < out.levels; ++h) {
      out.geography.push_back(records.geography.codes[h][r]);
      out.risk.push_back(records.person_risk[h][r]);
    }
    for (const auto& codes : records.similar) out.similar.push_back(codes[r]);
    for (const auto& values : records.carry_along) out.carry.push_back(value_word(values, r));
  }
  return out;
}

void append_households(HouseholdSummaries& into, const HouseholdSummaries& more) {
  if (into.size() == 0) {
    into.levels = more.levels;
    into.similar_count = more.similar_count;
    into.carry_count = more.carry_count;
  }
  SDC_CHECK(
      into.levels == more.levels && into.similar_count == more.similar_count && into.carry_count == more.carry_count,
      "household summaries of the same variables");
  auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  append(into.ids, more.ids);
  append(into.first_rows, more.first_rows);
  append(into.members, more.members);
  append(into.geography, more.geography);
  append(into.similar, more.similar);
  append(into.carry, more.carry);
  append(into.risk, more.risk);
}

std::vector<std::vector<AreaParent>> area_parents(const KeyColumns& geography) {
  std::vector<std::vector<AreaParent>> levels(geography.key_count() > 0 ? geography.key_count() - 1 : 0);
  for (std::size_t h = 1; h < geography.key_count(); ++h) {
    auto& pairs = levels[h - 1];
    const auto area = geography.codes[h];
    const auto parent = geography.codes[h - 1];
    for (std::size_t r = 0; r < area.size(); ++r) {
      if (r > 0 && area[r] == area[r - 1] && parent[r] == parent[r - 1]) continue;
      pairs.push_back({area[r], parent[r], static_cast<std::int64_t>(r)});
    }
    std::stable_sort(pairs.begin(), pairs.end(), [](const AreaParent& a, const AreaParent& b) {
      return a.area != b.area ? a.area < b.area : a.parent < b.parent;
    });
    pairs.erase(
        std::unique(pairs.begin(), pairs.end(),
                    [](const AreaParent& a, const AreaParent& b) { return a.area == b.area && a.parent == b.parent; }),
        pairs.end());
  }
  return levels;
}

std::optional<NestingConflict> first_nesting_conflict(std::size_t level, std::span<const AreaParent> pairs) {
  for (std::size_t i = 1; i < pairs.size(); ++i)
    if (pairs[i].area == pairs[i - 1].area && pairs[i].parent != pairs[i - 1].parent)
      return NestingConflict{level, pairs[i - 1], pairs[i]};
  return std::nullopt;
}

std::vector<std::uint8_t> household_levels(const HouseholdSummaries& households, double threshold) {
  std::vector<std::uint8_t> levels(households.size(), static_cast<std::uint8_t>(households.levels));
  for (std::size_t i = 0; i < households.size(); ++i)
    for (std::size_t h = 0; h < households.levels; ++h)
      if (households.risk[i * households.levels + h] > threshold) {
        levels[i] = static_cast<std::uint8_t>(h);
        break;
      }
  return levels;
}

std::int64_t quota_total(std::int64_t households, double swap_fraction, std::uint64_t seed) {
  const double target = static_cast<double>(households) * swap_fraction / 2.0;
  // A target that is whole in decimals (200 households at 0.07: 7) may be a few ulps off in binary.
  const double nearest = std::round(target);
  if (std::abs(target - nearest) <= 1e-9 * std::max(1.0, target)) return static_cast<std::int64_t>(nearest);
  const auto floor = static_cast<std::int64_t>(std::floor(target));
  const RecordRng rng(seed, StepId::kTargetedSwapQuota);
  const bool up = (rng.bits({0, 2, 0, 0})[0] >> 63) != 0;
  return floor + (up ? 1 : 0);
}

std::vector<std::int64_t> area_quotas(std::span<const std::int64_t> area_households, std::int64_t total,
                                      std::uint64_t seed) {
  __extension__ using Wide = __int128;
  const std::int64_t households = std::accumulate(area_households.begin(), area_households.end(), std::int64_t{0});
  std::vector<std::int64_t> quotas(area_households.size(), 0);
  if (households == 0) return quotas;
  std::int64_t assigned = 0;
  for (std::size_t a = 0; a < quotas.size(); ++a) {
    quotas[a] = static_cast<std::int64_t>(static_cast<Wide>(total) * area_households[a] / households);
    assigned += quotas[a];
  }
  const auto extra = static_cast<std::size_t>(total - assigned);
  SDC_CHECK(extra <= quotas.size(), "the fractional parts of the quotas sum to fewer than one per area");
  const RecordRng rng(seed, StepId::kTargetedSwapQuota);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> keys(quotas.size());
  for (std::uint32_t a = 0; a < keys.size(); ++a) keys[a] = {rng.bits({a, 1, 0, 0})[0], a};
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(extra), keys.end());
  for (std::size_t e = 0; e < extra; ++e) ++quotas[keys[e].second];
  return quotas;
}

TargetedSwapPlan plan_targeted_swap(const HouseholdSummaries& households, const TargetedSwapOptions& options,
                                    std::uint64_t seed) {
  const std::size_t n = households.size();
  const std::size_t levels = households.levels;
  SDC_CHECK(n < std::numeric_limits<std::uint32_t>::max(), "fewer than 2^32 households");
  SDC_CHECK(levels >= 1 && levels < 255, "a hierarchy of 1 to 254 levels");
  SDC_CHECK(!options.profiles.empty() && options.profiles.size() < 256, "1 to 255 similarity profiles");
  TargetedSwapPlan plan;
  plan.households = static_cast<std::int64_t>(n);
  plan.levels.resize(levels);
  const std::vector<std::uint8_t> level_of = household_levels(households, options.threshold);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t h = 0; h < levels; ++h)
      if (households.risk[i * levels + h] > options.threshold) ++plan.levels[h].risky_households;
    if (level_of[i] < levels) ++plan.levels[level_of[i]].must_swap;
  }

  const std::vector<std::uint32_t> order = geography_order(households);
  const LevelAreas finest = level_areas(households, order, levels - 1);
  const std::size_t finest_count = finest.begins.size() - 1;
  std::vector<std::int64_t> area_households(finest_count);
  for (std::size_t a = 0; a < finest_count; ++a) area_households[a] = finest.begins[a + 1] - finest.begins[a];
  plan.quota_total = quota_total(static_cast<std::int64_t>(n), options.swap_fraction, seed);
  const std::vector<std::int64_t> quotas = area_quotas(area_households, plan.quota_total, seed);

  const RecordRng donor_rng(seed, StepId::kTargetedSwapDonor);
  const RecordRng quota_rng(seed, StepId::kTargetedSwapQuota);
  std::vector<std::uint8_t> used(n, 0);
  std::vector<std::uint8_t> failed(n, 0);
  std::vector<std::int64_t> initiated(finest_count, 0);  // s_a: initiators swapped at coarser levels
  std::vector<double> kappa(n);
  std::vector<std::vector<std::uint32_t>> profile_of;
  for (const auto& profile : options.profiles) profile_of.push_back(profile_ids(households, profile));
  std::vector<std::uint32_t> swap_set;
  std::vector<std::pair<double, std::uint32_t>> fill;

  for (std::size_t h = 0; h < levels; ++h) {
    const LevelAreas areas = h + 1 == levels ? finest : level_areas(households, order, h);
    for (std::size_t i = 0; i < n; ++i)
      kappa[i] = households.risk[i * levels + h] /
                 exponential_from_bits(donor_rng.bits({static_cast<std::uint64_t>(households.ids[i]), h, 0, 0})[0]);
    std::vector<DonorIndex> donors;
    for (const auto& profile : profile_of) donors.emplace_back(households, profile, areas.area_of, kappa);

    for (std::size_t a = 0; a + 1 < areas.begins.size(); ++a) {
      const auto members = std::span(order).subspan(areas.begins[a], areas.begins[a + 1] - areas.begins[a]);
      swap_set.clear();
      for (const std::uint32_t i : members)
        if (used[i] == 0 && failed[i] == 0 && level_of[i] == h) swap_set.push_back(i);
      // Above the finest level an area's households are in the order of their finer codes.
      std::sort(swap_set.begin(), swap_set.end(),
                [&](std::uint32_t x, std::uint32_t y) { return households.ids[x] < households.ids[y]; });
      if (h + 1 == levels) {
        const std::int64_t wanted = quotas[a] - initiated[a] - static_cast<std::int64_t>(swap_set.size());
        if (wanted > 0) {
          fill.clear();
          for (const std::uint32_t i : members)
            if (used[i] == 0 && failed[i] == 0 && level_of[i] != h) {
              const double e =
                  exponential_from_bits(quota_rng.bits({static_cast<std::uint64_t>(households.ids[i]), 0, 0, 0})[0]);
              fill.emplace_back(households.risk[i * levels + h] / e, i);
            }
          const auto take = std::min<std::size_t>(fill.size(), static_cast<std::size_t>(wanted));
          std::partial_sort(fill.begin(), fill.begin() + static_cast<std::ptrdiff_t>(take), fill.end(),
                            [&](const auto& x, const auto& y) {
                              if (x.first != y.first) return x.first > y.first;
                              return households.ids[x.second] < households.ids[y.second];
                            });
          for (std::size_t f = 0; f < take; ++f) swap_set.push_back(fill[f].second);
          plan.levels[h].quota_added += static_cast<std::int64_t>(take);
        }
      }
      for (const std::uint32_t i : swap_set) {
        std::optional<std::uint32_t> donor;
        std::size_t matched = 0;
        for (; matched < donors.size() && !donor; ++matched)
          donor = donors[matched].best_donor(i, areas.area_of[i], used);
        if (!donor) {
          failed[i] = 1;
          ++plan.levels[h].without_donor;
          continue;
        }
        used[i] = 1;
        used[*donor] = 1;
        plan.pairs.push_back({i, *donor, static_cast<std::uint8_t>(h), static_cast<std::uint8_t>(matched - 1)});
        ++plan.levels[h].swapped_pairs;
        ++initiated[finest.area_of[i]];
        plan.swapped_records += households.members[i] + households.members[*donor];
      }
    }
  }
  plan.swapped_households = 2 * static_cast<std::int64_t>(plan.pairs.size());
  for (const auto& level : plan.levels) plan.households_without_donor += level.without_donor;
  return plan;
}

std::vector<std::int64_t> count_risky_households(std::span<const std::int64_t> household_ids,
                                                 const std::vector<std::span<const double>>& person_risk,
                                                 double threshold) {
  std::vector<std::int64_t> counts(person_risk.size(), 0);
  const std::size_t n = household_ids.size();
  for (std::size_t h = 0; h < person_risk.size(); ++h) {
    bool risky = false;
    for (std::size_t r = 0; r < n; ++r) {
      if (r > 0 && household_ids[r] != household_ids[r - 1]) {
        counts[h] += risky ? 1 : 0;
        risky = false;
      }
      risky = risky || person_risk[h][r] > threshold;
    }
    if (n > 0) counts[h] += risky ? 1 : 0;
  }
  return counts;
}

}  // namespace sdc::swapping
