#include "kernels/tables/hierarchy.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string_view trim(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

/// The lines of `text` with their 1-based numbers; a final line without '\n' counts.
std::vector<std::pair<std::int64_t, std::string_view>> numbered_lines(std::string_view text) {
  std::vector<std::pair<std::int64_t, std::string_view>> lines;
  std::int64_t number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    ++number;
    lines.emplace_back(number, text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

/// hierarchy_from_tree, and where each node of the list went (position_of_node[i] = position of codes[i]).
Hierarchy build_tree(std::string name, std::span<const std::string> codes, std::span<const std::int32_t> parent_index,
                     std::vector<std::int32_t>* position_of_node) {
  SDC_CHECK(codes.size() == parent_index.size(), "a parent per code");
  SDC_CHECK(codes.size() < static_cast<std::size_t>(INT32_MAX), "hierarchy size");
  const auto count = static_cast<std::int32_t>(codes.size());
  // Children of each node in list order; node `count` stands for the total.
  std::vector<std::int32_t> offsets(codes.size() + 2, 0);
  for (const std::int32_t p : parent_index) {
    SDC_CHECK(p >= -1 && p < count, "parent index out of range");
    ++offsets[static_cast<std::size_t>(p < 0 ? count : p) + 1];
  }
  for (std::size_t i = 1; i < offsets.size(); ++i) offsets[i] += offsets[i - 1];
  std::vector<std::int32_t> kids(codes.size());
  {
    std::vector<std::int32_t> next(offsets.begin(), offsets.end() - 1);
    for (std::int32_t i = 0; i < count; ++i) {
      const std::int32_t p = parent_index[static_cast<std::size_t>(i)];
      kids[static_cast<std::size_t>(next[static_cast<std::size_t>(p < 0 ? count : p)]++)] = i;
    }
  }
  if (position_of_node != nullptr) position_of_node->assign(codes.size(), -1);
  Hierarchy h;
  h.name = std::move(name);
  h.codes.reserve(codes.size() + 1);
  h.parent.reserve(codes.size() + 1);
  h.depth.reserve(codes.size() + 1);
  // Iterative preorder: deep hierarchies must not exhaust the call stack.
  std::vector<std::pair<std::int32_t, std::int32_t>> stack{{count, -1}};  // (node, parent position)
  while (!stack.empty()) {
    const auto [node, parent_position] = stack.back();
    stack.pop_back();
    const auto position = static_cast<std::int32_t>(h.codes.size());
    if (position_of_node != nullptr && node != count) (*position_of_node)[static_cast<std::size_t>(node)] = position;
    h.codes.push_back(node == count ? std::string(kTotalCode) : codes[static_cast<std::size_t>(node)]);
    h.parent.push_back(parent_position);
    h.depth.push_back(parent_position < 0 ? 0 : h.depth[static_cast<std::size_t>(parent_position)] + 1);
    const auto node_index = static_cast<std::size_t>(node);
    for (auto k = offsets[node_index + 1]; k > offsets[node_index]; --k)
      stack.emplace_back(kids[static_cast<std::size_t>(k - 1)], position);
  }
  SDC_CHECK(h.codes.size() == codes.size() + 1, "hierarchy tree has a cycle");
  // Preorder numbers siblings in increasing order, so grouping by parent keeps them in order.
  h.child_offsets.assign(h.codes.size() + 1, 0);
  for (std::size_t p = 1; p < h.codes.size(); ++p) ++h.child_offsets[static_cast<std::size_t>(h.parent[p]) + 1];
  for (std::size_t p = 1; p < h.child_offsets.size(); ++p) h.child_offsets[p] += h.child_offsets[p - 1];
  h.child_list.resize(codes.size());
  std::vector<std::int32_t> next(h.child_offsets.begin(), h.child_offsets.end() - 1);
  for (std::size_t p = 1; p < h.codes.size(); ++p)
    h.child_list[static_cast<std::size_t>(next[static_cast<std::size_t>(h.parent[p])]++)] =
        static_cast<std::int32_t>(p);
  return h;
}

// (code, parent) entries with the line or entry number each came from, so that the CSV reader and the
// pair list report their own places with one implementation.
struct ParentEntry {
  std::string_view code;
  std::string_view parent;
  std::int64_t place = 0;
};

Hierarchy from_parent_entries(std::string name, std::span<const ParentEntry> entries, std::string_view source,
                              std::string_view unit) {
  const auto where = [&](std::int64_t place) {
    return std::string(source) + ": " + std::string(unit) + " " + std::to_string(place) + ": ";
  };
  absl::flat_hash_map<std::string_view, std::int32_t> index_of;
  index_of.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ParentEntry& entry = entries[i];
    if (entry.code.empty()) throw InvalidInput(where(entry.place) + "empty code");
    if (entry.code == kTotalCode)
      throw InvalidInput(where(entry.place) + "code " + quoted(entry.code) + " is the total's own code");
    const auto [it, inserted] = index_of.emplace(entry.code, static_cast<std::int32_t>(i));
    if (!inserted) {
      throw InvalidInput(where(entry.place) + "duplicate code " + quoted(entry.code) + " (first at " +
                         std::string(unit) + " " + std::to_string(entries[static_cast<std::size_t>(it->second)].place) +
                         ")");
    }
  }
  std::vector<std::int32_t> parent_index(entries.size(), -1);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string_view parent = entries[i].parent;
    if (parent.empty() || parent == kTotalCode) continue;
    const auto it = index_of.find(parent);
    if (it == index_of.end()) {
      throw InvalidInput(where(entries[i].place) + "code " + quoted(entries[i].code) + " has the unknown parent " +
                         quoted(parent));
    }
    parent_index[i] = it->second;
  }
  // A code that does not reach the total by its parents is on a cycle or below one. Walk up from each
  // unresolved code, marking the walk, until a resolved code (no cycle on this walk) or a code of this
  // walk (the cycle, reported from there in parent order). Every code is walked once: O(codes).
  enum : std::uint8_t { kUnknown, kOnWalk, kReaches };
  std::vector<std::uint8_t> state(entries.size(), kUnknown);
  std::vector<std::int32_t> walk;
  for (std::size_t start = 0; start < entries.size(); ++start) {
    walk.clear();
    std::int32_t at = static_cast<std::int32_t>(start);
    while (at >= 0 && state[static_cast<std::size_t>(at)] == kUnknown) {
      state[static_cast<std::size_t>(at)] = kOnWalk;
      walk.push_back(at);
      at = parent_index[static_cast<std::size_t>(at)];
    }
    if (at >= 0 && state[static_cast<std::size_t>(at)] == kOnWalk) {
      std::string cycle;
      std::int32_t on = at;
      do {
        cycle += quoted(entries[static_cast<std::size_t>(on)].code) + " -> ";
        on = parent_index[static_cast<std::size_t>(on)];
      } while (on != at);
      cycle += quoted(entries[static_cast<std::size_t>(at)].code);
      throw InvalidInput(where(entries[static_cast<std::size_t>(at)].place) + "the parents form a cycle: " + cycle);
    }
    for (const std::int32_t w : walk) state[static_cast<std::size_t>(w)] = kReaches;
  }
  std::vector<std::string> codes;
  codes.reserve(entries.size());
  for (const ParentEntry& entry : entries) codes.emplace_back(entry.code);
  return hierarchy_from_tree(std::move(name), codes, parent_index);
}

}  // namespace

