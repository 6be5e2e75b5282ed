#pragma once
// Generalisation hierarchy files (docs/methods recoding.md §1), the layout ARX and the shared adult
// hierarchies use: CSV, one row per leaf value, column l its value at level l (column 0 the value
// itself, the last usually the root `*`). Two dialects, told apart by the first line:
// - a header `level_0,level_1,…,level_h` and `,` between values (the shared adult files);
// - no header and `;` between values (ARX's own files).
// Values are taken byte for byte as written (RFC 4180 quoting allowed); blank lines are skipped.

#include <filesystem>

#include "kernels/recoding/generalization_hierarchy.h"

namespace sdc::io {

/// Reads the rows of a hierarchy file. InvalidInput naming the file and the line: malformed CSV, a
/// header whose names are not level_0 .. level_h in order, no row, a row with another number of values
/// than the first (a ragged file), an empty value. IoError when the file cannot be read. The rows
/// are not checked as a hierarchy: recoding::GeneralizationHierarchy::build does that.
recoding::HierarchyRows read_hierarchy_file(const std::filesystem::path& path);

/// read_hierarchy_file and GeneralizationHierarchy::build.
recoding::GeneralizationHierarchy load_hierarchy(const std::filesystem::path& path);

}  // namespace sdc::io
