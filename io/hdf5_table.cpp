// The sdc-engine HDF5 table format, version 1 (docs/format.md).
//
// HDF5's filter pipeline runs on the calling thread only and the Debian build is not thread-safe, so
// the compressed paths split the work: the calling thread makes every HDF5 call (H5Dwrite_chunk,
// H5Dread_chunk), TBB threads shuffle and deflate the bytes (io/chunk_codec.h). Batches of chunks are
// double-buffered so that the file I/O of one batch overlaps the compression of the next. With the
// filters off, large hyperslabs go through plain H5Dwrite/H5Dread.

#include "io/hdf5_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_group.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "io/chunk_codec.h"
#include "io/hdf5_handle.h"
#include "io/input_file.h"
#include "io/content_digest.h"
#include "io/sha256.h"
#include "io/timestamp.h"
#include "kernels/core/error.h"
#include "sdc/version.h"

// Chunks are handed to HDF5 as the bytes in memory; the file stores little-endian values.
static_assert(std::endian::native == std::endian::little, "the HDF5 chunk writer assumes a little-endian host");

namespace sdc::io {

// ---- HDF5 error plumbing ------------------------------------------------------------------------

namespace hdf5 {
namespace {

herr_t keep_innermost(unsigned depth, const H5E_error2_t* error, void* data) {
  auto* detail = static_cast<std::string*>(data);
  if (depth == 0 && error != nullptr && error->desc != nullptr) *detail = error->desc;
  return 0;
}

}  // namespace

void initialize() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Must precede the library's initialisation. Every file is closed explicitly; HDF5's own
    // shutdown would only touch a file whose close failed, and crash on it (see abandon()).
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

void abandon(File& file) {
  void* handle = nullptr;
  if (file.valid() && H5Fget_vfd_handle(file.get(), H5P_DEFAULT, &handle) >= 0 && handle != nullptr) {
    const int sink = ::memfd_create("sdc-abandoned-output", MFD_CLOEXEC);
    if (sink >= 0) {
      ::dup2(sink, *static_cast<int*>(handle));
      ::close(sink);
    }
  }
  file.close();
  take_error_detail();
}

namespace {

/// HDF5's I/O failures span lines and list buffers, offsets and the temporary file's name; the
/// operating system's reason is what a user can act on.
std::string condense(const std::string& detail) {
  constexpr std::string_view kReason = "error message = '";
  if (const auto start = detail.find(kReason); start != std::string::npos) {
    const auto begin = start + kReason.size();
    const auto end = detail.find('\'', begin);
    if (end != std::string::npos) return detail.substr(begin, end - begin);
  }
  constexpr std::size_t kMaxLength = 200;
  return detail.substr(0, std::min(detail.find('\n'), kMaxLength));
}

}  // namespace

std::string take_error_detail() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &detail);
  H5Eclear2(H5E_DEFAULT);
  return condense(detail);
}

}  // namespace hdf5