bool Hierarchy::is_leaf(std::int32_t position) const {
  const auto p = static_cast<std::size_t>(position);
  return child_offsets[p] == child_offsets[p + 1];
}

std::span<const std::int32_t> Hierarchy::children(std::int32_t position) const {
  const auto p = static_cast<std::size_t>(position);
  return std::span<const std::int32_t>(child_list)
      .subspan(static_cast<std::size_t>(child_offsets[p]),
               static_cast<std::size_t>(child_offsets[p + 1] - child_offsets[p]));
}

std::int32_t Hierarchy::find(std::string_view code) const {
  const auto it = std::find(codes.begin(), codes.end(), code);
  return it == codes.end() ? -1 : static_cast<std::int32_t>(it - codes.begin());
}

std::vector<std::int32_t> Hierarchy::leaves() const {
  std::vector<std::int32_t> result;
  for (std::size_t p = 0; p < size(); ++p)
    if (is_leaf(static_cast<std::int32_t>(p))) result.push_back(static_cast<std::int32_t>(p));
  return result;
}

Hierarchy hierarchy_from_tree(std::string name, std::span<const std::string> codes,
                              std::span<const std::int32_t> parent_index) {
  return build_tree(std::move(name), codes, parent_index, nullptr);
}

Hierarchy flat_hierarchy(std::string name, std::span<const std::string> levels) {
  const std::vector<std::int32_t> parents(levels.size(), -1);
  return hierarchy_from_tree(std::move(name), levels, parents);
}

