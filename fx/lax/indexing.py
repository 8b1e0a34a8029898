"""Gather and scatter: reading and updating arrays at computed positions.

One index convention serves every primitive here. ``indices`` is an integer array of shape
``batch + (k,)`` and ``axes`` names ``k`` distinct operand dimensions; row ``indices[b]`` picks
one position along each of those dimensions, and every other operand dimension (the *rest*, in
operand order) is taken whole::

    gather(operand, indices, axes)[b, *rest] == operand[position with operand[axes[j]]
                                                          = indices[b, j], the others = rest]

so the output (of a gather) and the updates (of a scatter) have shape
``batch + [operand dims not in axes]``. This is XLA's gather with every indexed dimension
collapsed to a point, which is all NumPy indexing needs: basic slices are done beforehand by
``slice``, and a slice that must be *updated* becomes one more index column holding its
positions. Keeping windows out of the primitive keeps its rules short: the batching rules only
prepend an iota column or shift ``axes``; the transposes are each other.

``mode`` says what happens to an index outside ``[0, size)`` (negative indices are not wrapped
here; ``fx.numpy`` wraps them first): ``GatherScatterMode.CLIP`` clamps it into range;
``GatherScatterMode.FILL_OR_DROP`` makes a gather produce ``fill_value`` (default: NaN for
floats, the minimum of a signed integer type, the maximum of an unsigned one, True for bool)
and makes a scatter drop the update. The public functions default to fill/drop, as
``jax.lax.gather`` and ``jax.lax.scatter*`` do.

The functions here take ``axes``; ``fx.lax.gather`` and ``fx.lax.scatter*`` also take jax's
dimension-numbers form, which :mod:`fx.lax.general_indexing` writes over these.

Primitives: ``gather``, ``scatter`` (set), ``scatter_add``, ``scatter_mul``, ``scatter_min``,
``scatter_max``. Where several updates hit one position, ``scatter`` keeps the last in batch
(row-major) order, deterministically (jax leaves the winner unspecified; on CPU it is the last
too); the others combine all of them.

Derivatives: ``gather`` and ``scatter_add`` are linear (in the operand, and in operand and
updates) and transpose into each other. The jvps of ``scatter``, ``scatter_mul`` and
``scatter_min/max`` are written with ``gather``, ``scatter_add`` and elementwise ops, so they
need no transpose rules of their own (``scatter_mul`` also has one in its operand). Unlike jax,
``scatter_mul`` is differentiable in its updates even with repeated indices (zero-safe: the
product of the other factors is formed from nonzero products and zero counts). Ties of
``scatter_min/max`` split the tangent evenly, like ``lax.max`` and jax.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval, physical_rules
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.batching import bdim_at_front, matchaxis, moveaxis
from fx.interpreters.jvp import Zero
from fx.interpreters.transpose import is_undefined
from fx.lax import extrema
from fx.lax.base import broadcast_in_dim, full, reshape, shape_error
from fx.lax.elementwise import add, convert_element_type, div, eq, mul, select_n
from fx.lax.elementwise import max as lax_max
from fx.lax.structural import broadcasted_iota, concatenate


class GatherScatterMode(enum.Enum):
    """What an out-of-range index does: clamp into range, or fill (gather) / drop (scatter).

    ``PROMISE_IN_BOUNDS`` promises that no index is out of range. fx keeps it as XLA does on
    CPU, as jax's: a gather clamps and a scatter drops, and the primitives keep the promise so
    that their transposes do what jax's do (a gather's scatters back with drops, a scatter's
    reads back clamped).
    """

    CLIP = "clip"
    FILL_OR_DROP = "fill_or_drop"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @classmethod
    def parse(cls, mode) -> GatherScatterMode:
        """``None``, ``'fill'`` and ``'drop'`` mean FILL_OR_DROP, ``'clip'`` CLIP and
        ``'promise_in_bounds'`` PROMISE_IN_BOUNDS (jax's ``GatherScatterMode.from_any``)."""
        if isinstance(mode, cls):
            return mode
        if mode is None or mode in ("fill", "drop"):
            return cls.FILL_OR_DROP
        if mode == "clip":
            return cls.CLIP
        if mode == "promise_in_bounds":
            return cls.PROMISE_IN_BOUNDS
        raise ValueError(f"unknown gather/scatter mode {mode!r}; use 'clip', 'fill', 'drop' "
                         "or 'promise_in_bounds'")

    from_any = parse  # jax's name

    def __repr__(self) -> str:
        return self.value


CLIP = GatherScatterMode.CLIP
FILL_OR_DROP = GatherScatterMode.FILL_OR_DROP
PROMISE_IN_BOUNDS = GatherScatterMode.PROMISE_IN_BOUNDS


def default_fill_value(dtype) -> object:
    """What an out-of-range gather returns by default: an obviously invalid value."""
    dtype = np.dtype(dtype)
    if dtype == dtypes.bool_:
        return True
    if dtypes.is_signed_int(dtype):
        return int(np.iinfo(dtype).min)
    if dtypes.is_int(dtype):
        return int(np.iinfo(dtype).max)
    return float("nan")


def _rest(ndim: int, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for d in range(ndim) if d not in axes)


def _check_indices(name: str, operand: ShapedArray, indices: ShapedArray, axes, mode,
                   promise: bool = False) -> None:
    if not isinstance(mode, GatherScatterMode) or (mode is PROMISE_IN_BOUNDS and not promise):
        raise ValueError(f"{name}: mode must be GatherScatterMode.CLIP or FILL_OR_DROP, got "
                         f"{mode!r} (the public functions resolve PROMISE_IN_BOUNDS)")
    if not dtypes.is_int(indices.dtype):
        raise shape_error(name, "indices must have an integer dtype", operand, indices)
    if indices.ndim < 1 or indices.shape[-1] != len(axes):
        raise shape_error(
            name, f"indices must have shape batch + ({len(axes)},): one column per axis in "
            f"axes={axes}", operand, indices,
        )
    if any(not 0 <= a < operand.ndim for a in axes) or len(set(axes)) != len(axes):
        raise shape_error(
            name, f"axes={axes} must be distinct dimensions of the operand", operand, indices
        )


# --- host implementations ---------------------------------------------------------------------


def _columns(operand, indices, axes, mode):
    """Flattened index columns (int64), the mask of in-range rows (None under CLIP), and the
    operand with the indexed axes moved in front (a view)."""
    k = len(axes)
    moved = np.transpose(operand, tuple(axes) + _rest(operand.ndim, axes))
    flat = np.reshape(indices, (math.prod(indices.shape[:-1]), k)).astype(np.int64)
    sizes = [operand.shape[a] for a in axes]
    cols = [flat[:, j] for j in range(k)]
    if mode is CLIP:
        return [np.clip(c, 0, max(s - 1, 0)) for c, s in zip(cols, sizes)], None, moved
    ok = np.ones(flat.shape[0], dtype=bool)
    for c, s in zip(cols, sizes):
        ok &= (c >= 0) & (c < s)
    return cols, ok, moved


def _gather_impl(operand, indices, *, axes, mode, fill_value):
    if mode is PROMISE_IN_BOUNDS:  # read as XLA's gather reads it: clamped
        mode = CLIP
    batch = indices.shape[:-1]
    rest_shape = tuple(operand.shape[d] for d in _rest(operand.ndim, axes))
    cols, ok, moved = _columns(operand, indices, axes, mode)
    n = cols[0].shape[0] if cols else math.prod(batch)
    if not axes:
        out = np.broadcast_to(moved, (n,) + rest_shape)
    elif ok is not None and not ok.all():
        fill = np.asarray(default_fill_value(operand.dtype) if fill_value is None else fill_value)
        safe = [np.where(ok, c, 0) for c in cols]
        if all(operand.shape[a] for a in axes):
            picked = moved[tuple(safe)]
        else:  # nothing to read: every row is out of range
            picked = np.zeros((n,) + rest_shape, operand.dtype)
        mask = np.reshape(ok, (n,) + (1,) * len(rest_shape))
        out = np.where(mask, picked, fill.astype(operand.dtype))
    else:
        out = moved[tuple(cols)]
    return np.reshape(out, batch + rest_shape)


def _scatter_impl(combine: str):
    def impl(operand, indices, updates, *, axes, mode):
        out = operand.copy()
        k = len(axes)
        cols, ok, moved = _columns(out, indices, axes, mode)
        rest_shape = tuple(operand.shape[d] for d in _rest(operand.ndim, axes))
        upd = np.reshape(updates, (math.prod(indices.shape[:-1]),) + rest_shape)
        if ok is not None:
            cols, upd = [c[ok] for c in cols], upd[ok]
        if k == 0:
            # Every row updates the whole operand.
            cols = [np.zeros(upd.shape[0], np.int64)]
            moved = moved[None]
        if combine == "set" and upd.shape[0]:
            # Keep only the last write to each position, so the result does not depend on
            # the order in which the backend applies duplicate writes.
            lin = np.ravel_multi_index(tuple(cols), moved.shape[: len(cols)])
            _, first_from_end = np.unique(lin[::-1], return_index=True)
            last = upd.shape[0] - 1 - first_from_end
            cols, upd = [c[last] for c in cols], upd[last]
        ufunc = {"set": None, "add": np.add, "mul": np.multiply, "min": np.minimum,
                 "max": np.maximum}[combine]
        if ufunc is None:
            moved[tuple(cols)] = upd
        elif combine in ("min", "max"):
            extrema.scatter(combine, moved, tuple(cols), upd)  # -0.0 < +0.0, as jax
        else:
            ufunc.at(moved, tuple(cols), upd)
        return out

    return impl


# --- gather -------------------------------------------------------------------------------------

gather_p = Primitive("gather")  # params: axes, mode, fill_value (None: the dtype's default)


@gather_p.def_abstract_eval
def _gather_abstract_eval(operand, indices, *, axes, mode, fill_value):
    _check_indices("gather", operand, indices, axes, mode, promise=True)
    batch = indices.shape[:-1]
    if mode in (CLIP, PROMISE_IN_BOUNDS) and math.prod(batch) and any(
            operand.shape[a] == 0 for a in axes):
        raise shape_error(
            "gather", f"cannot clamp an index into a zero-size axis (axes={axes}); use "
            "mode='fill'", operand, indices,
        )
    rest = tuple(operand.shape[d] for d in _rest(operand.ndim, axes))
    return operand.update(shape=batch + rest)


gather_p.def_impl(_gather_impl)


def gather(operand, indices, axes: Sequence[int], slice_sizes=None, *, mode=None,
           fill_value=None, unique_indices: bool = False, indices_are_sorted: bool = False):
    """``operand`` read at the positions in ``indices`` (one column per axis in ``axes``).

    The output has shape ``indices.shape[:-1] + [operand dims not in axes]``. ``mode='clip'``
    clamps out-of-range indices; ``'fill'`` (the default, as in jax) returns ``fill_value``
    there. Example: rows 2 and 0 of a matrix::

        gather(x, np.array([[2], [0]]), axes=(0,))   # x[[2, 0]], shape (2, x.shape[1])

    This is the point form; ``fx.lax.gather`` (:mod:`fx.lax.general_indexing`) also takes jax's
    ``dimension_numbers`` form. ``slice_sizes`` is not read here.
    """
    mode = GatherScatterMode.parse(mode)
    if mode in (CLIP, PROMISE_IN_BOUNDS):  # (a promise reads clamped, as XLA's gather)
        fill_value = None
    elif fill_value is not None:
        fill_value = np.asarray(fill_value).item()
    return gather_p.bind(operand, indices, axes=tuple(int(a) for a in axes), mode=mode,
                         fill_value=fill_value)


def _gather_jvp(primals, tangents, *, axes, mode, fill_value):
    (operand, indices), (t, _) = primals, tangents
    ans = gather_p.bind(operand, indices, axes=axes, mode=mode, fill_value=fill_value)
    if isinstance(t, Zero):
        return ans, Zero.like(ans)
    # Filled positions do not depend on the operand: their tangent is zero, not the fill.
    t_fill = None if mode in (CLIP, PROMISE_IN_BOUNDS) else 0
    return ans, gather_p.bind(t, indices, axes=axes, mode=mode, fill_value=t_fill)


def _gather_transpose(ct, operand, indices, *, axes, mode, fill_value):
    if is_undefined(indices):
        raise ValueError("gather: the indices cannot be a linear input")
    zeros = full(operand.aval.shape, 0, operand.aval.dtype)
    return [scatter_add_p.bind(zeros, indices, ct, axes=axes, mode=mode), None]


def _gather_batch(axis, vals, dims, *, axes, mode, fill_value):
    (operand, indices), (od, idd) = vals, dims
    params = dict(mode=mode, fill_value=fill_value)
    if idd is None:
        # The operand's batch dimension is one more dimension taken whole.
        new_axes = tuple(a + (a >= od) for a in axes)
        out = gather_p.bind(operand, indices, axes=new_axes, **params)
        rest_before = sum(1 for d in range(od) if d not in new_axes)
        return out, get_aval(indices).ndim - 1 + rest_before
    indices = moveaxis(indices, idd, 0)
    if od is None:
        return gather_p.bind(operand, indices, axes=axes, **params), 0
    operand = moveaxis(operand, od, 0)
    indices, new_axes = _with_batch_column(indices, axes)
    return gather_p.bind(operand, indices, axes=new_axes, **params), 0


def _with_batch_column(indices, axes):
    """Index the batch dimension (now in front of operand and indices) by an iota column, so
    each batch element reads (or writes) its own slice of the operand."""
    aval = get_aval(indices)
    column = broadcasted_iota(aval.dtype, aval.shape[:-1] + (1,), 0)
    return concatenate([column, indices], aval.ndim - 1), (0,) + tuple(a + 1 for a in axes)


jvp.jvp_rules[gather_p] = _gather_jvp
transpose.deftranspose(gather_p, _gather_transpose)
batching.batch_rules[gather_p] = _gather_batch
# An extended dtype's stored words (a PRNG key's) are operand dimensions after every indexed
# one, taken whole: the same gather reads whole keys.
physical_rules[gather_p] = lambda in_avals, out_avals, *args, **params: gather_p.bind(
    *args, **params)


# --- the scatter family -----------------------------------------------------------------------


def _scatter_primitive(name: str, combine: str, allow_bool: bool) -> Primitive:
    prim = Primitive(name)  # params: axes, mode

    def abstract_eval(operand, indices, updates, *, axes, mode):
        _check_indices(name, operand, indices, axes, mode, promise=True)
        want = indices.shape[:-1] + tuple(operand.shape[d] for d in _rest(operand.ndim, axes))
        if updates.shape != want:
            raise shape_error(
                name, f"updates must have shape indices.shape[:-1] + [operand dims not in "
                f"axes={axes}] = {want}", operand, indices, updates,
            )
        if updates.dtype != operand.dtype:
            raise shape_error(name, "updates must have the operand's dtype", operand, updates)
        if not allow_bool and operand.dtype == dtypes.bool_:
            raise shape_error(name, "does not accept bool operands", operand)
        return operand

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_scatter_impl(combine))

    def batch_rule(axis, vals, dims, *, axes, mode):
        (operand, indices, updates), (od, idd, ud) = vals, dims
        operand = bdim_at_front(operand, od, axis.size)
        if idd is None:
            # Shift the indexed axes past the batch dimension, which is the first one taken
            # whole: the updates carry it right after their batch (index) dimensions.
            updates = matchaxis(axis.size, ud, get_aval(indices).ndim - 1, updates)
            return prim.bind(operand, indices, updates, axes=tuple(a + 1 for a in axes),
                             mode=mode), 0
        indices, new_axes = _with_batch_column(moveaxis(indices, idd, 0), axes)
        updates = bdim_at_front(updates, ud, axis.size)
        return prim.bind(operand, indices, updates, axes=new_axes, mode=mode), 0

    batching.batch_rules[prim] = batch_rule
    return prim