namespace {

constexpr std::string_view kFormatName = "sdc-engine table";
constexpr const char* kVariablesGroup = "variables";
constexpr const char* kAttrFormat = "sdc_format";
constexpr const char* kAttrFormatVersion = "sdc_format_version";
constexpr const char* kAttrRowCount = "row_count";
constexpr const char* kAttrToolVersion = "provenance_tool_version";
constexpr const char* kAttrCommand = "provenance_command";
constexpr const char* kAttrInputDigest = "provenance_input_digest";
constexpr const char* kAttrCreatedUtc = "provenance_created_utc";
constexpr const char* kAttrStepFingerprint = "provenance_step_fingerprint";
constexpr const char* kAttrStepResults = "provenance_step_results";
constexpr const char* kAttrType = "type";
constexpr const char* kAttrRole = "role";
constexpr const char* kAttrLevels = "levels";
constexpr const char* kAttrMissingCode = "missing_code";
constexpr const char* kAttrGeographyLevel = "geography_level";

/// Uncompressed bytes per batch of chunks. Two batches are in flight (one in I/O, one in the codec),
/// so the extra memory of a read or write is about 2 x 8 MiB plus two chunks per thread.
constexpr std::size_t kBatchBytes = std::size_t{8} << 20;
/// Values per streaming block (info, content digest): memory stays at one block of one variable.
constexpr std::size_t kStreamBlockBytes = std::size_t{32} << 20;

std::string detail_suffix(const std::string& detail) { return detail.empty() ? std::string() : " (HDF5: " + detail + ")"; }

// ---- types --------------------------------------------------------------------------------------

hid_t stored_type(VariableType type) {
  switch (type) {
    case VariableType::kCategorical: return H5T_STD_I32LE;
    case VariableType::kContinuous: return H5T_IEEE_F64LE;
    case VariableType::kId: return H5T_STD_I64LE;
  }
  return H5T_STD_I64LE;
}

hid_t memory_type(VariableType type) {
  switch (type) {
    case VariableType::kCategorical: return H5T_NATIVE_INT32;
    case VariableType::kContinuous: return H5T_NATIVE_DOUBLE;
    case VariableType::kId: return H5T_NATIVE_INT64;
  }
  return H5T_NATIVE_INT64;
}

std::size_t element_size(VariableType type) { return type == VariableType::kCategorical ? 4 : 8; }

std::string_view stored_type_name(VariableType type) {
  switch (type) {
    case VariableType::kCategorical: return "32-bit signed integers";
    case VariableType::kContinuous: return "64-bit floats";
    case VariableType::kId: return "64-bit signed integers";
  }
  return "?";
}

/// Describes an HDF5 datatype for messages ("16-bit signed integers", "strings", ...).
std::string describe_dtype(hid_t type) {
  const H5T_class_t type_class = H5Tget_class(type);
  const std::string bits = std::to_string(H5Tget_size(type) * 8) + "-bit ";
  switch (type_class) {
    case H5T_INTEGER: return bits + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned integers" : "signed integers");
    case H5T_FLOAT: return bits + "floats";
    case H5T_STRING: return "strings";
    default: return "values of a compound or other non-numeric type";
  }
}

bool dtype_matches(hid_t type, VariableType expected) {
  const H5T_class_t type_class = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  switch (expected) {
    case VariableType::kCategorical: return type_class == H5T_INTEGER && size == 4 && H5Tget_sign(type) == H5T_SGN_2;
    case VariableType::kContinuous: return type_class == H5T_FLOAT && size == 8;
    case VariableType::kId: return type_class == H5T_INTEGER && size == 8 && H5Tget_sign(type) == H5T_SGN_2;
  }
  return false;
}

hdf5::Datatype string_type(H5T_cset_t cset) {
  hdf5::Datatype type(H5Tcopy(H5T_C_S1));
  if (!type.valid() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 || H5Tset_cset(type.get(), cset) < 0) return {};
  return type;
}

std::span<const std::byte> column_bytes(const Column& column) {
  return std::visit([](const auto& values) { return std::as_bytes(std::span(values)); }, column.storage());
}

std::string quoted_excerpt(std::string_view text) {
  // Attribute text (not record data) may still be long or binary; quote a short, printable excerpt.
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (char c : text.substr(0, kMax)) out += (c >= ' ' && c <= '~') ? c : '?';
  if (text.size() > kMax) out += "...";
  return out + "'";
}

/// Runs validate_table() on the metadata alone (a zero-row table): roles admit their types,
/// geography levels are 1..L, level labels are distinct.
void validate_metadata(const std::vector<VariableInfo>& variables, const std::string& source) {
  Table shape(source, 0);
  for (const VariableInfo& info : variables) {
    switch (info.type) {
      case VariableType::kCategorical: shape.add_column(Column::categorical(info, {})); break;
      case VariableType::kContinuous: shape.add_column(Column::continuous(info, {})); break;
      case VariableType::kId: shape.add_column(Column::id(info, {})); break;
    }
  }
  validate_table(shape);
}

/// Runs `background` as a TBB task while this thread runs `foreground` (the HDF5 calls); returns when
/// both are done. A failure of either is rethrown, after the other has finished with the buffers.
template <typename Foreground, typename Background>
void run_alongside(Foreground&& foreground, Background&& background) {
  tbb::task_group group;
  group.run(std::forward<Background>(background));
  try {
    foreground();
  } catch (...) {
    group.cancel();
    try {
      group.wait();
    } catch (...) {  // the foreground's error is the one to report
    }
    throw;
  }
  group.wait();
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// ---- writing attributes -------------------------------------------------------------------------

bool write_attribute(hid_t object, const char* name, hid_t file_type, hid_t value_type, const void* value) {
  hdf5::Dataspace space(H5Screate(H5S_SCALAR));
  if (!space.valid()) return false;
  hdf5::Attribute attribute(H5Acreate2(object, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  return attribute.valid() && H5Awrite(attribute.get(), value_type, value) >= 0 && attribute.close();
}

bool write_string_attribute(hid_t object, const char* name, const std::string& value) {
  const hdf5::Datatype type = string_type(H5T_CSET_UTF8);
  const char* text = value.c_str();
  return type.valid() && write_attribute(object, name, type.get(), type.get(), &text);
}

bool write_strings_attribute(hid_t object, const char* name, const std::vector<std::string>& values) {
  const hdf5::Datatype type = string_type(H5T_CSET_UTF8);
  const hsize_t count = values.size();
  hdf5::Dataspace space(H5Screate_simple(1, &count, nullptr));
  if (!type.valid() || !space.valid()) return false;
  hdf5::Attribute attribute(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attribute.valid()) return false;
  if (values.empty()) return attribute.close();
  std::vector<const char*> pointers;
  pointers.reserve(values.size());
  for (const auto& value : values) pointers.push_back(value.c_str());
  return H5Awrite(attribute.get(), type.get(), pointers.data()) >= 0 && attribute.close();
}

}  // namespace

/// Per variable, its chunks in row order, each stored as it goes to H5Dwrite_chunk.
struct EncodedRows::Impl {
  std::int64_t first_row = 0;
  std::int64_t chunk_rows = 0;
  std::map<std::string, std::vector<std::vector<std::byte>>, std::less<>> chunks;
};

EncodedRows::EncodedRows(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EncodedRows::~EncodedRows() = default;
EncodedRows::EncodedRows(EncodedRows&&) noexcept = default;
EncodedRows& EncodedRows::operator=(EncodedRows&&) noexcept = default;

std::size_t EncodedRows::stored_bytes() const noexcept {
  std::size_t total = 0;
  for (const auto& [name, chunks] : impl_->chunks)
    for (const auto& chunk : chunks) total += chunk.size();
  return total;
}

namespace {

std::optional<FileStamp> stamp_of(const std::filesystem::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return std::nullopt;
  return FileStamp{status.st_dev, status.st_ino, status.st_size,
                   static_cast<std::int64_t>(status.st_mtim.tv_sec) * 1'000'000'000 + status.st_mtim.tv_nsec};
}

// ---- writer -------------------------------------------------------------------------------------

/// The filter pipeline of a dataset creation property list: filter ids, flags and parameters in
/// order. Two datasets with equal pipelines (and equal types and chunks) accept each other's chunks.
struct FilterPipeline {
  struct Stage {
    H5Z_filter_t id = 0;
    unsigned flags = 0;
    std::vector<unsigned> parameters;
    bool operator==(const Stage&) const = default;
  };
  std::vector<Stage> stages;
  bool operator==(const FilterPipeline&) const = default;
};

std::optional<FilterPipeline> filter_pipeline(hid_t create) {
  const int count = H5Pget_nfilters(create);
  if (count < 0) return std::nullopt;
  FilterPipeline pipeline;
  for (int i = 0; i < count; ++i) {
    FilterPipeline::Stage stage;
    std::array<unsigned, 16> values{};
    std::size_t value_count = values.size();
    stage.id = H5Pget_filter2(create, static_cast<unsigned>(i), &stage.flags, &value_count, values.data(), 0, nullptr, nullptr);
    if (stage.id < 0 || value_count > values.size()) return std::nullopt;
    stage.parameters.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(value_count));
    pipeline.stages.push_back(std::move(stage));
  }
  return pipeline;
}

/// How a chunked dataset stores its values: what must agree before chunks move between datasets.
struct ChunkedLayout {
  hsize_t rows = 0;
  hsize_t chunk_rows = 0;
  FilterPipeline pipeline;
};

std::optional<ChunkedLayout> chunked_layout(hid_t dataset) {
  const hdf5::PropertyList create(H5Dget_create_plist(dataset));
  const hdf5::Dataspace space(H5Dget_space(dataset));
  ChunkedLayout layout;
  if (!create.valid() || !space.valid() || H5Pget_layout(create.get()) != H5D_CHUNKED ||
      H5Sget_simple_extent_ndims(space.get()) != 1 || H5Sget_simple_extent_dims(space.get(), &layout.rows, nullptr) != 1 ||
      H5Pget_chunk(create.get(), 1, &layout.chunk_rows) != 1 || layout.chunk_rows == 0)
    return std::nullopt;
  auto pipeline = filter_pipeline(create.get());
  if (!pipeline) return std::nullopt;
  layout.pipeline = std::move(*pipeline);
  return layout;
}

/// The file a write copies unchanged variables from (Hdf5WriteOptions::unchanged), opened read-only
/// for the duration of one create() or write_rows(). Every check failing means "encode instead":
/// the values are in memory, so copying is only ever a shortcut.
class UnchangedSource {
 public:
  explicit UnchangedSource(std::optional<UnchangedVariables> unchanged) : unchanged_(std::move(unchanged)) {
    if (!unchanged_ || unchanged_->names.empty()) return;
    const auto stamp = stamp_of(unchanged_->path);
    if (!stamp || *stamp != unchanged_->stamp) return;
    hdf5::PropertyList access(H5Pcreate(H5P_FILE_ACCESS));
    if (!access.valid() || H5Pset_file_locking(access.get(), true, true) < 0) {
      forget_errors();
      return;
    }
    file_ = hdf5::File(H5Fopen(unchanged_->path.c_str(), H5F_ACC_RDONLY, access.get()));
    if (file_.valid()) variables_ = hdf5::Group(H5Gopen2(file_.get(), kVariablesGroup, H5P_DEFAULT));
    forget_errors();
  }

  /// The source's dataset of `name` when its chunks can be copied into `target` as they are:
  /// the variable is one of the unchanged ones, and type, extent, chunk size and filters agree, and
  /// every chunk is stored. An invalid handle otherwise.
  hdf5::Dataset dataset_for(const std::string& name, hid_t target) const {
    if (!variables_.valid() ||
        std::find(unchanged_->names.begin(), unchanged_->names.end(), name) == unchanged_->names.end())
      return {};
    hdf5::Dataset source(H5Dopen2(variables_.get(), name.c_str(), H5P_DEFAULT));
    const bool compatible = source.valid() && same_type(source.get(), target) && [&] {
      const auto from = chunked_layout(source.get());
      const auto to = chunked_layout(target);
      // HDF5 1.10 does not take H5S_ALL here.
      const hdf5::Dataspace space(H5Dget_space(source.get()));
      hsize_t stored_chunks = 0;
      return from && to && from->rows == to->rows && from->chunk_rows == to->chunk_rows &&
             from->pipeline == to->pipeline && space.valid() &&
             H5Dget_num_chunks(source.get(), space.get(), &stored_chunks) >= 0 &&
             stored_chunks == (from->rows + from->chunk_rows - 1) / from->chunk_rows;
    }();
    forget_errors();
    return compatible ? std::move(source) : hdf5::Dataset();
  }

 private:
  static bool same_type(hid_t source, hid_t target) {
    const hdf5::Datatype from(H5Dget_type(source));
    const hdf5::Datatype to(H5Dget_type(target));
    return from.valid() && to.valid() && H5Tequal(from.get(), to.get()) > 0;
  }
  static void forget_errors() { hdf5::take_error_detail(); }

  std::optional<UnchangedVariables> unchanged_;
  hdf5::File file_;
  hdf5::Group variables_;
};

/// Rows per chunk of a table of `rows` rows: a short table is one chunk, since a whole default chunk
/// would waste space in every variable.
std::int64_t effective_chunk_rows(const Hdf5WriteOptions& options, std::int64_t rows) {
  return rows > 0 ? std::min(options.chunk_rows, rows) : options.chunk_rows;
}

bool filtered(const Hdf5Filters& filters) { return filters.shuffle || filters.deflate_level > 0; }

/// Creates and fills sdc-engine table files. Every HDF5 failure becomes an IoError naming `target`.
class TableWriter {
 public:
  TableWriter(const std::filesystem::path& target, const Hdf5WriteOptions& options) : target_(target), options_(options) {}

  /// Makes the file at `path` (which may exist: it is truncated) with every dataset and attribute of
  /// a table of `rows` rows, and writes the values of `table` when given.
  void create(const std::filesystem::path& path, const std::vector<VariableInfo>& variables, std::int64_t rows,
              const Table* table) const {
    hdf5::File file = create_file(path);
    finish(file, [&] {
      {
        hdf5::Group root(H5Gopen2(file.get(), "/", H5P_DEFAULT));
        if (!root.valid()) fail("the root group");
        write_file_attributes(root.get(), rows);
      }
      hdf5::Group group = create_variables_group(file.get());
      const UnchangedSource unchanged(table != nullptr ? options_.unchanged : std::nullopt);
      for (std::size_t i = 0; i < variables.size(); ++i) {
        hdf5::Dataset dataset = create_dataset(group.get(), variables[i], rows);
        if (table != nullptr) {
          const Column& column = table->columns()[i];
          write_values(dataset.get(), column, 0, effective_chunk_rows(options_, rows),
                       unchanged.dataset_for(column.name(), dataset.get()));
        }
        if (!dataset.close()) fail("dataset", variables[i].name);
      }
      if (!group.close()) fail("the variables group");
    });
  }

  /// Writes `part` into the file at `path` made by create(), at rows part.first_row_id() onwards,
  /// storing the chunks `encoded` holds as they are.
  void write_rows(const std::filesystem::path& path, const Table& part, const EncodedRows* encoded) const {
    hdf5::PropertyList access = file_access();
    hdf5::File file(H5Fopen(path.c_str(), H5F_ACC_RDWR, access.get()));
    if (!file.valid()) fail("the file");
    finish(file, [&] {
      hdf5::Group group(H5Gopen2(file.get(), kVariablesGroup, H5P_DEFAULT));
      if (!group.valid()) fail("the variables group");
      const UnchangedSource unchanged(options_.unchanged);
      for (const Column& column : part.columns()) {
        hdf5::Dataset dataset(H5Dopen2(group.get(), column.name().c_str(), H5P_DEFAULT));
        if (!dataset.valid()) fail("dataset", column.name());
        const std::int64_t chunk_rows = checked_chunk_rows(dataset.get(), part, column);
        const auto* chunks = encoded_chunks(encoded, part, column, chunk_rows);
        const hdf5::Dataset source = unchanged.dataset_for(column.name(), dataset.get());
        if (chunks != nullptr && !source.valid())
          store_chunks(dataset.get(), column, part.first_row_id(), chunk_rows, *chunks);
        else
          write_values(dataset.get(), column, part.first_row_id(), chunk_rows, source);
        if (!dataset.close()) fail("dataset", column.name());
      }
      if (!group.close()) fail("the variables group");
    });
  }

 private:
  /// Runs `write` (whose objects are closed when it returns), then flushes and closes `file`. On any
  /// failure the file is abandoned, so that HDF5 is left in a consistent state for what comes next.
  template <typename Write>
  void finish(hdf5::File& file, Write&& write) const {
    try {
      write();
      // A full disk often shows only here, when the metadata is written.
      if (H5Fflush(file.get(), H5F_SCOPE_LOCAL) < 0) fail("the file (final flush)");
    } catch (...) {
      hdf5::abandon(file);
      throw;
    }
    if (!file.close()) fail("the file (close)");
  }

  [[noreturn]] void fail(std::string_view what, std::string_view variable = {}) const {
    const std::string detail = hdf5::take_error_detail();
    std::string message = target_.string() + ": cannot write ";
    message += variable.empty() ? std::string(what) : "variable '" + std::string(variable) + "' (" + std::string(what) + ")";
    throw IoError(message + detail_suffix(detail));
  }

  hdf5::PropertyList file_access() const {
    hdf5::PropertyList access(H5Pcreate(H5P_FILE_ACCESS));
    if (!access.valid() ||
        // v1.8 objects at the least: dense attribute storage, which 100 000 level labels need.
        H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_V110) < 0 ||
        // Cluster file systems often disable flock(); do not fail there.
        H5Pset_file_locking(access.get(), true, true) < 0)
      fail("the file (access properties)");
    return access;
  }

  hdf5::File create_file(const std::filesystem::path& path) const {
    // No object time stamps anywhere, so that equal content gives byte-identical files.
    hdf5::PropertyList create(H5Pcreate(H5P_FILE_CREATE));
    if (!create.valid() || H5Pset_obj_track_times(create.get(), false) < 0) fail("the file (creation properties)");
    const hdf5::PropertyList access = file_access();
    // An output's temporary file exists already (made by AtomicOutput with the final mode);
    // truncating it keeps that mode.
    hdf5::File file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, create.get(), access.get()));
    if (!file.valid()) fail("the file");
    return file;
  }

  void write_file_attributes(hid_t root, std::int64_t rows) const {
    const std::int32_t version = kFormatVersion;
    const Provenance& provenance = options_.provenance;
    if (!write_string_attribute(root, kAttrFormat, std::string(kFormatName)) ||
        !write_attribute(root, kAttrFormatVersion, H5T_STD_I32LE, H5T_NATIVE_INT32, &version) ||
        !write_attribute(root, kAttrRowCount, H5T_STD_I64LE, H5T_NATIVE_INT64, &rows) ||
        !write_string_attribute(root, kAttrToolVersion, provenance.tool_version) ||
        !write_string_attribute(root, kAttrCommand, provenance.command) ||
        !write_string_attribute(root, kAttrInputDigest, provenance.input_digest) ||
        !write_string_attribute(root, kAttrCreatedUtc, provenance.created_utc) ||
        !write_string_attribute(root, kAttrStepFingerprint, provenance.step_fingerprint) ||
        !write_string_attribute(root, kAttrStepResults, provenance.step_results))
      fail("the file attributes");
  }

  hdf5::Group create_variables_group(hid_t file) const {
    hdf5::PropertyList create(H5Pcreate(H5P_GROUP_CREATE));
    // Link creation order is what keeps the column order: HDF5 otherwise lists links by name.
    if (!create.valid() || H5Pset_obj_track_times(create.get(), false) < 0 ||
        H5Pset_link_creation_order(create.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
      fail("the variables group (property list)");
    hdf5::Group group(H5Gcreate2(file, kVariablesGroup, H5P_DEFAULT, create.get(), H5P_DEFAULT));
    if (!group.valid()) fail("the variables group");
    return group;
  }

  hdf5::Dataset create_dataset(hid_t group, const VariableInfo& info, std::int64_t row_count) const {
    const auto rows = static_cast<hsize_t>(row_count);
    const auto chunk = static_cast<hsize_t>(effective_chunk_rows(options_, row_count));
    // An empty dataset cannot have a fixed extent smaller than its chunk; let it be extendible.
    const hsize_t max_rows = rows > 0 ? rows : H5S_UNLIMITED;
    hdf5::Dataspace space(H5Screate_simple(1, &rows, &max_rows));
    hdf5::PropertyList create(H5Pcreate(H5P_DATASET_CREATE));
    hdf5::PropertyList access(H5Pcreate(H5P_DATASET_ACCESS));
    if (!space.valid() || !create.valid() || !access.valid() || H5Pset_obj_track_times(create.get(), false) < 0 ||
        H5Pset_chunk(create.get(), 1, &chunk) < 0 || (options_.filters.shuffle && H5Pset_shuffle(create.get()) < 0) ||
        (options_.filters.deflate_level > 0 &&
         H5Pset_deflate(create.get(), static_cast<unsigned>(options_.filters.deflate_level)) < 0) ||
        // Unfiltered chunks then go straight between the file and our buffers, without a copy.
        H5Pset_chunk_cache(access.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0, H5D_CHUNK_CACHE_W0_DEFAULT) < 0)
      fail("dataset (property lists)", info.name);
    hdf5::Dataset dataset(H5Dcreate2(group, info.name.c_str(), stored_type(info.type), space.get(), H5P_DEFAULT,
                                     create.get(), access.get()));
    if (!dataset.valid()) fail("dataset", info.name);
    write_variable_attributes(dataset.get(), info);
    return dataset;
  }

  void write_variable_attributes(hid_t dataset, const VariableInfo& info) const {
    bool ok = write_string_attribute(dataset, kAttrType, std::string(to_string(info.type))) &&
              write_string_attribute(dataset, kAttrRole, std::string(to_string(info.role)));
    if (info.type == VariableType::kCategorical) {
      const std::int32_t missing = kMissingCode;
      ok = ok && write_strings_attribute(dataset, kAttrLevels, info.levels) &&
           write_attribute(dataset, kAttrMissingCode, H5T_STD_I32LE, H5T_NATIVE_INT32, &missing);
    } else if (info.type == VariableType::kContinuous) {
      const double missing = std::numeric_limits<double>::quiet_NaN();
      ok = ok && write_attribute(dataset, kAttrMissingCode, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &missing);
    }
    if (info.role == VariableRole::kGeography) {
      const std::int32_t level = info.geography_level;
      ok = ok && write_attribute(dataset, kAttrGeographyLevel, H5T_STD_I32LE, H5T_NATIVE_INT32, &level);
    }
    if (!ok) fail("attributes", info.name);
  }

  /// The dataset's chunk rows, after checking that `part` covers whole chunks of it: chunks are
  /// written whole, so two writers must never share one.
  std::int64_t checked_chunk_rows(hid_t dataset, const Table& part, const Column& column) const {
    const hdf5::PropertyList create(H5Dget_create_plist(dataset));
    const hdf5::Dataspace space(H5Dget_space(dataset));
    hsize_t chunk = 0;
    hsize_t rows = 0;
    if (!create.valid() || !space.valid() || H5Pget_chunk(create.get(), 1, &chunk) != 1 ||
        H5Sget_simple_extent_dims(space.get(), &rows, nullptr) != 1)
      fail("dataset (layout)", column.name());
    const std::int64_t first = part.first_row_id();
    const std::int64_t end = first + part.row_count();
    const auto chunk_rows = static_cast<std::int64_t>(chunk);
    SDC_CHECK(first >= 0 && first % chunk_rows == 0 && (end % chunk_rows == 0 || end == static_cast<std::int64_t>(rows)) &&
                  end <= static_cast<std::int64_t>(rows),
              "write_table_rows: rows " + std::to_string(first) + ".." + std::to_string(end) + " of variable '" +
                  column.name() + "' are not whole chunks of " + std::to_string(chunk_rows) + " rows");
    return chunk_rows;
  }

  /// Writes `column` at file rows first_row.. (a chunk boundary): copied from `source` when that is
  /// a dataset stored alike (UnchangedSource::dataset_for), else encoded here.
  void write_values(hid_t dataset, const Column& column, std::int64_t first_row, std::int64_t chunk_rows,
                    const hdf5::Dataset& source) const {
    if (column.size() == 0) return;
    if (source.valid())
      copy_chunks(source.get(), dataset, column, first_row, chunk_rows);
    else if (filtered(options_.filters))
      write_chunks(dataset, column, first_row, chunk_rows);
    else
      write_plain(dataset, column, first_row);
  }

  void write_plain(hid_t dataset, const Column& column, std::int64_t first_row) const {
    const auto start = static_cast<hsize_t>(first_row);
    const hsize_t count = column.size();
    hdf5::Dataspace file_space(H5Dget_space(dataset));
    hdf5::Dataspace memory_space(H5Screate_simple(1, &count, nullptr));
    if (!file_space.valid() || !memory_space.valid() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) < 0 ||
        H5Dwrite(dataset, memory_type(column.type()), memory_space.get(), file_space.get(), H5P_DEFAULT,
                 column_bytes(column).data()) < 0)
      fail("values", column.name());
  }

  /// The chunks of `column` that `encoded` holds, when it was made for these rows and chunks.
  static const std::vector<std::vector<std::byte>>* encoded_chunks(const EncodedRows* encoded, const Table& part,
                                                                  const Column& column, std::int64_t chunk_rows) {
    if (encoded == nullptr) return nullptr;
    const EncodedRows::Impl& impl = encoded->impl();
    const auto it = impl.chunks.find(column.name());
    if (it == impl.chunks.end()) return nullptr;
    SDC_CHECK(impl.first_row == part.first_row_id() && impl.chunk_rows == chunk_rows &&
                  it->second.size() == ceil_div(column.size(), static_cast<std::size_t>(chunk_rows)),
              "write_table_rows: the encoded chunks of variable '" + column.name() + "' were made for other rows");
    return &it->second;
  }

  void store_chunks(hid_t dataset, const Column& column, std::int64_t first_row, std::int64_t chunk_rows,
                    const std::vector<std::vector<std::byte>>& chunks) const {
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const hsize_t offset = static_cast<hsize_t>(first_row) + i * static_cast<hsize_t>(chunk_rows);
      // Filter mask 0: every filter of the dataset's pipeline was applied to this chunk.
      if (H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, &offset, chunks[i].size(), chunks[i].data()) < 0)
        fail("chunk", column.name());
    }
  }

  /// Copies the stored chunks of rows first_row .. + column.size() from `source`, a dataset stored
  /// like `dataset` (UnchangedSource), with their filter masks: no decoding, no encoding.
  void copy_chunks(hid_t source, hid_t dataset, const Column& column, std::int64_t first_row, std::int64_t chunk_rows) const {
    std::vector<std::byte> stored;
    const auto end = static_cast<hsize_t>(first_row) + column.size();
    for (auto offset = static_cast<hsize_t>(first_row); offset < end; offset += static_cast<hsize_t>(chunk_rows)) {
      hsize_t size = 0;
      std::uint32_t filter_mask = 0;
      if (H5Dget_chunk_storage_size(source, &offset, &size) < 0) fail("chunk (reading the unchanged input's)", column.name());
      stored.resize(static_cast<std::size_t>(size));
      if (H5Dread_chunk(source, H5P_DEFAULT, &offset, &filter_mask, stored.data()) < 0)
        fail("chunk (reading the unchanged input's)", column.name());
      if (H5Dwrite_chunk(dataset, H5P_DEFAULT, filter_mask, &offset, stored.size(), stored.data()) < 0)
        fail("chunk", column.name());
    }
  }

  void write_chunks(hid_t dataset, const Column& column, std::int64_t first_row, std::int64_t chunk_rows) const {
    const std::span<const std::byte> values = column_bytes(column);
    const std::size_t element = element_size(column.type());
    const auto rows_per_chunk = static_cast<std::size_t>(chunk_rows);
    const std::size_t chunk_bytes = element * rows_per_chunk;
    const std::size_t chunk_count = ceil_div(values.size(), chunk_bytes);
    const std::size_t per_batch = std::max<std::size_t>(1, kBatchBytes / chunk_bytes);
    const std::size_t batch_count = ceil_div(chunk_count, per_batch);
    const ChunkFormat format{element, chunk_bytes, options_.filters.shuffle, options_.filters.deflate_level};

    tbb::enumerable_thread_specific<ChunkEncoder> encoders(format);
    std::array<std::vector<std::vector<std::byte>>, 2> stored;
    const auto encode = [&](std::size_t batch) {
      auto& slots = stored[batch % 2];
      slots.resize(std::min(per_batch, chunk_count - batch * per_batch));
      tbb::parallel_for(std::size_t{0}, slots.size(), [&](std::size_t i) {
        const std::size_t begin = (batch * per_batch + i) * chunk_bytes;
        encoders.local().encode(values.subspan(begin, std::min(chunk_bytes, values.size() - begin)), slots[i]);
      });
    };
    const auto store = [&](std::size_t batch) {
      const auto& slots = stored[batch % 2];
      for (std::size_t i = 0; i < slots.size(); ++i) {
        const hsize_t offset = static_cast<hsize_t>(first_row) + (batch * per_batch + i) * rows_per_chunk;
        // Filter mask 0: every filter of the dataset's pipeline was applied to this chunk.
        if (H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, &offset, slots[i].size(), slots[i].data()) < 0)
          fail("chunk", column.name());
      }
    };

    encode(0);
    for (std::size_t batch = 0; batch < batch_count; ++batch) {
      if (batch + 1 < batch_count)
        run_alongside([&] { store(batch); }, [&] { encode(batch + 1); });
      else
        store(batch);
    }
  }

