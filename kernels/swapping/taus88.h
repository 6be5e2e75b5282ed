#pragma once
// L'Ecuyer's maximally equidistributed combined Tausworthe generator taus88 (L'Ecuyer 1996, "Maximally
// equidistributed combined Tausworthe generators", Math. Comp. 65), exactly as the reference rank
// swapping (sdcMicro's rankSwap) draws its partners: docs/methods swapping.md §1, "Reference random
// numbers". Only compat mode uses it; native draws come from Philox (kernels/core/record_rng.h).
//
// Three 32-bit components with (q, s, k) = (13, 12, 31), (2, 4, 29), (3, 17, 28); a step of one component
// is b = ((z << q) ^ z) >> (k − s), z = ((z & mask_k) << s) ^ b, the output the XOR of the three. The
// reference converts the output to a *float* and scales the candidate count in single precision, and the
// conversions are part of what compat must reproduce:
//   u = float(x / 2^32)      — rounds to 1.0f for x ≥ 2^32 − 128 (probability 2^-25, about 3e-8);
//   Random(m) = int(u · m)   — the product in single precision, so Random(m) can equal m (u = 1.0f), and
//                              for m above 2^24, where float(m) itself rounds, even exceed it.
// The generator reports what the reference computes; clamping to m − 1 is the caller's decision
// (RankSwapDraws, kernels/swapping/rank_swap.h).

#include <cstdint>

namespace sdc::swapping {

class Taus88 {
 public:
  /// The reference's seeding: z1 = seed, z2 = 613566701, z3 = 858993401, and each z_i doubled plus one
  /// while z_i ≤ 2^(k_i − s_i) (2^19, 2^25, 2^11). A component at or below that bound would lose its
  /// seed bits in the first shift (and a zero component stays zero forever); only z1 can be that small.
  explicit Taus88(std::uint32_t seed) noexcept : z1_(seed) {
    z1_ = raised_above(z1_, kBound1);
    z2_ = raised_above(z2_, kBound2);
    z3_ = raised_above(z3_, kBound3);
  }

  /// Advances the three components and returns their XOR: the reference's 32 random bits.
  std::uint32_t next_bits() noexcept {
    z1_ = step(z1_, 13, 12, 31, 0xFFFFFFFEU);
    z2_ = step(z2_, 2, 4, 29, 0xFFFFFFF8U);
    z3_ = step(z3_, 3, 17, 28, 0xFFFFFFF0U);
    return z1_ ^ z2_ ^ z3_;
  }

  /// u = float(x / 2^32) in [0, 1] — 1.0f included, see the file comment. The quotient is exact in
  /// double, so the single rounding is the reference's conversion to float.
  float uniform() noexcept { return static_cast<float>(static_cast<double>(next_bits()) * 0x1.0p-32); }

  /// The reference's Random(m) = int(u · m) with u and the product in single precision: in [0, m] for
  /// m ≤ 2^24 (m itself when u = 1.0f), possibly above m for larger m.
  std::int64_t random(std::int64_t m) noexcept {
    const float u = uniform();
    const float scaled = u * static_cast<float>(m);
    return static_cast<std::int64_t>(scaled);
  }

 private:
  static constexpr std::uint32_t kBound1 = std::uint32_t{1} << 19;
  static constexpr std::uint32_t kBound2 = std::uint32_t{1} << 25;
  static constexpr std::uint32_t kBound3 = std::uint32_t{1} << 11;

  static constexpr std::uint32_t raised_above(std::uint32_t z, std::uint32_t bound) noexcept {
    while (z <= bound) z = 2 * z + 1;  // bound ≤ 2^25: never overflows
    return z;
  }

  static constexpr std::uint32_t step(std::uint32_t z, unsigned q, unsigned s, unsigned k,
                                      std::uint32_t mask) noexcept {
    const std::uint32_t b = ((z << q) ^ z) >> (k - s);
    return ((z & mask) << s) ^ b;
  }

  std::uint32_t z1_;
  std::uint32_t z2_ = 613566701U;
  std::uint32_t z3_ = 858993401U;
};

}  // namespace sdc::swapping
