// HDF5's error plumbing (io/hdf5_error.h): the library set up once, the innermost error taken off
// its stack, and files that failed to write discarded without crashing the library.

#include "io/hdf5_error.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

namespace sdc::io::hdf5 {
namespace {

herr_t keep_innermost(unsigned depth, const H5E_error2_t* error, void* data) {
  auto* detail = static_cast<std::string*>(data);
  if (depth == 0 && error != nullptr && error->desc != nullptr) *detail = error->desc;
  return 0;
}

}  // namespace

void initialize() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Must precede the library's initialisation. Every file is closed explicitly; HDF5's own
    // shutdown would only touch a file whose close failed, and crash on it (see abandon()).
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

void abandon(File& file) {
  void* handle = nullptr;
  if (file.valid() && H5Fget_vfd_handle(file.get(), H5P_DEFAULT, &handle) >= 0 && handle != nullptr) {
    const int sink = ::memfd_create("sdc-abandoned-output", MFD_CLOEXEC);
    if (sink >= 0) {
      ::dup2(sink, *static_cast<int*>(handle));
      ::close(sink);
    }
  }
  file.close();
  take_error_detail();
}

namespace {

/// HDF5's I/O failures span lines and list buffers, offsets and the temporary file's name; the
/// operating system's reason is what a user can act on.
std::string condense(const std::string& detail) {
  constexpr std::string_view kReason = "error message = '";
  if (const auto start = detail.find(kReason); start != std::string::npos) {
    const auto begin = start + kReason.size();
    const auto end = detail.find('\'', begin);
    if (end != std::string::npos) return detail.substr(begin, end - begin);
  }
  constexpr std::size_t kMaxLength = 200;
  return detail.substr(0, std::min(detail.find('\n'), kMaxLength));
}

}  // namespace

std::string take_error_detail() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &detail);
  H5Eclear2(H5E_DEFAULT);
  return condense(detail);
}

std::string detail_suffix(const std::string& detail) {
  return detail.empty() ? std::string() : " (HDF5: " + detail + ")";
}

}  // namespace sdc::io::hdf5
