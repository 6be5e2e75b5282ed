#pragma once
// The hierarchies of a table's dimensions (docs/methods tabular.md §1): one code list per spanning
// variable, the total first, every subtotal above its children. A table's cells are all combinations
// of the codes of its dimensions, totals and subtotals included; its additivity equations come from
// the hierarchies (constraint_matrix.h).
//
// Shape: metadata, not records. A hierarchy is built once (from a tau-Argus .hrc file, a list of
// (code, parent) pairs, the levels of a categorical variable or the nested geography variables of the
// data) and is the same on every rank; its size is that of a code list, never of the data. Messages
// name the source, the line or entry, the variable and the code: codes are metadata (level labels),
// not record values.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sdc::tables {

/// The code of every hierarchy's top position.
inline constexpr std::string_view kTotalCode = "Total";

/// One dimension of a table. Positions are in depth-first preorder (every code before its
/// descendants, siblings in the order the source gives them), position 0 the total.
struct Hierarchy {
  std::string name;
  std::vector<std::string> codes;           ///< per position; codes[0] = "Total"
  std::vector<std::int32_t> parent;         ///< parent position, -1 for the total
  std::vector<std::int32_t> depth;          ///< 0 for the total
  std::vector<std::int32_t> child_offsets;  ///< size() + 1 entries: the children of p are
                                            ///< child_list[child_offsets[p] .. child_offsets[p + 1])
  std::vector<std::int32_t> child_list;     ///< children in preorder, grouped by parent

  std::size_t size() const { return codes.size(); }
  bool is_leaf(std::int32_t position) const;
  std::span<const std::int32_t> children(std::int32_t position) const;
  /// The position of `code`, or -1. Linear in the size: callers that look up many codes build a map.
  std::int32_t find(std::string_view code) const;
  /// The positions without children, increasing.
  std::vector<std::int32_t> leaves() const;
};

/// A hierarchy from a tree given as codes and parent indices into the same list (-1 = child of the
/// total; the total itself is not in the list): positions in preorder, siblings in list order.
/// InternalError for an index out of range or a cycle (the public builders below report those as
/// InvalidInput first).
Hierarchy hierarchy_from_tree(std::string name, std::span<const std::string> codes,
                              std::span<const std::int32_t> parent_index);

/// Total + one leaf per level, in the levels' order.
Hierarchy flat_hierarchy(std::string name, std::span<const std::string> levels);

/// tau-Argus .hrc text: one code per line, one '@' per depth below the top ("1", "@11", "@@111"); the
/// top-level codes are the children of the implicit total. Surrounding blanks and a final '\r' are
/// ignored, blank lines are skipped. InvalidInput naming `source` and the line (1-based): a jump of
/// more than one level below the line before (or a first line below the top), an empty code, a
/// duplicate code (naming both lines), a code equal to the total's "Total".
Hierarchy parse_hrc(std::string_view text, std::string_view source, std::string name);

/// A hierarchy from (code, parent) pairs, parent empty or "Total" = child of the total; siblings in
/// the order of the pairs. InvalidInput naming `source` and the entry (1-based): an empty code, a
/// duplicate code (naming both entries), a parent that is no code of the list, cycles (naming the codes
/// on the cycle, in parent order).
Hierarchy hierarchy_from_parents(std::string name, std::span<const std::pair<std::string, std::string>> pairs,
                                 std::string_view source);

/// "code,parent" lines (a missing or empty parent = child of the total; an optional first line
/// "code,parent" is a header; blanks around fields and blank lines are ignored); errors as
/// hierarchy_from_parents, naming the line instead of the entry, and a line with more than two fields.
Hierarchy parse_parent_csv(std::string_view text, std::string_view source, std::string name);

/// Maps a categorical variable's levels to the hierarchy's leaves: result[level code] = position.
/// InvalidInput naming `source`, `variable` and the code: a level of the data that is no code of the
/// hierarchy; a level that is an internal code (a subtotal cannot also be a cell of records); a leaf
/// that is no level of the data ("a code missing from the data").
std::vector<std::int32_t> match_leaves(const Hierarchy& hierarchy, std::span<const std::string> levels,
                                       std::string_view source, std::string_view variable);

/// The geography hierarchy of nested variables g1 (coarsest) .. gL and where the finest codes sit.
struct GeographyHierarchy {
  Hierarchy hierarchy;
  std::vector<std::int32_t> finest_position;  ///< per code of gL: its position, -1 when in no tuple
};

/// Total -> g1 codes -> ... -> gL codes from the distinct finest-level tuples seen in the data.
/// `level_labels[l]` are the labels of variable l's codes (code k has label level_labels[l][k]);
/// `tuples` holds tuple_count × L codes, row-major (code of g1, ..., code of gL), in any order and with
/// repeats allowed. Only codes seen in a tuple appear; siblings are in code order, so the result does not
/// depend on the order of the tuples. Labels are the hierarchy's codes (labels of different levels may
/// repeat: use positions). InvalidInput naming `source`: a code outside its variable's labels; a code of
/// g(l+1) under two codes of g(l) (naming the variables and the three codes).
GeographyHierarchy geography_hierarchy(std::string name, std::span<const std::string> variables,
                                       std::span<const std::vector<std::string>> level_labels,
                                       std::span<const std::int32_t> tuples, std::string_view source);

}  // namespace sdc::tables
