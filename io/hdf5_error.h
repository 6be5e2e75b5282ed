#pragma once
// Private to io/: HDF5's error stack and shutdown, turned into sdc-engine's own messages. Like the
// handles in io/hdf5_handle.h, for the one thread that makes the HDF5 calls.

#include <string>

#include "io/hdf5_handle.h"

namespace sdc::io::hdf5 {

/// Prepares the library once per process, before any other HDF5 call: HDF5 never prints its error
/// stack on stderr (sdc-engine reports every failure itself, as one message in its own words), and
/// does not run its own shutdown at exit (every object is closed explicitly; see abandon()).
void initialize();

/// Closes a file that failed to write and is being discarded (its temporary name is about to be
/// removed). HDF5 1.10 cannot close a file whose final flush fails: the identifier stays behind,
/// pointing to freed memory, and the library crashes when it shuts down. The file's descriptor is
/// therefore first pointed at an anonymous in-memory file, so that the flush and the close succeed.
void abandon(File& file);

/// The most specific description on HDF5's error stack ("" when empty), condensed to the operating
/// system's reason for I/O failures, then clears the stack. HDF5's descriptions name structures,
/// offsets and reasons, never record values.
std::string take_error_detail();

std::string detail_suffix(const std::string& detail);

}  // namespace sdc::io::hdf5
