#include "kernels/risk/l_diversity.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "kernels/core/error.h"
#include "kernels/core/table.h"

namespace sdc {
namespace {

/// Classes per parallel task of the local count, the finalization and the assignment.
constexpr std::size_t kClassesPerRun = std::size_t{1} << 14;

void append_category(SensitiveClasses& out, std::int32_t code, std::int64_t count) {
  out.categories.push_back(code);
  out.category_counts.push_back(count);
}

void append_class_of(SensitiveClasses& out, const SensitiveClasses& from, std::size_t c) {
  const auto key = from.key(c);
  out.class_keys.insert(out.class_keys.end(), key.begin(), key.end());
  for (std::size_t i = from.category_offsets[c]; i < from.category_offsets[c + 1]; ++i)
    append_category(out, from.categories[i], from.category_counts[i]);
  out.category_offsets.push_back(out.categories.size());
}

std::int64_t recursive_l(std::vector<std::int64_t>& r, const LDiversityOptions& options) {
  if (r.size() <= 1) return 1;
  std::sort(r.begin(), r.end(), std::greater<>());
  std::size_t l = 1;
  if (options.compat) {
    const auto c = static_cast<float>(options.c);
    float s = 0.0f;
    for (std::size_t i = 1; i < r.size(); ++i) s += c * static_cast<float>(r[i]);
    const auto r1 = static_cast<float>(r[0]);
    while (l < r.size() && s > r1) {
      s -= c * static_cast<float>(r[l]);
      ++l;
    }
  } else {
    std::int64_t tail = 0;  // r_{l+1} + ... + r_q, exact
    for (std::size_t i = 1; i < r.size(); ++i) tail += r[i];
    const auto r1 = static_cast<double>(r[0]);
    while (l < r.size() && options.c * static_cast<double>(tail) > r1) {
      tail -= r[l];
      ++l;
    }
  }
  return static_cast<std::int64_t>(l);
}

}  // namespace

LocalSensitiveClasses l_diversity_local(const KeyColumns& keys, std::span<const std::int32_t> sensitive) {
  return l_diversity_local(group_by_keys(keys), sensitive);
}

LocalSensitiveClasses l_diversity_local(const KeyGrouping& grouping, std::span<const std::int32_t> sensitive) {
  SDC_CHECK(sensitive.size() == grouping.record_class.size(), "one sensitive value per record");
  // Runs of classes are counted in parallel, each into its own lists, and the lists joined in run
  // order: the result is the same for any number of threads.
  struct Run {
    std::vector<std::int32_t> categories;
    std::vector<std::int64_t> counts;
    std::vector<std::uint32_t> class_categories;  // per class of the run
  };
  const std::size_t classes = grouping.class_count();
  const std::size_t runs = (classes + kClassesPerRun - 1) / kClassesPerRun;
  std::vector<Run> counted(runs);
  tbb::parallel_for(std::size_t{0}, runs, [&](std::size_t run) {
    Run& out = counted[run];
    const std::size_t begin = run * kClassesPerRun;
    const std::size_t end = std::min(classes, begin + kClassesPerRun);
    const std::size_t records = grouping.class_offsets[end] - grouping.class_offsets[begin];
    out.categories.reserve(records);
    out.counts.reserve(records);
    out.class_categories.reserve(end - begin);
    std::vector<std::int32_t> codes;
    for (std::size_t c = begin; c < end; ++c) {
      const std::uint32_t first = grouping.class_offsets[c];
      const std::uint32_t size = grouping.class_size(c);
      if (size == 1) {  // most classes of a census: no sorting
        const std::int32_t code = sensitive[grouping.sorted_records[first]];
        SDC_CHECK(code >= kMissingCode, "sensitive codes are non-negative or the missing code");
        out.categories.push_back(code);
        out.counts.push_back(1);
        out.class_categories.push_back(1);
        continue;
      }
      codes.clear();
      for (std::uint32_t p = first; p < first + size; ++p) {
        const std::int32_t code = sensitive[grouping.sorted_records[p]];
        SDC_CHECK(code >= kMissingCode, "sensitive codes are non-negative or the missing code");
        codes.push_back(code);
      }
      std::sort(codes.begin(), codes.end());
      const std::size_t before = out.categories.size();
      for (std::size_t i = 0; i < codes.size();) {
        std::size_t j = i;
        while (j < codes.size() && codes[j] == codes[i]) ++j;
        out.categories.push_back(codes[i]);
        out.counts.push_back(static_cast<std::int64_t>(j - i));
        i = j;
      }
      out.class_categories.push_back(static_cast<std::uint32_t>(out.categories.size() - before));
    }
  });
  // Where each run's categories and classes start in the joined lists; the runs are then copied there
  // in parallel.
  std::vector<std::size_t> category_start(runs + 1, 0);
  for (std::size_t run = 0; run < runs; ++run)
    category_start[run + 1] = category_start[run] + counted[run].categories.size();
  LocalSensitiveClasses local;
  SensitiveClasses& out = local.classes;
  out.key_count = grouping.key_count;
  out.class_keys = grouping.class_keys;
  out.category_offsets.resize(classes + 1);
  out.categories.resize(category_start[runs]);
  out.category_counts.resize(category_start[runs]);
  tbb::parallel_for(std::size_t{0}, runs, [&](std::size_t run) {
    Run& from = counted[run];
    std::copy(from.categories.begin(), from.categories.end(),
              out.categories.begin() + static_cast<std::ptrdiff_t>(category_start[run]));
    std::copy(from.counts.begin(), from.counts.end(),
              out.category_counts.begin() + static_cast<std::ptrdiff_t>(category_start[run]));
    std::size_t offset = category_start[run];
    std::size_t c = run * kClassesPerRun;
    for (const std::uint32_t n : from.class_categories) {
      offset += n;
      out.category_offsets[++c] = offset;
    }
    from = {};
  });
  local.record_class = grouping.record_class;
  return local;
}

namespace {

SensitiveClasses l_diversity_merged(const SensitiveClasses& a, const SensitiveClasses& b) {
  SDC_CHECK(a.class_count() == 0 || b.class_count() == 0 || a.key_count == b.key_count,
            "merged class lists have the same keys");
  SensitiveClasses out;
  out.key_count = a.class_count() > 0 ? a.key_count : b.key_count;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.class_count() || j < b.class_count()) {
    const int order = i == a.class_count() ? 1 : j == b.class_count() ? -1 : compare_key_tuples(a.key(i), b.key(j));
    if (order < 0) {
      append_class_of(out, a, i++);
    } else if (order > 0) {
      append_class_of(out, b, j++);
    } else {  // same class: merge the two sorted category lists
      const auto key = a.key(i);
      out.class_keys.insert(out.class_keys.end(), key.begin(), key.end());
      std::size_t x = a.category_offsets[i];
      std::size_t y = b.category_offsets[j];
      const std::size_t x_end = a.category_offsets[i + 1];
      const std::size_t y_end = b.category_offsets[j + 1];
      while (x < x_end || y < y_end) {
        if (y == y_end || (x < x_end && a.categories[x] < b.categories[y])) {
          append_category(out, a.categories[x], a.category_counts[x]);
          ++x;
        } else if (x == x_end || b.categories[y] < a.categories[x]) {
          append_category(out, b.categories[y], b.category_counts[y]);
          ++y;
        } else {
          append_category(out, a.categories[x], a.category_counts[x] + b.category_counts[y]);
          ++x;
          ++y;
        }
      }
      out.category_offsets.push_back(out.categories.size());
      ++i;
      ++j;
    }
  }
  return out;
}

}  // namespace

