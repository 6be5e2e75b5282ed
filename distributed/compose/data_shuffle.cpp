#include "distributed/compose/data_shuffle.h"

#include "distributed/compose/moments.h"
#include "distributed/row_exchange.h"
#include "kernels/perturbation/noise.h"
#include "kernels/swapping/data_shuffle.h"

namespace sdc::distributed {

ShuffledPart shuffle_data(const Communicator& comm, const NumericColumns& confidential, const NumericColumns& given,
                          const RowRange& home, std::uint64_t seed) {
  const std::size_t p = confidential.variables();
  std::vector<std::vector<std::span<const double>>> score_inputs;
  for (const auto& column : confidential.columns) score_inputs.push_back({column});
  for (const auto& column : given.columns) score_inputs.push_back({column});
  const std::vector<std::vector<double>> scores =
      transform_whole_columns(comm, score_inputs, confidential.row_ids, home,
                              [](std::size_t, const std::vector<std::span<const double>>& columns,
                                 std::span<const std::int64_t>) { return swapping::normal_scores(columns.front()); });

  NumericColumns all_scores;
  all_scores.row_ids = confidential.row_ids;
  for (const auto& column : scores) all_scores.columns.emplace_back(column);
  const distance::Moments moments = distributed_moments(comm, distance::moments_local(all_scores));
  const swapping::ShuffleMap map = swapping::shuffle_map(moments, p);

  NumericColumns given_scores;
  given_scores.row_ids = confidential.row_ids;
  given_scores.columns.assign(all_scores.columns.begin() + static_cast<std::ptrdiff_t>(p), all_scores.columns.end());
  const NumericData normals = perturbation::noise_normals(confidential.row_ids, p, seed, StepId::kDataShuffle);
  const std::vector<std::vector<double>> targets = swapping::shuffle_targets(given_scores, normals.view(), map);

  std::vector<std::vector<std::span<const double>>> map_inputs;
  for (std::size_t j = 0; j < p; ++j) map_inputs.push_back({confidential.columns[j], targets[j]});
  ShuffledPart part;
  part.released = transform_whole_columns(
      comm, map_inputs, confidential.row_ids, home,
      [](std::size_t, const std::vector<std::span<const double>>& columns, std::span<const std::int64_t> row_ids) {
        return swapping::reverse_map(columns[0], columns[1], row_ids);
      });
  part.kept.assign(p, 0);
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t i = 0; i < confidential.records(); ++i)
      if (part.released[j][i] == confidential.columns[j][i]) ++part.kept[j];
  comm.all_reduce_sum(std::span<std::int64_t>(part.kept));
  return part;
}

}  // namespace sdc::distributed
