"""Data sources: random access to records by index.

A source is any object with ``__len__`` and ``__getitem__(i)`` returning record ``i`` (a pytree
of NumPy arrays and scalars: an array, a tuple, a dict ...). The pipeline reads records only by
index, which is what makes its order a function of (seed, epoch, index) alone. A source may also
have ``read_many(indices)``, returning those records stacked along a new leading axis (the
pipeline uses it for chunks that need no per-record work).

Sources travel to worker processes by pickling, so they pickle cheaply where they can: file
sources pickle as their paths and reopen (memory-mapped) in the worker, in-memory arrays are
copied into each worker once.

- :class:`ArraySource`: a pytree of arrays sharing their leading (record) dimension.
- :class:`ShardSource`: a directory of ``.npy`` shards (memory-mapped) or ``.npz`` shards (each
  a dict of arrays), concatenated in file-name order.
- :class:`fx.data.RecordSource` (``fx.data.records``): fx's indexed, checksummed record file.
- :func:`digits`: scikit-learn's bundled 8x8 digits.
"""

from __future__ import annotations

import bisect
import os
from typing import Any

import numpy as np

from fx.tree_util import tree_flatten, tree_unflatten

__all__ = ["ArraySource", "ShardSource", "as_source", "digits"]


def _check_index(name: str, i, n: int) -> int:
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise TypeError(f"fx.data.{name}: records are read by integer index, got {i!r}")
    i = int(i)
    if not -n <= i < n:
        raise IndexError(f"fx.data.{name}: record {i} is out of range for {n} records")
    return i % n


