#!/usr/bin/python3
"""Writes the HDF5 test inputs of tests/data/bad_input/: one valid table and one file per way an input
can be malformed (tests/io/hdf5_table_test.cpp and tests/e2e/hdf5_e2e_test.cpp read them).

The files are written with h5py, not with sdc-engine, so that they also check that a table made by
another tool following docs/format.md reads correctly. The script is deterministic: no object time
stamps, fixed values, so running it again reproduces the committed files byte for byte.

Run with Debian's Python, which has h5py:  /usr/bin/python3 tests/data/bad_input/make_bad_hdf5.py [DIR]
"""

import os
import sys

import h5py
import numpy as np

ROWS = 20
CHUNK = 8  # several chunks and a partial last one


def create_file(path):
    """An HDF5 file without object time stamps (h5py's File() offers no switch for the root group)."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    # v1.10 objects (half the size of sdc-engine's v1.8 ones, and the other chunk index: fixed arrays
    # instead of v1 B-trees), so that the reader is tested on both.
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_V110)
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    return h5py.File(fid)


def create_variables_group(f):
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    gcpl.set_link_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
    gid = h5py.h5g.create(f.id, b"variables", gcpl=gcpl)
    return h5py.Group(gid)


def valid_columns():
    """name -> (values, attributes, dataset options). Missing: region 1, age_group 2, income 3."""
    i = np.arange(ROWS)
    region = (i % 3).astype("<i4")
    region[4] = -1
    district = (i % 6).astype("<i4")
    age_group = (i % 3).astype("<i4")
    age_group[[2, 9]] = -1
    income = (1000.0 + 250.5 * i).astype("<f8")
    income[[3, 10, 17]] = np.nan
    weight = (10.0 + 0.25 * i).astype("<f8")
    text = h5py.string_dtype()
    gzip = dict(chunks=(CHUNK,), compression="gzip", compression_opts=1, shuffle=True)
    return {
        # contiguous, unfiltered
        "person_id": ((1000 + i).astype("<i8"), {"type": "id", "role": "identifier"}, {}),
        "region": (region, {"type": "categorical", "role": "geography", "geography_level": np.int32(1),
                            "levels": np.array(["North", "South", "Zürich"], dtype=text),
                            "missing_code": np.int32(-1)}, gzip),
        # chunked, unfiltered
        "district": (district, {"type": "categorical", "role": "geography", "geography_level": np.int32(2),
                                "levels": np.array(["N1", "N2", "S1", "S2", "Z1", "Z2"], dtype=text),
                                "missing_code": np.int32(-1)}, dict(chunks=(CHUNK,))),
        "age_group": (age_group, {"type": "categorical", "role": "key",
                                  "levels": np.array(["0-17", "18-64", "65+"], dtype=text),
                                  "missing_code": np.int32(-1)}, gzip),
        # deflate without shuffle
        "income": (income, {"type": "continuous", "role": "continuous", "missing_code": np.float64(np.nan)},
                   dict(chunks=(CHUNK,), compression="gzip", compression_opts=6)),
        "weight": (weight, {"type": "continuous", "role": "weight", "missing_code": np.float64(np.nan)}, gzip),
    }


def write_table(path, columns, rows=ROWS, version=1):
    with create_file(path) as f:
        f.attrs["sdc_format"] = "sdc-engine table"
        f.attrs["sdc_format_version"] = np.int32(version)
        f.attrs["row_count"] = np.int64(rows)
        f.attrs["provenance_tool_version"] = "make_bad_hdf5.py"
        f.attrs["provenance_command"] = "make_bad_hdf5.py"
        f.attrs["provenance_input_digest"] = ""
        f.attrs["provenance_created_utc"] = "2024-01-01T00:00:00Z"
        variables = create_variables_group(f)
        for name, (values, attributes, options) in columns.items():
            dataset = variables.create_dataset(name, data=values, track_times=False, **options)
            for key, value in attributes.items():
                dataset.attrs[key] = value


def with_change(name, values=None, attributes=None):
    columns = valid_columns()
    old_values, old_attributes, options = columns[name]
    new_attributes = dict(old_attributes)
    new_attributes.update(attributes or {})
    columns[name] = (old_values if values is None else values, new_attributes, options)
    return columns


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    path = lambda name: os.path.join(out, name)

    write_table(path("valid.h5"), valid_columns())

    with open(path("valid.h5"), "rb") as f:
        whole = f.read()
    with open(path("truncated.h5"), "wb") as f:
        f.write(whole[: len(whole) // 2])

    with open(path("not_hdf5.h5"), "w") as f:
        f.write("person_id,region,weight\n1000,North,10.0\n1001,South,10.25\n")

    columns = valid_columns()
    income, attributes, options = columns["income"]
    columns["income"] = (income[:-1], attributes, options)
    write_table(path("unequal_length.h5"), columns)

    # int32 codes declared continuous (stored as float64)
    columns = with_change("age_group", attributes={"type": "continuous", "missing_code": np.float64(np.nan)})
    del columns["age_group"][1]["levels"]
    write_table(path("wrong_type.h5"), columns)

    weight = valid_columns()["weight"][0].copy()
    weight[7] = np.nan
    write_table(path("nan_weight.h5"), with_change("weight", values=weight))

    weight = valid_columns()["weight"][0].copy()
    weight[11] = -2.5
    write_table(path("negative_weight.h5"), with_change("weight", values=weight))

    age_group = valid_columns()["age_group"][0].copy()
    age_group[13] = 3  # three levels: 0..2
    write_table(path("code_outside_levels.h5"), with_change("age_group", values=age_group))

    write_table(path("unknown_version.h5"), valid_columns(), version=2)

    # A structurally valid file whose second chunk of 'weight' is not a deflate stream.
    write_table(path("damaged_chunk.h5"), valid_columns())
    with h5py.File(path("damaged_chunk.h5"), "r+") as f:
        f["variables/weight"].id.write_direct_chunk((CHUNK,), b"\x78\x01not a deflate stream", filter_mask=0)

    # Links under /variables: a soft link to another variable, and an external link that would make a
    # reader open a file outside the table (here /etc/passwd). Neither is followed.
    write_table(path("soft_link.h5"), valid_columns())
    with h5py.File(path("soft_link.h5"), "r+") as f:
        f["variables"]["linked"] = h5py.SoftLink("/variables/region")
    write_table(path("external_link.h5"), valid_columns())
    with h5py.File(path("external_link.h5"), "r+") as f:
        f["variables"]["linked"] = h5py.ExternalLink("/etc/passwd", "/x")


if __name__ == "__main__":
    main()
