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

RiskThreshold distributed_risk_threshold(const Communicator& comm, std::span<const double> local_risks, double rho) {
  RiskHistogram histogram = risk_histogram_local(local_risks);
  if (comm.size() > 1) {
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
    struct Shared {
      double threshold = 0.0;
      std::uint8_t already_safe = 0;
    } shared;
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
      const RiskThreshold threshold = risk_threshold(merge_pairwise(std::move(round), risk_histogram_merge), rho);
      shared.threshold = threshold.threshold;
      shared.already_safe = threshold.already_safe ? 1 : 0;
    }
    const auto bytes = comm.broadcast_bytes(std::as_bytes(std::span(&shared, 1)));
    std::memcpy(&shared, bytes.data(), sizeof(shared));
    RiskThreshold threshold;
    threshold.threshold = shared.threshold;
    threshold.already_safe = shared.already_safe != 0;
    return threshold;
  }
  return risk_threshold(histogram, rho);
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
