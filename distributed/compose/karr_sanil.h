#pragma once
// Karr–Sanil data swapping across ranks (kernels/swapping/karr_sanil.h; docs/swapping.md "sdc swap
// frontier"). The table over the release's attributes is counted on every rank, shuffled to the
// owners of its cells and gathered whole on every rank. Each replicate's selected records (the 2m
// smallest Philox keys, m the pairs of the largest rate) go to the rank owning the replicate
// (replicate b on rank b mod ranks), which evaluates every candidate of that replicate on its threads;
// the evaluations are gathered on every rank. Applying the chosen release sends each swapped record's
// new values from the replicate's owner to the rank holding the record.
//
// Memory per rank: the table (cells × (attributes × 4 + 8) bytes), and for each replicate it owns its
// selection (2m records × (8 + 4 × (attributes + strata)) bytes).

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/key_grouping.h"
#include "kernels/swapping/karr_sanil.h"

namespace sdc::distributed {

struct FrontierCandidate {
  std::vector<std::size_t> swap_attributes;  ///< indices into the attributes, increasing
  double rate = 0.0;
};

struct FrontierSettings {
  std::vector<FrontierCandidate> candidates;
  std::uint32_t replicates = 1;
  std::uint64_t seed = 0;
  swapping::ReleaseOptions release;
  /// The log-linear models to consider, as generators over attribute indices; empty: no log-linear
  /// utility. One model is M*; of several, M* is the one of smallest BIC (or AIC) on the original table.
  std::vector<std::vector<std::vector<std::size_t>>> models;
  bool select_by_bic = true;
  bool refit = true;
};

struct FrontierEvaluation {
  swapping::ReleaseTable table;                       ///< on every rank
  double original_risk = 0.0;                         ///< DR of the original table
  std::vector<std::int64_t> pairs_wanted;             ///< per candidate: ⌊rate·n/2⌋
  std::optional<LogLinearSelection> model_selection;  ///< the models' scores, when several were given
  std::optional<swapping::LogLinearBaseline> baseline;
  /// [candidate][replicate], on every rank.
  std::vector<std::vector<swapping::ReleaseEvaluation>> evaluations;
  /// The selections of the replicates this rank owns (empty for the others).
  std::vector<swapping::SwapSelection> selections;
};

/// Collective. `attributes` and `strata` (the --within variables; key_count 0 for none) are this
/// rank's records, the first of global row id `first_row_id`.
FrontierEvaluation evaluate_frontier(const Communicator& comm, const KeyColumns& attributes, const KeyColumns& strata,
                                     std::int64_t first_row_id, const FrontierSettings& settings);

/// Collective. Swaps the values of candidate `candidate`'s attributes within the pairs of replicate
/// `replicate` in this rank's `columns` (one per attribute, the codes of the records from
/// `first_row_id`); returns the number of this rank's records whose values changed.
std::int64_t apply_release(const Communicator& comm, const FrontierEvaluation& evaluation,
                           const FrontierSettings& settings, std::size_t candidate, std::uint32_t replicate,
                           std::int64_t first_row_id, std::span<const std::span<std::int32_t>> columns);

}  // namespace sdc::distributed
