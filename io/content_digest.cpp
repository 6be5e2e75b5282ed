#include "io/content_digest.h"

#include <tbb/parallel_for.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "io/sha256.h"
#include "kernels/core/error.h"

namespace sdc::io {

std::string canonical_bytes(const Column& column, std::size_t begin, std::size_t count) {
  static_assert(std::endian::native == std::endian::little, "canonical bytes are the host's little-endian ones");
  std::string out;
  switch (column.type()) {
    case VariableType::kCategorical: {
      const auto codes = column.codes().subspan(begin, count);
      out.assign(reinterpret_cast<const char*>(codes.data()), codes.size_bytes());
      break;
    }
    case VariableType::kId: {
      const auto ids = column.ids().subspan(begin, count);
      out.assign(reinterpret_cast<const char*>(ids.data()), ids.size_bytes());
      break;
    }
    case VariableType::kContinuous: {
      // Every NaN hashes as the one quiet NaN the format writes, whatever payload a producer left in it.
      constexpr std::uint64_t kCanonicalNan = 0x7ff8000000000000ULL;
      const auto values = column.values().subspan(begin, count);
      out.resize(values.size_bytes());
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint64_t bits = std::isnan(values[i]) ? kCanonicalNan : std::bit_cast<std::uint64_t>(values[i]);
        std::memcpy(out.data() + 8 * i, &bits, 8);
      }
      break;
    }
  }
  return out;
}

std::string block_digest(std::string_view canonical) {
  Sha256 hash;
  hash.update(canonical);
  return hash.raw_digest();
}

std::vector<std::vector<std::string>> whole_block_digests(const Table& table, std::int64_t begin_row,
                                                          std::int64_t end_row, std::int64_t file_rows,
                                                          const std::vector<bool>& hashed) {
  SDC_CHECK(begin_row % kDigestBlockRows == 0 && (end_row % kDigestBlockRows == 0 || end_row == file_rows) &&
                begin_row >= table.first_row_id() && end_row <= table.first_row_id() + table.row_count(),
            "whole digest blocks inside the table");
  const auto blocks = static_cast<std::size_t>((end_row - begin_row + kDigestBlockRows - 1) / kDigestBlockRows);
  SDC_CHECK(hashed.empty() || hashed.size() == table.column_count(), "a flag for every variable");
  std::vector<std::size_t> variables;
  for (std::size_t v = 0; v < table.column_count(); ++v)
    if (hashed.empty() || hashed[v]) variables.push_back(v);
  std::vector<std::vector<std::string>> digests(table.column_count());
  for (std::size_t v : variables) digests[v].resize(blocks);
  const auto offset = static_cast<std::size_t>(begin_row - table.first_row_id());
  tbb::parallel_for(std::size_t{0}, blocks * variables.size(), [&](std::size_t cell) {
    const std::size_t v = variables[cell / blocks];
    const std::size_t b = cell % blocks;
    const std::size_t begin = offset + b * static_cast<std::size_t>(kDigestBlockRows);
    const std::size_t count = std::min(static_cast<std::size_t>(kDigestBlockRows),
                                       offset + static_cast<std::size_t>(end_row - begin_row) - begin);
    digests[v][b] = block_digest(canonical_bytes(table.columns()[v], begin, count));
  });
  return digests;
}

std::string combine_content_digest(const FileSummary& summary,
                                   const std::vector<std::vector<std::string>>& block_digests) {
  SDC_CHECK(block_digests.size() == summary.variables.size(), "block digests for every variable");
  const auto blocks = static_cast<std::size_t>((summary.row_count + kDigestBlockRows - 1) / kDigestBlockRows);
  Sha256 hash;
  hash.update_field("sdc-engine content digest 2");
  hash.update_field("sdc-engine table");
  hash.update_u64(static_cast<std::uint64_t>(summary.format_version));
  hash.update_u64(static_cast<std::uint64_t>(summary.row_count));
  hash.update_u64(static_cast<std::uint64_t>(kDigestBlockRows));
  hash.update_field(summary.provenance.tool_version);
  hash.update_field(summary.provenance.input_digest);
  hash.update_field(summary.provenance.step_fingerprint);
  hash.update_u64(summary.variables.size());
  for (std::size_t v = 0; v < summary.variables.size(); ++v) {
    const VariableInfo& info = summary.variables[v];
    hash.update_field(info.name);
    hash.update_field(to_string(info.type));
    hash.update_field(to_string(info.role));
    hash.update_u64(static_cast<std::uint64_t>(info.geography_level));
    hash.update_u64(info.levels.size());
    for (const std::string& label : info.levels) hash.update_field(label);
    // Files of records have no hierarchy: their digests stay what they were before hierarchies existed.
    if (!info.level_parents.empty()) {
      hash.update_field("level_parents");
      for (std::int32_t parent : info.level_parents) hash.update_u64(static_cast<std::uint64_t>(parent));
    }
    if (!info.recoding.empty() || info.hierarchy_level >= 0) {
      hash.update_field("recoding");
      hash.update_field(info.recoding);
      hash.update_u64(static_cast<std::uint64_t>(static_cast<std::int64_t>(info.hierarchy_level)));
    }
    SDC_CHECK(block_digests[v].size() == blocks, "a digest for every block of '" + info.name + "'");
    for (const std::string& digest : block_digests[v]) hash.update(digest);
  }
  return hash.hex_digest();
}

}  // namespace sdc::io
