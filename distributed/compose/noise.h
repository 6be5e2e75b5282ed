#pragma once
// Noise over all ranks (kernels/perturbation/noise.h; docs/noise.md). Pass 1: every rank draws its
// records' normals from their row ids and sums (x, z) exactly; the merged moments are the same bits on
// every rank, which builds the same p × p map from them. Pass 2: each record's noise from its own
// values, normals and the map. A last merge measures what the release achieved (means and covariance
// of the released values and of the noise) for the report. The output is the same for any number of
// ranks and threads; memory is the rank's records plus p normals a record.

#include <cstdint>
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
};

/// Collective. `x` holds this rank's records, complete (checked by the caller).
NoisedPart add_noise(const Communicator& comm, const NumericColumns& x, const perturbation::NoiseOptions& options,
                     std::uint64_t seed);

}  // namespace sdc::distributed
