#pragma once
// Noise over all ranks (kernels/perturbation/noise.h; docs/noise.md). Pass 1: every rank draws its
// records' normals from their row ids and sums (x, z) exactly; the merged moments are the same bits on
// every rank, which builds the same p × p map from them. Pass 2: each record's noise from its own
// values, normals and the map. A last merge measures what the release achieved (means and covariance
// of the released values and of the noise) for the report. The output is the same for any number of
// ranks and threads; memory is the rank's records plus p normals a record.
// The restore-covariance methods merge the moments of the original's records too (the same records as
// x, read by each rank in its own row range), and every rank builds the same target
// D = Cov(original) − Cov(x) from them.

#include <cstdint>
#include <optional>
#include <vector>

#include "distributed/comm.h"
#include "kernels/perturbation/noise.h"

namespace sdc::distributed {

struct NoisedPart {
  std::vector<std::vector<double>> released;  ///< per variable, this rank's records
  perturbation::NoiseMap map;
  distance::Moments original;  ///< of x, over all ranks
  distance::Moments released_moments;
  distance::Moments noise;  ///< of e = x' − x (before restoring the variance)
  /// The restore-covariance methods: the moments of the original's variables, over all ranks, and
  /// the noise's target covariance made from them.
  std::optional<distance::Moments> reference;
  std::optional<perturbation::RestoreTarget> restore;
};

/// Collective. `x` holds this rank's records, complete (checked by the caller).
NoisedPart add_noise(const Communicator& comm, const NumericColumns& x, const perturbation::NoiseOptions& options,
                     std::uint64_t seed);

/// Collective. The restore-covariance methods: `original` holds the same records as `x` (same row ids,
/// same variables, complete: checked by the caller) before the first masking stage.
NoisedPart add_noise(const Communicator& comm, const NumericColumns& x, const NumericColumns& original,
                     const perturbation::NoiseOptions& options, std::uint64_t seed);

}  // namespace sdc::distributed
