#pragma once
// Sparse matrices (kernels/core/csr_matrix.h) in HDF5: the file a step writes when its output is a
// matrix (a table's constraint matrix, a distance graph) and reads when its input is one. The CSR
// arrays are stored as they are, so a matrix reads back bit for bit (docs/format.md, "Matrices").

#include <filesystem>

#include "io/atomic_output.h"
#include "kernels/core/csr_matrix.h"

namespace sdc::io {

/// Writes `matrix` to `output` atomically, with `permissions`. IoError naming `output` when the
/// file cannot be written.
void write_csr_matrix(const CsrView& matrix, const std::filesystem::path& output, FilePermissions permissions);

/// Reads a matrix written by write_csr_matrix(). IoError when the file cannot be opened (as every
/// input, io/input_file.h), InvalidInput naming the file when it is not an sdc-engine matrix or its
/// arrays break the CSR rules.
CsrMatrix read_csr_matrix(const std::filesystem::path& path);

}  // namespace sdc::io
