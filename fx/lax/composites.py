"""The rest of ``jax.lax``'s array functions, written over the existing primitives.

Each function here has jax's name, signature and result, and adds no primitive: it is a short
composition of ``fx.lax`` operations, so it differentiates, batches and compiles through the
rules of the primitives it uses. Shapes and axes are static Python ints (as in jax); a bad one
raises a ``TypeError``/``ValueError`` naming the function, the shapes and what to pass instead.

Contents: stacking and splitting (``stack``, ``unstack``, ``split``, ``tile``), broadcasting
(``broadcast``, ``broadcast_like``, ``broadcast_to_rank``, ``broadcast_shapes``), static
indexing (``index_in_dim``, ``index_take``), the generic ``reduce``, ``approx_max_k`` /
``approx_min_k``, ``batch_matmul``, ``ragged_dot``, ``scatter_sub`` / ``scatter_apply``,
``reciprocal``, ``empty``, ``dtype``, and the identities that only matter to XLA's scheduler
or partitioner (``optimization_barrier``, ``with_sharding_constraint``, ``stage``,
``composite``, ``platform_dependent``, ``axis_size``).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.core import Tracer, get_aval
from fx.interpreters import batching
from fx.lax import elementwise as ew
from fx.lax import reductions, sorting
from fx.lax.base import as_array, broadcast_in_dim, canonical_axis, full, reduce_sum, reshape
from fx.lax.general_indexing import gather, scatter_add
from fx.lax.linalg import dot_general
from fx.lax.structural import broadcasted_iota, concatenate, expand_dims, slice_in_dim, squeeze

# --- stacking, splitting, tiling ----------------------------------------------------------------


def stack(operands: Sequence, axis: int = 0):
    """Join equally shaped arrays along a new axis ``axis``.

    Example::

        >>> fx.lax.stack([fx.numpy.array([1, 2]), fx.numpy.array([3, 4])], axis=1)
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    operands = [as_array(x, "stack") for x in operands]
    if not operands:
        raise ValueError("fx.lax.stack: needs at least one array to stack")
    shapes = {get_aval(x).shape for x in operands}
    if len(shapes) > 1:
        raise TypeError(f"fx.lax.stack: all arrays must have the same shape, got {sorted(shapes)}")
    ndim = len(shapes.pop())
    axis = canonical_axis(axis, ndim + 1, "stack")
    return concatenate([expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple (the inverse of :func:`stack`)."""
    x = as_array(x, "unstack")
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError("fx.lax.unstack: the operand must have rank >= 1, got a scalar")
    axis = canonical_axis(axis, aval.ndim, "unstack")
    return tuple(index_in_dim(x, i, axis, keepdims=False) for i in range(aval.shape[axis]))


def split(operand, sizes: Sequence[int], axis: int = 0) -> list:
    """Cut ``operand`` along ``axis`` into consecutive pieces of the given ``sizes``.

    Example::

        >>> [p.shape for p in fx.lax.split(fx.numpy.zeros((5, 2)), (2, 0, 3))]
        [(2, 2), (0, 2), (3, 2)]
    """
    x = as_array(operand, "split")
    aval = get_aval(x)
    axis = canonical_axis(axis, aval.ndim, "split")
    sizes = [operator.index(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != aval.shape[axis]:
        raise ValueError(
            f"fx.lax.split: sizes {tuple(sizes)} must be non-negative and sum to the size "
            f"{aval.shape[axis]} of axis {axis} of {aval.str_short()}")
    starts = np.cumsum([0] + sizes)
    return [slice_in_dim(x, int(a), int(b), 1, axis) for a, b in zip(starts[:-1], starts[1:])]


def tile(operand, reps: Sequence[int]):
    """Repeat ``operand`` ``reps[i]`` times along each dimension ``i`` (one entry per axis).

    Example::

        >>> fx.lax.tile(fx.numpy.array([1, 2]), (3,))
        Array([1, 2, 1, 2, 1, 2], dtype=int32)
    """
    x = as_array(operand, "tile")
    aval = get_aval(x)
    reps = tuple(operator.index(r) for r in reps)
    if len(reps) != aval.ndim or any(r < 0 for r in reps):
        raise ValueError(
            f"fx.lax.tile: reps {reps} must have one non-negative entry per dimension of "
            f"{aval.str_short()} (use fx.numpy.tile to tile into more dimensions)")
    # Broadcast to (r0, d0, r1, d1, ...) and merge each pair: one broadcast and one reshape.
    pairs = tuple(v for r, d in zip(reps, aval.shape) for v in (r, d))
    out = broadcast_in_dim(x, pairs, tuple(range(1, 2 * aval.ndim, 2)))
    return reshape(out, tuple(r * d for r, d in zip(reps, aval.shape)))


# --- broadcasting -------------------------------------------------------------------------------


def broadcast(operand, sizes: Sequence[int], *, out_sharding=None):
    """Add leading dimensions of sizes ``sizes``: the result has shape
    ``tuple(sizes) + operand.shape``. ``out_sharding`` is accepted and ignored (one device)."""
    x = as_array(operand, "broadcast")
    aval = get_aval(x)
    sizes = tuple(operator.index(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise TypeError(f"fx.lax.broadcast: negative size in {sizes}; sizes must be >= 0")
    return broadcast_in_dim(x, sizes + aval.shape, tuple(range(len(sizes), len(sizes) + aval.ndim)))


def broadcast_to_rank(x, rank: int):
    """Prepend size-1 dimensions until ``x`` has rank ``rank`` (a no-op at or above it)."""
    x = as_array(x, "broadcast_to_rank")
    aval = get_aval(x)
    rank = operator.index(rank)
    if aval.ndim >= rank:
        return x
    return broadcast(x, (1,) * (rank - aval.ndim))


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The NumPy broadcast of shapes (tuples of ints), or a ``ValueError`` naming them."""
    shapes = [tuple(operator.index(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(
                f"fx.lax.broadcast_shapes: incompatible shapes for broadcasting: "
                f"{tuple(shapes)}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_like(arr, like_arr):
    """Broadcast ``arr`` (NumPy rules: trailing dimensions align) to the shape of ``like_arr``."""
    x = as_array(arr, "broadcast_like")
    aval, shape = get_aval(x), tuple(np.shape(like_arr)) if not isinstance(
        like_arr, (Array, Tracer)) else get_aval(like_arr).shape
    if broadcast_shapes(aval.shape, shape) != shape:
        raise ValueError(f"fx.lax.broadcast_like: cannot broadcast {aval.str_short()} to the "
                         f"shape {shape}")
    lead = len(shape) - aval.ndim
    keep = [d for d, n in enumerate(aval.shape) if n == shape[lead + d]]
    x = reshape(x, tuple(aval.shape[d] for d in keep))
    return broadcast_in_dim(x, shape, tuple(lead + d for d in keep))


# --- static indexing ----------------------------------------------------------------------------


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """The slice at the static ``index`` (negative counts from the end) along ``axis``;
    ``keepdims=False`` drops that axis."""
    x = as_array(operand, "index_in_dim")
    aval = get_aval(x)
    axis = canonical_axis(axis, aval.ndim, "index_in_dim")
    n, index = aval.shape[axis], operator.index(index)
    if not -n <= index < n:
        raise IndexError(f"fx.lax.index_in_dim: index {index} is out of bounds for axis {axis} "
                         f"of size {n} ({aval.str_short()})")
    index %= n
    out = slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def index_take(src, idxs: Sequence, axes: Sequence[int]):
    """``src`` at the positions ``idxs[j]`` along ``axes[j]`` (one index array per axis, all of
    one shape ``B``): the result has shape ``B + (the other dimensions of src)``. Negative
    indices count from the end; out-of-range ones are clamped (as jax)."""
    x = as_array(src, "index_take")
    aval = get_aval(x)
    axes = tuple(canonical_axis(a, aval.ndim, "index_take") for a in axes)
    idxs = [as_array(i, "index_take") for i in idxs]
    if len(idxs) != len(axes) or len(set(axes)) != len(axes):
        raise ValueError(f"fx.lax.index_take: needs one index array per distinct axis, got "
                         f"{len(idxs)} arrays for axes {axes}")
    shapes = {get_aval(i).shape for i in idxs}
    if len(shapes) > 1:
        raise TypeError(f"fx.lax.index_take: index arrays must share one shape, got {shapes}")
    cols = []
    for i, a in zip(idxs, axes):
        i = ew.convert_element_type(i, dtypes.int32)
        n = np.asarray(aval.shape[a], dtypes.int32)
        wrapped = ew.select(ew.lt(i, np.asarray(0, dtypes.int32)), ew.add(i, n), i)
        cols.append(expand_dims(wrapped, (get_aval(wrapped).ndim,)))
    indices = concatenate(cols, get_aval(cols[0]).ndim - 1) if cols else None
    if indices is None:
        return x
    return gather(x, indices, axes, mode="clip")


# --- reductions ---------------------------------------------------------------------------------

_MONOIDS = {
    ew.add: (reduce_sum, "sum"), ew.mul: (reductions.reduce_prod, "prod"),
    ew.max: (reductions.reduce_max, "max"), ew.min: (reductions.reduce_min, "min"),
    ew.and_: (reductions.reduce_and, "and"), ew.or_: (reductions.reduce_or, "or"),
    ew.xor: (reductions.reduce_xor, "xor"),
}


def _fold(computation: Callable, xs: list, axis: int) -> list:
    """Combine the entries of ``xs`` (a list of arrays sharing ``axis``) pairwise, in halves,
    until one entry is left along ``axis``; the axis is kept, of size 1 (or 0 if empty)."""
    while (n := get_aval(xs[0]).shape[axis]) > 1:
        even = [slice_in_dim(x, 0, n - 1, 2, axis) for x in xs]
        odd = [slice_in_dim(x, 1, n, 2, axis) for x in xs]
        combined = _call(computation, even, odd)
        if n % 2:
            combined = [concatenate([c, slice_in_dim(x, n - 1, n, 1, axis)], axis)
                        for c, x in zip(combined, xs)]
        xs = combined
    return xs


def _call(computation: Callable, xs: list, ys: list) -> list:
    if len(xs) == 1:
        out = computation(xs[0], ys[0])
        return [out[0]] if isinstance(out, (tuple, list)) else [out]
    return list(computation(tuple(xs), tuple(ys)))


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int],
           out_sharding=None):
    """Reduce ``operands`` over ``dimensions`` with the binary ``computation``, starting from
    ``init_values`` (an array or a tuple of arrays, with matching scalars).

    ``fx.lax.add``/``mul``/``max``/``min``/``and_``/``or_``/``xor`` on one operand become the
    reduction primitives; any other ``computation`` (which must be associative and commutative,
    as XLA requires, and written with array operations) is applied pairwise, halving the axis
    each step. ``init_values`` enters each result once.

    Example::

        >>> x = fx.numpy.arange(6.0).reshape(2, 3)
        >>> fx.lax.reduce(x, 0.0, fx.lax.add, (1,))
        Array([ 3., 12.], dtype=float32)
    """
    single = not isinstance(operands, (tuple, list))
    xs = [as_array(x, "reduce") for x in ([operands] if single else operands)]
    inits = [init_values] if single else list(init_values)
    if len(inits) != len(xs):
        raise ValueError(f"fx.lax.reduce: {len(xs)} operands need as many init_values, got "
                         f"{len(inits)}")
    shapes = {get_aval(x).shape for x in xs}
    if len(shapes) > 1:
        raise TypeError(f"fx.lax.reduce: operands must share one shape, got {sorted(shapes)}")
    shape = shapes.pop()
    dims = tuple(sorted(canonical_axis(d, len(shape), "reduce", "dimension") for d in dimensions))
    if len(set(dims)) != len(dims):
        raise ValueError(f"fx.lax.reduce: repeated dimension in {tuple(dimensions)}")
    inits = [_init_like(i, x) for i, x in zip(inits, xs)]
    out_shape = tuple(d for i, d in enumerate(shape) if i not in dims)
    if single:
        computation = _as_monoid(computation, get_aval(xs[0]).dtype)
    if single and computation in _MONOIDS:
        reducer, _ = _MONOIDS[computation]
        out = reducer(xs[0], dims) if dims else xs[0]
        return out if _is_identity(inits[0], computation) else computation(out, _bcast(
            inits[0], out_shape))
    # Move the reduced dimensions last and merge them into one, then fold it.
    keep = [i for i in range(len(shape)) if i not in dims]
    size = math.prod(shape[d] for d in dims)
    from fx.lax.base import transpose

    xs = [reshape(transpose(x, keep + list(dims)), out_shape + (size,)) for x in xs]
    if size == 0:
        return _pack([_bcast(i, out_shape) for i in inits], single)
    folded = [squeeze(x, (len(out_shape),)) for x in _fold(computation, xs, len(out_shape))]
    return _pack(_call(computation, folded, [_bcast(i, out_shape) for i in inits]), single)


def _as_monoid(computation: Callable, dt) -> Callable:
    """``computation`` itself, or the fx.lax monoid it computes when its jaxpr on two scalars
    is one ``add``/``mul``/``max``/``min``/``and``/``or``/``xor`` of its two arguments (so
    ``lambda a, b: a + b`` reduces as ``fx.lax.add`` does, as in jax)."""
    if computation in _MONOIDS:
        return computation
    from fx.lax import primitives as p
    from fx.tracing import make_jaxpr

    by_prim = {p.add_p: ew.add, p.mul_p: ew.mul, p.max_p: ew.max, p.min_p: ew.min,
               p.and_p: ew.and_, p.or_p: ew.or_, p.xor_p: ew.xor}
    scalar = Array(np.zeros((), dt))
    try:
        jaxpr = make_jaxpr(computation)(scalar, scalar).jaxpr
    except Exception:  # noqa: BLE001  (not traceable on scalars: fold it as given)
        return computation
    if len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
        return computation
    (eqn,) = jaxpr.eqns
    ins = {id(v) for v in jaxpr.invars}
    if (eqn.primitive in by_prim and len(eqn.invars) == 2 and len(ins) == 2
            and {id(v) for v in eqn.invars} == ins and eqn.outvars[0] is jaxpr.outvars[0]):
        return by_prim[eqn.primitive]
    return computation


def _pack(xs: list, single: bool):
    return xs[0] if single else tuple(xs)


def _bcast(x, shape):
    return broadcast_in_dim(x, shape, ())


def _init_like(init, x):
    aval = get_aval(x)
    if isinstance(init, (bool, int, float)) and not isinstance(init, np.generic):
        return Array(np.asarray(init, aval.dtype), weak_type=True)
    init = as_array(init, "reduce")
    ia = get_aval(init)
    if ia.shape != () or ia.dtype != aval.dtype:
        raise TypeError(f"fx.lax.reduce: each init value must be a scalar of its operand's "
                        f"dtype; got {ia.str_short()} for an operand {aval.str_short()}")
    return init


def _is_identity(init, computation) -> bool:
    if isinstance(init, Tracer):
        return False
    value, dt = np.asarray(init), get_aval(init).dtype
    kind = _MONOIDS[computation][1]
    ident = np.asarray(0 if kind == "sum" else reductions._identity(kind, dt)).astype(dt)
    # As jax, a sum starting at +0.0 (not -0.0) is the plain reduction: compare the bits.
    return value.tobytes() == ident.tobytes() if kind == "sum" else bool(value == ident)


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The ``k`` largest entries along ``reduction_dimension`` and their int32 indices.

    fx computes the exact top ``k`` (a recall of 1, which meets any ``recall_target``), as jax
    does on CPU; ``reduction_input_size_override`` and ``aggregate_to_topk`` only tune TPU
    kernels and are accepted for compatibility."""
    return _approx_k(operand, k, reduction_dimension, largest=True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The ``k`` smallest entries along ``reduction_dimension`` (see :func:`approx_max_k`)."""
    return _approx_k(operand, k, reduction_dimension, largest=False)


def _approx_k(operand, k, dim, largest: bool):
    name = "approx_max_k" if largest else "approx_min_k"
    x = as_array(operand, name)
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError(f"fx.lax.{name}: the operand must have rank >= 1, got a scalar")
    dim = canonical_axis(dim, aval.ndim, name, "reduction_dimension")
    last = aval.ndim - 1
    perm = list(range(aval.ndim))
    perm[dim], perm[last] = last, dim
    from fx.lax.base import transpose

    moved = transpose(x, perm)
    if largest:
        values, indices = sorting.top_k(moved, k)
    else:
        # The smallest entries are the largest in the reversed order; NaNs still come last
        # (largest) as jax's approx_min_k puts them.
        values, indices = _bottom_k(moved, k)
    return transpose(values, perm), transpose(indices, perm)


def _bottom_k(x, k: int):
    aval = get_aval(x)
    n = aval.shape[-1]
    k = operator.index(k)
    if not 0 <= k <= n:
        raise ValueError(f"fx.lax.approx_min_k: k={k} must be between 0 and the axis size {n}")
    iota = broadcasted_iota(dtypes.int32, aval.shape, aval.ndim - 1)
    keys = [x] if not dtypes.is_float(aval.dtype) else [ew.ne(x, x), x]
    *_, values, indices = sorting.sort((*keys, x, iota), -1, True, num_keys=len(keys))
    return (slice_in_dim(values, 0, k, 1, aval.ndim - 1),
            slice_in_dim(indices, 0, k, 1, aval.ndim - 1))


# --- products -----------------------------------------------------------------------------------


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over equal leading (batch) dimensions: ``(..., m, k) @ (..., k, n)``."""
    lhs, rhs = as_array(lhs, "batch_matmul"), as_array(rhs, "batch_matmul")
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim or la.shape[:-2] != ra.shape[:-2] or (
            la.shape[-1] != ra.shape[-2]):
        raise TypeError(
            f"fx.lax.batch_matmul: operands must have equal rank >= 2, equal batch dimensions "
            f"and matching contraction sizes, got {la.str_short()} and {ra.str_short()} (use "
            "fx.numpy.matmul to broadcast)")
    batch = tuple(range(la.ndim - 2))
    return dot_general(lhs, rhs, (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch)), precision)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """Grouped matmul: rows ``[s_0 + ... + s_{g-1}, s_0 + ... + s_g)`` of ``lhs`` (``m x k``)
    multiply ``rhs[g]`` (``rhs`` is ``g x k x n``, ``group_sizes`` an int32 ``(g,)``); rows
    after the last group are zero. Computed as one masked product per group, so it
    differentiates in ``lhs`` and ``rhs`` and batches like any other code."""
    lhs, rhs = as_array(lhs, "ragged_dot"), as_array(rhs, "ragged_dot")
    sizes = as_array(group_sizes, "ragged_dot")
    la, ra, sa = get_aval(lhs), get_aval(rhs), get_aval(sizes)
    if la.ndim != 2 or ra.ndim != 3 or la.shape[1] != ra.shape[1] or sa.shape != ra.shape[:1]:
        raise TypeError(
            f"fx.lax.ragged_dot: expected lhs (m, k), rhs (g, k, n) and group_sizes (g,), got "
            f"{la.str_short()}, {ra.str_short()} and {sa.str_short()}")
    if not dtypes.is_int(sa.dtype):
        raise TypeError(f"fx.lax.ragged_dot: group_sizes must be integers, got {sa.dtype}")
    if group_offset is not None:
        raise NotImplementedError("fx.lax.ragged_dot: group_offset (a sharded-groups option) "
                                  "is not supported")
    sizes = ew.convert_element_type(sizes, dtypes.int32)
    ends = sorting.cumsum(sizes, 0)
    rows = broadcasted_iota(dtypes.int32, (la.shape[0], 1), 0)
    out = None
    for g in range(ra.shape[0]):
        end = _bcast(index_in_dim(ends, g, 0, False), (la.shape[0], 1))
        start = ew.sub(end, _bcast(index_in_dim(sizes, g, 0, False), (la.shape[0], 1)))
        member = ew.and_(ew.ge(rows, start), ew.lt(rows, end))
        member = broadcast_in_dim(reshape(member, (la.shape[0],)), la.shape, (0,))
        masked = ew.select(member, lhs, ew.full_like(lhs, 0))
        term = dot_general(masked, index_in_dim(rhs, g, 0, False), (((1,), (0,)), ((), ())),
                           precision, preferred_element_type)
        out = term if out is None else ew.add(out, term)
    if out is None:
        dt = preferred_element_type or la.dtype
        return full((la.shape[0], ra.shape[2]), 0, dt)
    return out


# --- scatters -----------------------------------------------------------------------------------


def scatter_sub(operand, indices, updates, axes: Sequence[int], *, mode=None,
                indices_are_sorted: bool = False, unique_indices: bool = False):
    """``operand`` with ``updates`` subtracted at ``indices`` (fx's ``axes`` convention, see
    ``fx.lax.gather``, or jax's ``ScatterDimensionNumbers``); repeated indices subtract every
    update."""
    return scatter_add(operand, indices, ew.neg(as_array(updates, "scatter_sub")), axes,
                       mode=mode)


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode=None):
    """``operand`` with the elementwise ``func`` applied at the positions ``scatter_indices``
    selects: once per index, so a position indexed ``k`` times gets ``func`` applied ``k``
    times (as jax). ``dimension_numbers`` is fx's ``axes`` or jax's
    ``ScatterDimensionNumbers`` (then ``update_shape`` is the shape the updates would have)."""
    from fx.lax import control_flow

    x = as_array(operand, "scatter_apply")
    aval = get_aval(x)
    idx = as_array(scatter_indices, "scatter_apply")
    ia = get_aval(idx)
    if hasattr(dimension_numbers, "update_window_dims"):
        shape = tuple(operator.index(d) for d in update_shape)
    else:
        axes = tuple(canonical_axis(a, aval.ndim, "scatter_apply") for a in dimension_numbers)
        shape = ia.shape[:-1] + tuple(d for i, d in enumerate(aval.shape) if i not in axes)
    # How often each position is hit; then func is applied that many times there.
    counts = scatter_add(full(aval.shape, 0, dtypes.int32), idx, full(shape, 1, dtypes.int32),
                         dimension_numbers, mode=mode)
    if isinstance(counts, Tracer):
        rounds = math.prod(ia.shape[:-1])
    else:
        rounds = int(np.max(np.asarray(counts), initial=0))

    def once(t, v):
        hit = ew.gt(counts, ew.convert_element_type(t, dtypes.int32))
        return ew.select(hit, func(v), v)

    return control_flow.fori_loop(0, rounds, once, x) if rounds else x


# --- elementwise extras -------------------------------------------------------------------------


def reciprocal(x):
    """``1 / x`` elementwise, for floating ``x`` (integers raise, as in jax)."""
    x = as_array(x, "reciprocal")
    if not dtypes.is_float(get_aval(x).dtype):
        raise TypeError(f"fx.lax.reciprocal: needs a floating operand, got "
                        f"{get_aval(x).str_short()}")
    return ew.integer_pow(x, -1)


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` whose contents are unspecified (zeros, in fx)."""
    shape = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(
        operator.index(s) for s in shape)
    return full(shape, 0, dtypes.canonicalize(dtype))


def dtype(x) -> np.dtype:
    """The dtype ``x`` has (or takes, for Python scalars: the default for its kind)."""
    if isinstance(x, (Array, Tracer)):
        return get_aval(x).dtype
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return dtypes.dtype_and_weak(x)[0]
    return dtypes.canonicalize(np.result_type(x))


# --- scheduling and partitioning annotations: identities on one device -------------------------


def optimization_barrier(operand, /):
    """The identity on a pytree of arrays. XLA uses it to stop code motion across it; fx's
    passes never move a computation past its uses in a way this would prevent, so no
    primitive is needed."""
    return tree_util.tree_map(lambda x: as_array(x, "optimization_barrier"), operand)


def with_sharding_constraint(x, shardings):
    """The identity: fx runs a program on one device, so every sharding is trivial."""
    return tree_util.tree_map(lambda v: as_array(v, "with_sharding_constraint"), x)


def stage(x, /):
    """The identity that makes a Python scalar or NumPy array an fx array."""
    return as_array(x, "stage")


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """Mark ``decomposition`` as the named composite operation ``name`` (a hint for XLA
    backends with a fused kernel). fx traces the decomposition itself: the result is
    ``decomposition`` with its name and docstring."""

    @functools.wraps(decomposition)
    def wrapped(*args, **kwargs):
        return decomposition(*args, **kwargs)

    wrapped.composite_name, wrapped.composite_version = name, int(version)
    return wrapped


def platform_dependent(*args, default: Callable | None = None, **per_platform: Callable):
    """Call the branch for the platform fx runs on (``cpu=``, ``cuda=``/``gpu=``, ...), or
    ``default`` where that platform has none; the choice is made when tracing, from
    ``fx.default_backend()``."""
    from fx.devices import default_backend
    from fx.runtime import platforms

    here = platforms.platform(default_backend())
    for key in (here.name, *here.aliases):
        if per_platform.get(key) is not None:
            return per_platform[key](*args)
    if default is None:
        raise ValueError(
            f"fx.lax.platform_dependent: no branch for platform {default_backend()!r} among "
            f"{sorted(per_platform)} and no default")
    return default(*args)


def axis_size(axis_name) -> int:
    """The size of the named (``vmap(axis_name=...)``) axis, or the product over a tuple of
    names; a ``NameError`` outside a transformation that binds the name."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    return math.prod(batching.axis_size(n) for n in names)