Hierarchy parse_hrc(std::string_view text, std::string_view source, std::string name) {
  std::vector<std::string> codes;
  std::vector<std::int32_t> parent_index;
  std::vector<std::int64_t> line_of_code;
  absl::flat_hash_map<std::string, std::int32_t> index_of;
  std::vector<std::int32_t> last_at_depth;  // last_at_depth[d - 1]: the latest code of depth d
  for (const auto& [number, raw] : numbered_lines(text)) {
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    const std::string where = std::string(source) + ": line " + std::to_string(number) + ": ";
    const std::size_t ats = line.find_first_not_of('@');
    const std::size_t depth = (ats == std::string_view::npos ? line.size() : ats) + 1;
    const std::string_view code = trim(line.substr(depth - 1));
    if (code.empty()) throw InvalidInput(where + "empty code");
    if (depth > last_at_depth.size() + 1) {
      throw InvalidInput(where + "code " + quoted(code) + " is at depth " + std::to_string(depth) +
                         (last_at_depth.empty() ? std::string(", below the top without a parent")
                                                : ", more than one level below the line before (depth " +
                                                      std::to_string(last_at_depth.size()) + ")"));
    }
    if (code == kTotalCode) throw InvalidInput(where + "code " + quoted(code) + " is the total's own code");
    const auto index = static_cast<std::int32_t>(codes.size());
    const auto [it, inserted] = index_of.emplace(std::string(code), index);
    if (!inserted) {
      throw InvalidInput(where + "duplicate code " + quoted(code) + " (first at line " +
                         std::to_string(line_of_code[static_cast<std::size_t>(it->second)]) + ")");
    }
    last_at_depth.resize(depth - 1);
    parent_index.push_back(last_at_depth.empty() ? -1 : last_at_depth.back());
    last_at_depth.push_back(index);
    codes.emplace_back(code);
    line_of_code.push_back(number);
  }
  return hierarchy_from_tree(std::move(name), codes, parent_index);
}

Hierarchy hierarchy_from_parents(std::string name, std::span<const std::pair<std::string, std::string>> pairs,
                                 std::string_view source) {
  std::vector<ParentEntry> entries;
  entries.reserve(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i)
    entries.push_back({pairs[i].first, pairs[i].second, static_cast<std::int64_t>(i) + 1});
  return from_parent_entries(std::move(name), entries, source, "entry");
}

Hierarchy parse_parent_csv(std::string_view text, std::string_view source, std::string name) {
  std::vector<ParentEntry> entries;
  bool first = true;
  for (const auto& [number, raw] : numbered_lines(text)) {
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    const std::size_t comma = line.find(',');
    const std::string_view code = trim(line.substr(0, comma));
    const std::string_view parent = comma == std::string_view::npos ? std::string_view{} : trim(line.substr(comma + 1));
    if (parent.find(',') != std::string_view::npos) {
      throw InvalidInput(std::string(source) + ": line " + std::to_string(number) +
                         ": more than two fields (expected code,parent)");
    }
    if (first && code == "code" && parent == "parent") {
      first = false;
      continue;
    }
    first = false;
    entries.push_back({code, parent, number});
  }
  return from_parent_entries(std::move(name), entries, source, "line");
}

std::vector<std::int32_t> match_leaves(const Hierarchy& hierarchy, std::span<const std::string> levels,
                                       std::string_view source, std::string_view variable) {
  const std::string where =
      std::string(source) + ": variable " + quoted(variable) + ", hierarchy " + quoted(hierarchy.name) + ": ";
  absl::flat_hash_map<std::string_view, std::int32_t> position_of;
  position_of.reserve(hierarchy.size());
  for (std::size_t p = 1; p < hierarchy.size(); ++p)
    position_of.emplace(hierarchy.codes[p], static_cast<std::int32_t>(p));
  std::vector<std::int32_t> result(levels.size(), -1);
  std::vector<bool> matched(hierarchy.size(), false);
  for (std::size_t k = 0; k < levels.size(); ++k) {
    const auto it = position_of.find(levels[k]);
    if (it == position_of.end())
      throw InvalidInput(where + "level " + quoted(levels[k]) + " of the data is no code of the hierarchy");
    if (!hierarchy.is_leaf(it->second)) {
      throw InvalidInput(where + "level " + quoted(levels[k]) +
                         " of the data is an internal code of the hierarchy (a subtotal, not a leaf)");
    }
    result[k] = it->second;
    matched[static_cast<std::size_t>(it->second)] = true;
  }
  for (std::size_t p = 1; p < hierarchy.size(); ++p) {
    if (hierarchy.is_leaf(static_cast<std::int32_t>(p)) && !matched[p])
      throw InvalidInput(where + "leaf " + quoted(hierarchy.codes[p]) + " is a code missing from the data");
  }
  return result;
}

