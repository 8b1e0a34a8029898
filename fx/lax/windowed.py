"""Windowed reductions: ``reduce_window`` with ``max``, ``min`` and ``add``, and the window
geometry shared with convolutions.

Every dimension of the operand is windowed. The operand is first *base-dilated* (``d - 1``
holes between neighbours), then padded by ``(low, high)`` per dimension (negative values
crop); windows of ``window_dimensions`` elements, ``window_dilation`` apart, start every
``window_strides`` elements. Holes and padding hold the reduction's identity, so they never
win a max or add to a sum. The result has one element per window position:
``(padded - ((w - 1) * window_dilation + 1)) // stride + 1`` per dimension (0 when the window
does not fit).

Primitives (params ``window_dimensions``, ``window_strides``, ``padding`` (pairs),
``base_dilation``, ``window_dilation``, all tuples):

- ``reduce_window_sum``, ``reduce_window_max``, ``reduce_window_min``: ``operand -> out``.
- ``select_and_gather_add`` (param ``select``, "max" or "min"): ``(tangent, operand) -> out``,
  per window the tangent at the *first* maximal (minimal) operand element in row-major window
  order; padding and holes count as candidates holding the identity with a zero tangent. This
  is the jvp of max/min pooling.
- ``select_and_scatter_add``: ``(source, operand) -> like operand``, its transpose: each
  window's source value added at that same position. This is the gradient of max pooling,
  which puts a window's whole cotangent on the first maximal element, as XLA and jax do.
  On ties jax's *jvp* may pick another maximal element (its reduction order); fx's jvp
  picks the same one as the gradient, so the two stay transposes of each other. Unlike jax,
  fx also differentiates max/min pooling with window dilation, negative padding and rank 0.

The NumPy helpers :func:`dilate_and_pad` and :func:`window_view` build strided views of the
windows; convolutions use them too.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import Primitive, Tracer, get_aval
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.batching import bdim_at_front
from fx.lax import extrema
from fx.lax.base import full, shape_error
from fx.lax.elementwise import add, convert_element_type, max, min
from fx.lax.structural import pad

__all__ = ["padtype_to_pads", "reduce_window"]

# --- window geometry ------------------------------------------------------------------------------


def dilate_dim(n: int, dilation: int) -> int:
    """The size of ``n`` elements with ``dilation - 1`` holes between neighbours."""
    return 0 if n == 0 else (n - 1) * dilation + 1


def windows_out_size(padded: int, window_extent: int, stride: int) -> int:
    """How many windows of ``window_extent`` (already dilated) fit at ``stride``."""
    return 0 if padded < window_extent else (padded - window_extent) // stride + 1


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """``(low, high)`` pads for a padding name: ``'VALID'`` (none), ``'SAME'`` (output size
    ``ceil(in / stride)``; an odd total puts the extra element high) or ``'SAME_LOWER'``
    (extra element low). ``window_shape`` is the dilated window extent.

    >>> fx.lax.padtype_to_pads((5,), (3,), (2,), "SAME")
    [(1, 1)]
    """
    name = str(padding).upper()
    if name == "VALID":
        return [(0, 0)] * len(in_shape)
    if name not in ("SAME", "SAME_LOWER"):
        raise ValueError(
            f"padding must be 'VALID', 'SAME', 'SAME_LOWER' or a sequence of (low, high) "
            f"pairs, got {padding!r}")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-n // s)
        total = builtins.max((out - 1) * s + w - n, 0)
        small = total // 2
        pads.append((total - small, small) if name == "SAME_LOWER" else (small, total - small))
    return pads


# --- NumPy helpers (on host or CuPy buffers) ------------------------------------------------------


def dilate_and_pad(x, dilation: Sequence[int], padding: Sequence[tuple[int, int]], fill):
    """``x`` with ``dilation - 1`` copies of ``fill`` between neighbours and ``(low, high)``
    edges of ``fill`` per dimension (negative edges crop). One allocation and one copy; ``x``
    itself when there is nothing to do."""
    if all(d == 1 for d in dilation) and all(lo == 0 and hi == 0 for lo, hi in padding):
        return x
    shape, src, dst = [], [], []
    for n, d, (lo, hi) in zip(x.shape, dilation, padding):
        size = lo + dilate_dim(n, d) + hi
        # Elements j land at lo + j * d; keep those inside [0, size).
        first = (-lo + d - 1) // d if lo < 0 else 0
        stop = 0 if size <= 0 else builtins.max(0, (size - 1 - lo) // d + 1)
        stop = stop if stop < n else n
        shape.append(builtins.max(size, 0))
        src.append(slice(first, builtins.max(stop, first)))
        dst.append(slice(lo + first * d, lo + (stop - 1) * d + 1, d) if stop > first else None)
    out = np.full_like(x, fill, shape=shape, order="C")
    if all(s is not None for s in dst):
        out[tuple(dst)] = x[tuple(src)]
    return out


def window_view(x, window: Sequence[int], strides: Sequence[int], dilation: Sequence[int],
                axes: Sequence[int] | None = None):
    """A view of the windows of ``x`` over ``axes`` (default: all): the other dimensions
    stay, windowed axes become the window positions, and the window's own dimensions follow
    at the end. Nothing is copied."""
    axes = tuple(range(x.ndim)) if axes is None else tuple(axes)
    extent = [(w - 1) * r + 1 for w, r in zip(window, dilation)]
    counts = [windows_out_size(x.shape[a], e, s) for a, e, s in zip(axes, extent, strides)]
    if any(c == 0 for c in counts) or any(w == 0 for w in window):
        shape = list(x.shape)
        for a, c in zip(axes, counts):
            shape[a] = c
        return np.empty_like(x, shape=tuple(shape) + tuple(window), order="C")
    view = np.lib.stride_tricks.sliding_window_view(x, extent, axis=axes)
    index = [slice(None)] * x.ndim
    for a, s in zip(axes, strides):
        index[a] = slice(None, None, s)
    index += [slice(None, None, r) for r in dilation]
    return view[tuple(index)]


def identity(kind: str, dtype) -> object:
    """The value that never wins a max/min (or adds nothing to a sum)."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return 0
    if dtype == dtypes.bool_:
        return kind == "min"
    if dtypes.is_float(dtype):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def _widen_half(x):
    return x.astype(np.float32) if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


