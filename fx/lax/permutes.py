"""Collectives that move data between the lanes of a named axis (``vmap(axis_name=...)``):
``ppermute``, ``pshuffle``, ``psum_scatter``, ``all_to_all``, as jax's.

Each checks its arguments and binds its primitive (``fx.lax.parallel_moves``: their batching
rules, transposes, and across processes one MPI collective each); ``pshuffle`` is a
``ppermute``. ``axis_index_groups`` (subgroups of lanes) is not supported.
"""

from __future__ import annotations

import operator

from fx import tree_util
from fx.core import get_aval
from fx.interpreters import batching
from fx.interpreters.batching import moveaxis
from fx.lax.base import as_array, canonical_axis
from fx.lax.parallel_moves import all_to_all_p, as_perm, ppermute_p, psum_scatter_p


def _one_name(name: str, axis_name):
    if isinstance(axis_name, (tuple, list)):
        if len(axis_name) != 1:
            raise NotImplementedError(f"fx.lax.{name}: one axis name at a time, got "
                                      f"{tuple(axis_name)}")
        axis_name = axis_name[0]
    return axis_name


def _no_groups(name: str, groups) -> None:
    if groups is not None:
        raise NotImplementedError(f"fx.lax.{name}: axis_index_groups is not supported")


def ppermute(x, axis_name, perm):
    """Send each lane's ``x`` along ``perm``, a list of ``(source, destination)`` lane pairs
    (each lane at most once as a source and once as a destination); lanes that receive
    nothing get zeros.

    Example::

        >>> shift = lambda v: fx.lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)])
        >>> fx.vmap(shift, axis_name="i")(fx.numpy.array([1.0, 2.0, 3.0]))
        Array([3., 1., 2.], dtype=float32)
    """
    axis_name = _one_name("ppermute", axis_name)
    n = batching.axis_size(axis_name)
    pairs = [(operator.index(s), operator.index(d)) for s, d in perm]
    srcs, dsts = [s for s, _ in pairs], [d for _, d in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or any(
            not 0 <= v < n for v in srcs + dsts):
        raise ValueError(f"fx.lax.ppermute: perm {pairs} must use each lane of the axis "
                         f"{axis_name!r} (size {n}) at most once as source and as destination")
    return tree_util.tree_map(
        lambda v: ppermute_p.bind(as_array(v, "ppermute"), axis_name=axis_name,
                                  perm=as_perm(pairs)), x)


def pshuffle(x, axis_name, perm):
    """Lane ``i`` gets the ``x`` of lane ``perm[i]`` (``perm`` a permutation of the lanes)."""
    perm = [operator.index(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"fx.lax.pshuffle: perm {perm} is not a permutation of "
                         f"range({len(perm)})")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None,
                 tiled: bool = False):
    """The sum over the lanes, scattered: lane ``i`` gets block ``i`` of ``psum(x)`` along
    ``scatter_dimension`` (that dimension must have the axis size and is removed; with
    ``tiled=True`` it must be a multiple of it and lane ``i`` keeps its ``1/n`` slice)."""
    _no_groups("psum_scatter", axis_index_groups)
    axis_name = _one_name("psum_scatter", axis_name)
    n = batching.axis_size(axis_name)

    def one(v):
        v = as_array(v, "psum_scatter")
        aval = get_aval(v)
        d = canonical_axis(scatter_dimension, aval.ndim, "psum_scatter", "scatter_dimension")
        size = aval.shape[d]
        if (size != n) if not tiled else (size % n):
            raise ValueError(
                f"fx.lax.psum_scatter: dimension {d} of {aval.str_short()} must "
                f"{'be a multiple of' if tiled else 'equal'} the size {n} of axis {axis_name!r}")
        return psum_scatter_p.bind(v, axis_name=axis_name, axis_size=n, scatter_dimension=d,
                                   tiled=tiled)

    return tree_util.tree_map(one, x)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False):
    """Split ``x`` into ``n`` chunks along ``split_axis`` and send chunk ``j`` to lane ``j``;
    each lane joins what it receives, in lane order, along ``concat_axis``. Without ``tiled``
    the split dimension must have the axis size ``n``; it is removed and the received pieces
    are stacked as a new ``concat_axis`` dimension (of size ``n``). With ``tiled`` it must be a
    multiple of ``n`` and the pieces are concatenated."""
    _no_groups("all_to_all", axis_index_groups)
    axis_name = _one_name("all_to_all", axis_name)
    n = batching.axis_size(axis_name)

    def one(v):
        v = as_array(v, "all_to_all")
        aval = get_aval(v)
        s = canonical_axis(split_axis, aval.ndim, "all_to_all", "split_axis")
        size = aval.shape[s]
        if (size != n) if not tiled else (size % n):
            raise ValueError(
                f"fx.lax.all_to_all: split_axis {s} of {aval.str_short()} must "
                f"{'be a multiple of' if tiled else 'equal'} the size {n} of axis {axis_name!r}")
        c = canonical_axis(concat_axis, aval.ndim, "all_to_all", "concat_axis")
        if tiled:
            return all_to_all_p.bind(v, axis_name=axis_name, axis_size=n, split_axis=s,
                                     concat_axis=c)
        # The split dimension (n chunks of 1) becomes the senders' dimension, moved to c.
        received = all_to_all_p.bind(v, axis_name=axis_name, axis_size=n, split_axis=s,
                                     concat_axis=s)
        return moveaxis(received, s, c)

    return tree_util.tree_map(one, x)

