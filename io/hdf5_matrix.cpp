#include "io/hdf5_matrix.h"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "io/hdf5_error.h"
#include "io/hdf5_handle.h"
#include "io/input_file.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

constexpr const char* kFormatAttribute = "sdc_format";
constexpr const char* kFormatName = "sdc-engine sparse matrix";
constexpr const char* kVersionAttribute = "sdc_format_version";
constexpr std::int64_t kMatrixFormatVersion = 1;
constexpr hsize_t kChunkEntries = hsize_t{1} << 16;

template <typename T>
hid_t memory_type_of() {
  return std::is_same_v<T, double> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
}

template <typename T>
hid_t stored_type_of() {
  return std::is_same_v<T, double> ? H5T_IEEE_F64LE : H5T_STD_I64LE;
}

template <typename T>
bool write_array(hid_t file, const char* name, std::span<const T> values) {
  const hsize_t size = values.size();
  hdf5::Dataspace space(H5Screate_simple(1, &size, nullptr));
  hdf5::PropertyList create(H5Pcreate(H5P_DATASET_CREATE));
  if (!space.valid() || !create.valid()) return false;
  if (size > 0) {
    const hsize_t chunk = std::min(size, kChunkEntries);
    if (H5Pset_chunk(create.get(), 1, &chunk) < 0 || H5Pset_shuffle(create.get()) < 0 ||
        H5Pset_deflate(create.get(), 1) < 0)
      return false;
  }
  hdf5::Dataset dataset(
      H5Dcreate2(file, name, stored_type_of<T>(), space.get(), H5P_DEFAULT, create.get(), H5P_DEFAULT));
  if (!dataset.valid()) return false;
  return size == 0 || H5Dwrite(dataset.get(), memory_type_of<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0;
}

bool write_int_attribute(hid_t object, const char* name, std::int64_t value) {
  hdf5::Dataspace scalar(H5Screate(H5S_SCALAR));
  hdf5::Attribute attribute(H5Acreate2(object, name, H5T_STD_I64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT));
  return attribute.valid() && H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value) >= 0;
}

bool write_text_attribute(hid_t object, const char* name, const std::string& value) {
  hdf5::Datatype type(H5Tcopy(H5T_C_S1));
  if (!type.valid() || H5Tset_size(type.get(), value.size()) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
    return false;
  hdf5::Dataspace scalar(H5Screate(H5S_SCALAR));
  hdf5::Attribute attribute(H5Acreate2(object, name, type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT));
  return attribute.valid() && H5Awrite(attribute.get(), type.get(), value.data()) >= 0;
}

std::optional<std::int64_t> read_int_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return std::nullopt;
  hdf5::Attribute attribute(H5Aopen(object, name, H5P_DEFAULT));
  std::int64_t value = 0;
  if (!attribute.valid() || H5Aread(attribute.get(), H5T_NATIVE_INT64, &value) < 0) return std::nullopt;
  return value;
}

std::optional<std::string> read_text_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return std::nullopt;
  hdf5::Attribute attribute(H5Aopen(object, name, H5P_DEFAULT));
  hdf5::Datatype type(H5Aget_type(attribute.get()));
  if (!attribute.valid() || !type.valid() || H5Tget_class(type.get()) != H5T_STRING ||
      H5Tis_variable_str(type.get()) > 0)
    return std::nullopt;
  std::string value(H5Tget_size(type.get()), '\0');
  if (H5Aread(attribute.get(), type.get(), value.data()) < 0) return std::nullopt;
  return value;
}

template <typename T>
std::vector<T> read_array(hid_t file, const char* name, const std::string& source) {
  const auto invalid = [&](const std::string& what) {
    return InvalidInput(source + ": dataset '" + name + "' " + what + hdf5::detail_suffix(hdf5::take_error_detail()));
  };
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0) throw invalid("is missing");
  H5L_info_t link{};
  if (H5Lget_info(file, name, &link, H5P_DEFAULT) < 0 || link.type != H5L_TYPE_HARD)
    throw invalid("is a link, not stored in the file; links are not followed");
  hdf5::Dataset dataset(H5Dopen2(file, name, H5P_DEFAULT));
  hdf5::Dataspace space(H5Dget_space(dataset.get()));
  if (!dataset.valid() || !space.valid() || H5Sget_simple_extent_ndims(space.get()) != 1)
    throw invalid("is not one-dimensional");
  hsize_t size = 0;
  H5Sget_simple_extent_dims(space.get(), &size, nullptr);
  std::vector<T> values(static_cast<std::size_t>(size));
  if (size > 0 && H5Dread(dataset.get(), memory_type_of<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    throw invalid("cannot be read");
  return values;
}

}  // namespace

void write_csr_matrix(const CsrView& matrix, const std::filesystem::path& output, FilePermissions permissions) {
  hdf5::initialize();
  SDC_CHECK(!matrix.problem(), "a matrix written is a valid CSR matrix");
  AtomicOutput atomic(output, permissions);
  {
    hdf5::File file(H5Fcreate(atomic.temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const bool written = file.valid() && write_text_attribute(file.get(), kFormatAttribute, kFormatName) &&
                         write_int_attribute(file.get(), kVersionAttribute, kMatrixFormatVersion) &&
                         write_int_attribute(file.get(), "rows", matrix.rows) &&
                         write_int_attribute(file.get(), "columns", matrix.columns) &&
                         write_array(file.get(), "row_offsets", matrix.row_offsets) &&
                         write_array(file.get(), "column_indices", matrix.column_indices) &&
                         write_array(file.get(), "values", matrix.values);
    if (!written || H5Fflush(file.get(), H5F_SCOPE_LOCAL) < 0) {
      const std::string detail = hdf5::take_error_detail();
      if (file.valid()) hdf5::abandon(file);
      throw IoError(output.string() + ": cannot write matrix" + hdf5::detail_suffix(detail));
    }
  }
  atomic.commit();
}

CsrMatrix read_csr_matrix(const std::filesystem::path& path) {
  hdf5::initialize();
  check_input_file(path, "matrix");
  const std::string source = path.string();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    hdf5::take_error_detail();
    throw InvalidInput(source + ": not an HDF5 file");
  }
  hdf5::File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid())
    throw InvalidInput(source + ": damaged HDF5 file" + hdf5::detail_suffix(hdf5::take_error_detail()));
  if (read_text_attribute(file.get(), kFormatAttribute) != std::optional<std::string>(kFormatName))
    throw InvalidInput(source + ": not an sdc-engine sparse matrix (file attribute 'sdc_format')");
  if (read_int_attribute(file.get(), kVersionAttribute) != kMatrixFormatVersion)
    throw InvalidInput(source + ": matrix format version is not " + std::to_string(kMatrixFormatVersion));
  const auto rows = read_int_attribute(file.get(), "rows");
  const auto columns = read_int_attribute(file.get(), "columns");
  if (!rows || !columns) throw InvalidInput(source + ": file attributes 'rows' and 'columns' are missing");
  std::vector<std::int64_t> offsets = read_array<std::int64_t>(file.get(), "row_offsets", source);
  std::vector<std::int64_t> indices = read_array<std::int64_t>(file.get(), "column_indices", source);
  std::vector<double> values = read_array<double>(file.get(), "values", source);
  const CsrView view{*rows, *columns, offsets, indices, values};
  if (const auto problem = view.problem()) throw InvalidInput(source + ": not a valid sparse matrix: " + *problem);
  return CsrMatrix(*rows, *columns, std::move(offsets), std::move(indices), std::move(values));
}

}  // namespace sdc::io
