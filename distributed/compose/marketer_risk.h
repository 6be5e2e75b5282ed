#pragma once
// File-level risk of an internal file D against an external identification file E (docs/methods
// risk.md §6; kernels/risk/household_risk.h, marketer risks): the classes of both files go to the
// owner of their key tuple (the frequency counts' hash), each owner joins its D classes with the E
// counts of the same tuple, the partials (integer counts and exact sums) are merged over ranks, and
// every rank gets F_i, the E count of each of its records' classes.

#include <span>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/key_grouping.h"
#include "kernels/risk/household_risk.h"

namespace sdc::distributed {

struct DistributedMarketerRisk {
  MarketerRisk risk;
  MarketerRiskPartial totals;           ///< J, n, n_r and the sums, over all ranks
  std::vector<double> record_external;  ///< F_i of each local record of D: its class's count in E
};

/// Collective. `internal` are D's key columns on this rank; `external` E's, with codes in D's
/// levels (a code of -1 is missing, equal only to missing; records of E with a value D does not
/// have are left out by the caller).
DistributedMarketerRisk distributed_marketer_risk(const Communicator& comm, const KeyColumns& internal,
                                                  const KeyColumns& external);

}  // namespace sdc::distributed
