#include "distributed/compose/moments.h"

#include <vector>

#include "distributed/compose/class_exchange.h"
#include "distributed/compose/pairwise_merge.h"

namespace sdc::distributed {
namespace {

std::vector<std::byte> serialize(const distance::MomentsPartial& partial) {
  ByteWriter out;
  out.put(partial.count);
  put_exact_sums(out, partial.sums);
  put_exact_sums(out, partial.cross_products);
  return std::move(out.bytes());
}

distance::MomentsPartial deserialize(std::span<const std::byte> bytes) {
  ByteReader in(bytes);
  distance::MomentsPartial partial;
  partial.count = in.get<std::int64_t>();
  partial.sums = get_exact_sums(in);
  partial.cross_products = get_exact_sums(in);
  return partial;
}

}  // namespace

distance::MomentsPartial merged_moments(const Communicator& comm, const distance::MomentsPartial& local) {
  if (comm.size() == 1) return local;
  std::vector<distance::MomentsPartial> parts;
  for (const auto& bytes : comm.all_gather_bytes(serialize(local))) parts.push_back(deserialize(bytes));
  return merge_pairwise(std::move(parts), distance::moments_merge);
}

distance::Moments distributed_moments(const Communicator& comm, const distance::MomentsPartial& local) {
  return distance::moments_finalize(merged_moments(comm, local));
}

}  // namespace sdc::distributed
