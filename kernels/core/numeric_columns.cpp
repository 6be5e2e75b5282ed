#include "kernels/core/numeric_columns.h"

#include <algorithm>
#include <cmath>

#include "kernels/core/error.h"

namespace sdc {

void require_complete(const NumericColumns& x, std::string_view what) {
  const std::size_t records = x.records();
  SDC_CHECK(x.row_ids.size() == records, "every record has a row id");
  for (std::size_t j = 0; j < x.variables(); ++j) {
    SDC_CHECK(x.columns[j].size() == records, "all columns have the same length");
    for (std::size_t i = 0; i < records; ++i) {
      if (std::isfinite(x.columns[j][i])) continue;
      const std::string name = j < x.names.size() ? x.names[j] : "column " + std::to_string(j + 1);
      throw InvalidInput(std::string(what) + ": variable '" + name + "' is missing or not finite at row id " +
                         std::to_string(x.row_ids[i]) + "; this method needs complete records");
    }
  }
}

void require_aligned(const NumericColumns& original, const NumericColumns& masked, std::string_view what) {
  if (original.variables() != masked.variables())
    throw ParameterError(std::string(what) + " needs the same variables in the original and the masked file");
  const std::size_t common = std::min(original.row_ids.size(), masked.row_ids.size());
  for (std::size_t i = 0; i < common; ++i)
    if (original.row_ids[i] != masked.row_ids[i])
      throw InvalidInput(std::string(what) + ": row id " +
                         std::to_string(std::min(original.row_ids[i], masked.row_ids[i])) +
                         " is not aligned between the original and the masked file");
  if (original.row_ids.size() != masked.row_ids.size()) {
    const auto& longer = original.row_ids.size() > masked.row_ids.size() ? original : masked;
    throw InvalidInput(std::string(what) + ": row id " + std::to_string(longer.row_ids[common]) + " is only in the " +
                       (&longer == &original ? "original" : "masked") + " file");
  }
}

}  // namespace sdc
