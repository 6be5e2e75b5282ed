#include "distributed/compose/information_loss.h"

#include <vector>

#include "distributed/collective_error.h"
#include "distributed/compose/class_exchange.h"
#include "distributed/compose/pairwise_merge.h"

namespace sdc::distributed {
namespace {

template <typename T>
void put_values(ByteWriter& out, const std::vector<T>& values) {
  out.put(static_cast<std::uint64_t>(values.size()));
  out.put_span(std::span<const T>(values));
}

template <typename T>
std::vector<T> get_values(ByteReader& in) {
  std::vector<T> values(in.get<std::uint64_t>());
  in.get_span(std::span<T>(values));
  return values;
}

std::vector<std::byte> serialize(const utility::InformationLossPartial& partial) {
  ByteWriter out;
  out.put(static_cast<std::uint64_t>(partial.variables));
  out.put(partial.records);
  put_exact_sums(out, partial.sum_original);
  put_exact_sums(out, partial.sum_masked);
  put_exact_sums(out, partial.cross_original);
  put_exact_sums(out, partial.cross_masked);
  put_exact_sums(out, partial.absolute_difference);
  put_exact_sums(out, partial.squared_difference);
  put_exact_sums(out, partial.relative_difference);
  put_values(out, partial.zero_original);
  put_values(out, partial.min_original);
  put_values(out, partial.max_original);
  put_values(out, partial.min_masked);
  put_values(out, partial.max_masked);
  return std::move(out.bytes());
}

utility::InformationLossPartial deserialize(std::span<const std::byte> bytes) {
  ByteReader in(bytes);
  utility::InformationLossPartial partial;
  partial.variables = static_cast<std::size_t>(in.get<std::uint64_t>());
  partial.records = in.get<std::uint64_t>();
  partial.sum_original = get_exact_sums(in);
  partial.sum_masked = get_exact_sums(in);
  partial.cross_original = get_exact_sums(in);
  partial.cross_masked = get_exact_sums(in);
  partial.absolute_difference = get_exact_sums(in);
  partial.squared_difference = get_exact_sums(in);
  partial.relative_difference = get_exact_sums(in);
  partial.zero_original = get_values<std::uint64_t>(in);
  partial.min_original = get_values<double>(in);
  partial.max_original = get_values<double>(in);
  partial.min_masked = get_values<double>(in);
  partial.max_masked = get_values<double>(in);
  return partial;
}

std::vector<std::byte> serialize(const utility::SumOfSquaresPartial& partial) {
  ByteWriter out;
  out.put(static_cast<std::uint64_t>(partial.variables));
  out.put(partial.records);
  put_exact_sums(out, partial.sum_original);
  put_exact_sums(out, partial.square_original);
  put_exact_sums(out, partial.squared_difference);
  put_values(out, partial.min_original);
  put_values(out, partial.max_original);
  return std::move(out.bytes());
}

utility::SumOfSquaresPartial deserialize_sum_of_squares(std::span<const std::byte> bytes) {
  ByteReader in(bytes);
  utility::SumOfSquaresPartial partial;
  partial.variables = static_cast<std::size_t>(in.get<std::uint64_t>());
  partial.records = in.get<std::uint64_t>();
  partial.sum_original = get_exact_sums(in);
  partial.square_original = get_exact_sums(in);
  partial.squared_difference = get_exact_sums(in);
  partial.min_original = get_values<double>(in);
  partial.max_original = get_values<double>(in);
  return partial;
}

}  // namespace

utility::SumOfSquares distributed_sum_of_squares(const Communicator& comm, const NumericColumns& original,
                                                 const NumericColumns& masked) {
  utility::SumOfSquaresPartial local;
  agree_on_error(comm, [&] { local = utility::sum_of_squares_local(original, masked); });
  std::vector<utility::SumOfSquaresPartial> parts;
  for (const auto& bytes : comm.all_gather_bytes(serialize(local))) parts.push_back(deserialize_sum_of_squares(bytes));
  const utility::SumOfSquaresPartial total = merge_pairwise(std::move(parts), utility::sum_of_squares_merge);
  utility::SumOfSquares squares;
  agree_on_error(comm, [&] { squares = utility::sum_of_squares_finalize(total); });
  return squares;
}

utility::InformationLoss distributed_information_loss(const Communicator& comm, const NumericColumns& original,
                                                      const NumericColumns& masked,
                                                      const utility::InformationLossOptions& options) {
  utility::InformationLossPartial local;
  agree_on_error(comm, [&] { local = utility::information_loss_local(original, masked); });
  std::vector<utility::InformationLossPartial> parts;
  for (const auto& bytes : comm.all_gather_bytes(serialize(local))) parts.push_back(deserialize(bytes));
  const utility::InformationLossPartial total = merge_pairwise(std::move(parts), utility::information_loss_merge);
  utility::InformationLoss loss;
  agree_on_error(comm, [&] { loss = utility::information_loss_finalize(total, options); });
  return loss;
}

}  // namespace sdc::distributed
