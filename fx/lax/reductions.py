"""Reduction primitives: ``reduce_max``, ``reduce_min``, ``reduce_prod``, the logical/bitwise
``reduce_and``/``reduce_or``/``reduce_xor``, and ``argmax``/``argmin``.

Each takes one operand and static ``axes`` (sorted, distinct, within the rank) and returns the
operand's dtype with those axes removed; ``argmax``/``argmin`` reduce one axis to indices of
``index_dtype``. ``reduce_sum`` itself is declared in :mod:`fx.lax.base` (the interpreters
need it) and re-exported here. Reducing an empty axis gives the reduction's identity, as in
XLA: ``-inf`` (or the dtype's minimum) for ``reduce_max``, ``1`` for ``reduce_prod``; only
``argmax``/``argmin`` reject an empty axis.

``reduce_max``/``reduce_min`` of complex operands order lexicographically (real part, then
imaginary part), as jax's (XLA's) comparator: the reduction is a left fold of
``select(acc > x, acc, x)`` (``<`` for min), so ties keep the later entry and a NaN is only
the answer when no entry after it is chosen over it. ``argmax``/``argmin`` refuse complex,
as jax's.

Each primitive is followed by its jvp and batching rules; none of them is linear.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp
from fx.interpreters.jvp import Zero, instantiate
from fx.lax import extrema
from fx.lax.base import (
    accumulation_dtype,
    broadcast_in_dim,
    full,
    reduce_sum,
    reduce_sum_p,
    reshape,
    shape_error,
    transpose,
)
from fx.lax.base import canonical_axes as _canonical_axes
from fx.lax.elementwise import add, convert_element_type, div, eq, mul
from fx.lax.structural import pad, slice_in_dim

__all__ = [
    "argmax", "argmin", "reduce_and", "reduce_max", "reduce_min", "reduce_or", "reduce_prod",
    "reduce_sum", "reduce_xor",
]

_FLOAT = frozenset(dtypes.FLOATING)
_INT = frozenset(dtypes.INTEGER)
_BOOL = frozenset([dtypes.bool_])
_COMPLEX = frozenset(dtypes.COMPLEX)


def _check_axes(name: str, x: ShapedArray, axes: tuple[int, ...]) -> None:
    if any(not 0 <= a < x.ndim for a in axes) or list(axes) != sorted(set(axes)):
        raise shape_error(name, f"axes {axes} must be sorted, distinct and within the rank", x)


def _reduced_shape(x: ShapedArray, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _half_to_f32(x):
    """Half-precision buffers compute in float32 (as XLA does on CPU/GPU)."""
    return x.astype(np.float32) if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


# --- the family of axis reductions --------------------------------------------------------------


def _identity(kind: str, dtype: np.dtype):
    """The value an empty reduction produces."""
    if kind in ("max", "min"):
        if dtypes.is_inexact(dtype):
            return np.inf if kind == "min" else -np.inf
        if dtype == dtypes.bool_:
            return kind == "min"
        info = np.iinfo(dtype)
        return info.max if kind == "min" else info.min
    if kind == "and":  # all bits set
        return True if dtype == dtypes.bool_ else (-1 if dtypes.is_signed_int(dtype) else
                                                   np.iinfo(dtype).max)
    return {"prod": 1, "or": 0, "xor": 0}[kind]


# The impls use only functions CuPy also provides through NumPy's dispatch (so no
# ``ufunc.reduce``, which CuPy has for add and multiply only, and no ``initial=``).


def _empty_result(x, axes, kind):
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return np.full_like(x, _identity(kind, x.dtype), shape=shape)


def _impl_max(x, axes):
    if any(x.shape[a] == 0 for a in axes):
        return _empty_result(x, axes, "max")
    if np.iscomplexobj(x):
        return _complex_fold("max", x, axes)
    return extrema.reduce("max", _half_to_f32(x), axes)


def _impl_min(x, axes):
    if any(x.shape[a] == 0 for a in axes):
        return _empty_result(x, axes, "min")
    if np.iscomplexobj(x):
        return _complex_fold("min", x, axes)
    return extrema.reduce("min", _half_to_f32(x), axes)


def _complex_fold(kind: str, x: np.ndarray, axes) -> np.ndarray:
    """The lexicographic left fold ``acc = select(acc > x_k, acc, x_k)`` over ``axes`` (``<``
    for min), in row-major order of the reduced entries, as XLA's complex max/min reduce.
    Without NaNs it is the lexicographic extreme, the last one among ties; the loop over the
    entries runs only when a NaN makes the answer depend on the order."""
    kept = [i for i in range(x.ndim) if i not in axes]
    rest = tuple(x.shape[i] for i in kept)
    n = math.prod(x.shape[a] for a in axes)
    rows = np.reshape(np.transpose(x, kept + list(axes)), rest + (n,))
    re, im = rows.real, rows.imag
    if not (np.isnan(re).any() or np.isnan(im).any()):
        best_re = (np.max if kind == "max" else np.min)(re, axis=-1, keepdims=True)
        on_re = re == best_re
        fill = -np.inf if kind == "max" else np.inf
        im_masked = np.where(on_re, im, fill)
        best_im = (np.max if kind == "max" else np.min)(im_masked, axis=-1, keepdims=True)
        wins = on_re & (im_masked == best_im)
        last = n - 1 - np.argmax(wins[..., ::-1], axis=-1)
        return np.take_along_axis(rows, last[..., None], axis=-1)[..., 0]
    acc = rows[..., 0]
    for k in range(1, n):
        v = rows[..., k]
        if kind == "max":
            keep = (acc.real > v.real) | ((acc.real == v.real) & (acc.imag > v.imag))
        else:
            keep = (acc.real < v.real) | ((acc.real == v.real) & (acc.imag < v.imag))
        acc = np.where(keep, acc, v)
    return acc


def _impl_prod(x, axes):
    return np.prod(_half_to_f32(x), axis=axes)


def _tree_reduce(x, axes, op, kind):
    """Reduce ``axes`` with a binary elementwise ``op`` by halving them repeatedly."""
    if any(x.shape[a] == 0 for a in axes):
        return _empty_result(x, axes, kind)
    kept = [i for i in range(x.ndim) if i not in axes]
    rest = tuple(x.shape[i] for i in kept)
    n = math.prod(x.shape[a] for a in axes)
    rows = np.reshape(np.transpose(x, list(axes) + kept), (n,) + rest)
    while rows.shape[0] > 1:
        h = rows.shape[0] // 2
        folded = op(rows[:h], rows[h:2 * h])
        rows = np.concatenate([folded, rows[2 * h:]]) if rows.shape[0] % 2 else folded
    return np.reshape(rows, rest)


def _impl_and(x, axes):
    if x.dtype == np.bool_:
        return np.all(x, axis=axes)
    return _tree_reduce(x, axes, np.bitwise_and, "and")


def _impl_or(x, axes):
    if x.dtype == np.bool_:
        return np.any(x, axis=axes)
    return _tree_reduce(x, axes, np.bitwise_or, "or")


def _impl_xor(x, axes):
    if x.dtype == np.bool_:
        # Parity of the number of True entries.
        return np.sum(x, axis=axes, dtype=np.int64) % 2 == 1
    return _tree_reduce(x, axes, np.bitwise_xor, "xor")


def _reduction(name: str, impl: Callable, kinds: frozenset, what: str) -> Primitive:
    prim = Primitive(name)  # params: axes

    def abstract_eval(x, *, axes):
        if x.dtype not in kinds:
            raise shape_error(name, f"requires {what} operands", x)
        _check_axes(name, x, axes)
        return x.update(shape=_reduced_shape(x, axes))

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(lambda x, *, axes: impl(x, axes).astype(x.dtype, copy=False))
    batching.batch_rules[prim] = _reduction_batch(prim)
    return prim


def _reduction_batch(prim: Primitive) -> Callable:
    # The batch dimension passes through: axes at or after it shift by one.
    def rule(axis, vals, dims, *, axes):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        out_d = d - sum(a < d for a in new_axes)
        return prim.bind(x, axes=new_axes), out_d

    return rule


reduce_max_p = _reduction("reduce_max", _impl_max, _FLOAT | _INT | _BOOL | _COMPLEX,
                          "numeric or bool")
reduce_min_p = _reduction("reduce_min", _impl_min, _FLOAT | _INT | _BOOL | _COMPLEX,
                          "numeric or bool")
reduce_prod_p = _reduction("reduce_prod", _impl_prod, _FLOAT | _INT | _COMPLEX,
                           "numeric (not bool)")
reduce_and_p = _reduction("reduce_and", _impl_and, _INT | _BOOL, "bool or integer")
reduce_or_p = _reduction("reduce_or", _impl_or, _INT | _BOOL, "bool or integer")
reduce_xor_p = _reduction("reduce_xor", _impl_xor, _INT | _BOOL, "bool or integer")


def _chooser_jvp(prim: Primitive) -> Callable:
    """jvp of max/min: the tangent at the chosen entries, averaged over ties (jax's rule; for
    complex operands the entries equal to the chosen one)."""

    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        aval = get_aval(x)
        kept = tuple(i for i in range(aval.ndim) if i not in axes)
        at_ans = convert_element_type(eq(x, broadcast_in_dim(ans, aval.shape, kept)), aval.dtype)
        counts = reduce_sum(at_ans, axes)
        return ans, div(reduce_sum(mul(instantiate(t), at_ans), axes), counts)

    return rule


jvp.jvp_rules[reduce_max_p] = _chooser_jvp(reduce_max_p)
jvp.jvp_rules[reduce_min_p] = _chooser_jvp(reduce_min_p)


def _reduce_prod_jvp(primals, tangents, *, axes):
    # A pairwise product tree carried with its tangent (product rule at each node). Unlike
    # dividing the product by x, this is exact when entries are zero, and it is built from
    # differentiable primitives, so higher derivatives work too.
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    aval = get_aval(x)
    kept = tuple(i for i in range(aval.ndim) if i not in axes)
    n = math.prod(aval.shape[a] for a in axes)
    rest = tuple(aval.shape[k] for k in kept)
    if n == 0:
        return ans, Zero.like(ans)

    def rows(v):
        return reshape(transpose(v, axes + kept), (n,) + rest)

    xs, ts = rows(x), rows(instantiate(t))
    no_pad = ((0, 0, 0),) * len(rest)
    while n > 1:
        if n % 2:
            xs = pad(xs, full((), 1, aval.dtype), ((0, 1, 0),) + no_pad)
            ts = pad(ts, full((), 0, aval.dtype), ((0, 1, 0),) + no_pad)
            n += 1
        h = n // 2
        xa, xb = slice_in_dim(xs, 0, h), slice_in_dim(xs, h, n)
        ta, tb = slice_in_dim(ts, 0, h), slice_in_dim(ts, h, n)
        xs, ts = mul(xa, xb), add(mul(ta, xb), mul(xa, tb))
        n = h
    return ans, reshape(ts, rest)


jvp.jvp_rules[reduce_prod_p] = _reduce_prod_jvp
# reduce_and/or/xor have bool or integer outputs: their tangents are zero without a rule.


# --- reduce_sum's eager numerics ----------------------------------------------------------------
# NumPy sums pairwise (error growing as log n) only along the axis its inner loop walks with
# unit stride; over any other axis it adds whole rows into the result one after another (error
# growing as n: a float32 mean over 10^4 rows is 3e-6 off, where XLA's tree reductions, and
# so jax and fx.jit, are 5e-8 off). Inexact sums therefore lay the reduced axes out last, as
# one contiguous axis, before np.sum. reduce_sum is declared in fx.lax.base (below the
# interpreters, which emit it); this impl replaces the plain np.sum registered there.


def pairwise_sum(x: np.ndarray, axes: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``np.sum(x, axes, dtype)`` summed pairwise over all of ``axes`` together, whichever
    axes they are and however ``x`` is strided (a transposed copy when they are not the
    trailing, contiguous ones)."""
    kept = [i for i in range(x.ndim) if i not in axes]
    trailing = tuple(axes) == tuple(range(len(kept), x.ndim))
    if not (trailing and x.flags.c_contiguous):
        x = np.ascontiguousarray(np.transpose(x, kept + list(axes)))
    out_shape = x.shape[:len(kept)]
    return np.sum(x.reshape(out_shape + (-1,)), axis=-1, dtype=dtype)


