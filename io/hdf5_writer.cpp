// The writer of the sdc-engine HDF5 table format: write_table(), and the create_table_file(),
// encode_rows() and write_table_rows() with which several processes write one file in turn.

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/atomic_output.h"
#include "io/chunk_codec.h"
#include "io/hdf5_error.h"
#include "io/hdf5_format.h"
#include "io/hdf5_handle.h"
#include "io/hdf5_table.h"
#include "io/stored_digests.h"
#include "io/timestamp.h"
#include "kernels/core/error.h"
#include "sdc/version.h"

namespace sdc::io {

using namespace detail;

namespace {

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

bool write_int32s_attribute(hid_t object, const char* name, const std::vector<std::int32_t>& values) {
  const hsize_t count = values.size();
  hdf5::Dataspace space(H5Screate_simple(1, &count, nullptr));
  if (!space.valid()) return false;
  hdf5::Attribute attribute(H5Acreate2(object, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  return attribute.valid() && (values.empty() || H5Awrite(attribute.get(), H5T_NATIVE_INT32, values.data()) >= 0) &&
         attribute.close();
}

}  // namespace

/// Per variable, its chunks in row order, each stored as it goes to H5Dwrite_chunk.
struct EncodedRows::Impl {
  std::int64_t first_row = 0;
  std::int64_t chunk_rows = 0;
  std::map<std::string, std::vector<std::vector<std::byte>>, std::less<>> chunks;
  /// Per variable of `chunks`, the stored-digest entries of its chunks (empty when the file gets none).
  std::map<std::string, std::vector<std::byte>, std::less<>> digest_entries;
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
    stage.id = H5Pget_filter2(create, static_cast<unsigned>(i), &stage.flags, &value_count, values.data(), 0, nullptr,
                              nullptr);
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
      H5Sget_simple_extent_ndims(space.get()) != 1 ||
      H5Sget_simple_extent_dims(space.get(), &layout.rows, nullptr) != 1 ||
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
    if (!unchanged_ || (unchanged_->names.empty() && unchanged_->not_held.empty())) return;
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

 public:
  /// The source's stored digests of `name`; invalid when it has none.
  hdf5::Dataset digests_for(const std::string& name) const {
    return file_.valid() ? open_stored_digests(file_.get(), name) : hdf5::Dataset();
  }
  const std::filesystem::path& path() const { return unchanged_->path; }
};

bool filtered(const Hdf5Filters& filters) { return filters.shuffle || filters.deflate_level > 0; }

ChunkFormat chunk_format(const Column& column, std::size_t chunk_bytes, const Hdf5Filters& filters) {
  return {element_size(column.type()), chunk_bytes, filters.shuffle, filters.deflate_level};
}

/// Creates and fills sdc-engine table files. Every HDF5 failure becomes an IoError naming `target`.
class TableWriter {
 public:
  TableWriter(const std::filesystem::path& target, const Hdf5WriteOptions& options)
      : target_(target), options_(options) {}

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
      const std::int64_t chunk_rows = effective_chunk_rows(options_, rows);
      hdf5::Group digests_group;
      if (has_stored_digests(rows, chunk_rows)) {
        digests_group = create_stored_digests_group(file.get());
        if (!digests_group.valid()) fail("the stored digests group");
      }
      const UnchangedSource unchanged(table != nullptr ? options_.unchanged : std::nullopt);
      for (const VariableInfo& info : variables) {
        hdf5::Dataset dataset = create_dataset(group.get(), info, rows);
        hdf5::Dataset digests;
        if (digests_group.valid()) {
          digests = create_stored_digests(digests_group.get(), info.name, rows, chunk_rows);
          if (!digests.valid()) fail("stored digests", info.name);
        }
        if (table != nullptr) {
          if (const Column* column = table->find(info.name))
            write_values(dataset.get(), digests.get(), *column, 0, chunk_rows, unchanged);
          else
            copy_not_held(unchanged, dataset.get(), digests.get(), info.name, 0, rows, chunk_rows);
        }
        if (digests.valid() && !digests.close()) fail("stored digests", info.name);
        if (!dataset.close()) fail("dataset", info.name);
      }
      if (digests_group.valid() && !digests_group.close()) fail("the stored digests group");
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
      for (const VariableInfo& info : written_variables(part, options_)) {
        hdf5::Dataset dataset(H5Dopen2(group.get(), info.name.c_str(), H5P_DEFAULT));
        if (!dataset.valid()) fail("dataset", info.name);
        const hdf5::Dataset digests = open_stored_digests(file.get(), info.name);
        const std::int64_t chunk_rows = checked_chunk_rows(dataset.get(), part, info.name);
        const Column* column = part.find(info.name);
        if (column == nullptr) {
          copy_not_held(unchanged, dataset.get(), digests.get(), info.name, part.first_row_id(), part.row_count(),
                        chunk_rows);
        } else {
          const auto* chunks = encoded_chunks(encoded, part, *column, chunk_rows);
          if (chunks != nullptr && !unchanged.dataset_for(column->name(), dataset.get()).valid())
            store_chunks(dataset.get(), digests.get(), *column, part.first_row_id(), chunk_rows, *chunks,
                         encoded->impl());
          else
            write_values(dataset.get(), digests.get(), *column, part.first_row_id(), chunk_rows, unchanged);
        }
        if (!dataset.close()) fail("dataset", info.name);
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
    message +=
        variable.empty() ? std::string(what) : "variable '" + std::string(variable) + "' (" + std::string(what) + ")";
    throw IoError(message + hdf5::detail_suffix(detail));
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
    const Hdf5Filters& filters = filters_for(options_, info.name);
    const auto rows = static_cast<hsize_t>(row_count);
    const auto chunk = static_cast<hsize_t>(effective_chunk_rows(options_, row_count));
    // An empty dataset cannot have a fixed extent smaller than its chunk; let it be extendible.
    const hsize_t max_rows = rows > 0 ? rows : H5S_UNLIMITED;
    hdf5::Dataspace space(H5Screate_simple(1, &rows, &max_rows));
    hdf5::PropertyList create(H5Pcreate(H5P_DATASET_CREATE));
    hdf5::PropertyList access(H5Pcreate(H5P_DATASET_ACCESS));
    if (!space.valid() || !create.valid() || !access.valid() || H5Pset_obj_track_times(create.get(), false) < 0 ||
        H5Pset_chunk(create.get(), 1, &chunk) < 0 || (filters.shuffle && H5Pset_shuffle(create.get()) < 0) ||
        (filters.deflate_level > 0 && H5Pset_deflate(create.get(), static_cast<unsigned>(filters.deflate_level)) < 0) ||
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
      if (!info.level_parents.empty())
        ok = ok && write_int32s_attribute(dataset, kAttrLevelParents, info.level_parents);
      if (!info.recoding.empty()) ok = ok && write_string_attribute(dataset, kAttrRecoding, info.recoding);
      if (info.hierarchy_level >= 0) {
        const std::int32_t level = info.hierarchy_level;
        ok = ok && write_attribute(dataset, kAttrHierarchyLevel, H5T_STD_I32LE, H5T_NATIVE_INT32, &level);
      }
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
  std::int64_t checked_chunk_rows(hid_t dataset, const Table& part, const std::string& name) const {
    const hdf5::PropertyList create(H5Dget_create_plist(dataset));
    const hdf5::Dataspace space(H5Dget_space(dataset));
    hsize_t chunk = 0;
    hsize_t rows = 0;
    if (!create.valid() || !space.valid() || H5Pget_chunk(create.get(), 1, &chunk) != 1 ||
        H5Sget_simple_extent_dims(space.get(), &rows, nullptr) != 1)
      fail("dataset (layout)", name);
    const std::int64_t first = part.first_row_id();
    const std::int64_t end = first + part.row_count();
    const auto chunk_rows = static_cast<std::int64_t>(chunk);
    SDC_CHECK(first >= 0 && first % chunk_rows == 0 &&
                  (end % chunk_rows == 0 || end == static_cast<std::int64_t>(rows)) &&
                  end <= static_cast<std::int64_t>(rows),
              "write_table_rows: rows " + std::to_string(first) + ".." + std::to_string(end) + " of variable '" + name +
                  "' are not whole chunks of " + std::to_string(chunk_rows) + " rows");
    return chunk_rows;
  }

  /// Writes `column` at file rows first_row.. (a chunk boundary): copied from the unchanged input
  /// when that stores it alike (UnchangedSource::dataset_for), else encoded here. Fills the chunks'
  /// entries of `digests` when valid.
  void write_values(hid_t dataset, hid_t digests, const Column& column, std::int64_t first_row, std::int64_t chunk_rows,
                    const UnchangedSource& unchanged) const {
    if (column.size() == 0) return;
    if (const hdf5::Dataset source = unchanged.dataset_for(column.name(), dataset); source.valid())
      copy_chunks(source.get(), unchanged.digests_for(column.name()).get(), dataset, digests, column, first_row,
                  chunk_rows);
    else if (filtered(filters_for(options_, column.name())))
      write_chunks(dataset, digests, column, first_row, chunk_rows);
    else
      write_plain(dataset, digests, column, first_row, chunk_rows);
  }

  /// Stores `entries` in `digests` (when valid), from the entry of the chunk of `first_row` on.
  void store_digests(hid_t digests, const std::string& name, std::int64_t first_row, std::int64_t chunk_rows,
                     std::span<const std::byte> entries) const {
    if (digests >= 0 && !write_digest_entries(digests, first_row / chunk_rows, entries)) fail("stored digests", name);
  }

  /// The stored-digest entries of the chunks of `column` from first_row on, stored as stored_chunk(i)
  /// gives them (filter mask, bytes), computed on all threads; the entries of the chunks for which
  /// known(i, entry) fills `entry` itself are left to it.
  template <typename StoredChunk, typename Known>
  static std::vector<std::byte> digest_entries(const Column& column, std::int64_t chunk_rows,
                                               StoredChunk&& stored_chunk, Known&& known) {
    const auto rows_per_chunk = static_cast<std::size_t>(chunk_rows);
    const std::size_t chunk_count = ceil_div(column.size(), rows_per_chunk);
    const std::size_t entry_bytes = digest_entry_bytes(chunk_rows);
    std::vector<std::byte> entries(chunk_count * entry_bytes);
    tbb::parallel_for(std::size_t{0}, chunk_count, [&](std::size_t i) {
      if (known(i, std::span(entries).subspan(i * entry_bytes, entry_bytes))) return;
      const auto [mask, bytes] = stored_chunk(i);
      const std::size_t begin = i * rows_per_chunk;
      fill_digest_entry(std::span(entries).subspan(i * entry_bytes, entry_bytes), mask, bytes, column, begin,
                        std::min(rows_per_chunk, column.size() - begin));
    });
    return entries;
  }

  void write_plain(hid_t dataset, hid_t digests, const Column& column, std::int64_t first_row,
                   std::int64_t chunk_rows) const {
    const auto start = static_cast<hsize_t>(first_row);
    const hsize_t count = column.size();
    hdf5::Dataspace file_space(H5Dget_space(dataset));
    hdf5::Dataspace memory_space(H5Screate_simple(1, &count, nullptr));
    if (!file_space.valid() || !memory_space.valid() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) < 0 ||
        H5Dwrite(dataset, memory_type(column.type()), memory_space.get(), file_space.get(), H5P_DEFAULT,
                 column_bytes(column).data()) < 0)
      fail("values", column.name());
    if (digests < 0) return;
    // Whole chunks are stored as the values are in memory; a short last chunk is read back, since
    // HDF5 pads it.
    const std::span<const std::byte> values = column_bytes(column);
    const std::size_t chunk_bytes = element_size(column.type()) * static_cast<std::size_t>(chunk_rows);
    const std::size_t chunk_count = ceil_div(values.size(), chunk_bytes);
    std::vector<std::byte> last;
    std::uint32_t last_mask = 0;
    if (values.size() % chunk_bytes != 0) {
      const hsize_t offset = start + (chunk_count - 1) * static_cast<hsize_t>(chunk_rows);
      hsize_t size = 0;
      if (H5Dflush(dataset) < 0 || H5Dget_chunk_storage_size(dataset, &offset, &size) < 0) fail("chunk", column.name());
      last.resize(static_cast<std::size_t>(size));
      if (H5Dread_chunk(dataset, H5P_DEFAULT, &offset, &last_mask, last.data()) < 0) fail("chunk", column.name());
    }
    const auto entries = digest_entries(
        column, chunk_rows,
        [&](std::size_t i) {
          if (i + 1 == chunk_count && !last.empty()) return std::pair{last_mask, std::span<const std::byte>(last)};
          return std::pair{std::uint32_t{0}, values.subspan(i * chunk_bytes, chunk_bytes)};
        },
        [](std::size_t, std::span<std::byte>) { return false; });
    store_digests(digests, column.name(), first_row, chunk_rows, entries);
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

  void store_chunks(hid_t dataset, hid_t digests, const Column& column, std::int64_t first_row, std::int64_t chunk_rows,
                    const std::vector<std::vector<std::byte>>& chunks, const EncodedRows::Impl& encoded) const {
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const hsize_t offset = static_cast<hsize_t>(first_row) + i * static_cast<hsize_t>(chunk_rows);
      // Filter mask 0: every filter of the dataset's pipeline was applied to this chunk.
      if (H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, &offset, chunks[i].size(), chunks[i].data()) < 0)
        fail("chunk", column.name());
    }
    if (digests < 0) return;
    const auto entries = encoded.digest_entries.find(column.name());
    SDC_CHECK(entries != encoded.digest_entries.end(),
              "write_table_rows: no stored digests encoded for variable '" + column.name() + "'");
    store_digests(digests, column.name(), first_row, chunk_rows, entries->second);
  }

  /// Copies the stored chunks of rows first_row .. + row_count of variable `name` from `source`, a
  /// dataset stored like `dataset` (UnchangedSource), with their filter masks: no decoding, no
  /// encoding. Calls on_chunk(index, filter mask, bytes) for every chunk copied.
  template <typename OnChunk>
  void copy_stored_chunks(hid_t source, hid_t dataset, const std::string& name, std::int64_t first_row,
                          std::int64_t row_count, std::int64_t chunk_rows, OnChunk&& on_chunk) const {
    std::vector<std::byte> stored;
    const auto end = static_cast<hsize_t>(first_row + row_count);
    std::size_t index = 0;
    for (auto offset = static_cast<hsize_t>(first_row); offset < end;
         offset += static_cast<hsize_t>(chunk_rows), ++index) {
      hsize_t size = 0;
      std::uint32_t filter_mask = 0;
      if (H5Dget_chunk_storage_size(source, &offset, &size) < 0) fail("chunk (reading the unchanged input's)", name);
      stored.resize(static_cast<std::size_t>(size));
      if (H5Dread_chunk(source, H5P_DEFAULT, &offset, &filter_mask, stored.data()) < 0)
        fail("chunk (reading the unchanged input's)", name);
      if (H5Dwrite_chunk(dataset, H5P_DEFAULT, filter_mask, &offset, stored.size(), stored.data()) < 0)
        fail("chunk", name);
      on_chunk(index, filter_mask, std::span<const std::byte>(stored));
    }
  }

  /// Copies the stored chunks of `column` from `source` (UnchangedSource::dataset_for). The digests
  /// of a copied chunk are those `source_digests` holds when its stored bytes still hash to them;
  /// otherwise they are computed from the values.
  void copy_chunks(hid_t source, hid_t source_digests, hid_t dataset, hid_t digests, const Column& column,
                   std::int64_t first_row, std::int64_t chunk_rows) const {
    std::vector<std::string> chunk_digests;
    copy_stored_chunks(source, dataset, column.name(), first_row, static_cast<std::int64_t>(column.size()), chunk_rows,
                       [&](std::size_t, std::uint32_t mask, std::span<const std::byte> bytes) {
                         if (digests >= 0) chunk_digests.push_back(stored_chunk_digest(mask, bytes));
                       });
    if (digests < 0) return;
    const std::size_t entry_bytes = digest_entry_bytes(chunk_rows);
    std::optional<std::vector<std::byte>> stored;
    if (source_digests >= 0) {
      const auto file_rows = static_cast<std::int64_t>(chunked_layout(dataset)->rows);
      stored = read_digest_entries(source_digests, (file_rows + chunk_rows - 1) / chunk_rows, chunk_rows,
                                   first_row / chunk_rows, static_cast<std::int64_t>(chunk_digests.size()));
    }
    auto entries = digest_entries(
        column, chunk_rows,
        [&](std::size_t) {
          return std::pair{std::uint32_t{0}, std::span<const std::byte>()};
        },
        [&](std::size_t i, std::span<std::byte> entry) {
          if (!stored || std::memcmp(stored->data() + i * entry_bytes, chunk_digests[i].data(), kDigestBytes) != 0)
            return false;
          std::memcpy(entry.data(), stored->data() + i * entry_bytes, entry_bytes);
          return true;
        });
    for (std::size_t i = 0; i < chunk_digests.size(); ++i)
      std::memcpy(entries.data() + i * entry_bytes, chunk_digests[i].data(), kDigestBytes);
    store_digests(digests, column.name(), first_row, chunk_rows, entries);
  }

  /// Copies rows first_row .. + row_count of variable `name`, which the table being written does not
  /// hold, from the unchanged input: its stored chunks and, when the output keeps stored digests,
  /// their entries, which the input must have.
  void copy_not_held(const UnchangedSource& unchanged, hid_t dataset, hid_t digests, const std::string& name,
                     std::int64_t first_row, std::int64_t row_count, std::int64_t chunk_rows) const {
    if (row_count == 0) return;
    const hdf5::Dataset source = unchanged.dataset_for(name, dataset);
    const auto cannot_copy = [&](std::string_view what) {
      throw IoError(target_.string() + ": cannot copy variable '" + name + "' (" + std::string(what) + ") from '" +
                    unchanged.path().string() +
                    "', which it was to carry unchanged; was that file changed while the step ran?");
    };
    if (!source.valid()) cannot_copy("its stored chunks");
    copy_stored_chunks(source.get(), dataset, name, first_row, row_count, chunk_rows,
                       [](std::size_t, std::uint32_t, std::span<const std::byte>) {});
    if (digests < 0) return;
    const hdf5::Dataset source_digests = unchanged.digests_for(name);
    const auto file_rows = static_cast<std::int64_t>(chunked_layout(dataset)->rows);
    const std::int64_t chunk_count = (file_rows + chunk_rows - 1) / chunk_rows;
    const std::int64_t first_chunk = first_row / chunk_rows;
    const std::optional<std::vector<std::byte>> entries =
        source_digests.valid() ? read_digest_entries(source_digests.get(), chunk_count, chunk_rows, first_chunk,
                                                     (row_count + chunk_rows - 1) / chunk_rows)
                               : std::nullopt;
    if (!entries) cannot_copy("its stored digests");
    store_digests(digests, name, first_row, chunk_rows, *entries);
  }

  void write_chunks(hid_t dataset, hid_t digests, const Column& column, std::int64_t first_row,
                    std::int64_t chunk_rows) const {
    const std::span<const std::byte> values = column_bytes(column);
    const std::size_t element = element_size(column.type());
    const auto rows_per_chunk = static_cast<std::size_t>(chunk_rows);
    const std::size_t chunk_bytes = element * rows_per_chunk;
    const std::size_t chunk_count = ceil_div(values.size(), chunk_bytes);
    const std::size_t per_batch = std::max<std::size_t>(1, kBatchBytes / chunk_bytes);
    const std::size_t batch_count = ceil_div(chunk_count, per_batch);
    const ChunkFormat format = chunk_format(column, chunk_bytes, filters_for(options_, column.name()));
    const std::size_t entry_bytes = digest_entry_bytes(chunk_rows);
    std::vector<std::byte> entries(digests >= 0 ? chunk_count * entry_bytes : 0);

    tbb::enumerable_thread_specific<ChunkEncoder> encoders(format);
    std::array<std::vector<std::vector<std::byte>>, 2> stored;
    const auto encode = [&](std::size_t batch) {
      auto& slots = stored[batch % 2];
      slots.resize(std::min(per_batch, chunk_count - batch * per_batch));
      tbb::parallel_for(std::size_t{0}, slots.size(), [&](std::size_t i) {
        const std::size_t chunk = batch * per_batch + i;
        const std::size_t begin = chunk * chunk_bytes;
        encoders.local().encode(values.subspan(begin, std::min(chunk_bytes, values.size() - begin)), slots[i]);
        if (!entries.empty())
          fill_digest_entry(std::span(entries).subspan(chunk * entry_bytes, entry_bytes), 0, slots[i], column,
                            chunk * rows_per_chunk, std::min(rows_per_chunk, column.size() - chunk * rows_per_chunk));
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
    if (digests >= 0) store_digests(digests, column.name(), first_row, chunk_rows, entries);
  }

  const std::filesystem::path& target_;
  const Hdf5WriteOptions& options_;
};

void check_write_options(const Hdf5WriteOptions& options) {
  if (options.chunk_rows < 1 || options.chunk_rows > kMaxChunkRows)
    throw UsageError("chunk rows " + std::to_string(options.chunk_rows) + " outside 1.." +
                     std::to_string(kMaxChunkRows));
  for (const Hdf5Filters& filters : {options.filters, options.derived_filters})
    if (filters.deflate_level < 0 || filters.deflate_level > 9)
      throw UsageError("deflate level " + std::to_string(filters.deflate_level) + " outside 0..9");
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

}  // namespace

// ---- public functions ---------------------------------------------------------------------------

const Hdf5Filters& filters_for(const Hdf5WriteOptions& options, std::string_view name) {
  return std::find(options.derived.begin(), options.derived.end(), name) != options.derived.end()
             ? options.derived_filters
             : options.filters;
}

std::vector<VariableInfo> written_variables(const Table& table, const Hdf5WriteOptions& options) {
  std::vector<VariableInfo> variables;
  const std::vector<PlacedVariable> none;
  const auto& not_held = options.unchanged ? options.unchanged->not_held : none;
  auto next = not_held.begin();
  for (const Column& column : table.columns()) {
    for (; next != not_held.end() && next->position <= variables.size(); ++next) variables.push_back(next->info);
    variables.push_back(column.info());
  }
  for (; next != not_held.end(); ++next) variables.push_back(next->info);
  return variables;
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
  const std::vector<VariableInfo> variables = written_variables(table, options);
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
  const auto declared_unchanged = [&](const std::string& name) {
    return options.unchanged && std::find(options.unchanged->names.begin(), options.unchanged->names.end(), name) !=
                                    options.unchanged->names.end();
  };
  for (const Column& column : part.columns()) {
    const Hdf5Filters& filters = filters_for(options, column.name());
    if (column.size() == 0 || declared_unchanged(column.name()) || !filtered(filters)) continue;
    const std::span<const std::byte> values = column_bytes(column);
    const std::size_t chunk_bytes = element_size(column.type()) * static_cast<std::size_t>(impl->chunk_rows);
    std::vector<std::vector<std::byte>> chunks(ceil_div(values.size(), chunk_bytes));
    const ChunkFormat format = chunk_format(column, chunk_bytes, filters);
    const auto rows_per_chunk = static_cast<std::size_t>(impl->chunk_rows);
    const std::size_t entry_bytes = digest_entry_bytes(impl->chunk_rows);
    std::vector<std::byte> entries(has_stored_digests(file_rows, impl->chunk_rows) ? chunks.size() * entry_bytes : 0);
    tbb::enumerable_thread_specific<ChunkEncoder> encoders(format);
    tbb::parallel_for(std::size_t{0}, chunks.size(), [&](std::size_t i) {
      const std::size_t begin = i * chunk_bytes;
      encoders.local().encode(values.subspan(begin, std::min(chunk_bytes, values.size() - begin)), chunks[i]);
      if (!entries.empty())
        fill_digest_entry(std::span(entries).subspan(i * entry_bytes, entry_bytes), 0, chunks[i], column,
                          i * rows_per_chunk, std::min(rows_per_chunk, column.size() - i * rows_per_chunk));
    });
    impl->chunks.emplace(column.name(), std::move(chunks));
    if (!entries.empty()) impl->digest_entries.emplace(column.name(), std::move(entries));
  }
  return EncodedRows(std::move(impl));
}

void write_table_rows(const std::filesystem::path& path, const Table& part, const Hdf5WriteOptions& options,
                      const EncodedRows* encoded) {
  check_write_options(options);
  hdf5::initialize();
  TableWriter(path, options).write_rows(path, part, encoded);
}

}  // namespace sdc::io
