// HDF5's shuffle filter as the chunk codec runs it (io/chunk_codec.h), on one full chunk in memory.
//
//   BM_ShuffleBytes/element_size:S     shuffle_bytes() of one chunk of 131072 S-byte values (S = 4, 8)
//   BM_UnshuffleBytes/element_size:S   unshuffle_bytes() of the same chunk
//
// Throughput is chunk bytes per second. The chunk (512 KiB or 1 MiB) fits the L2 or L3 cache, as it
// does when a reader thread inflates a chunk and unshuffles it at once, so the figures measure the
// transpose rather than memory bandwidth. The transpose never looks at the values; they are
// census-like anyway (small integers, full-precision doubles) from a fixed seed.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "io/chunk_codec.h"

namespace {

constexpr std::size_t kChunkElements = 131072;

std::vector<std::byte> chunk_of(std::size_t element_size) {
  std::vector<std::byte> bytes(kChunkElements * element_size);
  std::mt19937_64 rng(20261121);
  for (std::size_t i = 0; i < kChunkElements; ++i) {
    if (element_size == 4) {
      const auto value = static_cast<std::int32_t>(rng() % 4000);
      std::memcpy(bytes.data() + i * 4, &value, 4);
    } else {
      const double value = std::uniform_real_distribution<double>(0.0, 1000.0)(rng);
      std::memcpy(bytes.data() + i * 8, &value, 8);
    }
  }
  return bytes;
}

template <auto kCodec>
void run_codec(benchmark::State& state) {
  const auto element_size = static_cast<std::size_t>(state.range(0));
  const std::vector<std::byte> in = chunk_of(element_size);
  std::vector<std::byte> out(in.size());
  for (auto _ : state) {
    kCodec(in, element_size, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
}

void BM_ShuffleBytes(benchmark::State& state) { run_codec<sdc::io::shuffle_bytes>(state); }
void BM_UnshuffleBytes(benchmark::State& state) { run_codec<sdc::io::unshuffle_bytes>(state); }

BENCHMARK(BM_ShuffleBytes)->ArgName("element_size")->Arg(4)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_UnshuffleBytes)->ArgName("element_size")->Arg(4)->Arg(8)->Unit(benchmark::kMicrosecond);

}  // namespace
