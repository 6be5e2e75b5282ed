#include "distributed/compose/risk_merges.h"

#include <cstring>
#include <vector>

#include "distributed/compose/pairwise_merge.h"

namespace sdc::distributed {
namespace {

std::vector<std::byte> serialize(const ExactSum& sum) {
  const auto bytes = std::as_bytes(sum.partials());
  return {bytes.begin(), bytes.end()};
}

ExactSum deserialize(std::span<const std::byte> bytes) {
  std::vector<double> partials(bytes.size() / sizeof(double));
  if (!partials.empty()) std::memcpy(partials.data(), bytes.data(), partials.size() * sizeof(double));
  return ExactSum::from_partials(partials);
}

}  // namespace

ExactSum all_reduce_exact_sum(const Communicator& comm, const ExactSum& local) {
  if (comm.size() == 1) return local;
  const auto parts = comm.all_gather_bytes(serialize(local));
  ExactSum total;
  for (const auto& part : parts) total.merge(deserialize(part));
  return total;
}

GlobalRisk distributed_global_risk(const Communicator& comm, std::span<const double> local_risks) {
  GlobalRiskPartial partial = global_risk_local(local_risks);
  GlobalRiskPartial total;
  total.expected = all_reduce_exact_sum(comm, partial.expected);
  total.records = comm.all_reduce_sum(partial.records);
  return global_risk_finalize(total);
}

RiskDistribution distributed_risk_distribution(const Communicator& comm, std::span<const double> local_risks,
                                               double rho, std::span<const double> probabilities) {
  RiskHistogram histogram = risk_histogram_local(local_risks);
  if (comm.size() == 1) return {risk_threshold(histogram, rho), histogram_quantiles(histogram, probabilities)};

  // Only the coordinator receives: an all-to-all whose other buffers are empty.
  std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(comm.size()));
  const std::uint64_t size = histogram.values.size();
  std::vector<std::byte>& out = send[0];
  out.resize(sizeof(size) + size * (sizeof(double) + sizeof(std::int64_t)));
  std::memcpy(out.data(), &size, sizeof(size));
  if (size > 0) {
    std::memcpy(out.data() + sizeof(size), histogram.values.data(), size * sizeof(double));
    std::memcpy(out.data() + sizeof(size) + size * sizeof(double), histogram.counts.data(),
                size * sizeof(std::int64_t));
  }
  const auto received = comm.all_to_all_bytes(send);
  // threshold, already safe (0 or 1), record count, then one value per probability
  std::vector<double> shared(3 + probabilities.size());
  if (comm.is_coordinator()) {
    std::vector<RiskHistogram> round;
    for (const auto& bytes : received) {
      ByteReader in(bytes);
      RiskHistogram part;
      const auto values = in.get<std::uint64_t>();
      part.values.resize(values);
      part.counts.resize(values);
      in.get_span(std::span(part.values));
      in.get_span(std::span(part.counts));
      round.push_back(std::move(part));
    }
    const RiskHistogram merged = merge_pairwise(std::move(round), risk_histogram_merge);
    const RiskThreshold threshold = risk_threshold(merged, rho);
    const SampleQuantiles quantiles = histogram_quantiles(merged, probabilities);
    shared[0] = threshold.threshold;
    shared[1] = threshold.already_safe ? 1.0 : 0.0;
    shared[2] = static_cast<double>(quantiles.count);  // exact below 2^53 records
    std::copy(quantiles.values.begin(), quantiles.values.end(), shared.begin() + 3);
  }
  const auto bytes = comm.broadcast_bytes(std::as_bytes(std::span(shared)));
  std::memcpy(shared.data(), bytes.data(), shared.size() * sizeof(double));
  RiskDistribution distribution;
  distribution.threshold.threshold = shared[0];
  distribution.threshold.already_safe = shared[1] != 0.0;
  distribution.quantiles.count = static_cast<std::uint64_t>(shared[2]);
  distribution.quantiles.values.assign(shared.begin() + 3, shared.end());
  return distribution;
}

SampleQuantiles distributed_exact_quantiles(const Communicator& comm, std::span<const double> local_values,
                                            std::span<const double> probabilities, const QuantileOptions& options) {
  const RadixAllreduce allreduce = [&comm](std::span<const RadixQuery>, RadixCounts& counts) {
    comm.all_reduce_sum(std::span<std::uint64_t>(counts.counts));
    std::uint64_t nan = counts.nan_count;
    comm.all_reduce_sum(std::span<std::uint64_t>(&nan, 1));
    counts.nan_count = nan;
  };
  return distributed_quantiles(local_values, probabilities, options, allreduce);
}

}  // namespace sdc::distributed
