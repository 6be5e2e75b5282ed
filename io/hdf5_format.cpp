// The parts of the sdc-engine HDF5 table format that the writer and the reader share
// (io/hdf5_format.h), and the text form of the filter pipeline (io/hdf5_table.h).

#include "io/hdf5_format.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <system_error>
#include <variant>

#include "kernels/core/error.h"

namespace sdc::io {
namespace detail {

hid_t stored_type(VariableType type) {
  switch (type) {
    case VariableType::kCategorical:
      return H5T_STD_I32LE;
    case VariableType::kContinuous:
      return H5T_IEEE_F64LE;
    case VariableType::kId:
      return H5T_STD_I64LE;
  }
  return H5T_STD_I64LE;
}

hid_t memory_type(VariableType type) {
  switch (type) {
    case VariableType::kCategorical:
      return H5T_NATIVE_INT32;
    case VariableType::kContinuous:
      return H5T_NATIVE_DOUBLE;
    case VariableType::kId:
      return H5T_NATIVE_INT64;
  }
  return H5T_NATIVE_INT64;
}

std::size_t element_size(VariableType type) { return type == VariableType::kCategorical ? 4 : 8; }

std::string_view stored_type_name(VariableType type) {
  switch (type) {
    case VariableType::kCategorical:
      return "32-bit signed integers";
    case VariableType::kContinuous:
      return "64-bit floats";
    case VariableType::kId:
      return "64-bit signed integers";
  }
  return "?";
}

std::string describe_dtype(hid_t type) {
  const H5T_class_t type_class = H5Tget_class(type);
  const std::string bits = std::to_string(H5Tget_size(type) * 8) + "-bit ";
  switch (type_class) {
    case H5T_INTEGER:
      return bits + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned integers" : "signed integers");
    case H5T_FLOAT:
      return bits + "floats";
    case H5T_STRING:
      return "strings";
    default:
      return "values of a compound or other non-numeric type";
  }
}

bool dtype_matches(hid_t type, VariableType expected) {
  const H5T_class_t type_class = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  switch (expected) {
    case VariableType::kCategorical:
      return type_class == H5T_INTEGER && size == 4 && H5Tget_sign(type) == H5T_SGN_2;
    case VariableType::kContinuous:
      return type_class == H5T_FLOAT && size == 8;
    case VariableType::kId:
      return type_class == H5T_INTEGER && size == 8 && H5Tget_sign(type) == H5T_SGN_2;
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

void validate_metadata(const std::vector<VariableInfo>& variables, const std::string& source) {
  Table shape(source, 0);
  for (const VariableInfo& info : variables) {
    switch (info.type) {
      case VariableType::kCategorical:
        shape.add_column(Column::categorical(info, {}));
        break;
      case VariableType::kContinuous:
        shape.add_column(Column::continuous(info, {}));
        break;
      case VariableType::kId:
        shape.add_column(Column::id(info, {}));
        break;
    }
  }
  validate_table(shape);
}

std::optional<FileStamp> stamp_of(const std::filesystem::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return std::nullopt;
  return FileStamp{status.st_dev, status.st_ino, status.st_size,
                   static_cast<std::int64_t>(status.st_mtim.tv_sec) * 1'000'000'000 + status.st_mtim.tv_nsec};
}

}  // namespace detail

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
  if (filters.deflate_level > 0)
    out += (out.empty() ? "" : ",") + std::string("deflate=") + std::to_string(filters.deflate_level);
  return out.empty() ? "none" : out;
}

}  // namespace sdc::io
