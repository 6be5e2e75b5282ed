// CSV import (io/csv.h) of a census-like file, from the file to a validated in-memory Table.
//
//   BM_CsvImport_EndToEnd/threads:T      import_csv() as `sdc import` calls it: map, SHA-256 of the file,
//                                        both parse passes, dictionaries, validate_table()
//   BM_CsvImport_NoDigest/threads:T      the same without the SHA-256 (the parse alone)
//   BM_CsvImport_Gzip/threads:T          the same file gzip-compressed (level 1): zlib inflate + parse
//   BM_CsvImport_WithHdf5Write/threads:T import_csv() then io::write_table() (default filters, fsync)
//
// Throughput is bytes of CSV text per second (for gzip: uncompressed bytes), in MB/s = 1e6 bytes/s.
// The file is generated once, outside the timed loops, from a fixed seed: SDC_BENCH_CSV_ROWS rows
// (default 3 500 000, about 300 MB) under SDC_BENCH_DIR (default the temp directory), removed at exit.
// Roles as a census run gives them: geography NUTS1..LAU2, household HID, weight WEIGHT.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>
#include <unistd.h>
#include <zlib.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>

#include "io/csv.h"
#include "io/hdf5_table.h"

namespace {

std::int64_t bench_rows() {
  const char* text = std::getenv("SDC_BENCH_CSV_ROWS");
  return text != nullptr ? std::stoll(text) : 3'500'000;
}

struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    const char* text = std::getenv("SDC_BENCH_DIR");
    const std::filesystem::path base =
        text != nullptr ? std::filesystem::path(text) : std::filesystem::temp_directory_path();
    dir = base / ("sdc-csv-import-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

Scratch& scratch() {
  static Scratch instance;
  return instance;
}

void append_int(std::string& out, long long value) {
  char buffer[24];
  out.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

void append_fixed2(std::string& out, long long cents) {  // "12345.67"
  append_int(out, cents / 100);
  out += '.';
  const long long rest = cents % 100;
  out += static_cast<char>('0' + rest / 10);
  out += static_cast<char>('0' + rest % 10);
}

// A census-like person file: nested geography, households of 1-6 persons sorted by household id,
// small integer codes, a quoted age band holding a comma, a text country code, a 1 km grid cell
// (text, thousands of levels), an income with 2 decimals (10 % missing) and a weight.
std::filesystem::path make_csv() {
  const auto path = scratch().dir / "census.csv";
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("cannot create " + path.string());
  static constexpr const char* kCountries[] = {"AUT", "DEU", "FRA", "ITA", "ESP", "POL", "ROU", "NLD", "BEL", "GRC",
                                               "CZE", "PRT", "SWE", "HUN", "BGR", "DNK", "FIN", "SVK", "IRL", "HRV",
                                               "LTU", "SVN", "LVA", "EST", "CYP", "LUX", "MLT", "TUR", "SRB", "UKR"};
  std::mt19937_64 rng(20240611);
  std::string text = "NUTS1,NUTS2,NUTS3,LAU2,GRID,HID,PID,SEX,AGE,AGE.M,MARSTAT,EDU,ACT,OCC,COUNTRY,INCOME,WEIGHT\n";
  long long household = 0;
  int members = 0;
  int person = 0;
  long long lau = 0;
  long long nuts3 = 0;
  long long grid_n = 0;
  long long grid_e = 0;
  long long weight = 0;
  for (std::int64_t row = 0; row < bench_rows(); ++row) {
    if (person == members) {  // a new household
      ++household;
      members = 1 + static_cast<int>(rng() % 6);
      person = 0;
      const long long nuts1 = 1 + static_cast<long long>(rng() % 3);
      const long long nuts2 = nuts1 * 10 + 1 + static_cast<long long>(rng() % 3);
      nuts3 = nuts2 * 10 + 1 + static_cast<long long>(rng() % 4);
      lau = nuts3 * 1000 + 1 + static_cast<long long>(rng() % 55);
      grid_n = 2600 + static_cast<long long>(rng() % 100);
      grid_e = 4600 + static_cast<long long>(rng() % 100);
      weight = 5000 + static_cast<long long>(rng() % 10000);
    }
    ++person;
    append_int(text, nuts3 / 100);
    text += ',';
    append_int(text, nuts3 / 10);
    text += ',';
    append_int(text, nuts3);
    text += ',';
    append_int(text, lau);
    text += ",1kmN";
    append_int(text, grid_n);
    text += 'E';
    append_int(text, grid_e);
    text += ',';
    append_int(text, household);
    text += ',';
    append_int(text, person);
    text += ',';
    append_int(text, 1 + static_cast<long long>(rng() % 2));
    text += ',';
    const long long age = static_cast<long long>(rng() % 100);
    append_int(text, age);
    text += ",\"[";
    append_int(text, age / 5 * 5);
    text += ',';
    append_int(text, age / 5 * 5 + 5);
    text += ")\",";
    append_int(text, 1 + static_cast<long long>(rng() % 5));
    text += ',';
    append_int(text, static_cast<long long>(rng() % 9));
    text += ',';
    append_int(text, 1 + static_cast<long long>(rng() % 4));
    text += ',';
    append_int(text, 100 + static_cast<long long>(rng() % 400));
    text += ',';
    text += kCountries[rng() % 30];
    text += ',';
    if (rng() % 10 != 0) append_fixed2(text, static_cast<long long>(rng() % 12'000'000));
    text += ',';
    append_fixed2(text, weight);
    text += '\n';
    if (text.size() > (std::size_t{8} << 20)) {
      std::fwrite(text.data(), 1, text.size(), file);
      text.clear();
    }
  }
  std::fwrite(text.data(), 1, text.size(), file);
  if (std::fclose(file) != 0) throw std::runtime_error("cannot write " + path.string());
  return path;
}

const std::filesystem::path& csv_path() {
  static const std::filesystem::path path = make_csv();
  return path;
}

const std::filesystem::path& gzip_path() {
  static const std::filesystem::path path = [] {
    const auto out = scratch().dir / "census.csv.gz";
    std::FILE* in = std::fopen(csv_path().c_str(), "rb");
    gzFile gz = gzopen(out.c_str(), "wb1");
    if (in == nullptr || gz == nullptr) throw std::runtime_error("cannot make " + out.string());
    std::string buffer(std::size_t{1} << 20, '\0');
    std::size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), in)) > 0)
      gzwrite(gz, buffer.data(), static_cast<unsigned>(n));
    std::fclose(in);
    if (gzclose(gz) != Z_OK) throw std::runtime_error("cannot write " + out.string());
    return out;
  }();
  return path;
}