  const std::filesystem::path& target_;
  const Hdf5WriteOptions& options_;
};

void check_write_options(const Hdf5WriteOptions& options) {
  if (options.chunk_rows < 1 || options.chunk_rows > kMaxChunkRows)
    throw UsageError("chunk rows " + std::to_string(options.chunk_rows) + " outside 1.." + std::to_string(kMaxChunkRows));
  if (options.filters.deflate_level < 0 || options.filters.deflate_level > 9)
    throw UsageError("deflate level " + std::to_string(options.filters.deflate_level) + " outside 0..9");
}

std::vector<VariableInfo> variables_of(const Table& table) {
  std::vector<VariableInfo> variables;
  for (const Column& column : table.columns()) variables.push_back(column.info());
  return variables;
}

/// Refuses variables whose file read_table() would reject, before any output exists.
void check_storable(const std::vector<VariableInfo>& variables, const std::filesystem::path& output) {
  for (const VariableInfo& info : variables)
    for (std::size_t i = 0; i < info.levels.size(); ++i)
      if (info.levels[i].find('\0') != std::string::npos)
        throw InvalidInput(output.string() + ": variable '" + info.name + "': level label " + std::to_string(i) +
                           " contains a NUL character, which HDF5 strings cannot hold");
  validate_metadata(variables, output.string());
}