@reduce_sum_p.def_impl
def _reduce_sum_impl(x, *, axes):
    acc = accumulation_dtype(x.dtype)
    # Other buffers (CuPy's) reduce as trees already; exact (integer) sums need no care.
    if isinstance(x, np.ndarray) and dtypes.is_inexact(x.dtype) and x.size:
        out = pairwise_sum(x, axes, acc)
    else:
        out = np.sum(x, axis=axes, dtype=acc)
    return out.astype(x.dtype, copy=False)


# --- argmax / argmin ----------------------------------------------------------------------------


def _arg_impl(np_fn: Callable) -> Callable:
    # numpy's argmax/argmin return the first extremal index, and the first NaN if any (a NaN
    # counts as both the largest and the smallest value), as XLA's comparator does.
    def impl(x, *, axes, index_dtype):
        return np.asarray(np_fn(_half_to_f32(x), axis=axes[0])).astype(index_dtype)

    return impl


def _arg_primitive(name: str, np_fn: Callable) -> Primitive:
    prim = Primitive(name)  # params: axes (one axis), index_dtype

    def abstract_eval(x, *, axes, index_dtype):
        if x.dtype not in _FLOAT | _INT | _BOOL:
            raise shape_error(name, "requires numeric or bool operands", x)
        if len(axes) != 1 or not 0 <= axes[0] < x.ndim:
            raise shape_error(name, f"needs exactly one axis within the rank, got axes={axes}", x)
        if x.shape[axes[0]] == 0:
            raise ValueError(
                f"{name}: the reduced dimension {axes[0]} is empty (operand {x.str_short()}); "
                "argmin and argmax require a non-empty reduced dimension"
            )
        if np.dtype(index_dtype) not in _INT:
            raise TypeError(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        return ShapedArray(_reduced_shape(x, axes), index_dtype)

    def batch(axis, vals, dims, *, axes, index_dtype):
        (x,), (d,) = vals, dims
        a = axes[0] + (axes[0] >= d)
        return prim.bind(x, axes=(a,), index_dtype=index_dtype), d - (a < d)

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_arg_impl(np_fn))
    batching.batch_rules[prim] = batch
    return prim