GeographyHierarchy geography_hierarchy(std::string name, std::span<const std::string> variables,
                                       std::span<const std::vector<std::string>> level_labels,
                                       std::span<const std::int32_t> tuples, std::string_view source) {
  const std::size_t depth = level_labels.size();
  SDC_CHECK(depth >= 1 && variables.size() == depth, "a name and labels per geography variable");
  SDC_CHECK(tuples.size() % depth == 0, "whole geography tuples");
  const std::size_t tuple_count = tuples.size() / depth;
  const std::string where = std::string(source) + ": geography " + quoted(name) + ": ";
  for (std::size_t t = 0; t < tuple_count; ++t) {
    for (std::size_t l = 0; l < depth; ++l) {
      const std::int32_t code = tuples[t * depth + l];
      if (code < 0 || static_cast<std::size_t>(code) >= level_labels[l].size()) {
        throw InvalidInput(where + "variable " + quoted(variables[l]) + " has code " + std::to_string(code) +
                           " outside its " + std::to_string(level_labels[l].size()) + " labels");
      }
    }
  }
  // The (parent code, code) edges of each level, sorted by code: a code with two parents shows up as two
  // adjacent edges, and siblings come out in code order whatever the order of the tuples.
  std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> edges(depth);  // (code, parent code)
  for (std::size_t l = 0; l < depth; ++l) {
    auto& level = edges[l];
    level.reserve(tuple_count);
    for (std::size_t t = 0; t < tuple_count; ++t)
      level.emplace_back(tuples[t * depth + l], l == 0 ? -1 : tuples[t * depth + l - 1]);
    std::sort(level.begin(), level.end());
    level.erase(std::unique(level.begin(), level.end()), level.end());
    for (std::size_t e = 1; e < level.size(); ++e) {
      if (level[e].first == level[e - 1].first) {
        const auto& labels = level_labels[l];
        const auto& parent_labels = level_labels[l - 1];
        throw InvalidInput(where + "code " + quoted(labels[static_cast<std::size_t>(level[e].first)]) +
                           " of variable " + quoted(variables[l]) + " lies in two codes of " +
                           quoted(variables[l - 1]) + ": " +
                           quoted(parent_labels[static_cast<std::size_t>(level[e - 1].second)]) + " and " +
                           quoted(parent_labels[static_cast<std::size_t>(level[e].second)]));
      }
    }
  }
  // Tree nodes level by level; a node's parent index points into the level above.
  std::vector<std::string> codes;
  std::vector<std::int32_t> parent_index;
  std::vector<std::int32_t> node_of_code;  // the level above's nodes by code (after the loop: the finest level's)
  for (std::size_t l = 0; l < depth; ++l) {
    std::vector<std::int32_t> node_here(level_labels[l].size(), -1);
    for (const auto& [code, parent_code] : edges[l]) {
      node_here[static_cast<std::size_t>(code)] = static_cast<std::int32_t>(codes.size());
      codes.push_back(level_labels[l][static_cast<std::size_t>(code)]);
      parent_index.push_back(l == 0 ? -1 : node_of_code[static_cast<std::size_t>(parent_code)]);
    }
    node_of_code = std::move(node_here);
  }
  // Siblings stay in code order: within a level, nodes were appended by code, and the preorder keeps
  // the list order of siblings.
  GeographyHierarchy result;
  std::vector<std::int32_t> position_of_node;
  result.hierarchy = build_tree(std::move(name), codes, parent_index, &position_of_node);
  result.finest_position.assign(level_labels[depth - 1].size(), -1);
  for (std::size_t code = 0; code < node_of_code.size(); ++code) {
    if (node_of_code[code] >= 0)
      result.finest_position[code] = position_of_node[static_cast<std::size_t>(node_of_code[code])];
  }
  return result;
}

}  // namespace sdc::tables
