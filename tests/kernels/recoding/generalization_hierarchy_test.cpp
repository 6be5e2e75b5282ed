#include "kernels/recoding/generalization_hierarchy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "tests/kernels/recoding/hierarchy_rows.h"

namespace sdc::recoding {
namespace {

HierarchyRows rows_of(std::vector<std::vector<std::string>> rows) {
  return fixtures::hierarchy_rows("age.csv", std::move(rows), 2);
}

// The age hierarchy of recoding.md §8's lattice oracle, from line 2 of age.csv.
HierarchyRows age_rows() { return rows_of(fixtures::oracle_age_rows()); }

std::string message_of(const HierarchyRows& rows) {
  try {
    (void)GeneralizationHierarchy::build(rows);
  } catch (const InvalidInput& error) {
    return error.what();
  }
  return "";
}

TEST(AGeneralizationHierarchy, HasItsLevelsLeavesAndParentsInRowOrder) {
  const GeneralizationHierarchy age = GeneralizationHierarchy::build(age_rows());
  EXPECT_EQ(age.height(), 3);
  EXPECT_EQ(std::vector<std::string>(age.labels(1).begin(), age.labels(1).end()),
            (std::vector<std::string>{"20-24", "25-29", "30-34", "35-39"}));
  EXPECT_EQ(std::vector<std::int64_t>(age.leaves(2).begin(), age.leaves(2).end()), (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(std::vector<std::int64_t>(age.leaves(3).begin(), age.leaves(3).end()), (std::vector<std::int64_t>{8}));
  EXPECT_EQ(std::vector<std::int32_t>(age.parents(1).begin(), age.parents(1).end()),
            (std::vector<std::int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(age.leaf_index("33"), 5);
  EXPECT_EQ(age.leaf_index("34"), -1);
  EXPECT_THROW((void)age.parents(3), ParameterError);
  EXPECT_THROW((void)age.labels(4), ParameterError);
}

TEST(AGeneralizationHierarchy, RecodesAVariablesCodesToEachLevel) {
  const GeneralizationHierarchy age = GeneralizationHierarchy::build(age_rows());
  // The variable's own label order (codes) need not follow the file's.
  const std::vector<std::string> labels{"38", "21", "27", "31"};
  EXPECT_EQ(age.recoding(labels, "age", 0), (std::vector<std::int32_t>{7, 0, 3, 4}));
  EXPECT_EQ(age.recoding(labels, "age", 1), (std::vector<std::int32_t>{3, 0, 1, 2}));
  EXPECT_EQ(age.recoding(labels, "age", 2), (std::vector<std::int32_t>{1, 0, 0, 1}));
  EXPECT_EQ(age.recoding(labels, "age", 3), (std::vector<std::int32_t>{0, 0, 0, 0}));
  EXPECT_THROW((void)age.recoding(labels, "age", 4), ParameterError);
}

TEST(AGeneralizationHierarchy, ListsEveryValueMissingFromItsLeaves) {
  const GeneralizationHierarchy age = GeneralizationHierarchy::build(age_rows());
  try {
    (void)age.recoding(std::vector<std::string>{"21", "99", "22", "17"}, "age", 1);
    FAIL() << "no error";
  } catch (const InvalidInput& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("variable age"), std::string::npos) << message;
    EXPECT_NE(message.find("age.csv"), std::string::npos) << message;
    EXPECT_NE(message.find("2 value(s)"), std::string::npos) << message;
    EXPECT_NE(message.find("'99', '17'"), std::string::npos) << message;
  }
}

TEST(AGeneralizationHierarchy, RefusesRepeatedLeavesLevelsThatDoNotNestAndRaggedRows) {
  HierarchyRows repeated = age_rows();
  repeated.rows[5][0] = "21";
  std::string message = message_of(repeated);
  EXPECT_NE(message.find("age.csv, line 7: the value '21' is already a leaf at age.csv, line 2"), std::string::npos)
      << message;

  HierarchyRows crossed = age_rows();
  crossed.rows[4][2] = "20-29";  // 30-34 under 20-29 here, under 30-39 on the next row
  message = message_of(crossed);
  EXPECT_NE(message.find("line 7: the value '30-34' at level 1 has the parent '30-39' here but '20-29' at age.csv, "
                         "line 6"),
            std::string::npos)
      << message;

  HierarchyRows ragged = age_rows();
  ragged.rows[3].pop_back();
  message = message_of(ragged);
  EXPECT_NE(message.find("age.csv, line 5: 3 values where the first row has 4"), std::string::npos) << message;

  EXPECT_NE(message_of(rows_of({})).find("age.csv: the hierarchy has no rows"), std::string::npos);
  EXPECT_NE(message_of(rows_of({{}})).find("at least one value"), std::string::npos);
}

TEST(AGeneralizationHierarchy, AllowsAHeightOfZeroAndSeveralRoots) {
  const GeneralizationHierarchy flat = GeneralizationHierarchy::build(rows_of({{"a"}, {"b"}}));
  EXPECT_EQ(flat.height(), 0);
  EXPECT_EQ(flat.recoding(std::vector<std::string>{"b", "a"}, "x", 0), (std::vector<std::int32_t>{1, 0}));
  const GeneralizationHierarchy two_roots = GeneralizationHierarchy::build(rows_of({{"a", "A"}, {"b", "B"}}));
  EXPECT_EQ(two_roots.labels(1).size(), 2U);
}

}  // namespace
}  // namespace sdc::recoding
