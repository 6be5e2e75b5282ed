#pragma once
// The coordinator's merges of the risk kernels' partials (kernels/risk/household_risk.h,
// kernels/bootstrap/quantiles.h). Every function is collective: all ranks call it with their part and
// get the same result. Exact sums and integer counts make the result independent of the rank count.

#include <span>

#include "distributed/comm.h"
#include "kernels/bootstrap/quantiles.h"
#include "kernels/core/exact_sum.h"
#include "kernels/risk/household_risk.h"

namespace sdc::distributed {

/// The exact sum of every rank's `local`.
ExactSum all_reduce_exact_sum(const Communicator& comm, const ExactSum& local);

/// Global risk of the per-record risks that the ranks hold.
GlobalRisk distributed_global_risk(const Communicator& comm, std::span<const double> local_risks);

struct RiskDistribution {
  RiskThreshold threshold;
  SampleQuantiles quantiles;
};

/// The threshold keeping the global risk under `rho`, and the exact quantiles of the risks at
/// `probabilities` (type 7, as distributed_exact_quantiles gives them), from one histogram of the
/// distinct risk values of all ranks. The histograms meet on the coordinator (memory there: 16 bytes
/// per distinct value, at most one per class), which computes both and broadcasts them. The risks
/// must not be NaN.
RiskDistribution distributed_risk_distribution(const Communicator& comm, std::span<const double> local_risks,
                                               double rho, std::span<const double> probabilities);

/// Exact quantiles of the vector the ranks hold, by the radix refinement (four allreduces of 65 536
/// counters); equal to sample_quantiles of the concatenation, bit for bit.
SampleQuantiles distributed_exact_quantiles(const Communicator& comm, std::span<const double> local_values,
                                            std::span<const double> probabilities, const QuantileOptions& options = {});

}  // namespace sdc::distributed