// ---- reading attributes -------------------------------------------------------------------------

/// Reclaims the strings HDF5 allocated for a variable-length string read, whatever happens next.
class VlenStrings {
 public:
  VlenStrings(hid_t type, hid_t space, std::size_t count) : type_(type), space_(space), pointers_(count, nullptr) {}
  ~VlenStrings() {
    if (filled_) H5Dvlen_reclaim(type_, space_, H5P_DEFAULT, pointers_.data());
  }
  VlenStrings(const VlenStrings&) = delete;
  VlenStrings& operator=(const VlenStrings&) = delete;
  bool read(hid_t attribute) {
    filled_ = H5Aread(attribute, type_, pointers_.data()) >= 0;
    return filled_;
  }
  std::string text(std::size_t i) const { return pointers_[i] == nullptr ? std::string() : std::string(pointers_[i]); }

 private:
  hid_t type_;
  hid_t space_;
  std::vector<char*> pointers_;
  bool filled_ = false;
};

std::string trim_fixed_string(const char* data, std::size_t size, H5T_str_t padding) {
  std::string_view text(data, size);
  if (padding == H5T_STR_SPACEPAD) {
    const auto end = text.find_last_not_of(' ');
    return std::string(end == std::string_view::npos ? std::string_view() : text.substr(0, end + 1));
  }
  return std::string(text.substr(0, std::min(text.find('\0'), text.size())));
}

}  // namespace

