#include "distributed/compose/additivity_adjustment.h"

namespace sdc::distributed {
namespace {

/// Shares per-block segments: each rank sends its own blocks' segments, in block order, to every rank.
class RankBlockExchange final : public tables::BlockExchange {
 public:
  RankBlockExchange(const Communicator& comm, std::int32_t blocks) : comm_(comm), blocks_(blocks) {}

  void share(std::span<double> values, std::span<const std::int64_t> offsets) override {
    ByteWriter writer;
    for (std::int32_t block = comm_.rank(); block < blocks_; block += comm_.size())
      writer.put_span(std::span<const double>(segment(values, offsets, block)));
    const std::vector<std::vector<std::byte>> received = comm_.all_gather_bytes(writer.bytes());
    for (int rank = 0; rank < comm_.size(); ++rank) {
      if (rank == comm_.rank()) continue;
      ByteReader reader(received[static_cast<std::size_t>(rank)]);
      for (std::int32_t block = rank; block < blocks_; block += comm_.size())
        reader.get_span(segment(values, offsets, block));
    }
  }

 private:
  static std::span<double> segment(std::span<double> values, std::span<const std::int64_t> offsets,
                                   std::int32_t block) {
    const auto begin = static_cast<std::size_t>(offsets[static_cast<std::size_t>(block)]);
    const auto end = static_cast<std::size_t>(offsets[static_cast<std::size_t>(block) + 1]);
    return values.subspan(begin, end - begin);
  }

  const Communicator& comm_;
  std::int32_t blocks_;
};

}  // namespace

std::vector<std::int32_t> blocks_of_rank(std::int32_t blocks, int rank, int ranks) {
  std::vector<std::int32_t> owned;
  for (std::int32_t block = rank; block < blocks; block += ranks) owned.push_back(block);
  return owned;
}

tables::AdjustmentResult adjust_additivity_block_angular(const Communicator& comm, const CsrView& matrix,
                                                         std::span<const double> perturbed,
                                                         std::span<const double> weights,
                                                         const tables::BlockAngularOrdering& ordering,
                                                         const tables::AdjustmentOptions& options) {
  const std::vector<std::int32_t> owned = blocks_of_rank(ordering.blocks, comm.rank(), comm.size());
  RankBlockExchange exchange(comm, ordering.blocks);
  return tables::adjust_additivity_block_angular(matrix, perturbed, weights, ordering, owned, exchange, options);
}

void broadcast_ordering(const Communicator& comm, tables::BlockAngularOrdering& ordering) {
  ByteWriter writer;
  if (comm.is_coordinator()) {
    writer.put(ordering.form);
    writer.put(ordering.blocks);
    writer.put_vector(ordering.row_block);
    writer.put_vector(ordering.column_block);
    writer.put_vector(ordering.row_order);
    writer.put_vector(ordering.column_order);
    writer.put_vector(ordering.block_rows);
    writer.put_vector(ordering.block_columns);
    writer.put(ordering.linking_size);
    writer.put(ordering.imbalance);
    writer.put_vector(ordering.levels);
  }
  const std::vector<std::byte> bytes = comm.broadcast_bytes(writer.bytes());
  if (comm.is_coordinator()) return;
  ByteReader reader(bytes);
  ordering.form = reader.get<tables::BlockAngularForm>();
  ordering.blocks = reader.get<std::int32_t>();
  ordering.row_block = reader.get_vector<std::int32_t>();
  ordering.column_block = reader.get_vector<std::int32_t>();
  ordering.row_order = reader.get_vector<std::int64_t>();
  ordering.column_order = reader.get_vector<std::int64_t>();
  ordering.block_rows = reader.get_vector<std::int64_t>();
  ordering.block_columns = reader.get_vector<std::int64_t>();
  ordering.linking_size = reader.get<std::int64_t>();
  ordering.imbalance = reader.get<double>();
  ordering.levels = reader.get_vector<tables::CoarseningLevel>();
}

}  // namespace sdc::distributed
