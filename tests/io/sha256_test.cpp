#include "io/sha256.h"

#include <gtest/gtest.h>

namespace sdc::io {
namespace {

// FIPS 180-2 test vectors.
TEST(Sha256, MatchesThePublishedVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, IncrementalUpdatesEqualOneUpdate) {
  Sha256 hash;
  hash.update("ab");
  hash.update("c");
  EXPECT_EQ(hash.hex_digest(), sha256_hex("abc"));
}

TEST(Sha256, LengthPrefixedFieldsKeepTheirBoundaries) {
  Sha256 first;
  first.update_field("ab");
  first.update_field("c");
  Sha256 second;
  second.update_field("a");
  second.update_field("bc");
  EXPECT_NE(first.hex_digest(), second.hex_digest());
}

}  // namespace
}  // namespace sdc::io
