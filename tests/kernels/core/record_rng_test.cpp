#include "kernels/core/record_rng.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>

namespace sdc {
namespace {

struct KnownAnswer {
  std::array<std::uint64_t, 4> counter;
  std::array<std::uint64_t, 2> key;
  std::array<std::uint64_t, 4> expected;
};

// The published philox4x64 (10 rounds) vectors of Random123 (kat_vectors, librandom123-doc).
constexpr std::array<KnownAnswer, 3> kPublishedVectors{{
    {{0, 0, 0, 0},
     {0, 0},
     {0x16554d9eca36314cULL, 0xdb20fe9d672d0fdcULL, 0xd7e772cee186176bULL, 0x7e68b68aec7ba23bULL}},
    {{~0ULL, ~0ULL, ~0ULL, ~0ULL},
     {~0ULL, ~0ULL},
     {0x87b092c3013fe90bULL, 0x438c3c67be8d0224ULL, 0x9cc7d7c69cd777b6ULL, 0xa09caebf594f0ba0ULL}},
    {{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL},
     {0x452821e638d01377ULL, 0xbe5466cf34e90c6cULL},
     {0xa528f45403e61d95ULL, 0x38c72dbd566e9788ULL, 0xa5a1610e72fd18b5ULL, 0x57bd43b5e52b7fe6ULL}},
}};

TEST(Philox4x64, MatchesRandom123sPublishedKnownAnswers) {
  for (const auto& vector : kPublishedVectors) {
    RecordRng::Engine engine;
    const auto out =
        engine(RecordRng::Block{{vector.counter[0], vector.counter[1], vector.counter[2], vector.counter[3]}},
               RecordRng::Engine::key_type{{vector.key[0], vector.key[1]}});
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(out[i], vector.expected[i]) << "word " << i;
  }
}

TEST(ARecordRng, KeysBySeedAndStepAndCountsByUnitDrawReplicateAttempt) {
  // The contract's layout: key = (seed, StepId), counter = (unit, draw, replicate, attempt).
  const auto& v = kPublishedVectors[2];
  const RecordRng rng(v.key[0], static_cast<StepId>(v.key[1]));
  const auto out =
      rng.bits({.unit = v.counter[0], .draw = v.counter[1], .replicate = v.counter[2], .attempt = v.counter[3]});
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(out[i], v.expected[i]);
}

TEST(ARecordRng, GivesDifferentStreamsForDifferentStepsAndSeeds) {
  const RecordRng a(7, StepId::kKnownAnswerTest);
  const RecordRng b(7, StepId::kReserved);
  const RecordRng c(8, StepId::kKnownAnswerTest);
  EXPECT_NE(a.bits({.unit = 1})[0], b.bits({.unit = 1})[0]);
  EXPECT_NE(a.bits({.unit = 1})[0], c.bits({.unit = 1})[0]);
  EXPECT_EQ(a.bits({.unit = 1})[0], RecordRng(7, StepId::kKnownAnswerTest).bits({.unit = 1})[0]);
}

TEST(AUniformDraw, LiesInTheUnitIntervalWithTheRightMoments) {
  const RecordRng rng(12345, StepId::kKnownAnswerTest);
  constexpr int kDraws = 200000;
  double sum = 0.0;
  double sum_squares = 0.0;
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.uniform({.unit = static_cast<std::uint64_t>(i)});
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum_squares += u * u;
  }
  // E[U] = 1/2 (sd 0.2887/sqrt(n)), E[U^2] = 1/3 (sd 0.2981/sqrt(n)); 5 standard errors.
  EXPECT_NEAR(sum / kDraws, 0.5, 5 * 0.2887 / std::sqrt(kDraws));
  EXPECT_NEAR(sum_squares / kDraws, 1.0 / 3.0, 5 * 0.2981 / std::sqrt(kDraws));
  EXPECT_EQ(RecordRng::uniform_from_bits(0), 0.0);
  EXPECT_LT(RecordRng::uniform_from_bits(~0ULL), 1.0);
}

}  // namespace
}  // namespace sdc
