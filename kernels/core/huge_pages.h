#pragma once
// Transparent huge pages for the large arrays of memory-bound kernels. The hypergraph levels of the
// block-angular reordering are read at scattered places: with 4 KiB pages most of those reads miss
// the TLB, and a level of tens of millions of pins faults in tens of thousands of pages each time it
// is built. Linux gives 2 MiB pages to a range advised with MADV_HUGEPAGE when
// /sys/kernel/mm/transparent_hugepage/enabled is `madvise` (the common default) or `always`; the
// advice must come before the pages are first touched. Elsewhere it is ignored.

#include <cstddef>
#include <vector>

namespace sdc {

/// Arrays smaller than this are not advised: their pages are few, and glibc serves them from its heap.
inline constexpr std::size_t kHugePageMinimumBytes = std::size_t{4} << 20U;

/// Advises the 2 MiB-aligned pages inside [data, data + bytes) to be backed by huge pages. Does nothing
/// below kHugePageMinimumBytes or where the system does not support the advice.
void advise_huge_pages(void* data, std::size_t bytes);

/// Makes `values` empty with room for `count` elements whose pages are advised before they are
/// touched. Fill it afterwards (resize, assign, push_back): the fill faults the pages in as huge ones.
template <typename T>
void reserve_huge(std::vector<T>& values, std::size_t count) {
  if (values.capacity() < count || !values.empty()) std::vector<T>().swap(values);
  values.reserve(count);
  advise_huge_pages(values.data(), count * sizeof(T));
}

/// `count` copies of `value` in huge pages where the system gives them.
template <typename T>
std::vector<T> huge_vector(std::size_t count, const T& value = T()) {
  std::vector<T> values;
  reserve_huge(values, count);
  values.assign(count, value);
  return values;
}

}  // namespace sdc