// ---- reader -------------------------------------------------------------------------------------

namespace {

/// What the reader knows about one variable's dataset beyond its VariableInfo.
struct StoredVariable {
  VariableInfo info;
  std::int64_t chunk_rows = 0;  ///< 0: not chunked
  Hdf5Filters filters{false, 0};
  int shuffle_index = -1;  ///< position in the filter pipeline, -1 when absent
  int deflate_index = -1;
  /// Raw chunks are fetched with H5Dread_chunk and decoded on TBB threads; otherwise HDF5 reads
  /// (and converts, and filters) hyperslabs itself.
  bool chunk_codec = false;
};

struct DecodeScratch {
  explicit DecodeScratch(const ChunkFormat& format) : decoder(format) {}
  ChunkDecoder decoder;
  std::vector<std::byte> whole_chunk;
};

struct StoredChunk {
  std::int64_t index = 0;
  bool present = false;  ///< false: never written, HDF5 supplies its fill value
  std::uint32_t filter_mask = 0;
  std::vector<std::byte> bytes;
};

}  // namespace

struct Hdf5TableReader::Impl {
  std::filesystem::path path;
  std::string source;
  hdf5::File file;
  hdf5::Group variables;
  FileSummary summary;
  std::vector<StoredVariable> stored;

  explicit Impl(const std::filesystem::path& input) : path(input), source(input.string()) {
    hdf5::initialize();
    open_file();
    read_file_attributes();
    open_variables_group();
    read_variables();
  }

  // ---- messages ----

  [[noreturn]] void invalid(std::string_view variable, const std::string& message) const {
    std::string text = source + ": ";
    if (!variable.empty()) text += "variable '" + std::string(variable) + "': ";
    throw InvalidInput(text + message);
  }

  [[noreturn]] void invalid_with_detail(std::string_view variable, const std::string& message) const {
    invalid(variable, message + detail_suffix(hdf5::take_error_detail()));
  }

  static std::string attribute_label(const char* name, std::string_view variable) {
    return std::string(variable.empty() ? "file attribute '" : "attribute '") + name + "'";
  }

  // ---- opening ----

