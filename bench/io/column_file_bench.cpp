// Column files (io/hdf5_table.h) against plain sequential file I/O of the same bytes.
//
//   BM_ColumnFile_Write/filters:F     write_table(), F = 0 none, 1 default (shuffle + deflate level 1)
//   BM_ColumnFile_Read/filters:F/warm:W   read_table() of every variable, W = 0 cold page cache, 1 warm
//   BM_RawFile_Write, BM_RawFile_Read/warm:W   fwrite/fread of the same column bytes into one file
//
// Throughput is logical bytes (the uncompressed values) per second. Writes include fsync, as
// write_table() ends with one; cold reads drop the file's pages (posix_fadvise DONTNEED after fsync)
// before each iteration. Both readers allocate their destination columns inside the timed loop.
// The table is census-like and built once, outside the timed loops, from a fixed seed:
// SDC_BENCH_ROWS rows (default 10 000 000), files under SDC_BENCH_DIR (default the temp directory).

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <tbb/info.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/hdf5_table.h"

namespace {

using sdc::Column;
using sdc::Table;
using sdc::VariableInfo;
using sdc::VariableRole;

std::int64_t bench_rows() {
  const char* text = std::getenv("SDC_BENCH_ROWS");
  return text != nullptr ? std::stoll(text) : 10'000'000;
}

std::filesystem::path bench_dir() {
  const char* text = std::getenv("SDC_BENCH_DIR");
  const std::filesystem::path base =
      text != nullptr ? std::filesystem::path(text) : std::filesystem::temp_directory_path();
  const auto dir = base / ("sdc-column-file-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

/// Removes the benchmark's files when the program ends.
struct Scratch {
  std::filesystem::path dir = bench_dir();
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

Scratch& scratch() {
  static Scratch instance;
  return instance;
}

std::vector<std::string> labels(const std::string& prefix, int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

/// A categorical column with a skewed distribution over `levels` and ~1% missing.
Column categorical(std::mt19937_64& rng, const std::string& name, VariableRole role, int levels, std::size_t rows,
                   int geography_level = 0) {
  std::vector<double> weights;
  for (int i = 0; i < levels; ++i) weights.push_back(1.0 / (1.0 + i));
  std::discrete_distribution<std::int32_t> draw(weights.begin(), weights.end());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::int32_t> codes(rows);
  for (auto& code : codes) code = unit(rng) < 0.01 ? sdc::kMissingCode : draw(rng);
  VariableInfo info{name, sdc::VariableType::kCategorical, role, geography_level, labels(name + "_", levels), {}, {},
                    -1};
  return Column::categorical(std::move(info), std::move(codes));
}

Table make_census(std::int64_t row_count) {
  const auto rows = static_cast<std::size_t>(row_count);
  std::mt19937_64 rng(20240101);
  Table table("bench", row_count);
  std::vector<std::int64_t> ids(rows);
  for (std::size_t i = 0; i < rows; ++i) ids[i] = 100'000'000 + static_cast<std::int64_t>(i);
  table.add_column(
      Column::id(VariableInfo{"person_id", {}, VariableRole::kIdentifier, 0, {}, {}, {}, -1}, std::move(ids)));
  table.add_column(categorical(rng, "region", VariableRole::kGeography, 26, rows, 1));
  table.add_column(categorical(rng, "age_group", VariableRole::kKey, 19, rows));
  table.add_column(categorical(rng, "sex", VariableRole::kKey, 2, rows));
  table.add_column(categorical(rng, "marital", VariableRole::kKey, 5, rows));
  table.add_column(categorical(rng, "education", VariableRole::kKey, 10, rows));
  table.add_column(categorical(rng, "occupation", VariableRole::kKey, 40, rows));
  // Incomes as reported: whole currency units, lognormal, 5% missing. Weights: full-precision
  // doubles (calibrated weights), the hard case for compression.
  std::lognormal_distribution<double> income_draw(10.3, 0.9);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> income(rows), weight(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    income[i] = unit(rng) < 0.05 ? std::nan("") : std::round(income_draw(rng));
    weight[i] = 40.0 + 20.0 * unit(rng);
  }
  table.add_column(
      Column::continuous(VariableInfo{"income", {}, VariableRole::kContinuous, 0, {}, {}, {}, -1}, std::move(income)));
  table.add_column(
      Column::continuous(VariableInfo{"weight", {}, VariableRole::kWeight, 0, {}, {}, {}, -1}, std::move(weight)));
  sdc::validate_table(table);
  return table;
}

const Table& census() {
  static const Table table = make_census(bench_rows());
  return table;
}

std::int64_t logical_bytes(const Table& table) {
  std::int64_t bytes = 0;
  for (const Column& column : table.columns())
    bytes += static_cast<std::int64_t>(column.size() * (column.type() == sdc::VariableType::kCategorical ? 4 : 8));
  return bytes;
}

std::span<const std::byte> bytes_of(const Column& column) {
  return std::visit([](const auto& values) { return std::as_bytes(std::span(values)); }, column.storage());
}

void drop_page_cache(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open " + path.string());
  ::fsync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void warm_page_cache(const std::filesystem::path& path) {
  std::vector<char> buffer(std::size_t{8} << 20);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  while (std::fread(buffer.data(), 1, buffer.size(), file) > 0) {
  }
  std::fclose(file);
}

sdc::io::Hdf5WriteOptions write_options(bool filtered) {
  sdc::io::Hdf5WriteOptions options;
  options.filters = filtered ? sdc::io::Hdf5Filters{} : sdc::io::parse_filters("none");
  options.provenance = sdc::io::make_provenance("column_file_bench", "");
  return options;
}

/// The file BM_ColumnFile_Read reads, written once per filter setting and checked once.
const std::filesystem::path& column_file(bool filtered) {
  static std::map<bool, std::filesystem::path> files;
  auto found = files.find(filtered);
  if (found != files.end()) return found->second;
  const auto path = scratch().dir / (filtered ? "read-default.h5" : "read-none.h5");
  sdc::io::write_table(census(), path, write_options(filtered));
  const Table back = sdc::io::read_table(path);
  if (back.row_count() != census().row_count() || back.column_count() != census().column_count() ||
      back.require("weight").values().back() != census().require("weight").values().back())
    throw std::runtime_error("column file does not read back what was written");
  return files.emplace(filtered, path).first->second;
}

void write_raw(const Table& table, const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("cannot create " + path.string());
  for (const Column& column : table.columns()) {
    const auto bytes = bytes_of(column);
    if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) throw std::runtime_error("short write");
  }
  std::fflush(file);
  ::fsync(::fileno(file));
  std::fclose(file);
}

std::vector<std::vector<std::byte>> read_raw(const Table& shape, const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error("cannot open " + path.string());
  std::vector<std::vector<std::byte>> columns;
  for (const Column& column : shape.columns()) {
    columns.emplace_back(bytes_of(column).size());
    if (std::fread(columns.back().data(), 1, columns.back().size(), file) != columns.back().size())
      throw std::runtime_error("short read");
  }
  std::fclose(file);
  return columns;
}

void set_throughput(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * logical_bytes(census()));
  state.counters["rows"] = static_cast<double>(census().row_count());
}

void BM_ColumnFile_Write(benchmark::State& state) {
  const bool filtered = state.range(0) != 0;
  const Table& table = census();
  const auto path = scratch().dir / "write.h5";
  for (auto _ : state) {
    sdc::io::write_table(table, path, write_options(filtered));
    state.PauseTiming();
    state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
    drop_page_cache(path);
    std::filesystem::remove(path);
    state.ResumeTiming();
  }
  set_throughput(state);
}

void BM_ColumnFile_Read(benchmark::State& state) {
  const bool filtered = state.range(0) != 0;
  const bool warm = state.range(1) != 0;
  const auto& path = column_file(filtered);
  if (warm) warm_page_cache(path);
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      drop_page_cache(path);
      state.ResumeTiming();
    }
    Table table = sdc::io::read_table(path, {{}, 0, -1, false});
    benchmark::DoNotOptimize(table.columns().data());
    state.PauseTiming();
    { Table discard = std::move(table); }  // freeing the columns is not reading
    state.ResumeTiming();
  }
  set_throughput(state);
}

void BM_RawFile_Write(benchmark::State& state) {
  const Table& table = census();
  const auto path = scratch().dir / "write.raw";
  for (auto _ : state) {
    write_raw(table, path);
    state.PauseTiming();
    drop_page_cache(path);
    std::filesystem::remove(path);
    state.ResumeTiming();
  }
  set_throughput(state);
}

void BM_RawFile_Read(benchmark::State& state) {
  const bool warm = state.range(0) != 0;
  const auto path = scratch().dir / "read.raw";
  if (!std::filesystem::exists(path)) write_raw(census(), path);
  if (warm) warm_page_cache(path);
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      drop_page_cache(path);
      state.ResumeTiming();
    }
    auto columns = read_raw(census(), path);
    benchmark::DoNotOptimize(columns.data());
    state.PauseTiming();
    { auto discard = std::move(columns); }
    state.ResumeTiming();
  }
  set_throughput(state);
}

constexpr int kRepetitions = 3;

BENCHMARK(BM_ColumnFile_Write)
    ->ArgName("filters")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(kRepetitions)
    ->DisplayAggregatesOnly(true);
BENCHMARK(BM_RawFile_Write)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(kRepetitions)
    ->DisplayAggregatesOnly(true);
BENCHMARK(BM_ColumnFile_Read)
    ->ArgNames({"filters", "warm"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(kRepetitions)
    ->DisplayAggregatesOnly(true);
BENCHMARK(BM_RawFile_Read)
    ->ArgName("warm")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(kRepetitions)
    ->DisplayAggregatesOnly(true);

// Runs before main's benchmarks: Google Benchmark's main calls Initialize after static initialisation.
const bool kContextAdded = [] {
  benchmark::AddCustomContext("sdc_build_type", SDC_BUILD_TYPE);
  benchmark::AddCustomContext("sdc_bench_rows", std::to_string(bench_rows()));
  benchmark::AddCustomContext("tbb_default_concurrency", std::to_string(tbb::info::default_concurrency()));
  return true;
}();

}  // namespace