scatter_p = _scatter_primitive("scatter", "set", allow_bool=True)
physical_rules[scatter_p] = lambda in_avals, out_avals, *args, **params: scatter_p.bind(
    *args, **params)  # (whole PRNG keys set, as gather reads them)
scatter_add_p = _scatter_primitive("scatter_add", "add", allow_bool=False)
scatter_mul_p = _scatter_primitive("scatter_mul", "mul", allow_bool=False)
scatter_min_p = _scatter_primitive("scatter_min", "min", allow_bool=True)
scatter_max_p = _scatter_primitive("scatter_max", "max", allow_bool=True)


def _scatter_fn(prim: Primitive, what: str):
    def f(operand, indices, updates, axes: Sequence[int], *, mode=None,
          indices_are_sorted: bool = False, unique_indices: bool = False):
        # PROMISE_IN_BOUNDS stays on the primitive: it drops an out-of-range update, as XLA's
        # scatter, and its transpose reads the cotangent back clamped, as XLA's gather.
        mode = GatherScatterMode.parse(mode)
        return prim.bind(operand, indices, updates, axes=tuple(int(a) for a in axes),
                         mode=mode)

    f.__name__ = prim.name
    f.__doc__ = (
        f"``operand`` with ``updates`` {what} at the positions in ``indices``.\n\n"
        "``indices`` has shape ``batch + (len(axes),)`` and ``updates`` has shape ``batch + "
        "[operand dims not in axes]``; ``mode='drop'`` (the default, as in jax) ignores "
        "updates at out-of-range indices, ``'clip'`` clamps them. Example::\n\n"
        f"    {prim.name}(zeros(3), np.array([[0], [0]]), array([1., 2.]), axes=(0,))"
    )
    return f


