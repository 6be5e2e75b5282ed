#include "io/stored_digests.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "io/content_digest.h"
#include "io/hdf5_error.h"
#include "io/sha256.h"

namespace sdc::io::detail {

bool has_stored_digests(std::int64_t rows, std::int64_t chunk_rows) {
  return rows > 0 && chunk_rows > 0 && chunk_rows % kDigestBlockRows == 0;
}

std::size_t digest_entry_bytes(std::int64_t chunk_rows) {
  return kDigestBytes * (1 + static_cast<std::size_t>(chunk_rows / kDigestBlockRows));
}

std::string stored_chunk_digest(std::uint32_t filter_mask, std::span<const std::byte> stored) {
  std::array<std::byte, 4> mask{};
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = static_cast<std::byte>((filter_mask >> (8 * i)) & 0xffU);
  Sha256 hash;
  hash.update(mask);
  hash.update(stored);
  return hash.raw_digest();
}

void fill_digest_entry(std::span<std::byte> entry, std::uint32_t filter_mask, std::span<const std::byte> stored,
                       const Column& column, std::size_t begin, std::size_t count) {
  std::fill(entry.begin(), entry.end(), std::byte{0});
  const std::string chunk = stored_chunk_digest(filter_mask, stored);
  std::memcpy(entry.data(), chunk.data(), kDigestBytes);
  const auto block_rows = static_cast<std::size_t>(kDigestBlockRows);
  for (std::size_t offset = 0, slot = 1; offset < count; offset += block_rows, ++slot) {
    const std::string block =
        block_digest(canonical_bytes(column, begin + offset, std::min(block_rows, count - offset)));
    std::memcpy(entry.data() + slot * kDigestBytes, block.data(), kDigestBytes);
  }
}

hdf5::Group create_stored_digests_group(hid_t file) {
  hdf5::PropertyList create(H5Pcreate(H5P_GROUP_CREATE));
  if (!create.valid() || H5Pset_obj_track_times(create.get(), false) < 0 ||
      H5Pset_link_creation_order(create.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
    return {};
  return hdf5::Group(H5Gcreate2(file, kStoredDigestsGroup, H5P_DEFAULT, create.get(), H5P_DEFAULT));
}

hdf5::Dataset create_stored_digests(hid_t group, const std::string& name, std::int64_t rows, std::int64_t chunk_rows) {
  if (!has_stored_digests(rows, chunk_rows)) return {};
  const std::array<hsize_t, 2> dims{static_cast<hsize_t>((rows + chunk_rows - 1) / chunk_rows),
                                    static_cast<hsize_t>(digest_entry_bytes(chunk_rows))};
  hdf5::Dataspace space(H5Screate_simple(2, dims.data(), nullptr));
  hdf5::PropertyList create(H5Pcreate(H5P_DATASET_CREATE));
  // Allocated with the file, so that where it lies does not depend on which writer comes first.
  if (!space.valid() || !create.valid() || H5Pset_obj_track_times(create.get(), false) < 0 ||
      H5Pset_layout(create.get(), H5D_CONTIGUOUS) < 0 || H5Pset_alloc_time(create.get(), H5D_ALLOC_TIME_EARLY) < 0)
    return {};
  return hdf5::Dataset(
      H5Dcreate2(group, name.c_str(), H5T_STD_U8LE, space.get(), H5P_DEFAULT, create.get(), H5P_DEFAULT));
}

hdf5::Dataset open_stored_digests(hid_t file, const std::string& name) {
  if (H5Lexists(file, kStoredDigestsGroup, H5P_DEFAULT) <= 0) {
    hdf5::take_error_detail();
    return {};
  }
  hdf5::Group group(H5Gopen2(file, kStoredDigestsGroup, H5P_DEFAULT));
  if (!group.valid() || H5Lexists(group.get(), name.c_str(), H5P_DEFAULT) <= 0) {
    hdf5::take_error_detail();
    return {};
  }
  hdf5::Dataset dataset(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT));
  hdf5::take_error_detail();
  return dataset;
}

namespace {

bool select_entries(hid_t dataset, std::int64_t first_chunk, std::size_t count, std::size_t entry_bytes,
                    hdf5::Dataspace& file_space, hdf5::Dataspace& memory_space) {
  const std::array<hsize_t, 2> start{static_cast<hsize_t>(first_chunk), 0};
  const std::array<hsize_t, 2> extent{count, entry_bytes};
  file_space = hdf5::Dataspace(H5Dget_space(dataset));
  memory_space = hdf5::Dataspace(H5Screate_simple(2, extent.data(), nullptr));
  return file_space.valid() && memory_space.valid() &&
         H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, extent.data(), nullptr) >= 0;
}

}  // namespace

bool write_digest_entries(hid_t digests, std::int64_t first_chunk, std::span<const std::byte> entries) {
  const hdf5::Dataspace space(H5Dget_space(digests));
  std::array<hsize_t, 2> dims{};
  if (!space.valid() || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) != 2 || dims[1] == 0) return false;
  const std::size_t count = entries.size() / dims[1];
  if (count == 0) return true;
  hdf5::Dataspace file_space, memory_space;
  return select_entries(digests, first_chunk, count, dims[1], file_space, memory_space) &&
         H5Dwrite(digests, H5T_NATIVE_UINT8, memory_space.get(), file_space.get(), H5P_DEFAULT, entries.data()) >= 0;
}

std::optional<std::vector<std::byte>> read_digest_entries(hid_t digests, std::int64_t chunk_count,
                                                          std::int64_t chunk_rows, std::int64_t first_chunk,
                                                          std::int64_t count) {
  const hdf5::Dataspace space(H5Dget_space(digests));
  const hdf5::Datatype type(H5Dget_type(digests));
  std::array<hsize_t, 2> dims{};
  const std::size_t entry_bytes = digest_entry_bytes(chunk_rows);
  if (!space.valid() || !type.valid() || H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 1 ||
      H5Sget_simple_extent_ndims(space.get()) != 2 ||
      H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) != 2 ||
      dims[0] != static_cast<hsize_t>(chunk_count) || dims[1] != entry_bytes || first_chunk < 0 || count < 0 ||
      first_chunk + count > chunk_count) {
    hdf5::take_error_detail();
    return std::nullopt;
  }
  std::vector<std::byte> entries(static_cast<std::size_t>(count) * entry_bytes);
  if (count == 0) return entries;
  hdf5::Dataspace file_space, memory_space;
  if (!select_entries(digests, first_chunk, static_cast<std::size_t>(count), entry_bytes, file_space, memory_space) ||
      H5Dread(digests, H5T_NATIVE_UINT8, memory_space.get(), file_space.get(), H5P_DEFAULT, entries.data()) < 0) {
    hdf5::take_error_detail();
    return std::nullopt;
  }
  return entries;
}

}  // namespace sdc::io::detail
