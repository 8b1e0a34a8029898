"""Collectives that move data between the lanes of a named axis (``vmap(axis_name=...)``):
``ppermute``, ``pshuffle``, ``psum_scatter``, ``all_to_all``, as jax's.

Over one axis name each checks its arguments and binds its primitive (``fx.lax.parallel_moves``:
their batching rules, transposes, and across processes one MPI collective each). Over a tuple
of names the lanes are numbered over the tuple (the first name the major one; ``ppermute``
takes the axes in the order they are bound, a mesh's order, as jax's shard_map), and each is
written with ``all_gather`` and the lane's ``axis_index``: a lane gathers every lane's value
and keeps the part its position selects, so it batches, differentiates and compiles as the
primitives it is made of. ``pshuffle`` is a ``ppermute``. ``axis_index_groups`` (subgroups of
lanes) is not supported.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, tree_util
from fx.core import get_aval
from fx.interpreters import batching
from fx.interpreters.batching import moveaxis
from fx.lax import elementwise as ew
from fx.lax.base import as_array, canonical_axis, reshape
from fx.lax.composites import index_in_dim, stack
from fx.lax.dynamic_slicing import dynamic_index_in_dim, dynamic_slice_in_dim
from fx.lax.parallel import all_gather, axis_index, psum
from fx.lax.parallel_moves import all_to_all_p, as_perm, ppermute_p, psum_scatter_p
from fx.lax.structural import concatenate


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _one(axis_name):
    """The axis name itself where ``axis_name`` names one axis (a primitive binds it), else
    None (a tuple of several: the gather-and-select form)."""
    names = _names(axis_name)
    return names[0] if len(names) == 1 else None


def _axis_size(axis_name) -> int:
    size = 1
    for n in _names(axis_name):
        size *= batching.axis_size(n)
    return size


def _binding_position(name) -> int:
    """Where the innermost binding of ``name`` sits among the bound axes, outermost first."""
    bound = [a.name for a in batching._axis_env.get()]
    if name not in bound:
        batching.axis_size(name)  # the unbound-name error
    return len(bound) - 1 - bound[::-1].index(name)


def _no_groups(name: str, groups) -> None:
    if groups is not None:
        raise NotImplementedError(f"fx.lax.{name}: axis_index_groups is not supported")


def ppermute(x, axis_name, perm):
    """Send each lane's ``x`` along ``perm``, a list of ``(source, destination)`` lane pairs
    (each lane at most once as a source and once as a destination); lanes that receive
    nothing get zeros. Over a tuple of axes, a lane's number is its index over them taken in
    the order they are bound (a mesh's order), as jax's.

    Example::

        >>> shift = lambda v: fx.lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)])
        >>> fx.vmap(shift, axis_name="i")(fx.numpy.array([1.0, 2.0, 3.0]))
        Array([3., 1., 2.], dtype=float32)
    """
    if isinstance(axis_name, (tuple, list)):
        # As jax's shard_map: over several axes, lanes are numbered in the order the axes are
        # bound (the mesh's order), whatever the order of the tuple.
        axis_name = tuple(sorted(axis_name, key=_binding_position))
    n = _axis_size(axis_name)
    pairs = [(operator.index(s), operator.index(d)) for s, d in perm]
    srcs, dsts = [s for s, _ in pairs], [d for _, d in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or any(
            not 0 <= v < n for v in srcs + dsts):
        raise ValueError(f"fx.lax.ppermute: perm {pairs} must use each lane of the axis "
                         f"{axis_name!r} (size {n}) at most once as source and as destination")
    one = _one(axis_name)
    if one is not None:
        return tree_util.tree_map(
            lambda v: ppermute_p.bind(as_array(v, "ppermute"), axis_name=one,
                                      perm=as_perm(pairs)), x)
    source = np.full(n, 0, np.int32)
    receives = np.zeros(n, np.bool_)
    for s, d in pairs:
        source[d], receives[d] = s, True
    return tree_util.tree_map(lambda v: _from_lane(v, axis_name, source, receives), x)


def _from_lane(v, axis_name, source, receives):
    v = as_array(v, "ppermute")
    everyone = all_gather(v, axis_name)                                   # (n, *shape)
    me = axis_index(axis_name)
    src = dynamic_index_in_dim(as_array(source, "ppermute"), me, 0, keepdims=False)
    got = dynamic_index_in_dim(everyone, src, 0, keepdims=False)
    keep = dynamic_index_in_dim(as_array(receives, "ppermute"), me, 0, keepdims=False)
    return ew.select(keep, got, ew.full_like(got, 0))


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
    n = _axis_size(axis_name)
    single = _one(axis_name)

    def one(v):
        v = as_array(v, "psum_scatter")
        aval = get_aval(v)
        d = canonical_axis(scatter_dimension, aval.ndim, "psum_scatter", "scatter_dimension")
        size = aval.shape[d]
        if (size != n) if not tiled else (size % n):
            raise ValueError(
                f"fx.lax.psum_scatter: dimension {d} of {aval.str_short()} must "
                f"{'be a multiple of' if tiled else 'equal'} the size {n} of axis {axis_name!r}")
        if single is not None:
            return psum_scatter_p.bind(v, axis_name=single, axis_size=n, scatter_dimension=d,
                                       tiled=tiled)
        total = psum(v, axis_name)
        me = axis_index(axis_name)
        if not tiled:
            return dynamic_index_in_dim(total, me, d, keepdims=False)
        blocks = reshape(total, aval.shape[:d] + (n, size // n) + aval.shape[d + 1:])
        return dynamic_index_in_dim(blocks, me, d, keepdims=False)

    return tree_util.tree_map(one, x)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False):
    """Split ``x`` into ``n`` chunks along ``split_axis`` and send chunk ``j`` to lane ``j``;
    each lane joins what it receives, in lane order, along ``concat_axis``. Without ``tiled``
    the split dimension must have the axis size ``n``; it is removed and the received pieces
    are stacked as a new ``concat_axis`` dimension (of size ``n``). With ``tiled`` it must be a
    multiple of ``n`` and the pieces are concatenated."""
    _no_groups("all_to_all", axis_index_groups)
    n = _axis_size(axis_name)
    single = _one(axis_name)

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
        if single is not None:
            if tiled:
                return all_to_all_p.bind(v, axis_name=single, axis_size=n, split_axis=s,
                                         concat_axis=c)
            # The split dimension (n chunks of 1) becomes the senders' dimension, moved to c.
            received = all_to_all_p.bind(v, axis_name=single, axis_size=n, split_axis=s,
                                         concat_axis=s)
            return moveaxis(received, s, c)
        everyone = all_gather(v, axis_name)                              # (n, *shape)
        me = axis_index(axis_name)
        step = size // n
        if tiled:  # from each lane j, the chunk with this lane's index
            mine = dynamic_slice_in_dim(everyone, ew.mul(me, np.asarray(step, dtypes.int32)),
                                        step, s + 1)
            return concatenate([index_in_dim(mine, j, 0, keepdims=False) for j in range(n)], c)
        mine = dynamic_index_in_dim(everyone, me, s + 1, keepdims=False)  # (n, *rest)
        return stack([index_in_dim(mine, j, 0, keepdims=False) for j in range(n)], c)

    return tree_util.tree_map(one, x)
