"""``fx.numpy.pad``: every NumPy padding mode, with jax's semantics.

Takes an array, static ``pad_width`` (and static ``stat_length``/``end_values``), a mode name or
a function; returns the padded array, built from slices, reversals, reductions and
concatenations along one axis at a time, so it traces under ``jit``/``vmap`` and differentiates
(``constant_values`` may be traced). Axes are padded in order and each axis' statistics,
edges and reflections read the array as padded along the axes before it (NumPy's and jax's
corners). Integer statistics (``mean``, ``median``) are rounded half to even, as jax's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fx import dtypes, lax
from fx.core import ConcretizationTypeError, get_aval
from fx.numpy._promote import asarray, broadcast_to_shape, ensure_arraylike, to_array

__all__ = ["pad"]

# The keyword arguments each mode takes (any other is an error, as in jax).
_MODE_KWARGS = {
    "constant": ("constant_values",), "edge": (), "empty": (), "wrap": (),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def _pairs(value, nd: int, name: str) -> tuple[tuple, ...]:
    """``value`` (a scalar, ``(v,)``, ``(before, after)``, ``((before, after),)`` or one pair
    per axis) as ``nd`` static ``(before, after)`` pairs."""
    try:
        arr = np.asarray(value)
    except ConcretizationTypeError:
        raise ConcretizationTypeError(f"fx.numpy.pad: {name} must be static (Python or NumPy "
                                      "numbers), got a traced value") from None
    except ValueError:
        raise TypeError(f"fx.numpy.pad: the entries of {name} must have the same shape, got "
                        f"{value!r}") from None
    if arr.dtype == object:
        raise TypeError(f"fx.numpy.pad: the entries of {name} must have the same shape, got "
                        f"{value!r}")
    shape = arr.shape
    if shape == (nd, 2):
        return tuple((arr[i, 0].item(), arr[i, 1].item()) for i in range(nd))
    if shape in ((1, 2), (2,)):
        flat = arr.reshape(2)
        return ((flat[0].item(), flat[1].item()),) * nd
    if shape in ((1,), ()):
        v = arr.reshape(()).item()
        return ((v, v),) * nd
    raise ValueError(f"fx.numpy.pad: {name} of shape {shape} does not fit an array of rank "
                     f"{nd}; give a scalar, (v,), (before, after), ((before, after),) or "
                     f"shape ({nd}, 2)")


def _slice(x, start: int, stop: int, axis: int):
    return lax.slice_in_dim(x, start, stop, 1, axis)


def _along(x, values, count: int, axis: int):
    """``values`` (size 1 along ``axis``) repeated ``count`` times along ``axis``."""
    shape = list(get_aval(x).shape)
    shape[axis] = count
    return broadcast_to_shape(values, tuple(shape), "fx.numpy.pad")


def _refuse_empty(widths, shape, mode: str) -> None:
    for k, (b, a) in enumerate(widths):
        if shape[k] == 0 and (b or a):
            raise ValueError(f"fx.numpy.pad: cannot apply {mode!r} padding to the empty axis "
                             f"{k} (only 'constant' and 'empty' extend an empty axis)")


def _constant(x, widths, constant_values):
    aval = get_aval(x)
    fill = asarray(constant_values) if isinstance(constant_values, (list, tuple)) else \
        to_array(constant_values, "fx.numpy.pad")
    value = lax.convert_element_type(fill, aval.dtype, aval.weak_type)
    vshape = get_aval(value).shape
    if len(vshape) == 1 and vshape[0] == 1:
        value = lax.reshape(value, ())
    elif len(vshape) == 1 and vshape[0] != 2 or len(vshape) > 2:
        raise ValueError(f"fx.numpy.pad: constant_values of shape {vshape} are not supported; "
                         "give a scalar, (v,), (before, after) or one pair per axis")
    if not get_aval(value).shape:
        return lax.pad(x, value, [(b, a, 0) for b, a in widths])
    value = broadcast_to_shape(value, (aval.ndim, 2), "fx.numpy.pad (constant_values)")
    for k, (b, a) in enumerate(widths):
        for side, w in ((0, b), (1, a)):
            if w:
                cfg = [(0, 0, 0)] * aval.ndim
                cfg[k] = (w, 0, 0) if side == 0 else (0, w, 0)
                v = lax.reshape(lax.slice(value, (k, side), (k + 1, side + 1)), ())
                x = lax.pad(x, v, cfg)
    return x


def _edge(x, widths):
    _refuse_empty(widths, get_aval(x).shape, "edge")
    for k, (b, a) in enumerate(widths):
        n = get_aval(x).shape[k]
        if n and (b or a):
            first, last = _slice(x, 0, 1, k), _slice(x, n - 1, n, k)
            x = lax.concatenate([_along(x, first, b, k), x, _along(x, last, a, k)], k)
    return x


def _wrap(x, widths):
    _refuse_empty(widths, get_aval(x).shape, "wrap")
    for k, (b, a) in enumerate(widths):
        n = get_aval(x).shape[k]
        if not n or not (b or a):
            continue
        whole_before, part_before = divmod(b, n)
        whole_after, part_after = divmod(a, n)
        parts = [_slice(x, n - part_before, n, k)] if part_before else []
        parts += [x] * (whole_before + 1 + whole_after)
        parts += [_slice(x, 0, part_after, k)] if part_after else []
        x = lax.concatenate(parts, k)
    return x


def _mirror(x, widths, mode: str, reflect_type: str):
    """reflect (the edge value not repeated) or symmetric (repeated) padding, in chunks of at
    most one reflection each; ``odd`` reflects the values through the edge (``2 * edge - v``)
    and each chunk's far end is the next chunk's edge."""
    _refuse_empty(widths, get_aval(x).shape, mode)
    odd = reflect_type == "odd"
    for k, (b, a) in enumerate(widths):
        n = get_aval(x).shape[k]
        if not n:
            continue
        skip = 1 if mode == "reflect" and n > 1 else 0  # the edge itself is not reflected
        for before, width in ((True, b), (False, a)):
            m = get_aval(x).shape[k]
            edge = _slice(x, 0, 1, k) if before else _slice(x, m - 1, m, k)
            while width > 0:
                count = min(width, n - skip)
                width -= count
                m = get_aval(x).shape[k]
                if before:
                    piece = _slice(x, skip, skip + count, k)
                else:
                    stop = m if mode == "symmetric" or n == 1 else m - 1
                    piece = _slice(x, stop - count, stop, k)
                piece = lax.rev(piece, (k,))
                if odd:
                    piece = 2 * edge - piece
                    if n > 1:
                        pn = get_aval(piece).shape[k]
                        edge = _slice(piece, 0, 1, k) if before else _slice(piece, pn - 1, pn, k)
                x = lax.concatenate([piece, x] if before else [x, piece], k)
    return x


def _stat_function(mode: str) -> Callable:
    from fx.numpy import quantiles, reductions

    return {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
            "median": quantiles.median}[mode]


def _stats(x, widths, stat_length, mode: str):
    from fx.numpy.ufuncs import round as round_

    stat = _stat_function(mode)
    lengths = None if stat_length is None else _pairs(stat_length, get_aval(x).ndim,
                                                       "stat_length")
    for k, (b, a) in enumerate(widths):
        aval = get_aval(x)
        if lengths is None:
            s_before = s_after = stat(x, axis=k, keepdims=True)
        else:
            lb, la = (int(v) for v in lengths[k])
            if lb == 0 or la == 0:
                raise ValueError("fx.numpy.pad: stat_length of 0 yields no value for padding")
            n = aval.shape[k]
            lb, la = min(lb, n), min(la, n)
            s_before = stat(_slice(x, 0, lb, k), axis=k, keepdims=True)
            s_after = stat(_slice(x, n - la, n, k), axis=k, keepdims=True)
        if np.issubdtype(aval.dtype, np.integer):
            s_before, s_after = round_(s_before), round_(s_after)
        s_before = lax.convert_element_type(s_before, aval.dtype, aval.weak_type)
        s_after = lax.convert_element_type(s_after, aval.dtype, aval.weak_type)
        x = lax.concatenate([_along(x, s_before, b, k), x, _along(x, s_after, a, k)], k)
    return x


def _ramp(end, edge, count: int, axis: int, dtype, weak: bool):
    """``count`` values from ``end`` towards ``edge`` (size 1 along ``axis``), ``edge`` itself
    excluded: jax's ``linspace(end, edge, count, endpoint=False, dtype=dtype)``, computed as it
    does (``end * (1 - t) + edge * t`` in the inexact dtype, ``t = i / count`` in its real
    dtype; integers rounded down), so the values agree bit for bit."""
    comp = dtypes.to_inexact_dtype(dtype)
    shape = list(get_aval(edge).shape)
    shape[axis] = count
    steps_shape = [1] * len(shape)
    steps_shape[axis] = count
    real = dtypes.real_dtype(comp)
    t = lax.div(lax.convert_element_type(lax.iota(real, count), real), lax.full((), count, real))
    t = lax.convert_element_type(lax.reshape(t, steps_shape), comp)
    start = lax.convert_element_type(lax.full((), end, np.asarray(end).dtype), comp)
    stop = lax.convert_element_type(edge, comp)
    out = start * (1 - t) + stop * t
    if dtypes.is_int(dtype):
        out = lax.floor(out)
    return lax.convert_element_type(broadcast_to_shape(out, tuple(shape), "fx.numpy.pad"),
                                    dtype, weak)


def _linear_ramp(x, widths, end_values):
    ends = _pairs(end_values, get_aval(x).ndim, "end_values")
    for k, (b, a) in enumerate(widths):
        aval = get_aval(x)
        n = aval.shape[k]
        before = _ramp(ends[k][0], _slice(x, 0, 1, k), b, k, aval.dtype, aval.weak_type)
        after = _ramp(ends[k][1], _slice(x, n - 1, n, k), a, k, aval.dtype, aval.weak_type)
        x = lax.concatenate([before, x, lax.rev(after, (k,))], k)
    return x


def _empty(x, widths):
    # Unspecified values in NumPy; zeros, as jax's.
    aval = get_aval(x)
    return lax.pad(x, lax.full((), 0, aval.dtype, aval.weak_type),
                   [(b, a, 0) for b, a in widths])


def _with_function(x, widths, func: Callable, kwargs: dict):
    from fx.numpy.vectorization import apply_along_axis

    x = _constant(x, widths, 0)
    for k in range(get_aval(x).ndim):
        x = apply_along_axis(func, k, x, widths[k], k, kwargs)
    return x


def pad(array, pad_width, mode: str | Callable = "constant", **kwargs):
    """Pad ``array`` by ``pad_width``: an int, ``(before, after)``, or one pair per axis.

    Modes, as NumPy's and jax's:

    - ``constant``: ``constant_values`` (a scalar, ``(before, after)`` or one pair per axis;
      may be traced); ``empty``: zeros, as jax's;
    - ``edge``: the edge values; ``wrap``: the array repeated;
    - ``reflect`` / ``symmetric``: mirrored without / with the edge value;
      ``reflect_type="odd"`` reflects the values through the edge (``2 * edge - v``);
    - ``maximum``, ``minimum``, ``mean``, ``median``: the statistic of the ``stat_length``
      values nearest each side (default: the whole axis; integers round half to even);
    - ``linear_ramp``: a ramp from ``end_values`` (default 0) to the edge value;
    - a function ``f(vector, iaxis_pad_width, iaxis, kwargs)`` returning each zero-padded
      vector along each axis with its pads filled (jax's convention: it returns the vector).

    Pads wider than the array repeat the pattern, as NumPy's.

    >>> fx.numpy.pad(fx.numpy.arange(3), 2, mode="reflect")
    Array([2, 1, 0, 1, 2, 1, 0], dtype=int32)
    >>> fx.numpy.pad(fx.numpy.array([1.0, 3.0]), (2, 1), mode="linear_ramp", end_values=5)
    Array([5., 3., 1., 3., 0.], dtype=float32)
    """
    ensure_arraylike("fx.numpy.pad", array)
    x = to_array(array, "fx.numpy.pad")
    nd = get_aval(x).ndim
    widths = _pairs(pad_width, nd, "pad_width")
    if not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool)
               for pair in widths for w in pair):
        raise TypeError(f"fx.numpy.pad: pad_width must be integers, got {pad_width!r}")
    widths = tuple((int(b), int(a)) for b, a in widths)
    if callable(mode):
        return _with_function(x, widths, mode, kwargs)
    if not isinstance(mode, str) or mode not in _MODE_KWARGS:
        raise NotImplementedError(f"fx.numpy.pad: padding mode {mode!r} is not implemented; "
                                  f"use one of {sorted(_MODE_KWARGS)} or a function")
    unexpected = set(kwargs) - set(_MODE_KWARGS[mode])
    if unexpected:
        raise ValueError(f"fx.numpy.pad: mode {mode!r} takes no keyword arguments "
                         f"{sorted(unexpected)}; it takes {list(_MODE_KWARGS[mode])}")
    if nd == 0:
        return x
    if any(b < 0 or a < 0 for b, a in widths):
        raise ValueError(f"fx.numpy.pad: pad widths must be non-negative, got {pad_width!r}")
    if mode == "constant":
        return _constant(x, widths, kwargs.get("constant_values", 0))
    if mode == "empty":
        return _empty(x, widths)
    if mode == "edge":
        return _edge(x, widths)
    if mode == "wrap":
        return _wrap(x, widths)
    if mode in ("reflect", "symmetric"):
        reflect_type = kwargs.get("reflect_type", "even")
        if reflect_type not in ("even", "odd"):
            raise ValueError(f"fx.numpy.pad: reflect_type must be 'even' or 'odd', got "
                             f"{reflect_type!r}")
        return _mirror(x, widths, mode, reflect_type)
    if mode == "linear_ramp":
        return _linear_ramp(x, widths, kwargs.get("end_values", 0))
    return _stats(x, widths, kwargs.get("stat_length"), mode)