# --- the primitives -------------------------------------------------------------------------------

_WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
                  "window_dilation")


def _out_shape(name: str, x: ShapedArray, window_dimensions, window_strides, padding,
               base_dilation, window_dilation) -> tuple[int, ...]:
    n = x.ndim
    for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                    ("padding", padding), ("base_dilation", base_dilation),
                    ("window_dilation", window_dilation)):
        if len(v) != n:
            raise shape_error(name, f"{what} {v} needs one entry per operand dimension ({n})", x)
    if any(w < 1 for w in window_dimensions):
        raise shape_error(name, f"window_dimensions {window_dimensions} must be positive", x)
    for what, v in (("window_strides", window_strides), ("base_dilation", base_dilation),
                    ("window_dilation", window_dilation)):
        if any(s < 1 for s in v):
            raise shape_error(name, f"{what} {v} must be positive", x)
    shape = []
    for d, w, s, (lo, hi), bd, wd in zip(x.shape, window_dimensions, window_strides, padding,
                                         base_dilation, window_dilation):
        # Cropping more than the dimension holds leaves no windows (as in jax).
        padded = lo + dilate_dim(d, bd) + hi
        shape.append(windows_out_size(padded, (w - 1) * wd + 1, s))
    return tuple(shape)


def _windows(x, fill, params):
    xp = dilate_and_pad(x, params["base_dilation"], params["padding"], fill)
    return window_view(xp, params["window_dimensions"], params["window_strides"],
                       params["window_dilation"])


