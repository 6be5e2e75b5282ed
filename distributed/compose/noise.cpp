#include "distributed/compose/noise.h"

#include <utility>

#include "distributed/compose/moments.h"

namespace sdc::distributed {

NoisedPart add_noise(const Communicator& comm, const NumericColumns& x, const perturbation::NoiseOptions& options,
                     std::uint64_t seed) {
  const std::size_t p = x.variables();
  const NumericData z = perturbation::noise_normals(x.row_ids, p, seed);
  const NumericColumns normals = z.view();
  const distance::Moments joint =
      distributed_moments(comm, distance::moments_local(perturbation::joint_columns(x, normals)));
  NoisedPart part;
  part.map = perturbation::noise_map(joint, p, options);
  part.released = perturbation::apply_noise(x, normals, part.map);

  // The noise as drawn: x' − x before any variance restoring, recomputed from the map.
  perturbation::NoiseMap drawn = part.map;
  drawn.restore_variance = false;
  NumericData noise;
  noise.row_ids.assign(x.row_ids.begin(), x.row_ids.end());
  noise.names = x.names;
  noise.columns = perturbation::apply_noise(x, normals, drawn);
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t i = 0; i < x.records(); ++i) noise.columns[j][i] -= x.columns[j][i];
  NumericData released;
  released.names = x.names;
  released.row_ids = noise.row_ids;
  released.columns = part.released;
  const distance::Moments after =
      distributed_moments(comm, distance::moments_local(perturbation::joint_columns(released.view(), noise.view())));
  const auto q = static_cast<Eigen::Index>(p);
  part.original.count = joint.count;
  part.original.mean = joint.mean.head(q);
  part.original.covariance = joint.covariance.topLeftCorner(q, q);
  part.released_moments.count = after.count;
  part.released_moments.mean = after.mean.head(q);
  part.released_moments.covariance = after.covariance.topLeftCorner(q, q);
  part.noise.count = after.count;
  part.noise.mean = after.mean.tail(q);
  part.noise.covariance = after.covariance.bottomRightCorner(q, q);
  return part;
}

}  // namespace sdc::distributed
