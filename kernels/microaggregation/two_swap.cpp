#include "kernels/microaggregation/two_swap.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::microaggregation {

namespace {

// Rows i of the pair scan per chunk; fixed, so the chunks (not the threads) decide the partials.
constexpr std::size_t kRowsPerChunk = 16;
constexpr double kImprovement = 1e-12;

class SwapSearch {
 public:
  SwapSearch(const NumericColumns& x, Grouping& grouping)
      : n_(x.records()),
        p_(x.variables()),
        grouping_(grouping),
        values_(n_ * p_),
        sums_(static_cast<std::size_t>(grouping.group_count) * p_, 0.0),
        centroids_(sums_.size(), 0.0),
        inverse_size_(static_cast<std::size_t>(grouping.group_count), 0.0) {
    for (std::size_t j = 0; j < p_; ++j) {
      for (std::size_t i = 0; i < n_; ++i) values_[i * p_ + j] = x.columns[j][i];
    }
    std::vector<std::int64_t> sizes(inverse_size_.size(), 0);
    for (std::size_t i = 0; i < n_; ++i) {
      const auto g = group(i);
      ++sizes[g];
      for (std::size_t j = 0; j < p_; ++j) sums_[g * p_ + j] += values_[i * p_ + j];
    }
    for (std::size_t g = 0; g < sizes.size(); ++g) {
      if (sizes[g] > 0) inverse_size_[g] = 1.0 / static_cast<double>(sizes[g]);
      refresh_centroid(g);
    }
  }

  /// ΔSSE of exchanging records i < j (different groups): −2δ·(c_A − c_B) − ‖δ‖²(1/n_A + 1/n_B).
  double delta(std::size_t i, std::size_t j) const {
    const std::size_t a = group(i);
    const std::size_t b = group(j);
    const double* x = values_.data() + i * p_;
    const double* y = values_.data() + j * p_;
    const double* ca = centroids_.data() + a * p_;
    const double* cb = centroids_.data() + b * p_;
    double dot = 0.0;
    double norm = 0.0;
    for (std::size_t v = 0; v < p_; ++v) {
      const double d = y[v] - x[v];
      dot += d * (ca[v] - cb[v]);
      norm += d * d;
    }
    return -2.0 * dot - norm * (inverse_size_[a] + inverse_size_[b]);
  }

  /// The smallest ΔSSE over the pairs whose first record lies in rows [first, last).
  double smallest_delta(std::size_t first, std::size_t last) const {
    double smallest = std::numeric_limits<double>::infinity();
    for (std::size_t i = first; i < last; ++i) {
      const std::int32_t a = grouping_.group_of_record[i];
      for (std::size_t j = i + 1; j < n_; ++j) {
        if (grouping_.group_of_record[j] == a) continue;
        smallest = std::min(smallest, delta(i, j));
      }
    }
    return smallest;
  }

  /// The lexicographic candidate rule of §6 over rows [first, last), continuing from `best`.
  void scan(std::size_t first, std::size_t last, double sse, double& best, std::pair<std::size_t, std::size_t>& pair,
            bool& found) const {
    for (std::size_t i = first; i < last; ++i) {
      const std::int32_t a = grouping_.group_of_record[i];
      for (std::size_t j = i + 1; j < n_; ++j) {
        if (grouping_.group_of_record[j] == a) continue;
        const double after = sse + delta(i, j);
        if (after < best - kImprovement) {
          best = after;
          pair = {i, j};
          found = true;
        }
      }
    }
  }

  void apply(std::size_t i, std::size_t j) {
    const std::size_t a = group(i);
    const std::size_t b = group(j);
    for (std::size_t v = 0; v < p_; ++v) {
      const double d = values_[j * p_ + v] - values_[i * p_ + v];
      sums_[a * p_ + v] += d;
      sums_[b * p_ + v] -= d;
    }
    std::swap(grouping_.group_of_record[i], grouping_.group_of_record[j]);
    refresh_centroid(a);
    refresh_centroid(b);
  }

  std::size_t records() const { return n_; }

 private:
  std::size_t group(std::size_t i) const { return static_cast<std::size_t>(grouping_.group_of_record[i]); }
  void refresh_centroid(std::size_t g) {
    for (std::size_t v = 0; v < p_; ++v) centroids_[g * p_ + v] = sums_[g * p_ + v] * inverse_size_[g];
  }

  std::size_t n_;
  std::size_t p_;
  Grouping& grouping_;
  std::vector<double> values_;  // row-major
  std::vector<double> sums_;
  std::vector<double> centroids_;
  std::vector<double> inverse_size_;
};

}  // namespace

TwoSwapResult two_swap(const NumericColumns& standardised, Grouping start, std::int64_t max_passes) {
  require_complete(standardised, "two-swap");
  TwoSwapResult result;
  result.grouping = std::move(start);
  result.sse = within_group_sse(standardised, result.grouping);
  SwapSearch search(standardised, result.grouping);
  const std::size_t n = search.records();
  const std::size_t chunks = (n + kRowsPerChunk - 1) / kRowsPerChunk;
  std::vector<double> chunk_smallest(chunks);
  double sse = result.sse;
  for (std::int64_t pass = 0; pass < max_passes; ++pass) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks), [&](const tbb::blocked_range<std::size_t>& range) {
      for (std::size_t c = range.begin(); c < range.end(); ++c) {
        chunk_smallest[c] = search.smallest_delta(c * kRowsPerChunk, std::min(n, (c + 1) * kRowsPerChunk));
      }
    });
    // Only a chunk holding a pair below the running best can hold the next candidate; rescanning
    // those in order reproduces the serial scan exactly.
    double best = sse;
    bool found = false;
    std::pair<std::size_t, std::size_t> pair{0, 0};
    for (std::size_t c = 0; c < chunks; ++c) {
      if (!(sse + chunk_smallest[c] < best - kImprovement)) continue;
      search.scan(c * kRowsPerChunk, std::min(n, (c + 1) * kRowsPerChunk), sse, best, pair, found);
    }
    if (!found) break;
    search.apply(pair.first, pair.second);
    sse = best;
    ++result.swaps;
  }
  result.sse = within_group_sse(standardised, result.grouping);
  return result;
}

}  // namespace sdc::microaggregation
