"""Collectives over a named axis: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``axis_index``.

Inside ``vmap(..., axis_name=name)`` each value stands for one lane of the batch; a collective
combines the lanes. They are implemented by the batching rule of the vmap that owns the axis
name (an inner vmap over another name passes them through); outside any such vmap they raise
``NameError`` naming the unbound axis. Under ``fx.pmap`` the lanes are processes: the same
primitives then reach the jaxpr and run between processes (``fx.distributed.collectives``
gives them that meaning and their lowering).
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, transpose
from fx.interpreters.batching import moveaxis, not_mapped
from fx.lax import base, reductions
from fx.lax.elementwise import add, convert_element_type, div, mul
from fx.lax.structural import iota


def _unbound(name: str):
    def impl(*args, axis_name, **params):
        raise NameError(
            f"{name}: unbound axis name {axis_name!r}: collectives need an enclosing "
            f"fx.vmap(..., axis_name={axis_name!r})"
        )

    return impl


def _collective(name: str) -> Primitive:
    prim = Primitive(name)  # params: axis_name
    prim.def_abstract_eval(lambda x, *, axis_name: x)
    prim.def_impl(_unbound(name))
    return prim


def _always(rule):
    rule.always = True  # runs even when no operand is batched (the lanes still combine)
    return rule


psum_p = _collective("psum")
pmax_p = _collective("pmax")
pmin_p = _collective("pmin")


def _reduce_lanes(prim, reduce_fn, scale_unbatched):
    @_always
    def rule(axis, vals, dims, *, axis_name):
        (x,), (d,) = vals, dims
        if axis.name != axis_name:
            return prim.bind(x, axis_name=axis_name), d
        if d is not_mapped:
            return scale_unbatched(x, axis.size), not_mapped
        return reduce_fn(x, (d,)), not_mapped

    return rule


batching.batch_rules[psum_p] = _reduce_lanes(
    psum_p, base.reduce_sum,
    lambda x, n: x if x.dtype == dtypes.bool_ else mul(x, np.asarray(n, x.dtype)))
batching.batch_rules[pmax_p] = _reduce_lanes(pmax_p, reductions.reduce_max, lambda x, n: x)
batching.batch_rules[pmin_p] = _reduce_lanes(pmin_p, reductions.reduce_min, lambda x, n: x)


def _psum_transpose(ct, x, *, axis_name):
    # Every lane's output is the sum over lanes, so each input lane's cotangent is the sum of
    # the output cotangents over lanes (vmap's and pmap's meaning, and shard_map's without
    # check_vma).
    axis = batching.bound_axis(axis_name)
    if isinstance(axis, batching.MeshAxis) and axis.check_vma:
        # jax's typed shard_map transposes a psum of a varying value to a broadcast and of an
        # invariant one to a psum; which one it was is not known here.
        raise NotImplementedError(
            f"differentiating psum over the mesh axis {axis_name!r} inside fx.shard_map with "
            "check_vma=True (jax's typed transposes) is not supported: take the derivative "
            "outside the shard_map (grad(shard_map(f))), or pass check_vma=False for the "
            "untyped meaning (the transpose of psum is psum, as in pmap)")
    return [psum_p.bind(ct, axis_name=axis_name)]


transpose.deflinear(psum_p, _psum_transpose)

all_gather_p = Primitive("all_gather")  # params: axis_name, axis_size


@all_gather_p.def_abstract_eval
def _all_gather_abstract_eval(x, *, axis_name, axis_size):
    return x.update(shape=(axis_size,) + x.shape)


all_gather_p.def_impl(_unbound("all_gather"))


@_always
def _all_gather_batch(axis, vals, dims, *, axis_name, axis_size):
    (x,), (d,) = vals, dims
    if axis.name != axis_name:
        out = all_gather_p.bind(x, axis_name=axis_name, axis_size=axis_size)
        return out, (None if d is None else d + 1)
    if d is not_mapped:
        return batching.broadcast_batch(x, axis.size, 0), not_mapped
    return moveaxis(x, d, 0), not_mapped


batching.batch_rules[all_gather_p] = _all_gather_batch


# Its transpose, a reduce-scatter, is registered beside psum_scatter_p (fx.lax.parallel_moves).

axis_index_p = Primitive("axis_index")  # params: axis_name
axis_index_p.def_abstract_eval(lambda *, axis_name: ShapedArray((), dtypes.int32))
axis_index_p.def_impl(_unbound("axis_index"))


@_always
def _axis_index_batch(axis, vals, dims, *, axis_name):
    if axis.name != axis_name:
        return axis_index_p.bind(axis_name=axis_name), not_mapped
    return iota(dtypes.int32, axis.size), 0


batching.batch_rules[axis_index_p] = _axis_index_batch


# The collectives fx.distributed runs across processes (and lowers to operations.Collective).
collective_prims = frozenset([psum_p, pmax_p, pmin_p, all_gather_p, axis_index_p])


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def to_array(v):
    """Python scalars (e.g. ``psum(1, name)``, the axis size) as weakly typed arrays."""
    if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
        dt, weak = dtypes.dtype_and_weak(v)
        return Array(np.asarray(v, dt), weak)
    return v


def _over_tree(op, x, axis_name):
    """Apply a single-name collective to every leaf of ``x`` and every name of ``axis_name``."""
    def leaf(v):
        v = to_array(v)
        for name in _names(axis_name):
            v = op(v, name)
        return v

    return tree_util.tree_map(leaf, x)


def psum(x, axis_name):
    """The sum of ``x`` over the lanes of the named axis (every lane gets the total); ``x`` may
    be a pytree and ``axis_name`` a tuple of names. ``psum(1, name)`` is the axis size."""
    return _over_tree(lambda v, n: psum_p.bind(v, axis_name=n), x, axis_name)


def pmean(x, axis_name):
    """The mean over the lanes (integers average in floating point, as in jax); over a tuple
    of names, the sum over all of them divided once by the product of their sizes."""
    names = _names(axis_name)

    def leaf(v):
        v = to_array(v)
        if not dtypes.is_float(v.dtype):
            v = convert_element_type(v, dtypes.default_float_dtype())
        for n in names:
            v = psum_p.bind(v, axis_name=n)
        return div(v, np.asarray(_size(names), v.dtype))

    return tree_util.tree_map(leaf, x)


def pmax(x, axis_name):
    return _over_tree(lambda v, n: pmax_p.bind(v, axis_name=n), x, axis_name)


def pmin(x, axis_name):
    return _over_tree(lambda v, n: pmin_p.bind(v, axis_name=n), x, axis_name)


def _size(names: tuple) -> int:
    size = 1
    for n in names:
        size *= batching.axis_size(n)
    return size


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
    """Every lane gets all lanes' ``x`` stacked along a new dimension ``axis`` (with
    ``tiled=True``, concatenated along the existing dimension ``axis``). Over a tuple of names
    the lanes are ordered by their index over the tuple, the first name the major one.

    Example::

        >>> fx.vmap(lambda v: fx.lax.all_gather(v, "i"), axis_name="i")(fx.numpy.arange(2.0))
        Array([[0., 1.],
               [0., 1.]], dtype=float32)
    """
    if axis_index_groups is not None:
        raise NotImplementedError("fx.lax.all_gather: axis_index_groups is not supported")
    names = _names(axis_name)

    def leaf(v):
        v = to_array(v)
        ndim = get_aval(v).ndim
        if not -ndim - (not tiled) <= axis < ndim + (not tiled) or (tiled and ndim == 0):
            raise ValueError(f"fx.lax.all_gather: axis {axis} is out of range for an operand "
                             f"of rank {ndim}{' (tiled)' if tiled else ''}")
        if batching.joined(names):  # processes: one gather over the tuple's communicator
            v = all_gather_p.bind(v, axis_name=names, axis_size=_size(names))
            k = 1
        else:
            # The last name varies fastest: gather it first, so the earlier names end up in
            # front.
            for n in reversed(names):
                v = all_gather_p.bind(v, axis_name=n, axis_size=batching.axis_size(n))
            k = len(names)
        shape = get_aval(v).shape
        if k > 1:  # one dimension of lanes, numbered over the tuple
            v = base.reshape(v, (_size(names),) + tuple(shape[k:]))
        a = axis % (ndim + (not tiled))
        if not tiled:
            return moveaxis(v, 0, a)
        v = moveaxis(v, 0, a)  # the lanes just before the dimension they tile
        out = list(shape[k:])
        out[a] *= _size(names)
        return base.reshape(v, tuple(out))

    return tree_util.tree_map(leaf, x)


def axis_index(axis_name):
    """This lane's position along the named axis (int32); over a tuple of names, its index in
    their product, the first name the major one."""
    names = _names(axis_name)
    index = None
    for n in names:
        i = axis_index_p.bind(axis_name=n)
        index = i if index is None else add(mul(index, np.asarray(batching.axis_size(n),
                                                                  dtypes.int32)), i)
    return index
