#pragma once
// The files a step's flags name, declared where the flags are declared, so that one rule,
// io/path_safety.h, checks every run's writes against its reads before anything runs.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/path_safety.h"

namespace sdc::engine {

class PathFlags {
 public:
  /// Returns the paths a flag names now (after parsing): none, one, or several for a list.
  using Values = std::function<std::vector<std::filesystem::path>()>;
  void declare(std::string flag, io::PathAccess access, Values values);
  /// `value` is bound to a flag and read when uses() is called.
  void reads(std::string flag, const std::filesystem::path& value);
  void reads(std::string flag, const std::optional<std::filesystem::path>& value);
  void writes(std::string flag, const std::filesystem::path& value);
  void writes(std::string flag, const std::optional<std::filesystem::path>& value);
  /// The declared paths that are set (non-empty), in declaration order.
  std::vector<io::PathUse> uses() const;

 private:
  struct Declared {
    std::string flag;
    io::PathAccess access;
    Values values;
  };
  std::vector<Declared> declared_;
};

}  // namespace sdc::engine
