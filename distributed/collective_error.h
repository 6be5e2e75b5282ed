#pragma once
// Errors that ranks find apart and must report together. A rank that found bad input cannot simply
// throw: the others would wait in the next collective. These helpers make every rank agree, in one
// collective, on whether there is an error and on its message, and then every rank throws the same
// error, so the job ends with one message whatever the number of ranks.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "distributed/comm.h"

namespace sdc::distributed {

/// What a rank found wrong at a record: the record's global row id and the whole message to give.
struct RowProblem {
  std::int64_t row = 0;
  std::string message;
};

/// Collective. Every rank passes the first problem it found in its own rows (or none). When some
/// rank found one, every rank throws InvalidInput with the message of the problem at the smallest
/// row id over all ranks (the message the rank holding that row wrote).
void throw_first_row_problem(const Communicator& comm, const std::optional<RowProblem>& local);

/// Collective. Runs `local`, which must enter no collective, on every rank. When it throws an sdc
/// Error on some rank, every rank throws the same error (that of the lowest such rank: its exit
/// code and message); otherwise every rank returns.
void agree_on_error(const Communicator& comm, const std::function<void()>& local);

}  // namespace sdc::distributed