_NUMERIC = frozenset(dtypes.FLOATING + dtypes.INTEGER)
_ORDERED = _NUMERIC | {dtypes.bool_}


def _reduce_window(kind: str, kinds: frozenset, what: str) -> Primitive:
    name = f"reduce_window_{kind}"
    prim = Primitive(name)

    def abstract_eval(x, **params):
        if x.dtype not in kinds:
            raise shape_error(name, f"requires {what} operands", x)
        return x.update(shape=_out_shape(name, x, **params))

    def impl(x, **params):
        win = _windows(_widen_half(x), identity(kind, x.dtype), params)
        axes = tuple(range(x.ndim, win.ndim))
        if kind == "sum":
            out = np.sum(win, axis=axes)
        else:
            out = extrema.reduce(kind, win, axes, initial=identity(kind, x.dtype))
        return out.astype(x.dtype, copy=False)

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(impl)
    batching.batch_rules[prim] = _unary_window_batch(prim)
    return prim


def _with_batch_window(d: int, params: dict) -> dict:
    """Window params with a trivial window (size 1, no padding) at a batch dimension ``d``."""
    trivial = {"window_dimensions": 1, "window_strides": 1, "padding": (0, 0),
               "base_dilation": 1, "window_dilation": 1}
    out = dict(params)
    for k in _WINDOW_PARAMS:
        out[k] = params[k][:d] + (trivial[k],) + params[k][d:]
    return out


def _unary_window_batch(prim: Primitive) -> Callable:
    def rule(axis, vals, dims, **params):
        (x,), (d,) = vals, dims
        return prim.bind(x, **_with_batch_window(d, params)), d

    return rule


reduce_window_sum_p = _reduce_window("sum", _NUMERIC, "numeric (not bool)")
reduce_window_max_p = _reduce_window("max", _ORDERED, "numeric or bool")
reduce_window_min_p = _reduce_window("min", _ORDERED, "numeric or bool")


# --- select_and_gather_add / select_and_scatter_add ----------------------------------------------

select_and_gather_add_p = Primitive("select_and_gather_add")  # params: select + window params
select_and_scatter_add_p = Primitive("select_and_scatter_add")


def _first_choice(operand, select: str, params):
    """Per window, the row-major index within the window of the first max (min) element."""
    win = _windows(_widen_half(operand), identity(select, operand.dtype), params)
    nd = operand.ndim
    flat = win.reshape(win.shape[:nd] + (math.prod(win.shape[nd:]),))
    return flat, (np.argmax(flat, axis=-1) if select == "max" else np.argmin(flat, axis=-1))


@select_and_gather_add_p.def_abstract_eval
def _gather_abstract_eval(tangent, operand, *, select, **params):
    name = "select_and_gather_add"
    if tangent.shape != operand.shape or tangent.dtype != operand.dtype:
        raise shape_error(name, "tangent and operand must have the same shape and dtype",
                          tangent, operand)
    return tangent.update(shape=_out_shape(name, operand, **params), weak_type=False)


@select_and_gather_add_p.def_impl
def _gather_impl(tangent, operand, *, select, **params):
    _, pick = _first_choice(operand, select, params)
    tw = _windows(tangent, 0, params)
    tw = tw.reshape(pick.shape + (math.prod(tw.shape[operand.ndim:]),))
    return np.take_along_axis(tw, pick[..., None], axis=-1)[..., 0]


@select_and_scatter_add_p.def_abstract_eval
def _scatter_abstract_eval(source, operand, *, select, **params):
    name = "select_and_scatter_add"
    out = _out_shape(name, operand, **params)
    if source.shape != out or source.dtype != operand.dtype:
        raise shape_error(name, f"source must have the windows' shape {out} and the operand's "
                          "dtype", source, operand)
    return operand.update(weak_type=False)


