#include "kernels/core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sdc {
namespace {

/// The VmFlags line of the mapping of this process that contains `address` (/proc/self/smaps), or "".
std::string mapping_flags(const void* address) {
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0;
    std::uintptr_t end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= target && target < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST(AHugeVector, HoldsTheCopiesAskedFor) {
  const std::vector<std::int64_t> values = huge_vector<std::int64_t>(3'000'000, 7);
  ASSERT_EQ(values.size(), 3'000'000U);
  for (const std::int64_t value : values) ASSERT_EQ(value, 7);
}

TEST(AHugeVector, IsAdvisedForHugePagesWhereTheSystemHasThem) {
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "no transparent huge pages on this system";
  const std::vector<std::int32_t> large = huge_vector<std::int32_t>(std::size_t{16} << 20U, 1);
  // "hg": the mapping was advised with MADV_HUGEPAGE (proc(5)). Its middle lies on a whole 2 MiB page.
  EXPECT_NE(mapping_flags(large.data() + large.size() / 2).find(" hg"), std::string::npos)
      << mapping_flags(large.data() + large.size() / 2);
}

TEST(ReservingHugePages, EmptiesTheVectorAndMakesRoom) {
  std::vector<std::int32_t> values{1, 2, 3};
  reserve_huge(values, 5'000'000);
  EXPECT_TRUE(values.empty());
  EXPECT_GE(values.capacity(), 5'000'000U);
  values.assign(5'000'000, 4);
  EXPECT_EQ(values.back(), 4);
}

TEST(AdvisingHugePages, IgnoresSmallAndEmptyRanges) {
  std::vector<char> small(1000, 'x');
  advise_huge_pages(small.data(), small.size());
  advise_huge_pages(nullptr, std::size_t{64} << 20U);
  EXPECT_EQ(small.front(), 'x');
}

}  // namespace
}  // namespace sdc
