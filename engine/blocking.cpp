#include "engine/blocking.h"

#include <set>
#include <sstream>
#include <string_view>

#include "distributed/compose/strata.h"
#include "kernels/core/error.h"

namespace sdc::engine {

Blocking parse_blocking(const std::string& text, bool value_blocks) {
  Blocking blocking;
  const std::string expected =
      value_blocks ? "none, strata:VAR[,VAR...], kdtree, pca-tree or pc1" : "none or strata:VAR[,VAR...]";
  if (text == "none") return blocking;
  if (value_blocks && text == "kdtree") {
    blocking.kind = BlockingKind::kKdTree;
    return blocking;
  }
  if (value_blocks && text == "pca-tree") {
    blocking.kind = BlockingKind::kPrincipalAxisTree;
    return blocking;
  }
  if (value_blocks && text == "pc1") {
    blocking.kind = BlockingKind::kPc1;
    return blocking;
  }
  constexpr std::string_view kStrata = "strata:";
  if (!text.starts_with(kStrata) || text.size() == kStrata.size())
    throw UsageError("--blocking: expected " + expected + ", got '" + text + "'");
  blocking.kind = BlockingKind::kStrata;
  std::stringstream stream(text.substr(kStrata.size()));
  std::set<std::string> seen;
  for (std::string name; std::getline(stream, name, ',');) {
    if (name.empty()) throw UsageError("--blocking: an empty variable name in '" + text + "'");
    if (!seen.insert(name).second) throw UsageError("--blocking: variable '" + name + "' is given twice");
    blocking.strata.push_back(name);
  }
  return blocking;
}

std::vector<std::int64_t> stratum_of_records(const distributed::Communicator& comm, const Table& table,
                                             const std::vector<std::string>& strata) {
  KeyColumns keys;
  for (const auto& name : strata) {
    const Column& column = table.require(name, VariableType::kCategorical);
    keys.codes.push_back(column.codes());
    keys.level_counts.push_back(static_cast<std::int32_t>(column.info().levels.size()));
  }
  const distributed::Strata numbered =
      distributed::distributed_strata(comm, keys, static_cast<std::size_t>(table.row_count()), "--blocking");
  return {numbered.record_stratum.begin(), numbered.record_stratum.end()};
}

}  // namespace sdc::engine
