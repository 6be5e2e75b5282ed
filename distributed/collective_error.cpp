#include "distributed/collective_error.h"

#include <cstring>
#include <limits>

#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

std::string text_of(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

void throw_first_row_problem(const Communicator& comm, const std::optional<RowProblem>& local) {
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  const std::int64_t mine = local ? local->row : kNone;
  const std::int64_t first = comm.all_reduce_min(mine);
  if (first == kNone) return;
  // Only the ranks holding the first row send their message; the lowest of them is taken.
  const auto messages = comm.all_gather_bytes(bytes_of(mine == first ? local->message : std::string()));
  for (const auto& message : messages)
    if (!message.empty()) throw InvalidInput(text_of(message));
  throw InvalidInput("row id " + std::to_string(first) + ": invalid record");
}

void agree_on_error(const Communicator& comm, const std::function<void()>& local) {
  std::string failure;  // the exit code, one byte, then the message
  try {
    local();
  } catch (const Error& error) {
    failure = std::string(1, static_cast<char>(error.code())) + error.what();
  }
  if (comm.size() == 1) {
    if (!failure.empty())
      throw_error(static_cast<ExitCode>(static_cast<unsigned char>(failure.front())), failure.substr(1));
    return;
  }
  for (const auto& part : comm.all_gather_bytes(bytes_of(failure))) {
    if (part.empty()) continue;
    const std::string text = text_of(part);
    throw_error(static_cast<ExitCode>(static_cast<unsigned char>(text.front())), text.substr(1));
  }
}

}  // namespace sdc::distributed
