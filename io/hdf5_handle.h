#pragma once
// RAII ownership of HDF5 identifiers, private to io/. Every hid_t that sdc-engine opens lives in one
// of these, so no early return or exception can leak an open object: a leaked dataset would keep the
// file open after H5Fclose and hide write errors that only the final flush reports.
//
// The Debian HDF5 is built without thread safety, so every function here must be called from one
// thread only (the thread that runs the read or write; compression runs elsewhere on plain bytes).

#include <hdf5.h>

#include <utility>

namespace sdc::io::hdf5 {

template <herr_t (*kClose)(hid_t)>
class Handle {
 public:
  Handle() noexcept = default;
  explicit Handle(hid_t id) noexcept : id_(id) {}
  ~Handle() { reset(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, kInvalid)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, kInvalid);
    }
    return *this;
  }

  hid_t get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }

  /// Closes now and reports whether HDF5 accepted the close (for files: whether the final flush
  /// succeeded), so that callers can turn a failed close into an error instead of losing it.
  bool close() noexcept {
    if (id_ < 0) return true;
    const herr_t status = kClose(id_);
    id_ = kInvalid;
    return status >= 0;
  }

 private:
  static constexpr hid_t kInvalid = -1;
  void reset() noexcept { close(); }
  hid_t id_ = kInvalid;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using Attribute = Handle<H5Aclose>;
using PropertyList = Handle<H5Pclose>;

}  // namespace sdc::io::hdf5
