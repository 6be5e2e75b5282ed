#pragma once
// How a log-linear model is spelt on the command line, shared by the steps that fit one: `sdc risk
// --loglinear` (docs/risk.md) and `sdc swap frontier --loglinear` (docs/swapping.md).
//   independence | two-way | terms of variable names joined by `*`, separated by `+` (sex*age+age*marstat)
// Several candidate models are separated by `;`.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/risk/loglinear.h"

namespace sdc::engine {

/// The generators of `model` as indices into `names` (the variables of the flag `names_flag`).
/// UsageError naming `flag` for an empty term or a name not in `names`.
std::vector<std::vector<std::size_t>> parse_loglinear_model(const std::string& flag, const std::string& model,
                                                            const std::vector<std::string>& names,
                                                            const std::string& names_flag);

/// The canonical generators by name, variables of a term in `names` order: "sex*age+age*marstat".
std::string loglinear_model_formula(const LogLinearModelSpec& spec, const std::vector<std::string>& names);

/// A model whose fitted margins variable elimination cannot reach within the kernel's intermediate-table
/// limit streams the whole grid once per such margin and sweep; refused beyond this many cells a sweep.
inline constexpr std::uint64_t kStreamedCellsPerSweepLimit = std::uint64_t{1} << 28;

/// `model` without the spaces around it, as messages quote it.
std::string trimmed_model(const std::string& model);

/// UsageError naming `flag` and the model when fitting `spec` would stream more than
/// kStreamedCellsPerSweepLimit cells per sweep.
void check_loglinear_model_cost(const std::string& flag, const LogLinearModelSpec& spec,
                                const std::vector<std::string>& names);

}  // namespace sdc::engine