  void open_file() {
    check_input_file(path, "input");
    const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
    hdf5::take_error_detail();
    if (is_hdf5 <= 0) invalid({}, "not an HDF5 file");
    hdf5::PropertyList access(H5Pcreate(H5P_FILE_ACCESS));
    if (!access.valid() || H5Pset_file_locking(access.get(), true, true) < 0)
      invalid_with_detail({}, "cannot set up HDF5 file access");
    file = hdf5::File(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
    if (!file.valid()) invalid_with_detail({}, "damaged or truncated HDF5 file, cannot be opened");
    summary.stamp = stamp_of(path).value_or(FileStamp{});
  }

  void read_file_attributes() {
    const hid_t root = file.get();
    const auto format = read_string(root, kAttrFormat, {});
    if (!format) invalid({}, "not an sdc-engine table (file attribute 'sdc_format' is missing)");
    if (*format != kFormatName)
      invalid({}, "not an sdc-engine table (file attribute 'sdc_format' is " + quoted_excerpt(*format) + ")");
    const std::int64_t version = required(read_integer(root, kAttrFormatVersion, {}), kAttrFormatVersion, {});
    if (version != kFormatVersion)
      invalid({}, "format version " + std::to_string(version) + " is not supported (this build of sdc-engine reads version " +
                      std::to_string(kFormatVersion) + ")");
    const std::int64_t rows = required(read_integer(root, kAttrRowCount, {}), kAttrRowCount, {});
    if (rows < 0) invalid({}, "file attribute 'row_count' is negative");
    summary.path = path;
    summary.format_version = static_cast<int>(version);
    summary.row_count = rows;
    summary.provenance.tool_version = read_string(root, kAttrToolVersion, {}).value_or("");
    summary.provenance.command = read_string(root, kAttrCommand, {}).value_or("");
    summary.provenance.input_digest = read_string(root, kAttrInputDigest, {}).value_or("");
    summary.provenance.created_utc = read_string(root, kAttrCreatedUtc, {}).value_or("");
    summary.provenance.step_fingerprint = read_string(root, kAttrStepFingerprint, {}).value_or("");
    summary.provenance.step_results = read_string(root, kAttrStepResults, {}).value_or("");
  }

  void open_variables_group() {
    const htri_t exists = H5Lexists(file.get(), kVariablesGroup, H5P_DEFAULT);
    if (exists <= 0) invalid_with_detail({}, "not an sdc-engine table (group /variables is missing)");
    require_hard_link(file.get(), kVariablesGroup, "/variables");
    variables = hdf5::Group(H5Gopen2(file.get(), kVariablesGroup, H5P_DEFAULT));
    if (!variables.valid()) invalid_with_detail({}, "/variables is not a group");
    hdf5::PropertyList create(H5Gget_create_plist(variables.get()));
    unsigned order = 0;
    if (!create.valid() || H5Pget_link_creation_order(create.get(), &order) < 0)
      invalid_with_detail({}, "cannot read the properties of group /variables");
    if ((order & H5P_CRT_ORDER_TRACKED) == 0)
      invalid({}, "group /variables does not track link creation order, so the column order is unknown "
                  "(docs/format.md; with h5py create it with track_order=True)");
  }

  void read_variables() {
    H5G_info_t group_info{};
    if (H5Gget_info(variables.get(), &group_info) < 0) invalid_with_detail({}, "cannot list group /variables");
    for (hsize_t i = 0; i < group_info.nlinks; ++i) {
      const std::string name = link_name(i);
      require_hard_link(variables.get(), name.c_str(), "/variables/" + name);
      stored.push_back(read_variable(name));
      summary.variables.push_back(stored.back().info);
    }
    validate_metadata(summary.variables, source);
    if (!stored.empty()) {
      summary.filters = stored.front().filters;
      summary.chunk_rows = stored.front().chunk_rows;
    }
  }

  /// A soft or external link would make the reader open whatever it points to, in this file or in
  /// any other file on the machine: an sdc-engine table holds its objects itself.
  void require_hard_link(hid_t location, const char* name, const std::string& shown) const {
    H5L_info_t info{};
    if (H5Lget_info(location, name, &info, H5P_DEFAULT) < 0) invalid_with_detail({}, "cannot read link " + shown);
    if (info.type == H5L_TYPE_HARD) return;
    const char* kind = info.type == H5L_TYPE_SOFT ? "a soft link" : info.type == H5L_TYPE_EXTERNAL ? "an external link" : "a user-defined link";
    invalid({}, shown + " is " + kind + ", not an object stored in the file; links are not followed");
  }

  std::string link_name(hsize_t index) const {
    const auto length = H5Lget_name_by_idx(variables.get(), ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, index, nullptr, 0,
                                           H5P_DEFAULT);
    if (length < 0) invalid_with_detail({}, "cannot list group /variables in creation order");
    std::string name(static_cast<std::size_t>(length), '\0');
    if (H5Lget_name_by_idx(variables.get(), ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, index, name.data(), name.size() + 1,
                           H5P_DEFAULT) < 0)
      invalid_with_detail({}, "cannot list group /variables in creation order");
    return name;
  }

  hdf5::Dataset open_dataset(const std::string& name) const {
    hdf5::PropertyList access(H5Pcreate(H5P_DATASET_ACCESS));
    // Chunks are read whole and once per call: HDF5's chunk cache would only add a copy.
    if (!access.valid() ||
        H5Pset_chunk_cache(access.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0, H5D_CHUNK_CACHE_W0_DEFAULT) < 0)
      invalid_with_detail(name, "cannot set up dataset access");
    {
      // Open generically first so that a group or a named type gets a message rather than a failure.
      const hid_t object = H5Oopen(variables.get(), name.c_str(), H5P_DEFAULT);
      if (object < 0) invalid_with_detail(name, "cannot be opened");
      const H5I_type_t kind = H5Iget_type(object);
      H5Oclose(object);
      if (kind != H5I_DATASET) invalid(name, "/variables/" + name + " is not a dataset");
    }
    hdf5::Dataset dataset(H5Dopen2(variables.get(), name.c_str(), access.get()));
    if (!dataset.valid()) invalid_with_detail(name, "dataset cannot be opened");
    return dataset;
  }

  // ---- attributes ----

  hdf5::Attribute open_attribute(hid_t object, const char* name, std::string_view variable) const {
    const htri_t exists = H5Aexists(object, name);
    if (exists < 0) invalid_with_detail(variable, "cannot look up " + attribute_label(name, variable));
    if (exists == 0) return {};
    hdf5::Attribute attribute(H5Aopen(object, name, H5P_DEFAULT));
    if (!attribute.valid()) invalid_with_detail(variable, attribute_label(name, variable) + " cannot be opened");
    return attribute;
  }

  /// Element count of an attribute's dataspace; `array` admits one-dimensional (and empty) ones.
  hsize_t attribute_count(hid_t attribute, const char* name, std::string_view variable, bool array) const {
    hdf5::Dataspace space(H5Aget_space(attribute));
    const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
    if (space_class == H5S_NULL) return 0;
    const hssize_t count = H5Sget_simple_extent_npoints(space.get());
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (count < 0 || rank < 0) invalid_with_detail(variable, attribute_label(name, variable) + " has an unreadable shape");
    if (array ? rank > 1 : count != 1)
      invalid(variable, attribute_label(name, variable) + (array ? " is not a one-dimensional array" : " is not a single value"));
    return static_cast<hsize_t>(count);
  }

  std::optional<std::vector<std::string>> read_strings(hid_t object, const char* name, std::string_view variable,
                                                       bool array) const {
    const hdf5::Attribute attribute = open_attribute(object, name, variable);
    if (!attribute.valid()) return std::nullopt;
    const hdf5::Datatype type(H5Aget_type(attribute.get()));
    if (H5Tget_class(type.get()) != H5T_STRING) invalid(variable, attribute_label(name, variable) + " is not a string");
    const std::size_t count = attribute_count(attribute.get(), name, variable, array);
    std::vector<std::string> out;
    out.reserve(count);
    if (count == 0) return out;
    if (H5Tis_variable_str(type.get()) > 0) {
      const hdf5::Datatype text_type = string_type(H5Tget_cset(type.get()));
      const hdf5::Dataspace space(H5Aget_space(attribute.get()));
      VlenStrings strings(text_type.get(), space.get(), count);
      if (!strings.read(attribute.get())) invalid_with_detail(variable, attribute_label(name, variable) + " cannot be read");
      for (std::size_t i = 0; i < count; ++i) out.push_back(strings.text(i));
      return out;
    }
    const std::size_t size = H5Tget_size(type.get());
    std::vector<char> buffer(size * count);
    if (size == 0 || H5Aread(attribute.get(), type.get(), buffer.data()) < 0)
      invalid_with_detail(variable, attribute_label(name, variable) + " cannot be read");
    const H5T_str_t padding = H5Tget_strpad(type.get());
    for (std::size_t i = 0; i < count; ++i) out.push_back(trim_fixed_string(buffer.data() + i * size, size, padding));
    return out;
  }

  std::optional<std::string> read_string(hid_t object, const char* name, std::string_view variable) const {
    auto strings = read_strings(object, name, variable, false);
    if (!strings) return std::nullopt;
    return std::move(strings->front());
  }

  template <typename T>
  std::optional<T> read_number(hid_t object, const char* name, std::string_view variable, H5T_class_t wanted,
                               hid_t value_type) const {
    const hdf5::Attribute attribute = open_attribute(object, name, variable);
    if (!attribute.valid()) return std::nullopt;
    const hdf5::Datatype type(H5Aget_type(attribute.get()));
    if (H5Tget_class(type.get()) != wanted)
      invalid(variable, attribute_label(name, variable) + " is not " + (wanted == H5T_INTEGER ? "an integer" : "a float"));
    attribute_count(attribute.get(), name, variable, false);
    T value{};
    if (H5Aread(attribute.get(), value_type, &value) < 0)
      invalid_with_detail(variable, attribute_label(name, variable) + " cannot be read");
    return value;
  }

  std::optional<std::int64_t> read_integer(hid_t object, const char* name, std::string_view variable) const {
    return read_number<std::int64_t>(object, name, variable, H5T_INTEGER, H5T_NATIVE_INT64);
  }

  std::optional<double> read_float(hid_t object, const char* name, std::string_view variable) const {
    return read_number<double>(object, name, variable, H5T_FLOAT, H5T_NATIVE_DOUBLE);
  }

  template <typename T>
  T required(std::optional<T> value, const char* name, std::string_view variable) const {
    if (!value) invalid(variable, "missing required " + attribute_label(name, variable));
    return std::move(*value);
  }

  // ---- one variable's metadata ----

  StoredVariable read_variable(const std::string& name) const {
    if (!is_valid_variable_name(name))
      invalid({}, "dataset /variables/" + quoted_excerpt(name) +
                      " is not a valid variable name (1-128 characters from A-Z a-z 0-9 _ . -, starting with a letter or _)");
    const hdf5::Dataset dataset = open_dataset(name);
    const hid_t id = dataset.get();
    StoredVariable variable;
    VariableInfo& info = variable.info;
    info.name = name;

    const std::string type_text = required(read_string(id, kAttrType, name), kAttrType, name);
    const auto type = parse_variable_type(type_text);
    if (!type) invalid(name, "unknown type " + quoted_excerpt(type_text) + " (expected one of " + variable_type_names() + ")");
    info.type = *type;
    const std::string role_text = required(read_string(id, kAttrRole, name), kAttrRole, name);
    const auto role = parse_variable_role(role_text);
    if (!role) invalid(name, "unknown role " + quoted_excerpt(role_text) + " (expected one of " + variable_role_names() + ")");
    info.role = *role;

    const hdf5::Datatype dtype(H5Dget_type(id));
    if (!dtype.valid()) invalid_with_detail(name, "cannot read the dataset's datatype");
    if (!dtype_matches(dtype.get(), info.type))
      invalid(name, "the dataset holds " + describe_dtype(dtype.get()) + " but its type attribute says " + type_text +
                        ", which is stored as " + std::string(stored_type_name(info.type)));
    check_length(id, name);
    read_type_attributes(id, info);
    read_layout(id, dtype.get(), variable);
    return variable;
  }

  void check_length(hid_t dataset, const std::string& name) const {
    const hdf5::Dataspace space(H5Dget_space(dataset));
    if (H5Sget_simple_extent_ndims(space.get()) != 1) invalid(name, "the dataset is not one-dimensional");
    hsize_t rows = 0;
    H5Sget_simple_extent_dims(space.get(), &rows, nullptr);
    if (static_cast<std::int64_t>(rows) != summary.row_count)
      invalid(name, "columns of unequal length: the dataset has " + std::to_string(rows) +
                        " rows but the file attribute row_count is " + std::to_string(summary.row_count));
  }

  void read_type_attributes(hid_t dataset, VariableInfo& info) const {
    const std::string& name = info.name;
    auto levels = read_strings(dataset, kAttrLevels, name, true);
    if (info.type == VariableType::kCategorical) {
      info.levels = required(std::move(levels), kAttrLevels, name);
      const auto missing = required(read_integer(dataset, kAttrMissingCode, name), kAttrMissingCode, name);
      if (missing != kMissingCode)
        invalid(name, "attribute 'missing_code' must be " + std::to_string(kMissingCode) + " for a categorical variable");
    } else {
      if (levels) invalid(name, "has level labels but type " + std::string(to_string(info.type)));
      if (info.type == VariableType::kContinuous) {
        const double missing = required(read_float(dataset, kAttrMissingCode, name), kAttrMissingCode, name);
        if (!std::isnan(missing)) invalid(name, "attribute 'missing_code' must be NaN for a continuous variable");
      } else if (H5Aexists(dataset, kAttrMissingCode) > 0) {
        invalid(name, "has attribute 'missing_code' but ids are never missing");
      }
    }
    const auto level = read_integer(dataset, kAttrGeographyLevel, name);
    if (info.role == VariableRole::kGeography && !level)
      invalid(name, "missing required attribute 'geography_level' (role geography)");
    if (level) {
      if (*level < 0 || *level > std::numeric_limits<int>::max())
        invalid(name, "attribute 'geography_level' is out of range");
      info.geography_level = static_cast<int>(*level);
    }
  }

  void read_layout(hid_t dataset, hid_t dtype, StoredVariable& variable) const {
    const hdf5::PropertyList create(H5Dget_create_plist(dataset));
    if (!create.valid()) invalid_with_detail(variable.info.name, "cannot read the dataset's creation properties");
    if (H5Pget_layout(create.get()) == H5D_CHUNKED) {
      hsize_t chunk = 0;
      if (H5Pget_chunk(create.get(), 1, &chunk) != 1 || chunk == 0)
        invalid_with_detail(variable.info.name, "the dataset's chunk shape is not one-dimensional");
      variable.chunk_rows = static_cast<std::int64_t>(chunk);
    }
    const int filter_count = H5Pget_nfilters(create.get());
    bool codec_knows_pipeline = filter_count > 0;
    for (int i = 0; i < filter_count; ++i) {
      unsigned flags = 0;
      unsigned config = 0;
      std::array<unsigned, 8> values{};
      std::size_t value_count = values.size();
      const H5Z_filter_t filter = H5Pget_filter2(create.get(), static_cast<unsigned>(i), &flags, &value_count,
                                                 values.data(), 0, nullptr, &config);
      // The codec undoes shuffle-then-deflate; any other filter, or another order, is HDF5's job.
      if (filter == H5Z_FILTER_SHUFFLE && variable.shuffle_index < 0 && variable.deflate_index < 0) {
        variable.shuffle_index = i;
        variable.filters.shuffle = true;
      } else if (filter == H5Z_FILTER_DEFLATE && variable.deflate_index < 0) {
        variable.deflate_index = i;
        variable.filters.deflate_level = value_count > 0 ? static_cast<int>(std::min(values[0], 9U)) : 1;
      } else {
        codec_knows_pipeline = false;
      }
    }
    variable.chunk_codec = codec_knows_pipeline && variable.chunk_rows > 0 &&
                           element_size(variable.info.type) * static_cast<std::size_t>(variable.chunk_rows) <=
                               std::numeric_limits<std::uint32_t>::max() &&
                           H5Tequal(dtype, memory_type(variable.info.type)) > 0;
  }

  // ---- values ----

  const StoredVariable& find(std::string_view name) const {
    for (const StoredVariable& variable : stored)
      if (variable.info.name == name) return variable;
    invalid({}, "variable '" + std::string(name) + "' not found");
  }

  std::pair<std::int64_t, std::int64_t> row_range(const Hdf5ReadOptions& options) const {
    const std::int64_t rows = summary.row_count;
    const std::int64_t first = options.first_row;
    const std::int64_t count = options.row_count < 0 ? rows - first : options.row_count;
    if (first < 0 || first > rows || count < 0 || count > rows - first)
      invalid({}, "rows " + std::to_string(first) + ".." + std::to_string(first + std::max<std::int64_t>(count, 0)) +
                      " are outside the file's " + std::to_string(rows) + " rows");
    return {first, count};
  }

  Table read(const Hdf5ReadOptions& options) const {
    const auto [first, count] = row_range(options);
    std::vector<const StoredVariable*> selected;
    if (options.variables.empty()) {
      for (const StoredVariable& variable : stored) selected.push_back(&variable);
    } else {
      for (const std::string& name : options.variables) selected.push_back(&find(name));
    }
    Table table(source, count, first);
    for (const StoredVariable* variable : selected) {
      Column column = read_column(*variable, first, count);
      if (options.validate) column = validated(std::move(column), first, count);
      table.add_column(std::move(column));
    }
    return table;
  }

  /// validate_table() on one column. Its cross-variable rule (geography levels are exactly 1..L)
  /// was checked on the whole file at open and cannot hold for a subset, so the column is checked as
  /// the only geography level; the value checks are the same.
  Column validated(Column column, std::int64_t first, std::int64_t count) const {
    const int level = column.info().geography_level;
    if (column.info().role == VariableRole::kGeography) column.info().geography_level = 1;
    Table single(source, count, first);
    single.add_column(std::move(column));
    validate_table(single);
    Column checked = std::move(single.mutable_columns()[0]);
    checked.info().geography_level = level;
    return checked;
  }

  Column read_column(const StoredVariable& variable, std::int64_t first, std::int64_t count) const {
    const hdf5::Dataset dataset = open_dataset(variable.info.name);
    const auto n = static_cast<std::size_t>(count);
    switch (variable.info.type) {
      case VariableType::kCategorical: {
        std::vector<std::int32_t> codes(n);
        read_values(dataset.get(), variable, first, std::as_writable_bytes(std::span(codes)));
        return Column::categorical(variable.info, std::move(codes));
      }
      case VariableType::kContinuous: {
        std::vector<double> values(n);
        read_values(dataset.get(), variable, first, std::as_writable_bytes(std::span(values)));
        return Column::continuous(variable.info, std::move(values));
      }
      case VariableType::kId: {
        std::vector<std::int64_t> ids(n);
        read_values(dataset.get(), variable, first, std::as_writable_bytes(std::span(ids)));
        return Column::id(variable.info, std::move(ids));
      }
    }
    throw InternalError("unknown variable type");
  }

  void read_values(hid_t dataset, const StoredVariable& variable, std::int64_t first, std::span<std::byte> out) const {
    if (out.empty()) return;
    if (variable.chunk_codec)
      read_chunks(dataset, variable, first, out);
    else
      read_hyperslab(dataset, variable, first, out);
  }

  std::string rows_text(std::int64_t first, std::int64_t count) const {
    return "row ids " + std::to_string(first) + ".." + std::to_string(first + count - 1);
  }

  void read_hyperslab(hid_t dataset, const StoredVariable& variable, std::int64_t first, std::span<std::byte> out) const {
    const std::size_t element = element_size(variable.info.type);
    const hsize_t start = static_cast<hsize_t>(first);
    const hsize_t count = out.size() / element;
    hdf5::Dataspace file_space(H5Dget_space(dataset));
    hdf5::Dataspace memory_space(H5Screate_simple(1, &count, nullptr));
    if (!file_space.valid() || !memory_space.valid() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) < 0 ||
        H5Dread(dataset, memory_type(variable.info.type), memory_space.get(), file_space.get(), H5P_DEFAULT, out.data()) < 0)
      invalid_with_detail(variable.info.name, rows_text(first, static_cast<std::int64_t>(count)) +
                                                  ": values cannot be read (damaged file or unavailable filter)");
  }

