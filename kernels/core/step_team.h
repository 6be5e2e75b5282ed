#pragma once
// A team of threads for a long chain of short dependent steps, such as the rounds of MDAV: each step
// is split into a fixed number of parts, and the helpers stay with the team between steps, spinning
// for the next one. A TBB fork and join per step costs microseconds, as much as a step itself; a
// helper that is already spinning joins a step in well under one.
//
// Parts are claimed, never assigned. A step the helpers do not reach (every thread busy elsewhere,
// or a thread limit of one) runs all its parts on the calling thread, so a team never deadlocks and
// never waits for a thread; in return a step's result must not depend on which thread ran which part
// or in what order (merge the parts' results on total-order keys after run() returns).
//
// While a team lives, its owner must not wait inside TBB: a helper task could be run on that thread
// and keep it waiting for steps that only the owner publishes.

#include <tbb/task_group.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>

namespace sdc {

class StepTeam {
 public:
  /// A team of the calling thread and up to `helpers` TBB tasks; every step has helpers + 1 parts.
  explicit StepTeam(std::size_t helpers);
  ~StepTeam();
  StepTeam(const StepTeam&) = delete;
  StepTeam& operator=(const StepTeam&) = delete;

  std::size_t parts() const { return parts_; }

  /// Calls part(index) once for every index in [0, parts()) and returns when all calls have returned.
  /// An exception thrown by a part is rethrown here, after every other part has finished.
  template <typename Part>
  void run(Part& part) {
    run_parts([](void* context, std::size_t index) { (*static_cast<Part*>(context))(index); }, &part);
  }

  /// Helpers for a team on this thread: the TBB thread limit and the arena's concurrency, less one.
  static std::size_t available_helpers();

 private:
  using PartFunction = void (*)(void*, std::size_t);

  void run_parts(PartFunction function, void* context);
  void claim_parts(std::uint64_t epoch);
  void help();

  static constexpr std::uint64_t kStopped = ~std::uint64_t{0};

  std::size_t parts_;
  // The step in flight: its epoch in the high 32 bits and the next unclaimed part in the low 32.
  std::atomic<std::uint64_t> state_{0};
  std::atomic<std::size_t> finished_{0};
  std::atomic<int> sleepers_{0};
  std::uint64_t epoch_ = 0;  // written by the owner only
  PartFunction function_ = nullptr;
  void* context_ = nullptr;
  std::exception_ptr failure_;
  std::atomic<bool> failed_{false};
  tbb::task_group helpers_;
};

}  // namespace sdc
