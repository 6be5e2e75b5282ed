#pragma once
// The --blocking flag of the steps that work block by block (`sdc microaggregate`, `sdc linkage`):
// records are cut into blocks that are processed apart — by the values of categorical stratum
// variables, or (microaggregation) by a tree of cuts or the PC1 order of the values themselves.

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/table.h"

namespace sdc::engine {

enum class BlockingKind { kNone, kStrata, kKdTree, kPrincipalAxisTree, kPc1 };

struct Blocking {
  BlockingKind kind = BlockingKind::kNone;
  std::vector<std::string> strata;  ///< the stratum variables of kStrata
};

/// Parses "none", "strata:VAR[,VAR...]", and, when `value_blocks` is true, "kdtree", "pca-tree" and
/// "pc1".
/// Throws UsageError naming --blocking.
Blocking parse_blocking(const std::string& text, bool value_blocks);

/// Collective. Each record's stratum (0.. in the order of the strata's codes, numbered alike on every
/// rank) of the categorical variables `strata` of `table`.
std::vector<std::int64_t> stratum_of_records(const distributed::Communicator& comm, const Table& table,
                                             const std::vector<std::string>& strata);

}  // namespace sdc::engine
