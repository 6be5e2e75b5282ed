#include "engine/run_context.h"

#include <algorithm>

namespace sdc::engine {

namespace {

std::string quoted_command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    if (arg.find_first_of(" \t\"'") != std::string::npos) {
      out += '\'';
      for (char c : arg) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    } else {
      out += arg;
    }
  }
  return out;
}

}  // namespace

std::string RunContext::command_line() const { return quoted_command_line(argv); }

std::string RunContext::release_safe_command_line() const {
  std::vector<std::string> safe = argv;
  if (!safe.empty()) safe.front() = std::filesystem::path(safe.front()).filename().string();
  std::vector<io::PathUse> longest_first = paths;  // a directory's path is a prefix of its files'
  std::sort(longest_first.begin(), longest_first.end(),
            [](const io::PathUse& a, const io::PathUse& b) { return a.path.native().size() > b.path.native().size(); });
  for (const io::PathUse& use : longest_first) {
    const std::string full = use.path.string();
    const std::string base = use.path.filename().string();
    if (full.empty() || full == base) continue;
    for (std::string& arg : safe)
      for (auto at = arg.find(full); at != std::string::npos; at = arg.find(full, at + base.size()))
        arg.replace(at, full.size(), base);
  }
  return quoted_command_line(safe);
}

}  // namespace sdc::engine