scatter = _scatter_fn(scatter_p, "written (the last one wins for repeated positions)")
scatter_add = _scatter_fn(scatter_add_p, "added (repeated positions accumulate)")
scatter_mul = _scatter_fn(scatter_mul_p, "multiplied in")
scatter_min = _scatter_fn(scatter_min_p, "combined by minimum")
scatter_max = _scatter_fn(scatter_max_p, "combined by maximum")


def _gather_back(x, indices, axes, mode, fill_value=0):
    """The scatter's inverse read: each update's position in an operand-shaped ``x``
    (``fill_value`` for updates a drop-mode scatter discards; clamped under a promise, as
    jax's transposes read with a gather in the scatter's mode)."""
    if mode is PROMISE_IN_BOUNDS:
        mode = CLIP
    return gather_p.bind(x, indices, axes=axes, mode=mode,
                         fill_value=None if mode is CLIP else fill_value)


def _zeros(x):
    aval = get_aval(x)
    return full(aval.shape, 0, aval.dtype)


def _as(x, like):
    return convert_element_type(x, get_aval(like).dtype)


# scatter_add: linear in operand and updates; its transpose reads the cotangent back.

jvp.deflinear_in(scatter_add_p, 0, 2)


def _scatter_add_transpose(ct, operand, indices, updates, *, axes, mode):
    if is_undefined(indices):
        raise ValueError("scatter_add: the indices cannot be a linear input")
    ct_updates = _gather_back(ct, indices, axes, mode) if is_undefined(updates) else None
    return [ct if is_undefined(operand) else None, None, ct_updates]


