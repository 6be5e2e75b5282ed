#include "distributed/compose/noise.h"

#include <utility>

#include "distributed/compose/moments.h"
#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

/// The moments of `count` of the variables, from `first` on.
distance::Moments variables_of(const distance::Moments& all, std::size_t first, std::size_t count) {
  const auto begin = static_cast<Eigen::Index>(first);
  const auto size = static_cast<Eigen::Index>(count);
  distance::Moments part;
  part.count = all.count;
  part.mean = all.mean.segment(begin, size);
  part.covariance = all.covariance.block(begin, begin, size, size);
  return part;
}

NoisedPart noised(const Communicator& comm, const NumericColumns& x, const NumericColumns* original,
                  const perturbation::NoiseOptions& options, std::uint64_t seed) {
  const std::size_t p = x.variables();
  const NumericData z = perturbation::noise_normals(x.row_ids, p, seed);
  const NumericColumns normals = z.view();
  const distance::Moments joint =
      distributed_moments(comm, distance::moments_local(perturbation::joint_columns(x, normals)));
  NoisedPart part;
  if (original != nullptr) {
    part.reference = distributed_moments(comm, distance::moments_local(*original));
    part.restore = perturbation::restore_target(
        part.reference->covariance,
        joint.covariance.topLeftCorner(static_cast<Eigen::Index>(p), static_cast<Eigen::Index>(p)));
    part.map = perturbation::restore_covariance_map(joint, p, *part.restore, options);
  } else {
    part.map = perturbation::noise_map(joint, p, options);
  }
  part.released = perturbation::apply_noise(x, normals, part.map);

  // The noise as drawn, x' − x before any variance restoring (then drawn again without it).
  std::vector<std::vector<double>> noise;
  if (part.map.restore_variance) {
    perturbation::NoiseMap drawn = part.map;
    drawn.restore_variance = false;
    noise = perturbation::apply_noise(x, normals, drawn);
  } else {
    noise = part.released;
  }
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t i = 0; i < x.records(); ++i) noise[j][i] -= x.columns[j][i];
  NumericColumns measured;
  measured.row_ids = x.row_ids;
  for (const auto& column : part.released) measured.columns.emplace_back(column);
  for (const auto& column : noise) measured.columns.emplace_back(column);
  const distance::Moments after = distributed_moments(comm, distance::moments_local(measured));
  part.original = variables_of(joint, 0, p);
  part.released_moments = variables_of(after, 0, p);
  part.noise = variables_of(after, p, p);
  return part;
}

}  // namespace

NoisedPart add_noise(const Communicator& comm, const NumericColumns& x, const perturbation::NoiseOptions& options,
                     std::uint64_t seed) {
  return noised(comm, x, nullptr, options, seed);
}

NoisedPart add_noise(const Communicator& comm, const NumericColumns& x, const NumericColumns& original,
                     const perturbation::NoiseOptions& options, std::uint64_t seed) {
  SDC_CHECK(original.variables() == x.variables() && original.records() == x.records(),
            "the original's values of the same records and variables");
  return noised(comm, x, &original, options, seed);
}

}  // namespace sdc::distributed