  void read_chunks(hid_t dataset, const StoredVariable& variable, std::int64_t first, std::span<std::byte> out) const {
    const std::size_t element = element_size(variable.info.type);
    const std::int64_t rows_per_chunk = variable.chunk_rows;
    const std::size_t chunk_bytes = element * static_cast<std::size_t>(rows_per_chunk);
    const std::int64_t end = first + static_cast<std::int64_t>(out.size() / element);
    const std::int64_t first_chunk = first / rows_per_chunk;
    const auto chunk_count = static_cast<std::size_t>((end + rows_per_chunk - 1) / rows_per_chunk - first_chunk);
    const std::size_t per_batch = std::max<std::size_t>(1, kBatchBytes / chunk_bytes);
    const std::size_t batch_count = ceil_div(chunk_count, per_batch);
    const ChunkFormat format{element, chunk_bytes, variable.filters.shuffle, variable.filters.deflate_level};

    tbb::enumerable_thread_specific<DecodeScratch> scratch(format);
    std::array<std::vector<StoredChunk>, 2> slots;
    // The part of chunk k inside [first, end), as rows.
    const auto overlap = [&](std::int64_t k) {
      return std::pair{std::max(k * rows_per_chunk, first), std::min((k + 1) * rows_per_chunk, end)};
    };
    const auto target = [&](std::int64_t lo, std::int64_t hi) {
      return out.subspan(static_cast<std::size_t>(lo - first) * element, static_cast<std::size_t>(hi - lo) * element);
    };

    const auto fetch = [&](std::size_t batch) {
      auto& chunks = slots[batch % 2];
      chunks.resize(std::min(per_batch, chunk_count - batch * per_batch));
      for (std::size_t i = 0; i < chunks.size(); ++i) {
        StoredChunk& chunk = chunks[i];
        chunk.index = first_chunk + static_cast<std::int64_t>(batch * per_batch + i);
        chunk.present = fetch_chunk(dataset, variable, chunk, chunk_bytes);
        if (!chunk.present) {
          const auto [lo, hi] = overlap(chunk.index);
          read_hyperslab(dataset, variable, lo, target(lo, hi));
        }
      }
    };
    const auto decode = [&](std::size_t batch) {
      auto& chunks = slots[batch % 2];
      tbb::parallel_for(std::size_t{0}, chunks.size(), [&](std::size_t i) {
        const StoredChunk& chunk = chunks[i];
        if (!chunk.present) return;
        const auto [lo, hi] = overlap(chunk.index);
        decode_chunk(variable, chunk, scratch.local(), lo - chunk.index * rows_per_chunk, target(lo, hi));
      });
    };

    fetch(0);
    for (std::size_t batch = 0; batch < batch_count; ++batch)
      run_alongside([&] { if (batch + 1 < batch_count) fetch(batch + 1); }, [&] { decode(batch); });
  }