transpose.deftranspose(scatter_add_p, _scatter_add_transpose)


# scatter (set). Which update wins a repeated position is found by scattering update ids; the
# winners' values and tangents then go in with scatter_add, which transposes (jax does the
# same, for the same reason). The primal comes from the masked form too, so value and tangent
# always agree on the winner.


def _scatter_jvp(primals, tangents, *, axes, mode):
    operand, indices, updates = primals
    t_op, _, t_upd = tangents
    if isinstance(t_op, Zero) and isinstance(t_upd, Zero):
        ans = scatter_p.bind(operand, indices, updates, axes=axes, mode=mode)
        return ans, Zero.like(ans)
    upd_aval = get_aval(updates)
    batch = get_aval(indices).shape[:-1]
    n = math.prod(batch)
    id_dtype = dtypes.int32 if n < 2**31 - 1 else dtypes.int64
    ids = add(_row_ids(id_dtype, batch, upd_aval.shape), 1)
    no_ids = full(get_aval(operand).shape, 0, id_dtype)
    winners = scatter_p.bind(no_ids, indices, ids, axes=axes, mode=mode)
    won = eq(_gather_back(winners, indices, axes, mode), ids)
    untouched = eq(winners, full((), 0, id_dtype))

    def combine(base, upd):
        kept = select_n(untouched, _zeros(base), base)
        written = scatter_add_p.bind(_zeros(base), indices, select_n(won, _zeros(upd), upd),
                                     axes=axes, mode=mode)
        return add(kept, written)

    ans = combine(operand, updates)
    return ans, combine(jvp.instantiate(t_op), jvp.instantiate(t_upd))


