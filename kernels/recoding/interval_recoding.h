#pragma once
// Interval recoding of a numeric variable into a categorical one (docs/methods recoding.md §2, sdcMicro's
// globalRecode, exact): breaks b_0 < … < b_B make the intervals (b_{i−1}, b_i]; a value at or below
// b_0 or above b_B becomes missing, except that breaks derived from the data close the first interval
// ([b_0, b_1]), as the reference's include.lowest does. Labels are "(a,b]" and "[a,b]" with the
// breaks printed to 8 significant digits, as the reference prints them.
//
// Shape: the breaks need at most a global reduction of the values (their minimum and maximum, or their
// quantiles, which the caller takes from kernels/bootstrap/quantiles.h, exactly and distributed when
// the records are); the coding itself is record-local. Missing values (NaN) stay missing.
//
// Where we differ from the reference: with equalAmount, repeated quantiles are merged (the reference
// jitters them at random) and the merge is counted; with one break, missing values are ignored when
// taking the minimum and maximum (the reference returns every value missing).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sdc::recoding {

struct IntervalBreaks {
  std::vector<double> breaks;       ///< b_0 < … < b_B
  bool first_closed = false;        ///< the first interval is [b_0, b_1]
  std::int32_t merged_repeats = 0;  ///< quantile breaks dropped as repeats of the one before
  /// One per interval, "(a,b]" (or "[a,b]" for a closed first interval).
  std::vector<std::string> labels() const;
};

/// Given breaks (user's): at least 2, finite, strictly increasing (ParameterError naming the first at
/// fault); the first interval open.
IntervalBreaks explicit_breaks(std::vector<double> breaks);

/// `count` intervals between min − 1 and max + 1 of the non-missing values (ParameterError for
/// count < 1 or min > max, as when every value is missing):
/// - count = 1: (min − 1, max + 1];
/// - otherwise count + 1 equally spaced points from min − 1 to max + 1, or with `logarithmic` from
///   log(min) − 1 to log(max) + 1 exponentiated (ParameterError for min ≤ 0); rounded to whole
///   numbers, half to even, unless rounding makes two breaks equal; the first interval closed.
IntervalBreaks equidistant_breaks(double min, double max, std::int32_t count, bool logarithmic);

/// equalAmount: the quantiles at 0, 1/B, …, 1 of the values (Hyndman–Fan type 7), repeats merged; the
/// first interval closed. ParameterError for fewer than 2 quantiles, or NaN among them.
IntervalBreaks quantile_breaks(std::span<const double> quantiles);

/// Per value: its interval's index, or −1 (missing, or outside the breaks).
std::vector<std::int32_t> interval_codes(std::span<const double> values, const IntervalBreaks& breaks);

/// Top and bottom coding (recoding.md §3, sdcMicro topBotCoding): kTop replaces every value above
/// `threshold` by `replacement`, kBottom every value below it; strict inequalities, missing values
/// untouched. Returns how many values were replaced. ParameterError for a threshold or replacement that
/// is not finite.
enum class TailSide : std::uint8_t { kTop, kBottom };
std::int64_t code_tail(std::span<double> values, TailSide side, double threshold, double replacement);

}  // namespace sdc::recoding
