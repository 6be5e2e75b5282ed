#include "kernels/core/step_team.h"

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <thread>

namespace sdc {

namespace {

constexpr std::uint64_t kPartMask = 0xffffffffu;
// A waiting thread polls with a pause instruction this many times, then yields its core between
// polls (another thread of the job may need it: more threads than cores), then sleeps. The polls
// outlast the owner's serial work between two steps; the sleep comes within a few milliseconds.
constexpr int kPausedPolls = 1 << 10;
constexpr int kPollsBeforeSleep = 1 << 14;

/// One poll of a wait loop; `polls` counts the polls of this wait so far.
void relax(int polls) {
  if (polls < kPausedPolls) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}

}  // namespace

StepTeam::StepTeam(std::size_t helpers) : parts_(helpers + 1) {
  for (std::size_t h = 0; h < helpers; ++h) helpers_.run([this] { help(); });
}

StepTeam::~StepTeam() {
  state_.store(kStopped);
  if (sleepers_.load() > 0) state_.notify_all();
  helpers_.wait();
}

std::size_t StepTeam::available_helpers() {
  const std::size_t limit = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  const auto arena = static_cast<std::size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
  return std::min(limit, arena) - 1;
}

void StepTeam::run_parts(PartFunction function, void* context) {
  if (parts_ == 1) {
    function(context, 0);
    return;
  }
  function_ = function;
  context_ = context;
  failure_ = nullptr;
  failed_.store(false, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  ++epoch_;
  // The step's fields above are published by this store; a helper reads them after loading it.
  state_.store(epoch_ << 32);
  if (sleepers_.load() > 0) state_.notify_all();
  claim_parts(epoch_);
  for (int polls = 0; finished_.load(std::memory_order_acquire) < parts_; polls = std::min(polls + 1, kPausedPolls))
    relax(polls);
  if (failed_.load(std::memory_order_acquire)) std::rethrow_exception(failure_);
}

void StepTeam::claim_parts(std::uint64_t epoch) {
  std::uint64_t state = state_.load(std::memory_order_acquire);
  while (state != kStopped && (state >> 32) == epoch && (state & kPartMask) < parts_) {
    if (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    try {
      function_(context_, static_cast<std::size_t>(state & kPartMask));
    } catch (...) {
      // The first failure is kept; the owner reads it only after every part has counted itself.
      if (!failed_.exchange(true, std::memory_order_acq_rel)) failure_ = std::current_exception();
    }
    finished_.fetch_add(1, std::memory_order_acq_rel);
    state = state_.load(std::memory_order_acquire);
  }
}

void StepTeam::help() {
  std::uint64_t seen = 0;
  int polls = 0;
  for (;;) {
    const std::uint64_t state = state_.load(std::memory_order_acquire);
    if (state == kStopped) return;
    if ((state >> 32) != seen) {
      seen = state >> 32;
      claim_parts(seen);
      polls = 0;
      continue;
    }
    if (++polls < kPollsBeforeSleep) {
      relax(polls);
      continue;
    }
    // Sequentially consistent with the owner's store and load: either this wait sees the new
    // state, or the owner sees a sleeper and wakes it.
    sleepers_.fetch_add(1);
    state_.wait(state);
    sleepers_.fetch_sub(1);
    polls = 0;
  }
}

}  // namespace sdc