def _row_ids(dtype, batch, shape):
    """The row-major number of each update's batch position, broadcast over its rest dims."""
    flat = broadcasted_iota(dtype, (math.prod(batch),), 0)
    per_row = reshape(flat, batch)
    return broadcast_in_dim(per_row, shape, tuple(range(len(batch))))


jvp.jvp_rules[scatter_p] = _scatter_jvp


# scatter_mul: out = operand * (product of the updates at each position).


def _scatter_mul_jvp(primals, tangents, *, axes, mode):
    operand, indices, updates = primals
    t_op, _, t_upd = tangents
    params = dict(axes=axes, mode=mode)
    ans = scatter_mul_p.bind(operand, indices, updates, **params)
    out = None
    if not isinstance(t_op, Zero):
        out = scatter_mul_p.bind(t_op, indices, updates, **params)
    if not isinstance(t_upd, Zero):
        # d out / d u_b = operand * (product of the other updates at b's position), formed
        # without dividing by zero: from the product of the nonzero updates there and the
        # number of zero updates there.
        zero = eq(updates, _as(0, updates))
        ones = full(get_aval(operand).shape, 1, get_aval(operand).dtype)
        nonzero_prod = scatter_mul_p.bind(ones, indices, select_n(zero, updates, _as(1, updates)),
                                          **params)
        zero_count = scatter_add_p.bind(_zeros(operand), indices,
                                        select_n(zero, _zeros(updates), _as(1, updates)),
                                        **params)
        prod_back = _gather_back(nonzero_prod, indices, axes, mode)
        count_back = _gather_back(zero_count, indices, axes, mode)
        others_if_nonzero = select_n(eq(count_back, _as(0, updates)), _zeros(updates),
                                     div(prod_back, select_n(zero, updates, _as(1, updates))))
        others_if_zero = select_n(eq(count_back, _as(1, updates)), _zeros(updates), prod_back)
        others = select_n(zero, others_if_nonzero, others_if_zero)
        spread = scatter_add_p.bind(_zeros(operand), indices, mul(t_upd, others), **params)
        contrib = mul(spread, operand)
        out = contrib if out is None else add(out, contrib)
    return ans, out


