// The reader of the sdc-engine HDF5 table format: Hdf5TableReader, and read_summary(), read_table()
// and content_digest() on top of it.

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/chunk_codec.h"
#include "io/content_digest.h"
#include "io/hdf5_error.h"
#include "io/hdf5_format.h"
#include "io/hdf5_handle.h"
#include "io/hdf5_table.h"
#include "io/input_file.h"
#include "io/stored_digests.h"
#include "kernels/core/error.h"

namespace sdc::io {

using namespace detail;

namespace {

/// Values per streaming block (info, content digest): memory stays at one block of one variable.
constexpr std::size_t kStreamBlockBytes = std::size_t{32} << 20;

std::string quoted_excerpt(std::string_view text) {
  // Attribute text (not record data) may still be long or binary; quote a short, printable excerpt.
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (char c : text.substr(0, kMax)) out += (c >= ' ' && c <= '~') ? c : '?';
  if (text.size() > kMax) out += "...";
  return out + "'";
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

// ---- reader -------------------------------------------------------------------------------------

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
  bool unknown_filters = false;  ///< filters besides shuffle-then-deflate
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
    invalid(variable, message + hdf5::detail_suffix(hdf5::take_error_detail()));
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
      invalid({}, "format version " + std::to_string(version) +
                      " is not supported (this build of sdc-engine reads version " + std::to_string(kFormatVersion) +
                      ")");
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
      invalid({},
              "group /variables does not track link creation order, so the column order is unknown "
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
    const char* kind = info.type == H5L_TYPE_SOFT       ? "a soft link"
                       : info.type == H5L_TYPE_EXTERNAL ? "an external link"
                                                        : "a user-defined link";
    invalid({}, shown + " is " + kind + ", not an object stored in the file; links are not followed");
  }

  std::string link_name(hsize_t index) const {
    const auto length =
        H5Lget_name_by_idx(variables.get(), ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, index, nullptr, 0, H5P_DEFAULT);
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
    if (count < 0 || rank < 0)
      invalid_with_detail(variable, attribute_label(name, variable) + " has an unreadable shape");
    if (array ? rank > 1 : count != 1)
      invalid(variable,
              attribute_label(name, variable) + (array ? " is not a one-dimensional array" : " is not a single value"));
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
      if (!strings.read(attribute.get()))
        invalid_with_detail(variable, attribute_label(name, variable) + " cannot be read");
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
      invalid(variable,
              attribute_label(name, variable) + " is not " + (wanted == H5T_INTEGER ? "an integer" : "a float"));
    attribute_count(attribute.get(), name, variable, false);
    T value{};
    if (H5Aread(attribute.get(), value_type, &value) < 0)
      invalid_with_detail(variable, attribute_label(name, variable) + " cannot be read");
    return value;
  }

  std::optional<std::vector<std::int32_t>> read_int32s(hid_t object, const char* name,
                                                       std::string_view variable) const {
    const hdf5::Attribute attribute = open_attribute(object, name, variable);
    if (!attribute.valid()) return std::nullopt;
    const hdf5::Datatype type(H5Aget_type(attribute.get()));
    if (H5Tget_class(type.get()) != H5T_INTEGER)
      invalid(variable, attribute_label(name, variable) + " is not an integer");
    std::vector<std::int32_t> values(attribute_count(attribute.get(), name, variable, true));
    if (!values.empty() && H5Aread(attribute.get(), H5T_NATIVE_INT32, values.data()) < 0)
      invalid_with_detail(variable, attribute_label(name, variable) + " cannot be read");
    return values;
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
      invalid(
          {},
          "dataset /variables/" + quoted_excerpt(name) +
              " is not a valid variable name (1-128 characters from A-Z a-z 0-9 _ . -, starting with a letter or _)");
    const hdf5::Dataset dataset = open_dataset(name);
    const hid_t id = dataset.get();
    StoredVariable variable;
    VariableInfo& info = variable.info;
    info.name = name;

    const std::string type_text = required(read_string(id, kAttrType, name), kAttrType, name);
    const auto type = parse_variable_type(type_text);
    if (!type)
      invalid(name, "unknown type " + quoted_excerpt(type_text) + " (expected one of " + variable_type_names() + ")");
    info.type = *type;
    const std::string role_text = required(read_string(id, kAttrRole, name), kAttrRole, name);
    const auto role = parse_variable_role(role_text);
    if (!role)
      invalid(name, "unknown role " + quoted_excerpt(role_text) + " (expected one of " + variable_role_names() + ")");
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
      if (auto parents = read_int32s(dataset, kAttrLevelParents, name)) info.level_parents = std::move(*parents);
      if (auto recoding = read_string(dataset, kAttrRecoding, name)) info.recoding = std::move(*recoding);
      if (const auto level = read_integer(dataset, kAttrHierarchyLevel, name)) {
        if (*level < 0 || *level > std::numeric_limits<std::int32_t>::max())
          invalid(name, "attribute 'hierarchy_level' is out of range");
        info.hierarchy_level = static_cast<std::int32_t>(*level);
      }
      const auto missing = required(read_integer(dataset, kAttrMissingCode, name), kAttrMissingCode, name);
      if (missing != kMissingCode)
        invalid(name,
                "attribute 'missing_code' must be " + std::to_string(kMissingCode) + " for a categorical variable");
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
        variable.unknown_filters = true;
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

  void read_hyperslab(hid_t dataset, const StoredVariable& variable, std::int64_t first,
                      std::span<std::byte> out) const {
    const std::size_t element = element_size(variable.info.type);
    const hsize_t start = static_cast<hsize_t>(first);
    const hsize_t count = out.size() / element;
    hdf5::Dataspace file_space(H5Dget_space(dataset));
    hdf5::Dataspace memory_space(H5Screate_simple(1, &count, nullptr));
    if (!file_space.valid() || !memory_space.valid() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) < 0 ||
        H5Dread(dataset, memory_type(variable.info.type), memory_space.get(), file_space.get(), H5P_DEFAULT,
                out.data()) < 0)
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
      run_alongside(
          [&] {
            if (batch + 1 < batch_count) fetch(batch + 1);
          },
          [&] { decode(batch); });
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
      invalid(variable.info.name, rows_text(chunk.index * variable.chunk_rows, variable.chunk_rows) +
                                      ": damaged chunk (cannot be decompressed)");
    if (!whole)
      std::memcpy(target.data(), decoded.data() + static_cast<std::size_t>(skip_rows) * element, target.size());
  }

  bool stored_as(std::string_view name, const Hdf5WriteOptions& options) const {
    const StoredVariable& variable = find(name);
    const Hdf5Filters& filters = filters_for(options, name);
    return variable.chunk_rows == effective_chunk_rows(options, summary.row_count) && !variable.unknown_filters &&
           variable.filters.shuffle == filters.shuffle && variable.filters.deflate_level == filters.deflate_level;
  }

  std::optional<std::vector<std::string>> stored_block_digests(std::string_view name, std::int64_t first_row,
                                                               std::int64_t row_count) const {
    const StoredVariable& variable = find(name);
    const std::int64_t rows = summary.row_count;
    const std::int64_t chunk_rows = variable.chunk_rows;
    if (!has_stored_digests(rows, chunk_rows)) return std::nullopt;
    const hdf5::Dataset digests = open_stored_digests(file.get(), variable.info.name);
    const std::int64_t chunk_count = (rows + chunk_rows - 1) / chunk_rows;
    const auto entries =
        digests.valid() ? read_digest_entries(digests.get(), chunk_count, chunk_rows, 0, chunk_count) : std::nullopt;
    if (!entries) return std::nullopt;
    const std::size_t entry_bytes = digest_entry_bytes(chunk_rows);
    const hdf5::Dataset dataset = open_dataset(variable.info.name);
    const std::size_t chunk_bytes = element_size(variable.info.type) * static_cast<std::size_t>(chunk_rows);
    StoredChunk chunk;
    const std::int64_t end_row = std::min(rows, first_row + row_count);
    for (std::int64_t k = std::max<std::int64_t>(0, first_row) / chunk_rows; k * chunk_rows < end_row; ++k) {
      chunk.index = k;
      if (!fetch_chunk(dataset.get(), variable, chunk, chunk_bytes)) return std::nullopt;
      const std::string digest = stored_chunk_digest(chunk.filter_mask, chunk.bytes);
      if (std::memcmp(digest.data(), entries->data() + static_cast<std::size_t>(k) * entry_bytes, kDigestBytes) != 0)
        return std::nullopt;
    }
    const std::int64_t per_chunk = chunk_rows / kDigestBlockRows;
    std::vector<std::string> blocks(static_cast<std::size_t>((rows + kDigestBlockRows - 1) / kDigestBlockRows));
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const std::size_t offset = (b / static_cast<std::size_t>(per_chunk)) * entry_bytes +
                                 (1 + b % static_cast<std::size_t>(per_chunk)) * kDigestBytes;
      blocks[b].assign(reinterpret_cast<const char*>(entries->data() + offset), kDigestBytes);
    }
    return blocks;
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
bool Hdf5TableReader::stored_as(std::string_view variable, const Hdf5WriteOptions& options) const {
  return impl_->stored_as(variable, options);
}
std::optional<std::vector<std::string>> Hdf5TableReader::stored_block_digests(std::string_view variable,
                                                                              std::int64_t first_row,
                                                                              std::int64_t row_count) const {
  return impl_->stored_block_digests(variable, first_row, row_count);
}
std::int64_t Hdf5TableReader::streaming_block_rows(std::string_view variable) const {
  return impl_->streaming_block_rows(variable);
}

// ---- public functions ---------------------------------------------------------------------------

FileSummary read_summary(const std::filesystem::path& path) { return Hdf5TableReader(path).summary(); }

Table read_table(const std::filesystem::path& path, const Hdf5ReadOptions& options) {
  return Hdf5TableReader(path).read(options);
}

std::string content_digest(const std::filesystem::path& path) {
  const Hdf5TableReader reader(path);
  const FileSummary& summary = reader.summary();
  // Windows of whole digest blocks (about 32 MiB of 8-byte values), hashed in parallel.
  constexpr std::int64_t kWindowRows = 64 * kDigestBlockRows;
  std::vector<std::vector<std::string>> digests(summary.variables.size());
  for (std::size_t v = 0; v < summary.variables.size(); ++v) {
    for (std::int64_t first = 0; first < summary.row_count; first += kWindowRows) {
      const Table window =
          reader.read({{summary.variables[v].name}, first, std::min(kWindowRows, summary.row_count - first), false});
      auto blocks = whole_block_digests(window, first, first + window.row_count(), summary.row_count);
      digests[v].insert(digests[v].end(), std::make_move_iterator(blocks[0].begin()),
                        std::make_move_iterator(blocks[0].end()));
    }
  }
  return combine_content_digest(summary, digests);
}

}  // namespace sdc::io
