"""fx's record file: many records in one memory-mapped file, with an index and checksums.

:func:`write_records` writes an iterable of records (pytrees of NumPy arrays and scalars built
from dicts with string keys, lists and tuples); :class:`RecordSource` reads record ``i`` in
O(1) by memory-mapping the file, checking the record's CRC-32 before returning it. A file the
writer did not finish, a truncated copy or a flipped byte gives an error naming the file and the
record, never wrong data.

Format, version 1 (all integers little-endian)::

    header   32 bytes  b"FXRECORD" | u32 version | u32 flags (0) | u64 count | u64 index_offset
    records            one payload per record, each starting on an 8-byte boundary
    index    24 bytes per record: u64 offset | u64 length | u32 crc32(payload) | u32 0
    footer   16 bytes  u32 crc32(index) | u32 crc32(header) | b"FXRECEND"

A payload is ``u32 n | n bytes of JSON meta | zero padding to 8 bytes | leaf data``; the meta
is ``{"tree": T, "leaves": [[dtype, shape], ...]}`` where ``T`` is ``0`` for a leaf, or
``["tuple", [T...]]``, ``["list", [T...]]``, ``["dict", [[key, T]...]]``. Each leaf's bytes
(C order, the dtype's own byte order) start on an 8-byte boundary. The header is written last,
so a file whose writer died has no valid header.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import zlib
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["RecordFileError", "RecordSource", "write_records"]

MAGIC, END_MAGIC, VERSION = b"FXRECORD", b"FXRECEND", 1
_HEADER = struct.Struct("<8sIIQQ")
_ENTRY = struct.Struct("<QQII")
_FOOTER = struct.Struct("<II8s")


class RecordFileError(ValueError):
    """A record file that is truncated, corrupt, or not a record file."""


def _pad(n: int) -> int:
    return -n % 8


def _encode(node, leaves: list) -> Any:
    # Records are shallow (a dict of a few arrays): recursion depth is the nesting depth.
    if isinstance(node, dict):
        if not all(isinstance(k, str) for k in node):
            raise TypeError(f"fx.data.write_records: dict keys must be strings, got {list(node)!r}")
        return ["dict", [[k, _encode(node[k], leaves)] for k in sorted(node)]]
    if isinstance(node, (tuple, list)):
        return ["tuple" if isinstance(node, tuple) else "list", [_encode(c, leaves) for c in node]]
    arr = np.asarray(node)
    if arr.dtype == object:
        raise TypeError("fx.data.write_records: a record leaf must be numeric data, got "
                        f"{type(node).__name__}")
    leaves.append(np.ascontiguousarray(arr))
    return 0


def _decode(tree, leaves: list):
    it = iter(leaves)

    def build(node):
        if node == 0:
            return next(it)
        kind, kids = node
        if kind == "dict":
            return {k: build(v) for k, v in kids}
        seq = [build(k) for k in kids]
        return tuple(seq) if kind == "tuple" else seq

    return build(tree)


def _payload(record) -> bytes:
    leaves: list = []
    tree = _encode(record, leaves)
    meta = json.dumps({"tree": tree, "leaves": [[x.dtype.str, list(x.shape)] for x in leaves]},
                      separators=(",", ":")).encode()
    parts = [struct.pack("<I", len(meta)), meta, b"\0" * _pad(4 + len(meta))]
    for x in leaves:
        data = x.tobytes()
        parts += [data, b"\0" * _pad(len(data))]
    return b"".join(parts)


def write_records(path: str | os.PathLike, records: Iterable) -> int:
    """Write ``records`` (pytrees of arrays) to the record file ``path``; returns the count.

    >>> import numpy as np, tempfile, os, fx.data
    >>> path = os.path.join(tempfile.mkdtemp(), "d.fxrec")
    >>> fx.data.write_records(path, ({"x": np.full(2, i), "y": i} for i in range(3)))
    3
    >>> fx.data.RecordSource(path)[2]["x"].tolist()
    [2, 2]
    """
    path = os.fspath(path)
    index = []
    with open(path, "wb") as f:
        f.write(b"\0" * _HEADER.size)
        offset = _HEADER.size
        for record in records:
            data = _payload(record)
            f.write(data)
            index.append(_ENTRY.pack(offset, len(data), zlib.crc32(data), 0))
            offset += len(data)
        blob = b"".join(index)
        f.write(blob)
        header = _HEADER.pack(MAGIC, VERSION, 0, len(index), offset)
        f.write(_FOOTER.pack(zlib.crc32(blob), zlib.crc32(header), END_MAGIC))
        f.flush()
        f.seek(0)
        f.write(header)
    return len(index)


class RecordSource:
    """The records of a file written by :func:`write_records`, memory-mapped: ``len`` and
    ``src[i]`` (a read-only view into the mapping; copy it to modify it in place). Opening checks
    the header, the footer and the index checksum; reading a record checks its own checksum."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._open()

    def _fail(self, what: str):
        raise RecordFileError(f"fx.data.RecordSource: {self.path!r} {what}")

    def _open(self) -> None:
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < _HEADER.size + _FOOTER.size:
                self._fail(f"is {size} bytes, too short for a record file (is it truncated?)")
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        magic, version, _, count, index_at = _HEADER.unpack_from(self._map, 0)
        if magic != MAGIC:
            self._fail("is not an fx record file (bad magic); the writer may not have finished")
        if version != VERSION:
            self._fail(f"has format version {version}; this fx reads version {VERSION}")
        end = index_at + count * _ENTRY.size
        if end + _FOOTER.size > size:
            self._fail(f"is truncated at byte {size}: its header promises {count} records "
                       f"indexed at bytes {index_at}..{end}, so the index of records 0.."
                       f"{count - 1} is lost and none can be read safely; rewrite the file")
        index_crc, header_crc, end_magic = _FOOTER.unpack_from(self._map, end)
        if end_magic != END_MAGIC or header_crc != zlib.crc32(self._map[:_HEADER.size]):
            self._fail("has a corrupt header or footer")
        if zlib.crc32(self._map[index_at:end]) != index_crc:
            self._fail("has a corrupt index (checksum mismatch)")
        self._index = np.frombuffer(self._map, dtype=np.dtype([
            ("offset", "<u8"), ("length", "<u8"), ("crc", "<u4"), ("pad", "<u4")]),
            count=count, offset=index_at)
        self._records_end = index_at

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, i):
        n = len(self._index)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"fx.data.RecordSource: records are read by integer index, got {i!r}")
        if not -n <= i < n:
            raise IndexError(f"fx.data.RecordSource: record {i} is out of range for {n} records "
                             f"in {self.path!r}")
        i = int(i) % n
        offset, length, crc, _ = self._index[i].tolist()
        if offset + length > self._records_end:
            self._fail(f"record {i}: its data (bytes {offset}..{offset + length}) runs past the "
                       "index: the file is corrupt")
        view = memoryview(self._map)[offset:offset + length]
        if zlib.crc32(view) != crc:
            self._fail(f"record {i} is corrupt (checksum mismatch at bytes "
                       f"{offset}..{offset + length})")
        (n_meta,) = struct.unpack_from("<I", view, 0)
        meta = json.loads(bytes(view[4:4 + n_meta]))
        at = 4 + n_meta + _pad(4 + n_meta)
        leaves = []
        for dtype, shape in meta["leaves"]:
            dt = np.dtype(dtype)
            count = int(np.prod(shape, dtype=np.int64))
            leaves.append(np.frombuffer(self._map, dt, count, offset + at).reshape(shape))
            at += count * dt.itemsize
            at += _pad(at)
        return _decode(meta["tree"], leaves)

    def __getstate__(self):
        return {"path": self.path}

    def __setstate__(self, state):
        self.path = state["path"]
        self._open()

    def __repr__(self) -> str:
        return f"RecordSource({self.path!r}: {len(self)} records)"
