"""One epoch of minibatches of in-memory arrays, in ``jax.random.permutation``'s order.

:func:`batches` takes a pytree of arrays sharing their leading dimension and yields one epoch of
minibatches (the same pytree structure, leaves as fx arrays on the default device). Shuffling
uses ``fx.random.permutation``, so for the same key the sample order is exactly
``jax.random.permutation``'s and a jax program can be fed the very same batches. For parallel
augmentation, resumable iteration and file sources use :class:`fx.data.Dataset`.

>>> import numpy as np, fx, fx.data
>>> x, y = np.arange(10.0).reshape(5, 2), np.arange(5)
>>> [b[1].tolist() for b in fx.data.batches(None, (x, y), 2, shuffle=False, drop_last=False)]
[[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

import fx.random
from fx.array import device_put
from fx.tree_util import tree_flatten, tree_unflatten

__all__ = ["batches", "num_batches"]


def num_batches(num_examples: int, batch_size: int, drop_last: bool = True) -> int:
    """How many batches :func:`batches` yields for ``num_examples`` examples."""
    return num_examples // batch_size if drop_last else -(-num_examples // batch_size)


def batches(key, arrays: Any, batch_size: int, shuffle: bool = True,
            drop_last: bool = True, device=None) -> Iterator[Any]:
    """One epoch of minibatches of ``arrays`` (a pytree of arrays with a common leading
    dimension).

    Args:
      key: an ``fx.random`` key; with ``shuffle`` the examples are taken in the order
        ``fx.random.permutation(key, n)`` (equal to ``jax.random.permutation`` for the same
        key). Use a new key per epoch, e.g. ``fx.random.fold_in(key, epoch)``. May be None
        when ``shuffle=False``.
      arrays: e.g. ``(x, y)`` or ``{"image": x, "label": y}``; NumPy or fx arrays.
      batch_size: examples per batch.
      shuffle: take the examples in a random order (else in order).
      drop_last: drop a last, smaller batch (the default, so every batch has one shape and a
        jitted step compiles once); with False the last batch holds the remainder.
      device: where the batches go (an ``fx`` device or ``"cpu"``/``"cuda"``; default: the
        default device).

    Yields:
      pytrees shaped like ``arrays`` whose leaves are fx arrays of ``batch_size`` examples.
    """
    leaves, treedef = tree_flatten(arrays)
    if not leaves:
        raise ValueError("fx.data.batches: arrays holds no arrays")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or \
            batch_size < 1:
        raise ValueError(f"fx.data.batches: batch_size must be a positive integer, "
                         f"got {batch_size!r}")
    host = [np.asarray(x) for x in leaves]
    sizes = {x.shape[0] if x.ndim else None for x in host}
    if len(sizes) != 1 or None in sizes:
        shapes = ", ".join(str(x.shape) for x in host)
        raise ValueError("fx.data.batches: every array needs the same leading (example) "
                         f"dimension, got shapes {shapes}")
    n = sizes.pop()
    if shuffle:
        if key is None:
            raise ValueError("fx.data.batches: shuffle=True needs a key (or pass shuffle=False)")
        order = np.asarray(fx.random.permutation(key, n))
    else:
        order = None
    for b in range(num_batches(n, int(batch_size), drop_last)):
        lo, hi = b * batch_size, min((b + 1) * batch_size, n)
        if order is None:
            parts = [x[lo:hi] for x in host]
        else:
            idx = order[lo:hi]
            parts = [x[idx] for x in host]
        yield tree_unflatten(treedef, [device_put(p, device) for p in parts])
