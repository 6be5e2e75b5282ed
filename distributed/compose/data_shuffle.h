#pragma once
// Data shuffling over all ranks (kernels/swapping/data_shuffle.h; docs/swapping.md). The normal scores
// need each variable's ranks and the reverse mapping its sorted order, so each variable is gathered
// whole on one rank (variable v on rank v mod P, transform_whole_columns) and its results return to
// the records' home ranks; between the two, the scores' moments are exact sums merged over the ranks
// (the same map on every rank) and each record's Y* follows from its own scores and Philox draws. The
// output is the same for any number of ranks and threads.

#include <cstdint>
#include <vector>

#include "distributed/comm.h"
#include "distributed/partition.h"
#include "kernels/core/numeric_columns.h"

namespace sdc::distributed {

struct ShuffledPart {
  std::vector<std::vector<double>> released;  ///< per confidential variable, this rank's records
  std::vector<std::int64_t> kept;             ///< per confidential variable: records whose value is unchanged
};

/// Collective. `confidential` and `given` hold this rank's records (row ids of `home`), complete.
ShuffledPart shuffle_data(const Communicator& comm, const NumericColumns& confidential, const NumericColumns& given,
                          const RowRange& home, std::uint64_t seed);

}  // namespace sdc::distributed
