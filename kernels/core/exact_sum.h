#pragma once
// A floating-point sum that is exact until it is read, so that its value does not depend on the order
// in which terms arrive — nor, therefore, on how records are split across ranks and threads.
//
// Terms are kept as a short list of non-overlapping partials (Shewchuk, "Adaptive precision
// floating-point arithmetic", 1997; the algorithm behind Python's math.fsum); value() rounds the exact
// sum once, to nearest even. Typically one to three partials are live. Merging two sums adds the
// other's partials, so a merge tree of any shape gives the same bits.

#include <absl/container/inlined_vector.h>

#include <cmath>
#include <cstdint>
#include <span>

namespace sdc {

class ExactSum {
 public:
  /// Adds a finite term (callers validate their inputs; non-finite terms make value() unspecified).
  void add(double x) {
    std::size_t kept = 0;
    for (double y : partials_) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double high = x + y;
      const double low = y - (high - x);
      if (low != 0.0) partials_[kept++] = low;
      x = high;
    }
    partials_.resize(kept);
    partials_.push_back(x);
  }

  void merge(const ExactSum& other) {
    for (double p : other.partials_) add(p);
  }

  /// The exact sum rounded to the nearest double (ties to even).
  double value() const {
    std::size_t n = partials_.size();
    if (n == 0) return 0.0;
    double high = partials_[--n];
    double low = 0.0;
    while (n > 0) {
      const double x = high;
      const double y = partials_[--n];
      high = x + y;
      low = y - (high - x);
      if (low != 0.0) break;
    }
    // Correct the half-way case: the partials below may push the rounding the other way.
    if (n > 0 && ((low < 0.0 && partials_[n - 1] < 0.0) || (low > 0.0 && partials_[n - 1] > 0.0))) {
      const double y = low * 2.0;
      const double x = high + y;
      if (y == x - high) high = x;
    }
    return high;
  }

  /// The partials, smallest magnitude first: what a merge across ranks ships.
  std::span<const double> partials() const { return partials_; }
  static ExactSum from_partials(std::span<const double> partials) {
    ExactSum sum;
    for (double p : partials) sum.add(p);
    return sum;
  }

 private:
  absl::InlinedVector<double, 2> partials_;
};

}  // namespace sdc