sdc::io::CsvImportOptions census_options(bool digest) {
  sdc::io::CsvImportOptions options;
  sdc::io::add_role_assignment(options, "geography=NUTS1,NUTS2,NUTS3,LAU2");
  sdc::io::add_role_assignment(options, "household=HID");
  sdc::io::add_role_assignment(options, "weight=WEIGHT");
  options.compute_digest = digest;
  return options;
}

void run_import(benchmark::State& state, const std::filesystem::path& path, bool digest, bool write) {
  const tbb::global_control threads(tbb::global_control::max_allowed_parallelism,
                                    static_cast<std::size_t>(state.range(0)));
  const auto options = census_options(digest);
  std::uint64_t text_bytes = 0;
  {  // checked once before timing
    const auto result = sdc::io::import_csv(path, options);
    if (result.table.row_count() != bench_rows() || result.table.column_count() != 17)
      throw std::runtime_error("the benchmark file did not import as generated");
    text_bytes = result.data_bytes;
  }
  const auto output = scratch().dir / "census.h5";
  for (auto _ : state) {
    auto result = sdc::io::import_csv(path, options);
    if (write) {
      sdc::io::Hdf5WriteOptions write_options;
      sdc::io::write_table(result.table, output, write_options);
    }
    benchmark::DoNotOptimize(result.table.row_count());
    state.PauseTiming();
    { auto discard = std::move(result); }
    std::error_code ec;
    std::filesystem::remove(output, ec);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(text_bytes));
  state.counters["rows"] = static_cast<double>(bench_rows());
}

void BM_CsvImport_EndToEnd(benchmark::State& state) { run_import(state, csv_path(), true, false); }
void BM_CsvImport_NoDigest(benchmark::State& state) { run_import(state, csv_path(), false, false); }
void BM_CsvImport_Gzip(benchmark::State& state) { run_import(state, gzip_path(), true, false); }
void BM_CsvImport_WithHdf5Write(benchmark::State& state) { run_import(state, csv_path(), true, true); }

constexpr int kIterations = 3;

BENCHMARK(BM_CsvImport_EndToEnd)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CsvImport_NoDigest)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CsvImport_Gzip)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CsvImport_WithHdf5Write)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);

const bool kContextAdded = [] {
  benchmark::AddCustomContext("sdc_csv_bench_rows", std::to_string(bench_rows()));
  return true;
}();

}  // namespace
