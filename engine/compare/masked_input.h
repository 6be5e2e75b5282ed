#pragma once
// The frame of the steps that read a second file holding the same records as their input, row for row:
// a masked file against its original (`sdc linkage`, `sdc utility`) or an original against the masked
// input (`sdc noise --original`). The companion file is read in the same row range as the input's part
// on every rank, and checked to hold the same records in the same order, so that each rank holds both
// versions of its records.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "engine/partitioned_table.h"

namespace sdc::engine {

/// How the messages about a companion file name the step's own input and what the files must share.
struct CompanionWording {
  std::string input_name;    ///< "the original", "the input"
  std::string same_records;  ///< why the files must match: the end of every message
  /// When set, each variable must be in the companion file with this type; `type_reason` ends the message.
  std::optional<VariableType> variable_type;
  std::string missing_reason;  ///< ends the message of a variable the companion file lacks
  std::string type_reason;
};

/// Collective. Reads `variables` of `companion` over the rows of `part`. Throws InvalidInput when the
/// files hold different numbers of records, when `wording` asks for variables of a type and one is
/// absent or of another type, when the reader refuses a value on any rank, and, with an identifier
/// variable (`id_variable`, or else the input's first identifier variable that the companion file holds
/// as an identifier too), naming the first row id whose identifiers differ.
Table read_companion_part(const distributed::Communicator& comm, const TablePart& part,
                          const std::filesystem::path& companion, const std::vector<std::string>& variables,
                          const std::optional<std::string>& id_variable, const CompanionWording& wording);

/// read_companion_part for a masked file against its original `original`.
Table read_masked_part(const distributed::Communicator& comm, const TablePart& original,
                       const std::filesystem::path& masked, const std::vector<std::string>& variables,
                       const std::optional<std::string>& id_variable);

}  // namespace sdc::engine
