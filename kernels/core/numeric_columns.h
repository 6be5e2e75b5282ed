#pragma once
// Continuous variables of one block of records, as the microaggregation, distance, linkage and
// utility kernels take them: p columns of n doubles each (NaN = missing), column-major like the
// Table they come from, with the global row id of every record for messages and tie keys.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdc {

struct NumericColumns {
  std::vector<std::string> names;                ///< variable names, for messages
  std::vector<std::span<const double>> columns;  ///< columns[j][i]: variable j of record i
  std::span<const std::int64_t> row_ids;         ///< global row id of record i (ascending in a file)

  std::size_t variables() const noexcept { return columns.size(); }
  std::size_t records() const noexcept { return columns.empty() ? 0 : columns.front().size(); }
};

/// Owning storage for a NumericColumns view (tests, transformed copies such as z-scores).
struct NumericData {
  std::vector<std::string> names;
  std::vector<std::vector<double>> columns;
  std::vector<std::int64_t> row_ids;

  NumericColumns view() const {
    NumericColumns view;
    view.names = names;
    for (const auto& column : columns) view.columns.emplace_back(column);
    view.row_ids = row_ids;
    return view;
  }
};

/// Throws InvalidInput naming `what` (the method), the variable and the row id of the first value
/// that is missing or not finite: for the methods that need complete records.
void require_complete(const NumericColumns& x, std::string_view what);

/// Original and masked versions of the same records: throws ParameterError when they hold different
/// numbers of variables, InvalidInput naming the first row id where they part (differing ids, or a
/// record only one of them has).
void require_aligned(const NumericColumns& original, const NumericColumns& masked, std::string_view what);

}  // namespace sdc
