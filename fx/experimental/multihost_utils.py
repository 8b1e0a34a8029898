"""Helpers for programs running as several processes (``mpiexec -n N``), as
``jax.experimental.multihost_utils`` spells them: gather every process's values
(:func:`process_allgather`), give every process one process's values
(:func:`broadcast_one_to_all`), and wait for every process (:func:`sync_global_devices`).

Each is a collective over all the run's processes (``fx.distributed.initialize``): every
process calls it, in the same order, with values of the same tree structure, shapes and
dtypes, which the processes check together first (a mismatch raises on every process, naming
what each passed). They run on the host transport (MPI; under NCCL, the MPI that bootstraps
it), with its deadline. In a run of one process each is its one-process meaning.
"""

from __future__ import annotations

import hashlib

import numpy as np

import fx.numpy as fnp
from fx import tree_util
from fx.distributed import state
from fx.distributed.transport import CollectiveMismatchError, Transport

__all__ = ["broadcast_one_to_all", "process_allgather", "sync_global_devices"]


def _host() -> Transport:
    t = state.group().transport
    return getattr(t, "bootstrap", t)  # NCCL's collectives take device arrays


def _leaves(in_tree, what: str):
    leaves, tree = tree_util.tree_flatten(in_tree)
    arrays = [np.asarray(x, order="C") for x in leaves]
    for x in arrays:
        if x.dtype == object:
            raise TypeError(f"fx.experimental.multihost_utils.{what}: leaves must be arrays or "
                            f"scalars, got an object array of shape {x.shape}")
    return arrays, tree


def _agree(t: Transport, what: str, arrays, tree, extra: str = "") -> None:
    """Every process passes the same tree of the same shapes and dtypes."""
    if t.size == 1:
        return
    types = ", ".join(f"{a.dtype.name}{list(a.shape)}" for a in arrays)
    full = f"{tree} {types}{extra}"
    digest = hashlib.sha1(full.encode()).hexdigest()[:12]
    # The signature's readable part is cut to fit; the digest covers all of it.
    t.agree(f"{what}: {digest} {types[:120]}", f"fx.experimental.multihost_utils.{what}")


def process_allgather(in_tree, tiled: bool = False):
    """Every process's values of ``in_tree``, on every process, as NumPy arrays: per leaf,
    the processes' arrays stacked along a new leading axis (in process order), or with
    ``tiled=True`` concatenated along their first axis.

    >>> # mpiexec -n 2; process p passes np.full(2, p)
    >>> process_allgather(np.full(2, fx.process_index()))
    array([[0, 0],
           [1, 1]])
    >>> process_allgather(np.full(2, fx.process_index()), tiled=True)
    array([0, 0, 1, 1])
    """
    arrays, tree = _leaves(in_tree, "process_allgather")
    if tiled and any(a.ndim == 0 for a in arrays):
        raise ValueError("fx.experimental.multihost_utils.process_allgather: tiled=True "
                         "concatenates along the first axis; a leaf is a scalar (use "
                         "tiled=False to stack scalars)")
    t = _host()
    _agree(t, "process_allgather", arrays, tree)
    out = []
    for i, a in enumerate(arrays):
        stacked = t.allgather(a, f"fx.experimental.multihost_utils.process_allgather leaf {i}")
        out.append(stacked.reshape((-1,) + a.shape[1:]) if tiled else stacked)
    return tree_util.tree_unflatten(tree, out)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """The source process's values of ``in_tree``, on every process (``is_source``: whether
    this process is the source; default: process 0 is). Exactly one process must be the
    source; every process passes values of the same shapes and dtypes.

    >>> # mpiexec -n 2
    >>> broadcast_one_to_all(fx.numpy.full(3, fx.process_index() + 1.0))
    Array([1., 1., 1.], dtype=float32)        # on both processes
    """
    arrays, tree = _leaves(in_tree, "broadcast_one_to_all")
    t = _host()
    me = t.rank
    source = me == 0 if is_source is None else bool(is_source)
    if t.size > 1:
        flags = t.allgather(np.array([source], np.uint8),
                            "fx.experimental.multihost_utils.broadcast_one_to_all (source)")
        sources = [r for r in range(t.size) if flags[r, 0]]
        if len(sources) != 1:
            raise ValueError(
                "fx.experimental.multihost_utils.broadcast_one_to_all: exactly one process "
                f"must pass is_source=True; processes {sources} did (of {t.size})")
        _agree(t, "broadcast_one_to_all", arrays, tree)
        arrays = [t.broadcast(a, sources[0], "fx.experimental.multihost_utils."
                                             f"broadcast_one_to_all leaf {i}")
                  for i, a in enumerate(arrays)]
    # fx Arrays, as jax returns jax Arrays (process_allgather returns NumPy arrays, as jax's).
    return tree_util.tree_unflatten(tree, [fnp.asarray(a) for a in arrays])


def sync_global_devices(name: str) -> None:
    """Wait until every process has called ``sync_global_devices`` with the same ``name``
    (a barrier); processes that pass different names all raise ``AssertionError``.

    >>> sync_global_devices("checkpoint written")
    """
    t = _host()
    if t.size == 1:
        return
    try:
        t.agree(f"sync_global_devices {name}", "fx.experimental.multihost_utils."
                                               "sync_global_devices")
    except CollectiveMismatchError as e:
        raise AssertionError(f"sync_global_devices name mismatch ({name!r}): {e}") from None
