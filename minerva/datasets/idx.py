"""A reader for IDX files, the format of the original MNIST distribution.

An IDX file is a header -- two zero bytes, a type code, the number of dimensions, then
each dimension as a big-endian uint32 -- followed by the values in row-major order,
big-endian. Files may be gzip-compressed; the gzip magic is detected, not the name.
"""
from __future__ import annotations

import gzip
import math
import os
import struct

import numpy as np

from minerva.datasets.errors import DatasetError

_GZIP_MAGIC = b"\x1f\x8b"
_IDX_TYPES = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def parse_idx(data: bytes, source: str = "<bytes>") -> np.ndarray:
    """Decode the bytes of one (uncompressed) IDX file into a native-endian array."""
    dtype, dims, offset = _parse_header(data, source)
    count = math.prod(dims)
    expected = offset + count * dtype.itemsize
    if len(data) != expected:
        raise DatasetError(f"{source}: IDX header promises {dims} values of {dtype} "
                           f"({expected} bytes in all) but the file has {len(data)} bytes")
    values = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    return values.reshape(dims).astype(dtype.newbyteorder("="))


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file, plain or gzip-compressed, into a native-endian array."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as err:
            raise DatasetError(f"{path}: broken gzip data: {err}") from err
    return parse_idx(data, source=os.fspath(path))


def _parse_header(data: bytes, source: str) -> tuple[np.dtype, tuple[int, ...], int]:
    """Return (dtype, dims, offset of the first value) from an IDX header."""
    if len(data) < 4 or data[:2] != b"\0\0":
        raise DatasetError(f"{source}: not an IDX file (bad magic number)")
    code, ndim = data[2], data[3]
    if code not in _IDX_TYPES:
        raise DatasetError(f"{source}: unknown IDX type code 0x{code:02x}")
    offset = 4 + 4 * ndim
    if len(data) < offset:
        raise DatasetError(f"{source}: IDX header cut short ({ndim} dimensions announced)")
    dims = struct.unpack(f">{ndim}I", data[4:offset])
    return _IDX_TYPES[code], dims, offset
