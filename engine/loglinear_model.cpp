#include "engine/loglinear_model.h"

#include <algorithm>

#include "engine/flags.h"
#include "kernels/core/error.h"

namespace sdc::engine {
std::string trimmed_model(const std::string& model) {
  const auto first = model.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const auto last = model.find_last_not_of(" \t");
  return model.substr(first, last - first + 1);
}

std::vector<std::vector<std::size_t>> parse_loglinear_model(const std::string& flag, const std::string& model,
                                                            const std::vector<std::string>& names,
                                                            const std::string& names_flag) {
  const std::string text = trimmed_model(model);
  std::vector<std::vector<std::size_t>> generators;
  const std::size_t m = names.size();
  if (text == "independence") {
    for (std::size_t j = 0; j < m; ++j) generators.push_back({j});
    return generators;
  }
  if (text == "two-way") {
    if (m == 1) generators.push_back({0});
    for (std::size_t a = 0; a < m; ++a)
      for (std::size_t b = a + 1; b < m; ++b) generators.push_back({a, b});
    return generators;
  }
  for (const std::string& term : split_list(text, '+')) {
    if (term.empty())
      throw UsageError(flag + ": model '" + text +
                       "' has an empty term (give independence, two-way or terms like a*b+b*c)");
    std::vector<std::size_t> generator;
    for (const std::string& name : split_list(term, '*')) {
      const auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end())
        throw UsageError(flag + ": '" + name + "' in model '" + text + "' is not one of the variables of " +
                         names_flag + " (" + join_list(names, ",") + ")");
      generator.push_back(static_cast<std::size_t>(it - names.begin()));
    }
    generators.push_back(std::move(generator));
  }
  return generators;
}

std::string loglinear_model_formula(const LogLinearModelSpec& spec, const std::vector<std::string>& names) {
  std::vector<std::string> terms;
  for (const auto& generator : spec.generators) {
    std::vector<std::string> term;
    for (std::size_t j : generator) term.push_back(names[j]);
    terms.push_back(join_list(term, "*"));
  }
  return join_list(terms, "+");
}

void check_loglinear_model_cost(const std::string& flag, const LogLinearModelSpec& spec,
                                const std::vector<std::string>& names) {
  const std::uint64_t streamed = loglinear_streamed_cells_per_sweep(spec, LogLinearFitOptions{});
  if (streamed > kStreamedCellsPerSweepLimit)
    throw UsageError(flag + ": model '" + loglinear_model_formula(spec, names) +
                     "' is not decomposable enough: its fit would stream " + std::to_string(streamed) +
                     " grid cells per sweep (limit 2^28 = " + std::to_string(kStreamedCellsPerSweepLimit) +
                     "); give fewer interactions or fewer variables");
}

}  // namespace sdc::engine
