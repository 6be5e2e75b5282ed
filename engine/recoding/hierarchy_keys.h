#pragma once
// What the recoding steps share (docs/recoding.md): finding each key's hierarchy file, matching the
// records' values to the hierarchy's leaves, and replacing a variable by its recoding to one level
// with the labels and the level in its metadata.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/table.h"
#include "kernels/recoding/generalization_hierarchy.h"

namespace sdc::engine {

/// The hierarchy file of each of `variables`: the FILE of a `VAR=FILE` entry of `entries` (--hierarchy),
/// else the one file of `directory` (--hierarchies) named `<prefix>_<VAR>.csv` or `<VAR>.csv`.
/// UsageError for an entry that is not VAR=FILE, names a variable not in `variables` or names one
/// twice, a variable without a file, and two files of the directory for one variable.
std::map<std::string, std::filesystem::path> hierarchy_files(const std::vector<std::string>& variables,
                                                             const std::optional<std::filesystem::path>& directory,
                                                             const std::vector<std::string>& entries);

/// The files hierarchy_files would name, for the path declarations of a command (none that it cannot
/// resolve: the step reports those).
std::vector<std::filesystem::path> declared_hierarchy_files(const std::vector<std::string>& variables,
                                                            const std::optional<std::filesystem::path>& directory,
                                                            const std::vector<std::string>& entries);

/// Collective. Each record's value of `column` as the index of its leaf in `hierarchy` (−1 missing). A
/// categorical value matches the leaf of its label; a continuous one the leaf written as its shortest
/// decimal (17 for 17.0, as the shared adult hierarchies write ages). InvalidInput naming the input,
/// the variable and the hierarchy file for values present in the data that are no leaf (a categorical
/// variable: how many and the first 20 labels; a continuous one: the first row and its value). Labels no
/// record carries need no leaf.
std::vector<std::int32_t> leaves_of(const distributed::Communicator& comm, const std::filesystem::path& input,
                                    const Table& table, const Column& column,
                                    const recoding::GeneralizationHierarchy& hierarchy);

/// Replaces `column` by the categorical variable of its leaves' ancestors at `level`: labels the
/// level's values, `recoding` "hierarchy <file name> level <level>", hierarchy_level `level`. A
/// continuous variable's role becomes key (its role admits no codes); another role stays.
void recode_to_level(Column& column, std::span<const std::int32_t> leaves,
                     const recoding::GeneralizationHierarchy& hierarchy, std::int32_t level);

/// Per variable, a digest of its hierarchy's content (its values at every level, row by row), for a
/// step's parameters: --resume reruns a step whose hierarchy file changed.
nlohmann::json hierarchy_digests(const std::map<std::string, recoding::GeneralizationHierarchy>& hierarchies);

/// `value` in the shortest decimal that reads back as it (17 for 17.0, 0.1 for 0.1).
std::string shortest_decimal(double value);

/// Collective. Every rank loads the hierarchy files (InvalidInput or IoError naming the file, the same
/// on every rank).
std::map<std::string, recoding::GeneralizationHierarchy> load_hierarchies(
    const distributed::Communicator& comm, const std::map<std::string, std::filesystem::path>& files);

}  // namespace sdc::engine
