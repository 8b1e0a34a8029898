"""Collectives over a named axis: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``axis_index``, and jax's ``pvary``/``pcast``.

Inside ``vmap(..., axis_name=name)`` each value stands for one lane of the batch; a collective
combines the lanes. They are implemented by the batching rule of the vmap that owns the axis
name (an inner vmap over another name passes them through); outside any such vmap they raise
``NameError`` naming the unbound axis. Under ``fx.pmap`` the lanes are processes: the same
primitives then reach the jaxpr and run between processes (``fx.distributed.collectives``
gives them that meaning and their lowering).

Inside ``fx.shard_map`` with ``check_vma`` (jax's typed meaning), ``pvary`` types a value as
varying over mesh axes, and ``fx.vjp`` emits ``checked_scale_p`` and ``checked_sum_p`` at
its boundary, which ``fx.spmd_vma.resolve_checked`` resolves once each value's axes are
known (see the comment above them); the collectives' own transposes are the lanes' exact
ones either way.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp, transpose
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
    # the output cotangents over lanes: the exact transpose of the lanes' function (vmap's and
    # pmap's meaning, and shard_map's without check_vma). With check_vma, jax's typed
    # transpose (a broadcast of the cotangent) follows from this one and the cotangents that
    # fx.vjp scales and sums at its boundary (checked_scale_p, checked_sum_p below).
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


# --- jax's typed (check_vma) meaning: pvary and the cotangents fx.vjp fixes up ---------------

pvary_p = Primitive("pvary")  # params: axis_name (a tuple of mesh axes)
pvary_p.def_abstract_eval(lambda x, *, axis_name: x)
pvary_p.def_impl(_unbound("pvary"))
# Every lane keeps its value: only the type changes (the value now varies over the axes), so
# the lanes' function is the identity, and so is its exact transpose (the sum jax's transpose
# makes comes from fx.vjp's checked_sum_p for the invariant input).
batching.batch_rules[pvary_p] = lambda axis, vals, dims, *, axis_name: (vals[0], dims[0])
transpose.deflinear(pvary_p, lambda ct, x, *, axis_name: [ct])


def _checked(name: str) -> Primitive:
    prim = Primitive(name)  # operands: the cotangent, the primal value it belongs to
    prim.def_abstract_eval(lambda ct, ref, *, axes: ct)

    def impl(ct, ref, *, axes):
        raise RuntimeError(f"{name} over {axes} outside a checked fx.shard_map: it is resolved "
                           "there (fx.spmd_vma.resolve_checked) before it runs")

    prim.def_impl(impl)

    def batch(axis, vals, dims, *, axes):  # ``ref`` only witnesses the type: any batching
        return prim.bind(vals[0], vals[1], axes=axes), dims[0]

    batching.batch_rules[prim] = batch
    # Linear in the cotangent: a scale and a sum over lanes are their own transposes.
    jvp.deflinear_in(prim, 0)
    transpose.deftranspose(prim, lambda ct, c, ref, *, axes: [prim.bind(ct, ref, axes=axes),
                                                             None])
    return prim


# Inside a checked shard_map, fx.vjp computes jax's typed vjp from the lanes' exact one: the
# output cotangent is divided by the size of every mesh axis the output does not vary over
# (an invariant output counts once, not once per lane), and the cotangent of an input is
# summed over every axis the input does not vary over (one value feeds every lane). Whether a
# value varies is known only once the whole body is traced, so fx.vjp emits these two
# placeholders, carrying the primal value as a type witness and the checked axes bound then,
# and fx.spmd_vma.resolve_checked replaces them by a multiplication, psums, or nothing.
checked_scale_p = _checked("checked_scale")
checked_sum_p = _checked("checked_sum")

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
    """Apply a single-name collective to every leaf of ``x`` and every name of ``axis_name``
    (over a tuple of process axes, once over the tuple: one call on its communicator)."""
    names = _names(axis_name)

    def leaf(v):
        v = to_array(v)
        if batching.joined(names):
            return op(v, names)
        for name in names:
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
        for n in ((names,) if batching.joined(names) else names):
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


def pvary(x, axis_name):
    """``x`` typed as varying over the mesh axes ``axis_name`` (a name or a tuple), as jax's
    ``pvary`` (``pcast(x, axis_name, to="varying")``): every device keeps its value, but
    inside a ``shard_map`` with ``check_vma`` the value now counts once per device along those
    axes, so its derivative with respect to an invariant ``x`` sums over them. Outside a
    checked ``shard_map`` (``check_vma=False``, ``vmap``, ``pmap``) it returns ``x``. Axes
    ``x`` already varies over are left as they are.

    Example::

        >>> mesh = fx.sharding.Mesh(np.array(fx.devices()[:1]), ("i",))
        >>> P = fx.sharding.PartitionSpec
        >>> f = fx.shard_map(lambda w: fx.grad(lambda w: fx.lax.pvary(w, "i").sum())(w),
        ...                  mesh=mesh, in_specs=P(), out_specs=P())
        >>> f(fx.numpy.ones(2))      # summed over the one device of "i"
        Array([1., 1.], dtype=float32)
    """
    names = _names(axis_name)
    for n in names:
        if batching.bound_axis(n) is None:
            raise NameError(f"pvary: unbound axis name {n!r}: it needs an enclosing "
                            f"fx.shard_map over a mesh with an axis {n!r}")
    checked = tuple(n for n in names if n in batching.checked_axes())
    if not checked:
        return x
    return tree_util.tree_map(lambda v: pvary_p.bind(to_array(v), axis_name=checked), x)


def pcast(x, axis_name, *, to: str):
    """jax's ``pcast``: ``to="varying"`` is :func:`pvary`; ``"reduced"`` and
    ``"unreduced"`` (jax's unreduced types) are not supported."""
    if to != "varying":
        if to in ("reduced", "unreduced"):
            raise NotImplementedError(f"fx.lax.pcast: to={to!r} (jax's reduced/unreduced "
                                      "types) is not supported; only to='varying'")
        raise ValueError(f"fx.lax.pcast: unexpected to={to!r}; allowed: 'varying', "
                         "'reduced', 'unreduced'")
    if not axis_name:
        return x
    return pvary(x, axis_name)
