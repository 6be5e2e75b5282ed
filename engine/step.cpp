#include "engine/step.h"

#include <algorithm>

namespace sdc::engine {

std::string_view to_string(OutputKind kind) {
  switch (kind) {
    case OutputKind::kData:
      return "data";
    case OutputKind::kTable:
      return "table";
    case OutputKind::kMatrix:
      return "matrix";
    case OutputKind::kPlot:
      return "plot";
    case OutputKind::kCsv:
      return "csv";
    case OutputKind::kSchema:
      return "schema";
    case OutputKind::kSeed:
      return "seed";
    case OutputKind::kCheckpoint:
      return "checkpoint";
  }
  return "data";
}

void expect_variable(const std::vector<VariableInfo>& available, const std::string& name,
                     std::optional<VariableType> type, const std::string& key, std::vector<std::string>& problems) {
  const auto it =
      std::find_if(available.begin(), available.end(), [&](const VariableInfo& v) { return v.name == name; });
  if (it == available.end())
    problems.push_back(key + ": variable '" + name + "' is not in the step's input");
  else if (type && it->type != *type)
    problems.push_back(key + ": variable '" + name + "' is " + std::string(to_string(it->type)) + ", expected " +
                       std::string(to_string(*type)));
}

}  // namespace sdc::engine
