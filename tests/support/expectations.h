#pragma once
// Test support: expectations on whole series of values (GoogleTest failures in the calling test).

#include <vector>

namespace sdc::testing {

/// Expects equal sizes, then each actual value within `tolerance` of the expected one; a failure names
/// the record (1-based).
void expect_all_near(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance);

}  // namespace sdc::testing
