#pragma once
// Seeds (docs/seeds.md). A seed is the key to every random masking: whoever holds it and the masked
// file can reproduce the draws. It is therefore read only from an owner-only file or from the
// environment, never from the command line (where `ps` and shell history would show it), and
// reports carry only its fingerprint.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "io/atomic_output.h"

namespace sdc::io {

inline constexpr const char* kSeedEnvironmentVariable = "SDC_SEED";

struct Seed {
  std::uint64_t value = 0;
  /// SHA-256 of a domain tag and the seed's 8 little-endian bytes, in hex.
  std::string fingerprint() const;
};

/// Parses "123", "0x7b" (decimal or hex, surrounding whitespace allowed). Throws InvalidInput
/// naming `where` (a file or the environment variable) otherwise.
Seed parse_seed(const std::string& text, const std::string& where);

/// The seed from `seed_file` when given (it must be a regular file readable by its owner only),
/// else from SDC_SEED, else none.
std::optional<Seed> load_seed(const std::optional<std::filesystem::path>& seed_file);

/// Like load_seed, but a missing seed is a UsageError naming `method`.
Seed require_seed(const std::optional<std::filesystem::path>& seed_file, const std::string& method);

/// Draws 64 bits from the operating system's random source and writes them to a new owner-only file.
Seed write_new_seed_file(const std::filesystem::path& path);

}  // namespace sdc::io
