#include "kernels/tables/hierarchy.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

// The message of the InvalidInput that `build` throws (a failure when it throws nothing or another type).
template <typename Build>
std::string invalid_input_message(const Build& build) {
  try {
    build();
  } catch (const InvalidInput& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidInput";
  return {};
}

// Every fragment occurs in `message`.
void expect_fragments(const std::string& message, std::initializer_list<const char*> fragments) {
  for (const char* fragment : fragments)
    EXPECT_NE(message.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << message;
}

using Codes = std::vector<std::string>;
using Positions = std::vector<std::int32_t>;

std::vector<std::int32_t> children_of(const Hierarchy& h, std::int32_t position) {
  const auto span = h.children(position);
  return {span.begin(), span.end()};
}

TEST(Hierarchy, FlatHierarchyIsTheTotalAndOneLeafPerLevel) {
  const std::vector<std::string> levels{"I", "II", "III"};
  const Hierarchy h = flat_hierarchy("activity", levels);
  EXPECT_EQ(h.name, "activity");
  EXPECT_EQ(h.codes, (Codes{"Total", "I", "II", "III"}));
  EXPECT_EQ(h.parent, (Positions{-1, 0, 0, 0}));
  EXPECT_EQ(h.depth, (Positions{0, 1, 1, 1}));
  EXPECT_EQ(h.size(), 4U);
  EXPECT_FALSE(h.is_leaf(0));
  EXPECT_TRUE(h.is_leaf(3));
  EXPECT_EQ(children_of(h, 0), (Positions{1, 2, 3}));
  EXPECT_EQ(h.leaves(), (Positions{1, 2, 3}));
}

TEST(Hierarchy, ParsesHrcInPreorder) {
  const Hierarchy h = parse_hrc("1\n@11\n@@111\n@@112\n@12\n2\r\n\n  @21  \n", "regions.hrc", "region");
  EXPECT_EQ(h.codes, (Codes{"Total", "1", "11", "111", "112", "12", "2", "21"}));
  EXPECT_EQ(h.parent, (Positions{-1, 0, 1, 2, 2, 1, 0, 6}));
  EXPECT_EQ(h.depth, (Positions{0, 1, 2, 3, 3, 2, 1, 2}));
  EXPECT_EQ(children_of(h, 0), (Positions{1, 6}));
  EXPECT_EQ(children_of(h, 1), (Positions{2, 5}));
  EXPECT_EQ(children_of(h, 2), (Positions{3, 4}));
  EXPECT_EQ(h.leaves(), (Positions{3, 4, 5, 7}));
  EXPECT_EQ(h.find("112"), 4);
  EXPECT_EQ(h.find("9"), -1);
}

TEST(Hierarchy, HrcRejectsAJumpOfMoreThanOneLevel) {
  const std::string message = invalid_input_message([] { parse_hrc("1\n@11\n@@@1111\n", "nuts.hrc", "nuts"); });
  expect_fragments(message, {"nuts.hrc: line 3", "'1111'", "more than one level"});
  expect_fragments(invalid_input_message([] { parse_hrc("@11\n", "nuts.hrc", "nuts"); }),
                   {"nuts.hrc: line 1", "below the top"});
}

TEST(Hierarchy, HrcRejectsAnEmptyCode) {
  expect_fragments(invalid_input_message([] { parse_hrc("1\n@@\n", "nuts.hrc", "nuts"); }),
                   {"nuts.hrc: line 2", "empty code"});
}

TEST(Hierarchy, HrcRejectsADuplicateCode) {
  expect_fragments(invalid_input_message([] { parse_hrc("1\n@11\n2\n@11\n", "nuts.hrc", "nuts"); }),
                   {"nuts.hrc: line 4", "duplicate code '11'", "first at line 2"});
  expect_fragments(invalid_input_message([] { parse_hrc("Total\n", "nuts.hrc", "nuts"); }), {"line 1", "total"});
}

TEST(Hierarchy, FromParentsKeepsTheOrderOfThePairs) {
  const std::vector<std::pair<std::string, std::string>> pairs{
      {"11", "1"}, {"1", ""}, {"2", "Total"}, {"12", "1"}, {"21", "2"}};
  const Hierarchy h = hierarchy_from_parents("region", pairs, "job.yaml");
  EXPECT_EQ(h.codes, (Codes{"Total", "1", "11", "12", "2", "21"}));
  EXPECT_EQ(h.parent, (Positions{-1, 0, 1, 1, 0, 4}));
  EXPECT_EQ(h.depth, (Positions{0, 1, 2, 2, 1, 2}));
}

TEST(Hierarchy, FromParentsNamesTheCodesOnACycle) {
  const std::vector<std::pair<std::string, std::string>> pairs{{"1", ""}, {"a", "c"}, {"b", "a"}, {"c", "b"}};
  const std::string message = invalid_input_message([&] { hierarchy_from_parents("region", pairs, "job.yaml"); });
  expect_fragments(message, {"job.yaml: entry 2", "cycle", "'a' -> 'c' -> 'b' -> 'a'"});
  const std::vector<std::pair<std::string, std::string>> self{{"x", "x"}};
  expect_fragments(invalid_input_message([&] { hierarchy_from_parents("region", self, "job.yaml"); }), {"'x' -> 'x'"});
}

TEST(Hierarchy, FromParentsRejectsAnUnknownParentAndADuplicate) {
  const std::vector<std::pair<std::string, std::string>> unknown{{"1", ""}, {"11", "9"}};
  expect_fragments(invalid_input_message([&] { hierarchy_from_parents("region", unknown, "job.yaml"); }),
                   {"entry 2", "'11'", "unknown parent '9'"});
  const std::vector<std::pair<std::string, std::string>> duplicate{{"1", ""}, {"2", ""}, {"1", "2"}};
  expect_fragments(invalid_input_message([&] { hierarchy_from_parents("region", duplicate, "job.yaml"); }),
                   {"entry 3", "duplicate code '1'", "first at entry 1"});
  const std::vector<std::pair<std::string, std::string>> empty{{"", "1"}};
  expect_fragments(invalid_input_message([&] { hierarchy_from_parents("region", empty, "job.yaml"); }), {"empty code"});
}

TEST(Hierarchy, ParentCsvNamesLines) {
  const Hierarchy h = parse_parent_csv("code,parent\n1,\n11, 1\n\n2\n", "region.csv", "region");
  EXPECT_EQ(h.codes, (Codes{"Total", "1", "11", "2"}));
  expect_fragments(invalid_input_message([] { parse_parent_csv("1,\n\n11,7\n", "region.csv", "region"); }),
                   {"region.csv: line 3", "unknown parent '7'"});
  expect_fragments(invalid_input_message([] { parse_parent_csv("1,,x\n", "region.csv", "region"); }),
                   {"line 1", "more than two fields"});
}

TEST(Hierarchy, MatchLeavesMapsLevelsToPositions) {
  const Hierarchy h = parse_hrc("1\n@11\n@12\n2\n", "nuts.hrc", "nuts");
  const std::vector<std::string> levels{"2", "12", "11"};
  EXPECT_EQ(match_leaves(h, levels, "census.h5", "nuts2"), (Positions{4, 3, 2}));
}

TEST(Hierarchy, MatchLeavesNamesEveryMismatch) {
  const Hierarchy h = parse_hrc("1\n@11\n@12\n2\n", "nuts.hrc", "nuts");
  const std::vector<std::string> unknown{"11", "12", "2", "3"};
  expect_fragments(invalid_input_message([&] { match_leaves(h, unknown, "census.h5", "nuts2"); }),
                   {"census.h5", "variable 'nuts2'", "level '3'", "no code of the hierarchy"});
  const std::vector<std::string> missing{"11", "2"};
  expect_fragments(invalid_input_message([&] { match_leaves(h, missing, "census.h5", "nuts2"); }),
                   {"variable 'nuts2'", "leaf '12'", "a code missing from the data"});
  const std::vector<std::string> internal{"1", "11", "12", "2"};
  expect_fragments(invalid_input_message([&] { match_leaves(h, internal, "census.h5", "nuts2"); }),
                   {"variable 'nuts2'", "level '1'", "internal code"});
}

TEST(Hierarchy, GeographyFromTheDistinctTuples) {
  const std::vector<std::string> variables{"nuts1", "nuts2"};
  const std::vector<std::vector<std::string>> labels{{"North", "South"}, {"N1", "N2", "S1", "unused"}};
  // (nuts1, nuts2) tuples in any order, with repeats.
  const std::vector<std::int32_t> tuples{1, 2, 0, 1, 0, 0, 1, 2, 0, 1};
  const GeographyHierarchy g = geography_hierarchy("geo", variables, labels, tuples, "census.h5");
  EXPECT_EQ(g.hierarchy.codes, (Codes{"Total", "North", "N1", "N2", "South", "S1"}));
  EXPECT_EQ(g.hierarchy.parent, (Positions{-1, 0, 1, 1, 0, 4}));
  EXPECT_EQ(g.finest_position, (Positions{2, 3, 5, -1}));
}

TEST(Hierarchy, GeographyRejectsAFinerCodeWithTwoParents) {
  const std::vector<std::string> variables{"nuts1", "nuts2"};
  const std::vector<std::vector<std::string>> labels{{"North", "South"}, {"N1", "N2"}};
  const std::vector<std::int32_t> tuples{0, 0, 0, 1, 1, 1};
  expect_fragments(invalid_input_message([&] { geography_hierarchy("geo", variables, labels, tuples, "census.h5"); }),
                   {"census.h5", "'N2'", "'nuts2'", "'nuts1'", "'North' and 'South'"});
  const std::vector<std::int32_t> outside{0, 5};
  expect_fragments(invalid_input_message([&] { geography_hierarchy("geo", variables, labels, outside, "census.h5"); }),
                   {"'nuts2'", "outside"});
}

}  // namespace
}  // namespace sdc::tables
