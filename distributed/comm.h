#pragma once
// The MPI layer. This folder is the only one that includes <mpi.h>, and only in its .cpp files: the
// rest of sdc-engine sees ranks, byte buffers and typed helpers, never MPI types.
//
// Every collective here is entered by all ranks or none. A rank that fails does not return to a
// collective: it calls abort_job(), which ends every rank of the job with the error's exit code.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace sdc::distributed {

/// MPI_Init_thread at construction (threads funnelled: only the main thread calls MPI), MPI_Finalize
/// at destruction — when a launcher (mpirun, mpiexec, srun) started the process, or SDC_FORCE_MPI=1.
/// A process started on its own is a job of one rank without MPI.
class MpiRuntime {
 public:
  MpiRuntime(int& argc, char**& argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
};

bool mpi_is_initialized();

/// Ends the whole job: every rank exits with `exit_code`. With one rank, exits the process.
[[noreturn]] void abort_job(int exit_code);

/// The world communicator: all ranks of the job.
class Communicator {
 public:
  static Communicator world();

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  /// Rank 0 merges partial results and writes reports.
  bool is_coordinator() const noexcept { return rank_ == 0; }

  void barrier() const;

  std::int64_t all_reduce_sum(std::int64_t value) const;
  std::int64_t all_reduce_max(std::int64_t value) const;
  std::int64_t all_reduce_min(std::int64_t value) const;
  /// Element-wise sums of integer arrays of equal length on every rank, in place (integer sums: the
  /// same result for any reduction order).
  void all_reduce_sum(std::span<std::uint64_t> values) const;
  void all_reduce_sum(std::span<std::int64_t> values) const;
  /// Every rank's `bytes`, in rank order (sizes may differ).
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> bytes) const;
  /// Personalised all-to-all: send[r] goes to rank r; returns what each rank sent here, by source.
  /// Buffers of any size (sent in rounds below MPI's int counts).
  std::vector<std::vector<std::byte>> all_to_all_bytes(const std::vector<std::vector<std::byte>>& send) const;
  /// The coordinator's `bytes` on every rank.
  std::vector<std::byte> broadcast_bytes(std::span<const std::byte> bytes) const;
  /// The coordinator's `text` on every rank (other ranks' `text` is ignored).
  std::string broadcast_string(const std::string& text) const {
    const auto shared = broadcast_bytes(std::as_bytes(std::span(text.data(), text.size())));
    return std::string(reinterpret_cast<const char*>(shared.data()), shared.size());
  }

  template <typename T>
  std::vector<T> all_gather(const T& value) const {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto parts = all_gather_bytes(std::as_bytes(std::span(&value, 1)));
    std::vector<T> out(parts.size());
    for (std::size_t r = 0; r < parts.size(); ++r) std::memcpy(&out[r], parts[r].data(), sizeof(T));
    return out;
  }

 private:
  Communicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank_ = 0;
  int size_ = 1;
};

// ---- byte buffers for the shuffles: trivially copyable values appended and read back in order ----

class ByteWriter {
 public:
  template <typename T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&value, sizeof(T));
  }
  template <typename T>
  void put_span(std::span<const T> values) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(values.data(), values.size_bytes());
  }
  /// Room for `more` bytes past what is written, allocated once (a growing buffer reallocates and
  /// zero-fills as it doubles).
  void reserve(std::size_t more) {
    if (bytes_.size() < size_ + more) bytes_.resize(size_ + more);
  }
  /// Its length, then its values.
  template <typename T>
  void put_vector(const std::vector<T>& values) {
    put(static_cast<std::uint64_t>(values.size()));
    put_span(std::span<const T>(values));
  }
  std::vector<std::byte>& bytes() {
    bytes_.resize(size_);
    return bytes_;
  }

 private:
  void append(const void* data, std::size_t size) {
    if (size == 0) return;  // an empty span may have a null data pointer, which memcpy must not see
    if (size_ + size > bytes_.size()) bytes_.resize(std::max(2 * bytes_.size(), size_ + size + 256));
    std::memcpy(bytes_.data() + size_, data, size);
    size_ += size;
  }
  std::vector<std::byte> bytes_;
  std::size_t size_ = 0;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    T value;
    read_into(&value, sizeof(T));
    return value;
  }
  template <typename T>
  void get_span(std::span<T> out) {
    read_into(out.data(), out.size_bytes());
  }
  /// What put_vector wrote.
  template <typename T>
  std::vector<T> get_vector() {
    std::vector<T> values(get<std::uint64_t>());
    get_span(std::span<T>(values));
    return values;
  }
  bool done() const { return position_ == bytes_.size(); }

 private:
  void read_into(void* out, std::size_t size);
  std::span<const std::byte> bytes_;
  std::size_t position_ = 0;
};

}  // namespace sdc::distributed