  /// Reads chunk.index's stored bytes; false when the chunk was never written.
  bool fetch_chunk(hid_t dataset, const StoredVariable& variable, StoredChunk& chunk, std::size_t chunk_bytes) const {
    const hsize_t offset = static_cast<hsize_t>(chunk.index * variable.chunk_rows);
    hsize_t size = 0;
    if (H5Dget_chunk_storage_size(dataset, &offset, &size) < 0) {
      hdf5::take_error_detail();
      return false;  // not allocated in this chunk index: HDF5's own read supplies the fill value
    }
    if (size == 0) return false;
    // Deflate never grows data by more than a few bytes per 16 KiB; anything larger is damage, and
    // must not become a huge allocation.
    if (size > chunk_bytes + chunk_bytes / 2 + 4096)
      invalid(variable.info.name, rows_text(chunk.index * variable.chunk_rows, variable.chunk_rows) +
                                      ": damaged chunk (stored size larger than possible)");
    chunk.bytes.resize(static_cast<std::size_t>(size));
    if (H5Dread_chunk(dataset, H5P_DEFAULT, &offset, &chunk.filter_mask, chunk.bytes.data()) < 0)
      invalid_with_detail(variable.info.name,
                          rows_text(chunk.index * variable.chunk_rows, variable.chunk_rows) + ": chunk cannot be read");
    return true;
  }

  /// Runs on a TBB thread: no HDF5 calls here.
  void decode_chunk(const StoredVariable& variable, const StoredChunk& chunk, DecodeScratch& scratch,
                    std::int64_t skip_rows, std::span<std::byte> target) const {
    const auto applied = [&](int index) {
      return index >= 0 && (chunk.filter_mask & (1U << static_cast<unsigned>(index))) == 0;
    };
    const std::size_t element = element_size(variable.info.type);
    const std::size_t chunk_bytes = element * static_cast<std::size_t>(variable.chunk_rows);
    // A whole chunk inside the range decodes in place; an edge chunk goes through a scratch buffer.
    const bool whole = target.size() == chunk_bytes;
    if (!whole) scratch.whole_chunk.resize(chunk_bytes);
    const std::span<std::byte> decoded = whole ? target : std::span<std::byte>(scratch.whole_chunk);
    if (!scratch.decoder.decode(chunk.bytes, applied(variable.deflate_index), applied(variable.shuffle_index), decoded))
      invalid(variable.info.name,
              rows_text(chunk.index * variable.chunk_rows, variable.chunk_rows) + ": damaged chunk (cannot be decompressed)");
    if (!whole) std::memcpy(target.data(), decoded.data() + static_cast<std::size_t>(skip_rows) * element, target.size());
  }

  std::int64_t streaming_block_rows(std::string_view name) const {
    const StoredVariable& variable = find(name);
    const auto per_block = static_cast<std::int64_t>(kStreamBlockBytes / element_size(variable.info.type));
    if (variable.chunk_rows <= 0) return per_block;
    return std::max<std::int64_t>(1, per_block / variable.chunk_rows) * variable.chunk_rows;
  }
};

Hdf5TableReader::Hdf5TableReader(const std::filesystem::path& path) : impl_(std::make_unique<Impl>(path)) {}
Hdf5TableReader::~Hdf5TableReader() = default;
const FileSummary& Hdf5TableReader::summary() const noexcept { return impl_->summary; }
Table Hdf5TableReader::read(const Hdf5ReadOptions& options) const { return impl_->read(options); }
std::int64_t Hdf5TableReader::streaming_block_rows(std::string_view variable) const {
  return impl_->streaming_block_rows(variable);
}

// ---- public functions ---------------------------------------------------------------------------

Hdf5Filters parse_filters(std::string_view text) {
  const auto bad = [&]() {
    return UsageError("filters '" + std::string(text) +
                      "': expected none, default, shuffle, deflate=N or shuffle,deflate=N with N in 1..9");
  };
  if (text == "none") return Hdf5Filters{false, 0};
  if (text == "default") return Hdf5Filters{};
  Hdf5Filters filters{false, 0};
  bool seen_shuffle = false;
  bool seen_deflate = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = text.substr(start, comma - start);
    if (part == "shuffle" && !seen_shuffle) {
      seen_shuffle = filters.shuffle = true;
    } else if (part.starts_with("deflate=") && !seen_deflate) {
      const std::string_view digits = part.substr(8);
      int level = 0;
      const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), level);
      if (error != std::errc() || end != digits.data() + digits.size() || level < 1 || level > 9) throw bad();
      filters.deflate_level = level;
      seen_deflate = true;
    } else {
      throw bad();
    }
    start = comma + 1;
  }
  return filters;
}

std::string to_string(const Hdf5Filters& filters) {
  std::string out = filters.shuffle ? "shuffle" : "";
  if (filters.deflate_level > 0) out += (out.empty() ? "" : ",") + std::string("deflate=") + std::to_string(filters.deflate_level);
  return out.empty() ? "none" : out;
}

Provenance make_provenance(std::string command, std::string input_digest) {
  Provenance provenance;
  provenance.tool_version = std::string(kToolName) + " " + kToolVersion;
  provenance.command = std::move(command);
  provenance.input_digest = std::move(input_digest);
  provenance.created_utc = utc_timestamp();
  return provenance;
}

void write_table(const Table& table, const std::filesystem::path& output, const Hdf5WriteOptions& options) {
  check_write_options(options);
  const std::vector<VariableInfo> variables = variables_of(table);
  check_storable(variables, output);
  hdf5::initialize();
  AtomicOutput atomic(output, options.permissions);
  TableWriter(output, options).create(atomic.temp_path(), variables, table.row_count(), &table);
  atomic.commit();
}

void create_table_file(const std::filesystem::path& path, const std::vector<VariableInfo>& variables,
                       std::int64_t row_count, const Hdf5WriteOptions& options) {
  check_write_options(options);
  SDC_CHECK(row_count >= 0, "create_table_file: negative row count");
  check_storable(variables, path);
  hdf5::initialize();
  TableWriter(path, options).create(path, variables, row_count, nullptr);
}

EncodedRows encode_rows(const Table& part, std::int64_t file_rows, const Hdf5WriteOptions& options) {
  check_write_options(options);
  auto impl = std::make_unique<EncodedRows::Impl>();
  impl->first_row = part.first_row_id();
  impl->chunk_rows = effective_chunk_rows(options, file_rows);
  if (!filtered(options.filters)) return EncodedRows(std::move(impl));
  const auto declared_unchanged = [&](const std::string& name) {
    return options.unchanged &&
           std::find(options.unchanged->names.begin(), options.unchanged->names.end(), name) != options.unchanged->names.end();
  };
  for (const Column& column : part.columns()) {
    if (column.size() == 0 || declared_unchanged(column.name())) continue;
    const std::span<const std::byte> values = column_bytes(column);
    const std::size_t element = element_size(column.type());
    const std::size_t chunk_bytes = element * static_cast<std::size_t>(impl->chunk_rows);
    std::vector<std::vector<std::byte>> chunks(ceil_div(values.size(), chunk_bytes));
    const ChunkFormat format{element, chunk_bytes, options.filters.shuffle, options.filters.deflate_level};
    tbb::enumerable_thread_specific<ChunkEncoder> encoders(format);
    tbb::parallel_for(std::size_t{0}, chunks.size(), [&](std::size_t i) {
      const std::size_t begin = i * chunk_bytes;
      encoders.local().encode(values.subspan(begin, std::min(chunk_bytes, values.size() - begin)), chunks[i]);
    });
    impl->chunks.emplace(column.name(), std::move(chunks));
  }
  return EncodedRows(std::move(impl));
}

void write_table_rows(const std::filesystem::path& path, const Table& part, const Hdf5WriteOptions& options,
                      const EncodedRows* encoded) {
  check_write_options(options);
  hdf5::initialize();
  TableWriter(path, options).write_rows(path, part, encoded);
}

FileSummary read_summary(const std::filesystem::path& path) { return Hdf5TableReader(path).summary(); }

Table read_table(const std::filesystem::path& path, const Hdf5ReadOptions& options) {
  return Hdf5TableReader(path).read(options);
}

namespace {

}  // namespace

std::string content_digest(const std::filesystem::path& path) {
  const Hdf5TableReader reader(path);
  const FileSummary& summary = reader.summary();
  // Windows of whole digest blocks (about 32 MiB of 8-byte values), hashed in parallel.
  constexpr std::int64_t kWindowRows = 64 * kDigestBlockRows;
  std::vector<std::vector<std::string>> digests(summary.variables.size());
  for (std::size_t v = 0; v < summary.variables.size(); ++v) {
    for (std::int64_t first = 0; first < summary.row_count; first += kWindowRows) {
      const Table window = reader.read({{summary.variables[v].name}, first, std::min(kWindowRows, summary.row_count - first), false});
      auto blocks = whole_block_digests(window, first, first + window.row_count(), summary.row_count);
      digests[v].insert(digests[v].end(), std::make_move_iterator(blocks[0].begin()), std::make_move_iterator(blocks[0].end()));
    }
  }
  return combine_content_digest(summary, digests);
}

}  // namespace sdc::io
