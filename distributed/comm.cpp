#include "distributed/comm.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

void check(int status, const char* what) {
  if (status != MPI_SUCCESS) throw InternalError(std::string("MPI call failed: ") + what);
}

// A round's send and receive buffers stay below MPI's int counts.
constexpr std::size_t kMaxBytesPerRoundAllRanks = std::size_t{1} << 30;
constexpr std::size_t kMaxBytesPerRound = kMaxBytesPerRoundAllRanks;

}  // namespace

/// Whether a launcher (mpirun, mpiexec, srun) started this process as a rank. A process started on its
/// own is a job of one rank and needs no MPI: skipping MPI_Init saves the launch of a singleton runtime
/// (about 0.3 s on every command).
bool launched_as_mpi_rank() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(variable) != nullptr) return true;
  const char* forced = std::getenv("SDC_FORCE_MPI");
  return forced != nullptr && std::string(forced) == "1";
}

MpiRuntime::MpiRuntime(int& argc, char**& argv) {
  if (!launched_as_mpi_rank()) return;
  // MPI_Init maps the node with hwloc, whose GL component probes X displays :0 to :9 and resolves
  // "localhost" for each; on a machine without /etc/hosts every lookup goes to DNS and the last one
  // waits out its 5 s timeout, on every rank. The engine needs no GPU topology. A user's own setting wins.
  setenv("HWLOC_COMPONENTS", "-gl", 0);
  int provided = 0;
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // An error inside an MPI call returns a code instead of aborting, so that it becomes our error.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiRuntime::~MpiRuntime() {
  if (mpi_is_initialized()) MPI_Finalize();
}

bool mpi_is_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int finalized = 0;
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

void abort_job(int exit_code) {
  if (mpi_is_initialized()) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
    MPI_Finalize();
  }
  std::exit(exit_code);
}

Communicator Communicator::world() {
  if (!mpi_is_initialized()) return Communicator(0, 1);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return Communicator(rank, size);
}

