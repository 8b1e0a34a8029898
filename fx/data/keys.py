"""Per-record random keys, computed in NumPy for a whole chunk of records at once.

A random transform of record ``index`` in epoch ``epoch`` of a pipeline seeded with ``seed``
uses the key ``fold_in(fold_in(key(seed), epoch), index)``: the same key
``fx.random.fold_in`` (and ``jax.random.fold_in``) compute, bit for bit. fx's own ``fold_in``
costs milliseconds per call (it dispatches about a hundred eager ``fx.lax`` operations), far
more than a typical per-record augmentation, so the pipeline runs the same Threefry-2x32 cipher
here over arrays of record indices: one chunk of 256 records costs about as much as one record
would through fx.

The transform itself gets a ``numpy.random.Generator`` whose PCG64 state is the 64 key bits
(:func:`record_generators`): re-seeding one generator costs ~3 µs, where building one from a
``SeedSequence`` costs ~30 µs.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

__all__ = ["fold_in_words", "record_generators", "record_key", "record_keys"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _threefry2x32(k1: np.ndarray, k2: np.ndarray, x1: np.ndarray, x2: np.ndarray):
    """Threefry-2x32 (20 rounds) of uint32 counter arrays under uint32 key arrays (all one
    shape); the same rounds and key schedule as ``fx.random.threefry.threefry2x32``."""
    with np.errstate(over="ignore"):
        ks = (k1, k2, k1 ^ k2 ^ np.uint32(_PARITY))
        x1, x2 = x1 + ks[0], x2 + ks[1]
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                x1 = x1 + x2
                x2 = x1 ^ ((x2 << np.uint32(r)) | (x2 >> np.uint32(32 - r)))
            x1 = x1 + ks[(i + 1) % 3]
            x2 = x2 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x1, x2


def fold_in_words(k1: np.ndarray, k2: np.ndarray, data: np.ndarray):
    """``fold_in`` of each key ``(k1[i], k2[i])`` with ``data[i]`` (uint32 arrays of one shape):
    the cipher of the counter ``(0, data)``."""
    return _threefry2x32(k1, k2, np.zeros_like(data), data)


def _seed_words(seed: int) -> tuple[int, int]:
    bits = int(seed) & (2**64 - 1)
    return bits >> 32, bits & 0xFFFFFFFF


@functools.lru_cache(maxsize=64)
def _epoch_key(seed: int, epoch: int) -> tuple[int, int]:
    """``fold_in(key(seed), epoch)``, once per epoch rather than once per chunk (the cipher on
    one element costs as much as on hundreds: it is a hundred NumPy calls either way)."""
    hi, lo = _seed_words(seed)
    e1, e2 = fold_in_words(np.array([hi], np.uint32), np.array([lo], np.uint32),
                           np.array([epoch & 0xFFFFFFFF], np.uint32))
    return int(e1[0]), int(e2[0])


def record_keys(seed: int, epoch: int, indices) -> np.ndarray:
    """The keys of records ``indices`` (source indices) in ``epoch``: a ``uint32[n, 2]`` array,
    row ``i`` equal to ``fx.random.fold_in(fx.random.fold_in(fx.random.key(seed), epoch),
    indices[i])``."""
    idx = np.asarray(indices, dtype=np.int64).astype(np.uint32)
    e1, e2 = _epoch_key(int(seed), int(epoch))
    k1, k2 = fold_in_words(np.full(idx.shape, e1, np.uint32), np.full(idx.shape, e2, np.uint32),
                           idx)
    return np.stack([k1, k2], axis=-1)


def record_key(seed: int, epoch: int, index: int):
    """The fx key of one record: ``fold_in(fold_in(key(seed), epoch), index)`` as an fx
    ``uint32[2]`` array, for transforms that want ``fx.random`` itself (slow per record).

    >>> import fx, fx.data
    >>> k = fx.random.fold_in(fx.random.fold_in(fx.random.PRNGKey(3), 1), 7)
    >>> bool((fx.data.record_key(3, 1, 7) == k).all())
    True
    """
    from fx.array import Array

    return Array(record_keys(seed, epoch, [index])[0])


def record_generators(keys: np.ndarray) -> Iterator[np.random.Generator]:
    """One ``numpy.random.Generator`` per key row, each valid until the next is yielded (they are
    one generator, re-seeded: a transform must not keep it past its record)."""
    bits = np.random.PCG64(0)
    gen = np.random.Generator(bits)
    for k1, k2 in keys.tolist():
        # PCG64 accepts any 128-bit state; the 64 key bits fill both halves, and the
        # increment (which must be odd) is fixed, so distinct keys give distinct streams.
        word = (k1 << 32) | k2
        bits.state = {"bit_generator": "PCG64",
                      "state": {"state": (word << 64) | word, "inc": 0x5851F42D4C957F2D},
                      "has_uint32": 0, "uinteger": 0}
        yield gen
