#pragma once
// Sparse matrices in Matrix Market coordinate form (the format table-protection solvers and
// kernels/tables/constraint_matrix.h's write_matrix_market exchange): the reader behind commands whose
// input is a matrix from another tool.
//
// Accepted: the banner `%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric>`
// (keywords in any case), then comment lines (`%`) and blank lines, the size line
// `<rows> <columns> <entries>`, then exactly `entries` entry lines `<row> <column> [<value>]`, 1-based,
// fields separated by blanks or tabs (a CR before the line end is a blank). Blank and comment lines
// may also stand between and after the entries. A pattern entry has the value 1; a symmetric file gives
// each off-diagonal entry once, in either triangle, and the matrix holds its mirror too.
//
// Refused with InvalidInput naming the file and the 1-based line, and the field by its position (never
// its content): no banner or a malformed one, the dense array format, complex values, hermitian and
// skew-symmetric matrices, a malformed size line (a field that is not a whole number >= 0 or does not
// fit in 64 bits, more entries than the matrix has places, a symmetric matrix that is not square), a
// malformed entry line (fields missing or extra, not a number, not finite, an index outside the
// matrix), a repeated entry (both lines named), fewer or more entry lines than the size line gives.
// Where lines break several rules, the earliest line at fault is reported. Repeats show only once
// every line is read, so a repeat is reported for a file whose lines are otherwise sound: the one
// whose repeating line comes first.
//
// Speed: the text is read in chunks of kMatrixMarketChunkBytes; the entry lines of a chunk are parsed
// (std::from_chars for values that are not plain whole numbers) in slices split at line ends, in
// parallel (TBB), and the slices' results are taken in file order, so the matrix and the error
// reported never depend on the thread count. The entries are then counted by row and moved to their
// rows in place by an American flag sort in two passes (the row's top bits, then the row, the second
// pass in parallel), and the columns of each row that is out of order are sorted. A file in row order,
// as write_matrix_market writes it, moves nothing. Measured on a 5 x 10^7-entry file (0.84 GB, a
// 256x256x256 table's constraint matrix): about 2.5 s of CPU in row order, 8 s with its lines shuffled.
//
// Memory: the CSR arrays (8 bytes of column and 8 of value per entry, 8 per row), plus the per-entry
// row array (8 bytes per entry; during the sort it holds the row above the entry's ordinal, so that a
// repeated entry's lines are known), plus one chunk of text and the entries parsed from it before they
// join the arrays, plus one number pair per run of blank or comment lines among the entries. A
// symmetric file needs, while its mirrored entries are added, the CSR arrays of the entries as given
// besides those of the whole matrix.

#include <cstddef>
#include <filesystem>
#include <istream>
#include <string>

#include "kernels/core/csr_matrix.h"

namespace sdc::io {

/// The size of the chunks of text read at a time, and so the longest line accepted.
inline constexpr std::size_t kMatrixMarketChunkBytes = std::size_t{32} << 20;

/// Reads the Matrix Market file at `path` as above, `chunk_bytes` (at least 1) at a time. IoError when
/// it cannot be opened or read (as every input, io/input_file.h); InvalidInput naming the file and the
/// line when it breaks the format (a line longer than `chunk_bytes` included).
CsrMatrix read_matrix_market(const std::filesystem::path& path, std::size_t chunk_bytes = kMatrixMarketChunkBytes);

/// Reads Matrix Market text from `in`, naming it `name` in errors. IoError when the stream fails.
/// Without a file size to bound the size line's entry count, the entry arrays grow as the entries
/// come (by doubling: up to twice their final size while they grow).
CsrMatrix read_matrix_market(std::istream& in, const std::string& name,
                             std::size_t chunk_bytes = kMatrixMarketChunkBytes);

}  // namespace sdc::io