void Communicator::barrier() const {
  if (size_ > 1) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

static std::int64_t all_reduce(std::int64_t value, MPI_Op op, int size) {
  if (size == 1) return value;
  std::int64_t out = 0;
  check(MPI_Allreduce(&value, &out, 1, MPI_INT64_T, op, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

std::int64_t Communicator::all_reduce_sum(std::int64_t value) const { return all_reduce(value, MPI_SUM, size_); }
std::int64_t Communicator::all_reduce_max(std::int64_t value) const { return all_reduce(value, MPI_MAX, size_); }
std::int64_t Communicator::all_reduce_min(std::int64_t value) const { return all_reduce(value, MPI_MIN, size_); }

// MPI counts are int: long arrays are reduced in slices.
template <typename T>
static void all_reduce_sum_span(std::span<T> values, MPI_Datatype type, int size) {
  if (size == 1) return;
  constexpr std::size_t kSlice = std::size_t{1} << 26;
  for (std::size_t begin = 0; begin < values.size(); begin += kSlice) {
    const std::size_t count = std::min(kSlice, values.size() - begin);
    check(MPI_Allreduce(MPI_IN_PLACE, values.data() + begin, static_cast<int>(count), type, MPI_SUM, MPI_COMM_WORLD),
          "MPI_Allreduce");
  }
}

void Communicator::all_reduce_sum(std::span<std::uint64_t> values) const {
  all_reduce_sum_span(values, MPI_UINT64_T, size_);
}
void Communicator::all_reduce_sum(std::span<std::int64_t> values) const {
  all_reduce_sum_span(values, MPI_INT64_T, size_);
}

std::vector<std::vector<std::byte>> Communicator::all_gather_bytes(std::span<const std::byte> bytes) const {
  std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(size_),
                                           std::vector<std::byte>(bytes.begin(), bytes.end()));
  return all_to_all_bytes(send);
}

std::vector<std::vector<std::byte>> Communicator::all_to_all_bytes(
    const std::vector<std::vector<std::byte>>& send) const {
  const auto ranks = static_cast<std::size_t>(size_);
  SDC_CHECK(send.size() == ranks, "one send buffer per rank");
  if (size_ == 1) return send;

  std::vector<std::int64_t> send_sizes(ranks), receive_sizes(ranks);
  for (std::size_t r = 0; r < ranks; ++r) send_sizes[r] = static_cast<std::int64_t>(send[r].size());
  check(MPI_Alltoall(send_sizes.data(), 1, MPI_INT64_T, receive_sizes.data(), 1, MPI_INT64_T, MPI_COMM_WORLD),
        "MPI_Alltoall");
  std::vector<std::vector<std::byte>> received(ranks);
  std::int64_t largest = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    received[r].resize(static_cast<std::size_t>(receive_sizes[r]));
    largest = std::max({largest, send_sizes[r], receive_sizes[r]});
  }
  const auto per_destination = static_cast<std::int64_t>(std::max<std::size_t>(1, kMaxBytesPerRoundAllRanks / ranks));
  const std::int64_t rounds = all_reduce_max((largest + per_destination - 1) / per_destination);

  std::vector<int> send_counts(ranks), send_offsets(ranks), receive_counts(ranks), receive_offsets(ranks);
  std::vector<std::byte> send_buffer, receive_buffer;
  for (std::int64_t round = 0; round < rounds; ++round) {
    const auto step = static_cast<std::size_t>(per_destination);
    const auto begin = static_cast<std::size_t>(round) * step;
    const auto slice = [&](std::size_t total) {
      return total > begin ? std::min(total - begin, step) : std::size_t{0};
    };
    send_buffer.clear();
    std::size_t receive_total = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
      const std::size_t out = slice(send[r].size());
      send_offsets[r] = static_cast<int>(send_buffer.size());
      send_counts[r] = static_cast<int>(out);
      send_buffer.insert(send_buffer.end(),
                         send[r].begin() + static_cast<std::ptrdiff_t>(std::min(begin, send[r].size())),
                         send[r].begin() + static_cast<std::ptrdiff_t>(std::min(begin, send[r].size()) + out));
      receive_offsets[r] = static_cast<int>(receive_total);
      receive_counts[r] = static_cast<int>(slice(received[r].size()));
      receive_total += static_cast<std::size_t>(receive_counts[r]);
    }
    receive_buffer.resize(receive_total);
    check(MPI_Alltoallv(send_buffer.data(), send_counts.data(), send_offsets.data(), MPI_BYTE, receive_buffer.data(),
                        receive_counts.data(), receive_offsets.data(), MPI_BYTE, MPI_COMM_WORLD),
          "MPI_Alltoallv");
    for (std::size_t r = 0; r < ranks; ++r)
      std::copy_n(receive_buffer.begin() + receive_offsets[r], receive_counts[r],
                  received[r].begin() + static_cast<std::ptrdiff_t>(begin));
  }
  return received;
}

std::vector<std::byte> Communicator::broadcast_bytes(std::span<const std::byte> bytes) const {
  std::vector<std::byte> out(bytes.begin(), bytes.end());
  if (size_ == 1) return out;
  std::int64_t size = static_cast<std::int64_t>(out.size());
  check(MPI_Bcast(&size, 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  out.resize(static_cast<std::size_t>(size));
  for (std::size_t begin = 0; begin < out.size(); begin += kMaxBytesPerRound) {
    const auto count = static_cast<int>(std::min(kMaxBytesPerRound, out.size() - begin));
    check(MPI_Bcast(out.data() + begin, count, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }
  return out;
}

void ByteReader::read_into(void* out, std::size_t size) {
  SDC_CHECK(position_ + size <= bytes_.size(), "reading past the end of a received buffer");
  if (size == 0) return;  // an empty span may have a null data pointer
  std::memcpy(out, bytes_.data() + position_, size);
  position_ += size;
}

}  // namespace sdc::distributed
