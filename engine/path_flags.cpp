#include "engine/path_flags.h"

namespace sdc::engine {

void PathFlags::declare(std::string flag, io::PathAccess access, Values values) {
  declared_.push_back({std::move(flag), access, std::move(values)});
}

void PathFlags::reads(std::string flag, const std::filesystem::path& value) {
  declare(std::move(flag), io::PathAccess::kRead, [&value] { return std::vector<std::filesystem::path>{value}; });
}

void PathFlags::reads(std::string flag, const std::optional<std::filesystem::path>& value) {
  declare(std::move(flag), io::PathAccess::kRead, [&value] {
    return value ? std::vector<std::filesystem::path>{*value} : std::vector<std::filesystem::path>{};
  });
}

void PathFlags::writes(std::string flag, const std::filesystem::path& value) {
  declare(std::move(flag), io::PathAccess::kWrite, [&value] { return std::vector<std::filesystem::path>{value}; });
}

void PathFlags::writes(std::string flag, const std::optional<std::filesystem::path>& value) {
  declare(std::move(flag), io::PathAccess::kWrite, [&value] {
    return value ? std::vector<std::filesystem::path>{*value} : std::vector<std::filesystem::path>{};
  });
}

std::vector<io::PathUse> PathFlags::uses() const {
  std::vector<io::PathUse> uses;
  for (const Declared& declared : declared_)
    for (auto& path : declared.values())
      if (!path.empty()) uses.push_back({declared.flag, std::move(path), declared.access});
  return uses;
}

}  // namespace sdc::engine