@select_and_scatter_add_p.def_impl
def _scatter_impl(source, operand, *, select, **params):
    _, pick = _first_choice(operand, select, params)
    out = np.zeros_like(operand, dtype=source.dtype, order="C")
    if pick.size == 0 or out.size == 0:
        return out
    offsets = np.unravel_index(pick, params["window_dimensions"])
    positions = np.indices(pick.shape, sparse=True)
    valid = np.ones(pick.shape, dtype=bool)
    index = []
    for o, k, n, s, r, bd, (lo, _) in zip(positions, offsets, operand.shape,
                                          params["window_strides"], params["window_dilation"],
                                          params["base_dilation"], params["padding"]):
        t = o * s + k * r - lo  # position in the base-dilated, unpadded operand
        j = t // bd
        valid &= (t % bd == 0) & (j >= 0) & (j < n)
        index.append(np.clip(j, 0, n - 1))
    flat = np.ravel_multi_index(tuple(index), operand.shape)
    np.add.at(out.reshape(-1), flat[valid], source[valid])
    return out


def select_and_gather_add(tangent, operand, select: str, **params):
    return select_and_gather_add_p.bind(tangent, operand, select=select, **params)


def select_and_scatter_add(source, operand, select: str, **params):
    return select_and_scatter_add_p.bind(source, operand, select=select, **params)


def _gather_transpose(ct, tangent, operand, *, select, **params):
    if transpose.is_undefined(operand):
        raise ValueError("select_and_gather_add: cannot transpose with respect to the operand")
    return [select_and_scatter_add(ct, operand, select, **params), None]


def _scatter_transpose(ct, source, operand, *, select, **params):
    if transpose.is_undefined(operand):
        raise ValueError("select_and_scatter_add: cannot transpose with respect to the operand")
    return [select_and_gather_add(ct, operand, select, **params), None]


def _binary_window_batch(prim: Primitive) -> Callable:
    def rule(axis, vals, dims, **params):
        a, x = (bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims))
        return prim.bind(a, x, **_with_batch_window(0, params)), 0

    return rule


# The choice of element is piecewise constant in the operand: only the first argument carries
# a derivative.
jvp.deflinear_in(select_and_gather_add_p, 0)
jvp.deflinear_in(select_and_scatter_add_p, 0)
transpose.deftranspose(select_and_gather_add_p, _gather_transpose)
transpose.deftranspose(select_and_scatter_add_p, _scatter_transpose)
batching.batch_rules[select_and_gather_add_p] = _binary_window_batch(select_and_gather_add_p)
batching.batch_rules[select_and_scatter_add_p] = _binary_window_batch(select_and_scatter_add_p)


# --- derivatives of the reductions ----------------------------------------------------------------


def _chooser_jvp(select: str) -> Callable:
    def tangent(t, ans, x, **params):
        return select_and_gather_add(t, x, select, **params)

    return tangent


jvp.defjvp(reduce_window_max_p, _chooser_jvp("max"))
jvp.defjvp(reduce_window_min_p, _chooser_jvp("min"))


def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    # Input element j sits at lo + j*bd of the padded operand; window o reads o*s + k*r. So
    # ct_x[j] sums ct[o] over o*s + k*r == lo + j*bd: spread ct out by the strides, pad it so
    # that the flipped window lines up, and sum windows strided by the base dilation.
    shape = x.aval.shape
    ct_shape = get_aval(ct).shape
    if math.prod(shape) == 0 or math.prod(ct_shape) == 0:
        return [full(shape, 0, x.aval.dtype)]
    config = []
    for n, m, w, s, (lo, _), bd, r in zip(shape, ct_shape, window_dimensions, window_strides,
                                          padding, base_dilation, window_dilation):
        low = (w - 1) * r - lo
        needed = dilate_dim(n, bd) + (w - 1) * r
        config.append((low, needed - low - dilate_dim(m, s), s - 1))
    spread = pad(ct, 0, config)
    nd = len(shape)
    return [reduce_window_sum_p.bind(
        spread, window_dimensions=window_dimensions, window_strides=base_dilation,
        padding=((0, 0),) * nd, base_dilation=(1,) * nd, window_dilation=window_dilation)]