class ArraySource:
    """Records of a pytree of in-memory arrays with a common leading dimension: record ``i`` is
    the pytree of ``leaf[i]``.

    >>> import numpy as np, fx.data
    >>> src = fx.data.ArraySource({"x": np.arange(6).reshape(3, 2), "y": np.arange(3)})
    >>> len(src), src[1]["x"].tolist(), src.read_many([2, 0])["y"].tolist()
    (3, [2, 3], [2, 0])
    """

    def __init__(self, arrays: Any):
        leaves, self._treedef = tree_flatten(arrays)
        if not leaves:
            raise ValueError("fx.data.ArraySource: the pytree holds no arrays")
        self._leaves = [np.asarray(x) for x in leaves]
        sizes = {x.shape[0] if x.ndim else None for x in self._leaves}
        if len(sizes) != 1 or None in sizes:
            shapes = ", ".join(str(x.shape) for x in self._leaves)
            raise ValueError("fx.data.ArraySource: every array needs the same leading (record) "
                             f"dimension, got shapes {shapes}")
        self._n = sizes.pop()
        # A dict of arrays (the usual record) is rebuilt directly: fx's general unflattening
        # costs more than a small augmentation. Keys in sorted order, as tree_unflatten gives.
        self._keys = sorted(arrays) if type(arrays) is dict and \
            all(isinstance(v, np.ndarray) for v in arrays.values()) else None
        self._pairs = list(zip(self._keys or (), self._leaves, strict=False))

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        i = _check_index("ArraySource", i, self._n)
        if self._keys is not None:
            return {k: x[i] for k, x in zip(self._keys, self._leaves, strict=True)}
        return tree_unflatten(self._treedef, [x[i] for x in self._leaves])

    def read_unchecked(self, i: int):
        """Record ``i`` of a valid index (the pipeline's own indices), without the checks."""
        if self._keys is not None:
            return {k: x[i] for k, x in self._pairs}
        return tree_unflatten(self._treedef, [x[i] for x in self._leaves])

    def read_many(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        return tree_unflatten(self._treedef, [x[idx] for x in self._leaves])

    def __repr__(self) -> str:
        return f"ArraySource({self._n} records)"


class ShardSource:
    """The records of a directory of ``.npy`` or ``.npz`` shards, in file-name order.

    A ``.npy`` shard is one array whose rows are records (memory-mapped, so only the rows read
    are loaded); a ``.npz`` shard holds named arrays sharing their leading dimension, and its
    records are dicts (a shard is loaded whole on first use: ``.npz`` members cannot be
    memory-mapped). All shards must be of one kind.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            raise FileNotFoundError(f"fx.data.ShardSource: {self.path!r} is not a directory")
        names = sorted(f for f in os.listdir(self.path) if f.endswith((".npy", ".npz")))
        kinds = {os.path.splitext(f)[1] for f in names}
        if not names:
            raise ValueError(f"fx.data.ShardSource: no .npy or .npz files in {self.path!r}")
        if len(kinds) > 1:
            raise ValueError(f"fx.data.ShardSource: {self.path!r} mixes .npy and .npz shards; "
                             "use one kind per directory")
        self.files = [os.path.join(self.path, f) for f in names]
        self._npz = kinds == {".npz"}
        self._offsets = [0]
        for f in self.files:
            self._offsets.append(self._offsets[-1] + self._shard_len(f))
        self._cache: dict[int, Any] = {}

    def _shard_len(self, f: str) -> int:
        if not self._npz:
            arr = np.load(f, mmap_mode="r")
            if arr.ndim == 0:
                raise ValueError(f"fx.data.ShardSource: {f!r} holds a scalar, not records")
            return arr.shape[0]
        with np.load(f) as z:
            sizes = {name: z[name].shape[:1] for name in z.files}
        if len(set(sizes.values())) != 1 or () in sizes.values():
            raise ValueError(f"fx.data.ShardSource: the arrays of {f!r} need one leading "
                             f"(record) dimension, got {sizes}")
        return next(iter(sizes.values()))[0]

    def _shard(self, s: int):
        if s not in self._cache:
            if self._npz:
                with np.load(self.files[s]) as z:
                    self._cache[s] = {name: z[name] for name in z.files}
            else:
                self._cache[s] = np.load(self.files[s], mmap_mode="r")
        return self._cache[s]

    def __len__(self) -> int:
        return self._offsets[-1]

    def __getitem__(self, i):
        i = _check_index("ShardSource", i, len(self))
        s = bisect.bisect_right(self._offsets, i) - 1
        shard, row = self._shard(s), i - self._offsets[s]
        if self._npz:
            return {name: np.array(a[row]) for name, a in shard.items()}
        return np.array(shard[row])

    def __getstate__(self):
        # Workers reopen the shards themselves (a path pickles in bytes, a mapping would not).
        return {**self.__dict__, "_cache": {}}

    def __repr__(self) -> str:
        return f"ShardSource({self.path!r}: {len(self.files)} shards, {len(self)} records)"


def digits() -> ArraySource:
    """scikit-learn's bundled 8x8 digits (1797 records): ``{"image": float32[8, 8] in [0, 1],
    "label": int32}``. Needs scikit-learn."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError("fx.data.digits needs scikit-learn: pip install scikit-learn") from None
    d = load_digits()
    return ArraySource({"image": (d.images / 16.0).astype(np.float32),
                        "label": d.target.astype(np.int32)})


def as_source(src: Any):
    """``src`` as a source: sources and sequences pass through, NumPy arrays and pytrees of
    arrays become :class:`ArraySource`, a directory path a :class:`ShardSource`, a ``.fxrec``
    path a ``RecordSource``."""
    if isinstance(src, (str, os.PathLike)):
        from fx.data.records import RecordSource

        return ShardSource(src) if os.path.isdir(src) else RecordSource(src)
    from fx.array import Array

    if isinstance(src, (np.ndarray, tuple, dict, Array)):
        return ArraySource(src)
    if hasattr(src, "__len__") and hasattr(src, "__getitem__"):
        return src
    raise TypeError(f"fx.data: cannot read records from {type(src).__name__}; pass arrays, a "
                    "pytree of arrays, a directory of shards, a record file, or an object with "
                    "__len__ and __getitem__")