def _scatter_mul_transpose(ct, operand, indices, updates, *, axes, mode):
    if is_undefined(updates) or is_undefined(indices):
        raise ValueError("scatter_mul: only the operand can be a linear input")
    return [scatter_mul_p.bind(ct, indices, updates, axes=axes, mode=mode), None, None]


jvp.jvp_rules[scatter_mul_p] = _scatter_mul_jvp
transpose.deftranspose(scatter_mul_p, _scatter_mul_transpose)


# scatter_min / scatter_max: the tangent at a position is the mean of the tangents of every
# value (the operand's and the updates') equal to the result there.


def _extremal_jvp(prim: Primitive):
    def rule(primals, tangents, *, axes, mode):
        operand, indices, updates = primals
        t_op, _, t_upd = tangents
        params = dict(axes=axes, mode=mode)
        ans = prim.bind(operand, indices, updates, **params)
        if isinstance(t_op, Zero) and isinstance(t_upd, Zero):
            return ans, Zero.like(ans)
        # NaN fill: a dropped update never equals the result.
        won = eq(updates, _gather_back(ans, indices, axes, mode, float("nan")))
        kept = eq(operand, ans)
        one = _as(1, operand)
        count = add(select_n(kept, _zeros(operand), full(get_aval(operand).shape, 1,
                                                           get_aval(operand).dtype)),
                    scatter_add_p.bind(_zeros(operand), indices,
                                       select_n(won, _zeros(updates), _as(1, updates)), **params))
        total = None
        if not isinstance(t_op, Zero):
            total = select_n(kept, _zeros(operand), t_op)
        if not isinstance(t_upd, Zero):
            written = scatter_add_p.bind(_zeros(operand), indices,
                                         select_n(won, _zeros(updates), t_upd), **params)
            total = written if total is None else add(total, written)
        return ans, div(total, lax_max(count, one))

    return rule


jvp.jvp_rules[scatter_min_p] = _extremal_jvp(scatter_min_p)
jvp.jvp_rules[scatter_max_p] = _extremal_jvp(scatter_max_p)