argmax_p = _arg_primitive("argmax", np.argmax)
argmin_p = _arg_primitive("argmin", np.argmin)


# --- the fx.lax functions ---------------------------------------------------------------------


def _axes_param(x, axes: Sequence[int], name: str) -> tuple[int, ...]:
    return tuple(sorted(_canonical_axes(tuple(axes), get_aval(x).ndim, name))) if axes else ()


def _wrapper(prim: Primitive, doc: str) -> Callable:
    def f(operand, axes: Sequence[int]):
        axes = _axes_param(operand, axes, prim.name)
        if not axes:
            get_aval(operand)  # still reject non-array values
            return operand
        return prim.bind(operand, axes=axes)

    f.__name__ = prim.name
    f.__doc__ = doc
    return f


reduce_max = _wrapper(reduce_max_p, """The maximum over ``axes``; NaN propagates and an empty
    reduction gives ``-inf`` (or the dtype's minimum). Gradients are shared equally by tied
    maxima. Example: ``reduce_max(x, (1,))`` of an ``f32[2,3]`` is an ``f32[2]``.""")
reduce_min = _wrapper(reduce_min_p, """The minimum over ``axes`` (see :func:`reduce_max`).""")
reduce_prod = _wrapper(reduce_prod_p, """The product over ``axes``; half precision accumulates
    in float32. Its derivative is exact where entries are zero.""")
reduce_and = _wrapper(reduce_and_p, """Logical (bool) or bitwise (integer) AND over ``axes``.""")
reduce_or = _wrapper(reduce_or_p, """Logical (bool) or bitwise (integer) OR over ``axes``.""")
reduce_xor = _wrapper(reduce_xor_p, """Logical (bool) or bitwise (integer) XOR over ``axes``.""")


def argmax(operand, axis: int, index_dtype=dtypes.int32):
    """The index of the largest entry along ``axis``: the first one on ties, the first NaN if
    any. Example: ``argmax(x, 1, jnp.int32)`` of an ``f32[2,3]`` is an ``i32[2]``."""
    (axis,) = _canonical_axes((axis,), get_aval(operand).ndim, "argmax")
    return argmax_p.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize(index_dtype))


def argmin(operand, axis: int, index_dtype=dtypes.int32):
    """The index of the smallest entry along ``axis`` (ties and NaN as :func:`argmax`)."""
    (axis,) = _canonical_axes((axis,), get_aval(operand).ndim, "argmin")
    return argmin_p.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize(index_dtype))
