#pragma once
// The random-number contract (docs/rng.md). Every random draw of sdc-engine is a pure function of
//   key     = (seed, StepId)                      — who draws, and for what purpose
//   counter = (unit id, draw index, replicate, attempt) — which draw
// through Random123's Philox4x64-10, a counter-based generator. No draw depends on a thread, a rank,
// a loop order or a previous draw, so outputs are identical for any partitioning of the records.

#include <Random123/philox.h>

#include <cstdint>

namespace sdc {

/// One value per method and draw purpose. Append only: a value is never renumbered or reused, and is
/// never the position of a step in a pipeline (docs/rng.md lists them).
enum class StepId : std::uint64_t {
  kReserved = 0,  ///< never used for draws; catches an unset StepId
  kKnownAnswerTest = 1,  ///< tests of the contract itself
};

/// The four counter words. `unit` is a global id: record (row id), household, cell or tree node.
struct DrawCounter {
  std::uint64_t unit = 0;
  std::uint64_t draw = 0;       ///< draws beyond the four words of one block raise this
  std::uint64_t replicate = 0;  ///< bootstrap replicate
  std::uint64_t attempt = 0;    ///< retries of rejection sampling
};

class RecordRng {
 public:
  using Engine = r123::Philox4x64;  // Philox4x64-10
  using Block = Engine::ctr_type;   // four 64-bit words

  RecordRng(std::uint64_t seed, StepId step) : key_{{seed, static_cast<std::uint64_t>(step)}} {}

  /// Four independent 64-bit words for `counter`.
  Block bits(const DrawCounter& counter) const {
    return Engine{}(Block{{counter.unit, counter.draw, counter.replicate, counter.attempt}}, key_);
  }

  /// Uniform on [0, 1) with 53 random bits: the top 53 bits of word `word` (0..3) scaled by 2^-53.
  double uniform(const DrawCounter& counter, unsigned word = 0) const {
    return uniform_from_bits(bits(counter)[word & 3U]);
  }

  static double uniform_from_bits(std::uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

 private:
  Engine::key_type key_;
};

}  // namespace sdc
