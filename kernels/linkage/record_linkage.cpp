#include "kernels/linkage/record_linkage.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"
#include "kernels/distance/whitening.h"

namespace sdc::linkage {
namespace {

std::vector<double> to_vector(const Eigen::VectorXd& v) { return {v.data(), v.data() + v.size()}; }

}  // namespace

LinkageMomentsPartial linkage_moments_local(const NumericColumns& original, const NumericColumns& masked,
                                            const LinkageOptions& options) {
  require_aligned(original, masked, "record linkage");
  require_complete(original, "record linkage");
  require_complete(masked, "record linkage");
  if (options.distance == LinkageDistance::kKernel && options.kernel_degree < 1) {
    throw ParameterError("the kernel degree of record linkage must be at least 1");
  }
  return {distance::moments_local(original), distance::moments_local(masked),
          distance::moments_difference_local(original, masked)};
}

void linkage_moments_merge(LinkageMomentsPartial& into, const LinkageMomentsPartial& from) {
  distance::moments_merge(into.original, from.original);
  distance::moments_merge(into.masked, from.masked);
  distance::moments_merge(into.difference, from.difference);
}

PreparedLinkage prepare_linkage(const NumericColumns& original, const NumericColumns& masked,
                                const LinkageOptions& options) {
  return prepare_linkage_with(linkage_moments_local(original, masked, options), original, masked, options);
}

PreparedLinkage prepare_linkage_with(const LinkageMomentsPartial& total, const NumericColumns& original,
                                     const NumericColumns& masked, const LinkageOptions& options) {
  require_aligned(original, masked, "record linkage");
  if (options.distance == LinkageDistance::kKernel && options.kernel_degree < 1) {
    throw ParameterError("the kernel degree of record linkage must be at least 1");
  }
  const auto moments_a = distance::moments_finalize(total.original);
  PreparedLinkage prepared;
  prepared.tiles.tile_rows = options.tile_rows;
  distance::PointSet a;
  distance::PointSet b;
  switch (options.distance) {
    case LinkageDistance::kDbrl1:
      a = distance::standardise_with(original, moments_a);
      b = distance::standardise_with(masked, distance::moments_finalize(total.masked));
      break;
    case LinkageDistance::kKernel:
      a = distance::standardise_with(original, moments_a);
      b = distance::standardise_with(masked, distance::moments_finalize(total.masked));
      prepared.tiles.distance.kind = distance::DistanceSpec::Kind::kPolynomialKernel;
      prepared.tiles.distance.kernel_degree = options.kernel_degree;
      break;
    case LinkageDistance::kDbrl1Common:
      a = distance::standardise_with(original, moments_a);
      b = distance::standardise_with(masked, moments_a);
      break;
    case LinkageDistance::kDbrl2: {
      const auto shift = to_vector(moments_a.mean);
      const auto scales = distance::difference_scales(distance::moments_finalize(total.difference));
      a = distance::shift_and_scale(original, shift, scales);
      b = distance::shift_and_scale(masked, shift, scales);
      break;
    }
    case LinkageDistance::kMahalanobisCov:
    case LinkageDistance::kMahalanobisCov0: {
      Eigen::MatrixXd covariance;
      if (options.distance == LinkageDistance::kMahalanobisCov) {
        covariance = distance::moments_finalize(total.difference).covariance;
      } else {
        covariance = moments_a.covariance + distance::moments_finalize(total.masked).covariance;
      }
      const auto whitening = distance::whitening_finalize(covariance, moments_a.mean);
      prepared.regularisation_epsilon = whitening.epsilon;
      a = distance::whiten(original, whitening);
      b = distance::whiten(masked, whitening);
      break;
    }
  }
  if (options.direction == LinkageDirection::kOriginalToMasked) {
    prepared.queries = std::move(a);
    prepared.references = std::move(b);
  } else {
    prepared.queries = std::move(b);
    prepared.references = std::move(a);
  }
  return prepared;
}

LinkageResult linkage_count(const std::vector<std::int64_t>& query_ids,
                            const std::vector<distance::NearestPartial>& nearest) {
  SDC_CHECK(query_ids.size() == nearest.size(), "one nearest partial per query");
  LinkageResult result;
  const std::size_t n = query_ids.size();
  result.records = static_cast<std::int64_t>(n);
  result.linked.resize(n);
  result.tie_size.resize(n);
  result.nearest_id.resize(n);
  result.nearest_distance.resize(n);
  ExactSum fractional;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& ties = nearest[i].ties;
    const bool correct = std::binary_search(ties.begin(), ties.end(), query_ids[i]);
    result.linked[i] = correct ? 1 : 0;
    result.tie_size[i] = static_cast<std::int64_t>(ties.size());
    result.nearest_id[i] = ties.empty() ? -1 : ties.front();
    result.nearest_distance[i] = nearest[i].distance;
    if (!correct) continue;
    ++result.optimistic;
    if (ties.size() == 1) ++result.strict;
    fractional.add(1.0 / static_cast<double>(ties.size()));
  }
  result.fractional = fractional.value();
  return result;
}

LinkageResult record_linkage(const NumericColumns& original, const NumericColumns& masked,
                             const LinkageOptions& options) {
  const auto prepared = prepare_linkage(original, masked, options);
  const auto nearest = distance::nearest_partial(prepared.queries, prepared.references, prepared.tiles);
  auto result = linkage_count(prepared.queries.ids, nearest);
  result.regularisation_epsilon = prepared.regularisation_epsilon;
  return result;
}

}  // namespace sdc::linkage
