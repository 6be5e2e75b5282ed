#pragma once
// SHA-256 through OpenSSL's EVP interface: file digests, content digests and seed fingerprints.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace sdc::io {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::byte> bytes);
  void update(std::string_view text);
  /// Length-prefixed, so that ("ab","c") and ("a","bc") hash differently.
  void update_field(std::string_view text);
  void update_u64(std::uint64_t value);  // little-endian
  /// Lower-case hex of the 32-byte digest; the object cannot be updated afterwards.
  std::string hex_digest();
  /// The 32 bytes of the digest; the object cannot be updated afterwards.
  std::string raw_digest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view text);

}  // namespace sdc::io
