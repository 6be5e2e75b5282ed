#include "io/sha256.h"

#include <openssl/evp.h>

#include <array>

#include "kernels/core/error.h"

namespace sdc::io {

struct Sha256::Impl {
  EVP_MD_CTX* context = nullptr;
  bool finished = false;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->context = EVP_MD_CTX_new();
  SDC_CHECK(impl_->context != nullptr, "EVP_MD_CTX_new failed");
  SDC_CHECK(EVP_DigestInit_ex(impl_->context, EVP_sha256(), nullptr) == 1, "EVP_DigestInit_ex failed");
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->context); }

void Sha256::update(std::span<const std::byte> bytes) {
  SDC_CHECK(!impl_->finished, "Sha256 updated after hex_digest()");
  if (bytes.empty()) return;
  SDC_CHECK(EVP_DigestUpdate(impl_->context, bytes.data(), bytes.size()) == 1, "EVP_DigestUpdate failed");
}

void Sha256::update(std::string_view text) { update(std::as_bytes(std::span(text.data(), text.size()))); }

void Sha256::update_u64(std::uint64_t value) {
  std::array<std::byte, 8> bytes{};
  for (std::size_t i = 0; i < 8; ++i) bytes[i] = static_cast<std::byte>((value >> (8 * i)) & 0xffU);
  update(bytes);
}

void Sha256::update_field(std::string_view text) {
  update_u64(text.size());
  update(text);
}

std::string Sha256::raw_digest() {
  SDC_CHECK(!impl_->finished, "Sha256 digest taken twice");
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  SDC_CHECK(EVP_DigestFinal_ex(impl_->context, digest.data(), &length) == 1, "EVP_DigestFinal_ex failed");
  impl_->finished = true;
  return std::string(reinterpret_cast<const char*>(digest.data()), length);
}

std::string Sha256::hex_digest() {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string raw = raw_digest();
  std::string out;
  out.reserve(2 * raw.size());
  for (const char c : raw) {
    const auto byte = static_cast<unsigned char>(c);
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  }
  return out;
}

std::string sha256_hex(std::string_view text) {
  Sha256 hash;
  hash.update(text);
  return hash.hex_digest();
}

}  // namespace sdc::io
