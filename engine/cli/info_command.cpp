// `sdc info FILE [--digest] [--json]`: what an sdc-engine HDF5 file holds. Reads every value, one
// block of one variable at a time, so that it can count missing values and validate the file with the
// same checks (and the same errors) as every command that reads it, in memory bounded by one block.

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "engine/cli/commands.h"
#include "io/hdf5_table.h"

namespace sdc::engine {
namespace {

struct VariableReport {
  const VariableInfo* info = nullptr;
  std::int64_t missing = 0;
};

/// Missing values per variable; throws InvalidInput (naming variable and row id) where validation fails.
std::vector<VariableReport> scan_variables(const io::Hdf5TableReader& reader) {
  const io::FileSummary& summary = reader.summary();
  std::vector<VariableReport> reports;
  for (const VariableInfo& info : summary.variables) {
    VariableReport report{&info, 0};
    const std::int64_t block = reader.streaming_block_rows(info.name);
    for (std::int64_t first = 0; first < summary.row_count; first += block) {
      const Table part = reader.read({{info.name}, first, std::min(block, summary.row_count - first), true});
      report.missing += part.columns().front().missing_count();
    }
    reports.push_back(report);
  }
  return reports;
}

std::string role_text(const VariableInfo& info) {
  std::string text(to_string(info.role));
  if (info.role == VariableRole::kGeography) text += " (level " + std::to_string(info.geography_level) + ")";
  return text;
}

std::string or_dash(const std::string& text) { return text.empty() ? "-" : text; }

nlohmann::ordered_json to_json(const io::FileSummary& summary, const std::vector<VariableReport>& variables,
                               const std::optional<std::string>& digest) {
  nlohmann::ordered_json out;
  out["path"] = summary.path.string();
  out["format_version"] = summary.format_version;
  out["rows"] = summary.row_count;
  out["chunk_rows"] = summary.chunk_rows;
  out["filters"] = io::to_string(summary.filters);
  out["provenance"] = {{"tool_version", summary.provenance.tool_version},
                       {"command", summary.provenance.command},
                       {"input_digest", summary.provenance.input_digest},
                       {"created_utc", summary.provenance.created_utc}};
  out["variables"] = nlohmann::ordered_json::array();
  for (const VariableReport& variable : variables) {
    const VariableInfo& info = *variable.info;
    nlohmann::ordered_json entry;
    entry["name"] = info.name;
    entry["type"] = to_string(info.type);
    entry["role"] = to_string(info.role);
    entry["geography_level"] =
        info.role == VariableRole::kGeography ? nlohmann::ordered_json(info.geography_level) : nlohmann::ordered_json();
    entry["levels"] =
        info.type == VariableType::kCategorical ? nlohmann::ordered_json(info.levels.size()) : nlohmann::ordered_json();
    entry["missing"] = variable.missing;
    if (!info.recoding.empty()) entry["recoding"] = info.recoding;
    if (info.hierarchy_level >= 0) entry["hierarchy_level"] = info.hierarchy_level;
    out["variables"].push_back(std::move(entry));
  }
  if (digest) out["content_digest"] = *digest;
  return out;
}

/// Left-aligned text columns, two spaces apart; numeric columns right-aligned.
std::string format_rows(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& numeric) {
  std::vector<std::size_t> width(numeric.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      line += numeric[c] ? pad + row[c] : row[c] + (c + 1 < row.size() ? pad : std::string());
    }
    out += line + "\n";
  }
  return out;
}

std::string to_text(const io::FileSummary& summary, const std::vector<VariableReport>& variables,
                    const std::optional<std::string>& digest) {
  std::vector<std::vector<std::string>> header{
      {"file", summary.path.string()},
      {"format version", std::to_string(summary.format_version)},
      {"rows", std::to_string(summary.row_count)},
      {"chunk rows", summary.chunk_rows > 0 ? std::to_string(summary.chunk_rows) : "- (not chunked)"},
      {"filters", io::to_string(summary.filters)},
      {"tool version", or_dash(summary.provenance.tool_version)},
      {"command", or_dash(summary.provenance.command)},
      {"input digest", or_dash(summary.provenance.input_digest)},
      {"created (UTC)", or_dash(summary.provenance.created_utc)},
  };
  if (digest) header.push_back({"content digest", *digest});
  std::vector<std::vector<std::string>> table{{"variable", "type", "role", "levels", "missing"}};
  for (const VariableReport& variable : variables) {
    const VariableInfo& info = *variable.info;
    table.push_back({info.name, std::string(to_string(info.type)), role_text(info),
                     info.type == VariableType::kCategorical ? std::to_string(info.levels.size()) : "-",
                     std::to_string(variable.missing)});
  }
  std::vector<std::vector<std::string>> recoded;
  for (const VariableReport& variable : variables)
    if (!variable.info->recoding.empty()) recoded.push_back({variable.info->name, variable.info->recoding});
  std::string text = format_rows(header, {false, false}) + "\n" + "variables (" + std::to_string(variables.size()) +
                     "):\n" + format_rows(table, {false, false, false, true, true});
  if (!recoded.empty())
    text += "\nrecoded (" + std::to_string(recoded.size()) + "):\n" + format_rows(recoded, {false, false});
  return text;
}

class InfoCommand final : public CommandStep {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* info = parent.add_subcommand(
        "info",
        "describe an sdc-engine HDF5 file: rows, provenance, and per variable its type, role, levels and missing "
        "count; reads and validates every value");
    add_input_option(*info, paths_, input_);
    info->add_flag("--digest", digest_,
                   "also print the content digest (SHA-256 of names, metadata and values; independent of chunking "
                   "and compression)");
    info->add_flag("--json", json_, "print one JSON object instead of text");
    return info;
  }

  void run(const RunContext&) override {
    const io::Hdf5TableReader reader(input_);
    const std::vector<VariableReport> variables = scan_variables(reader);
    std::optional<std::string> digest;
    if (digest_) digest = io::content_digest(input_);
    spdlog::debug("info: {} variables, {} rows checked", variables.size(), reader.summary().row_count);
    if (json_)
      std::cout << to_json(reader.summary(), variables, digest).dump(2) << "\n";
    else
      std::cout << to_text(reader.summary(), variables, digest);
    std::cout.flush();
  }

 private:
  std::filesystem::path input_;
  bool digest_ = false;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_info_command() { return std::make_unique<InfoCommand>(); }

}  // namespace sdc::engine
