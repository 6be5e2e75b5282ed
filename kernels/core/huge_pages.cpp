#include "kernels/core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace sdc {

void advise_huge_pages(void* data, std::size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (data == nullptr || bytes < kHugePageMinimumBytes) return;
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20U;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHugePage - 1);
  if (last <= first) return;
  // The advice is a hint: a kernel without transparent huge pages refuses it, and nothing changes.
  static_cast<void>(::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE));
#else
  static_cast<void>(data);
  static_cast<void>(bytes);
#endif
}

}  // namespace sdc
