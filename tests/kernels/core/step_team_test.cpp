#include "kernels/core/step_team.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace sdc {
namespace {

/// Runs `steps` steps, each adding its step number to every part's total; the totals show that
/// every part ran exactly once in every step.
std::vector<long> part_totals(StepTeam& team, int steps) {
  std::vector<long> totals(team.parts(), 0);
  for (int step = 1; step <= steps; ++step) {
    auto part = [&](std::size_t index) { totals[index] += step; };
    team.run(part);
  }
  return totals;
}

TEST(AStepTeam, RunsEveryPartOfEveryStepOnce) {
  StepTeam team(StepTeam::available_helpers());
  const int steps = 20000;
  const long expected = static_cast<long>(steps) * (steps + 1) / 2;
  for (const long total : part_totals(team, steps)) EXPECT_EQ(total, expected);
}

TEST(AStepTeam, WithMoreHelpersThanCoresOrNoneToComeStillFinishesEveryStep) {
  for (const std::size_t threads : {std::size_t{1}, std::size_t{4}}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    // Three helpers asked for: with one thread allowed none ever arrives, with four they share two
    // cores with the owner; either way every step completes.
    StepTeam team(3);
    ASSERT_EQ(team.parts(), 4u);
    for (const long total : part_totals(team, 2000)) EXPECT_EQ(total, 2000L * 2001 / 2) << threads << " threads";
  }
}

TEST(AStepTeam, RethrowsAPartsFailureAfterTheStepAndRunsTheNextStep) {
  StepTeam team(StepTeam::available_helpers());
  std::atomic<int> ran{0};
  auto failing = [&](std::size_t index) {
    ++ran;
    if (index == team.parts() - 1) throw std::runtime_error("part failed");
  };
  EXPECT_THROW(team.run(failing), std::runtime_error);
  EXPECT_EQ(ran.load(), static_cast<int>(team.parts()));
  for (const long total : part_totals(team, 100)) EXPECT_EQ(total, 5050);
}

}  // namespace
}  // namespace sdc
