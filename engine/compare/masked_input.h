#pragma once
// The frame of the steps that compare a masked file with its original (`sdc linkage`, `sdc utility`):
// the masked file is read in the same row range as the original's part on every rank, and checked
// to hold the same records in the same order, so that each rank holds both versions of its records.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "engine/partitioned_table.h"

namespace sdc::engine {

/// Collective. Reads `variables` of `masked` over the rows of `original`'s part. Throws InvalidInput
/// when the files hold different numbers of records, and, with an identifier variable (`id_variable`,
/// or else the original's first variable of role identifier that the masked file holds too), naming
/// the first row id whose identifiers differ.
Table read_masked_part(const distributed::Communicator& comm, const TablePart& original,
                       const std::filesystem::path& masked, const std::vector<std::string>& variables,
                       const std::optional<std::string>& id_variable);

}  // namespace sdc::engine