transpose.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


# --- the fx.lax function --------------------------------------------------------------------------

_MONOIDS = (("sum", add), ("max", max), ("min", min))


def _monoid_of(computation) -> tuple[str, Callable]:
    for kind, fn in _MONOIDS:
        if computation is fn:
            return kind, fn
    raise NotImplementedError(
        "fx.lax.reduce_window: only computation=fx.lax.add, fx.lax.max or fx.lax.min is "
        f"supported, got {computation!r}")


def _ints(name: str, what: str, v, n: int, default: int) -> tuple[int, ...]:
    if v is None:
        return (default,) * n
    out = tuple(int(i) for i in v)
    if len(out) != n:
        raise ValueError(f"{name}: {what} {tuple(v)} needs one entry per operand dimension ({n})")
    return out


def window_params(name: str, shape: Sequence[int], window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> dict:
    """Canonical window params (tuples of ints; string padding resolved on the undilated
    operand shape and the dilated window, as jax does)."""
    n = len(shape)
    window = _ints(name, "window_dimensions", window_dimensions, n, 1)
    strides = _ints(name, "window_strides", window_strides, n, 1)
    wdil = _ints(name, "window_dilation", window_dilation, n, 1)
    bdil = _ints(name, "base_dilation", base_dilation, n, 1)
    if isinstance(padding, str):
        extent = [dilate_dim(w, r) for w, r in zip(window, wdil)]
        pads = tuple(padtype_to_pads(shape, extent, strides, padding))
    else:
        try:
            pads = tuple((int(lo), int(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: padding must be a string or a sequence of (low, high) "
                             f"pairs, got {padding!r}") from None
        if len(pads) != n:
            raise ValueError(f"{name}: padding {pads} needs one pair per dimension ({n})")
    return dict(window_dimensions=window, window_strides=strides, padding=pads,
                base_dilation=bdil, window_dilation=wdil)


def _is_identity(init, kind: str, dtype) -> bool:
    if isinstance(init, Tracer):
        return False
    value = np.asarray(init)
    return value.shape == () and bool(value == np.asarray(identity(kind, dtype), dtype))


def reduce_window(operand, init_value, computation: Callable, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None, padding="VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None):
    """Reduce each window of ``operand`` with ``computation`` (``fx.lax.add``, ``max`` or
    ``min``), starting from ``init_value``.

    Padding and base-dilation holes are skipped; ``init_value`` enters each window's result
    once (as in jax), so the identity (``0``, ``-inf``, ``+inf`` or the integer limits) gives
    the plain windowed reduction and any other value is combined with it.

    >>> x = fx.numpy.arange(6.0).reshape(2, 3)
    >>> fx.lax.reduce_window(x, -fx.numpy.inf, fx.lax.max, (2, 2), (1, 1), "VALID")
    Array([[4., 5.]], dtype=float32)
    """
    kind, combine = _monoid_of(computation)
    aval = get_aval(operand)
    params = window_params("reduce_window", aval.shape, window_dimensions, window_strides,
                           padding, base_dilation, window_dilation)
    prim = {"sum": reduce_window_sum_p, "max": reduce_window_max_p,
            "min": reduce_window_min_p}[kind]
    out = prim.bind(operand, **params)
    if _is_identity(init_value, kind, aval.dtype):
        return out
    if isinstance(init_value, (bool, int, float)) and not isinstance(init_value, np.generic):
        init_value = Array(np.asarray(init_value, aval.dtype), weak_type=True)
    init_aval = get_aval(init_value)
    if init_aval.shape != ():
        raise TypeError(f"reduce_window: init_value must be a scalar, got {init_aval.str_short()}")
    if init_aval.dtype != aval.dtype:
        raise TypeError(f"reduce_window: init_value of dtype {init_aval.dtype} does not match "
                        f"the operand's {aval.str_short()}")
    init_value = convert_element_type(init_value, aval.dtype)
    return combine(out, init_value)