void l_diversity_merge(SensitiveClasses& into, const SensitiveClasses& from) { into = l_diversity_merged(into, from); }

LDiversity l_diversity_finalize(const SensitiveClasses& classes, const LDiversityOptions& options) {
  const std::size_t count = classes.class_count();
  LDiversity result;
  result.distinct.resize(count);
  result.entropy.resize(count);
  result.recursive.resize(count);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, kClassesPerRun), [&](const auto& range) {
    std::vector<std::int64_t> r;
    for (std::size_t c = range.begin(); c != range.end(); ++c) {
      std::int64_t missing = 0;
      std::int64_t size = 0;
      r.clear();
      for (std::size_t i = classes.category_offsets[c]; i < classes.category_offsets[c + 1]; ++i) {
        size += classes.category_counts[i];
        if (classes.categories[i] == kMissingCode)
          missing += classes.category_counts[i];
        else
          r.push_back(classes.category_counts[i]);
      }
      const bool missing_category = missing > 0 && !r.empty();
      result.distinct[c] = static_cast<std::int64_t>(r.size()) + (missing_category ? 1 : 0);
      double sum = 0.0;  // Σ p log p, categories in code order, missing last
      const auto g = static_cast<double>(size);
      auto add = [&](std::int64_t n) {
        const double p = static_cast<double>(n) / g;
        sum += p * std::log(p);
      };
      for (const std::int64_t n : r) add(n);
      if (missing_category) add(missing);
      result.entropy[c] = r.empty() ? 1.0 : std::exp(-sum);
      result.recursive[c] = recursive_l(r, options);
    }
  });
  return result;
}

LDiversity l_diversity_assign(std::span<const std::uint32_t> record_class, const LDiversity& per_class) {
  LDiversity result;
  result.distinct.resize(record_class.size());
  result.entropy.resize(record_class.size());
  result.recursive.resize(record_class.size());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, record_class.size(), kClassesPerRun), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      const std::uint32_t c = record_class[i];
      SDC_CHECK(c < per_class.distinct.size(), "record class within the class list");
      result.distinct[i] = per_class.distinct[c];
      result.entropy[i] = per_class.entropy[c];
      result.recursive[i] = per_class.recursive[c];
    }
  });
  return result;
}

}  // namespace sdc
