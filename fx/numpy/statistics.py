"""Statistics and calculus on sampled data in ``fx.numpy``: ``cov``, ``corrcoef``,
``gradient``, ``interp``, ``trapezoid``, ``unwrap``.

Each takes array-likes with numpy's signature and returns fx arrays computed in the promoted
inexact dtype (integers in the mode's default float), with JAX's options and limits (for
example ``gradient`` has no ``edge_order``, ``interp`` accepts ``left="extrapolate"``). All are
``fx.lax`` compositions (slices, ``dot_general``, sorts and gathers), so they differentiate,
vmap and compile; the shapes depend only on the shapes of the arguments.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy import reductions, sorting, ufuncs
from fx.numpy._promote import (
    broadcast_to_shape,
    canonical_axes,
    canonical_axis,
    promote_dtypes,
    promote_to_inexact,
    to_array,
)
from fx.numpy.indexing import take
from fx.numpy.manipulation import moveaxis, squeeze

__all__ = ["corrcoef", "cov", "gradient", "interp", "trapezoid", "unwrap"]


def _slice(x, start, stop, axis):
    n = get_aval(x).shape[axis]
    start, stop, _ = slice(start, stop).indices(n)
    return lax.slice_in_dim(x, start, stop, 1, axis)


# --- covariance -----------------------------------------------------------------------------


def _variables(x, rowvar: bool, name: str):
    x = to_array(x, name)
    aval = get_aval(x)
    if aval.ndim > 2:
        raise ValueError(f"{name}: m and y must be at most 2-d, got shape {aval.shape}")
    if aval.ndim < 2:
        x = lax.reshape(x, (1, aval.size))
    elif not rowvar and aval.shape[0] != 1:
        x = lax.transpose(x, (1, 0))
    return x


def _weights(w, n: int, what: str, name: str, integer: bool):
    w = to_array(w, name)
    aval = get_aval(w)
    if aval.ndim != 1 or aval.shape[0] != n:
        raise ValueError(f"{name}: {what} must be 1-d with one entry per observation ({n}), "
                         f"got shape {aval.shape}")
    if integer and not (dtypes.is_int(aval.dtype) or aval.dtype == dtypes.bool_):
        raise TypeError(f"{name}: fweights must be integers, got {aval.str_short()}")
    return w


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights=None, aweights=None, dtype=None):
    """The covariance matrix of the variables in the rows of ``m`` (columns when
    ``rowvar=False``), with ``y``'s variables appended, as ``numpy.cov``.

    Normalized by ``N - 1`` (``N`` with ``bias=True``, ``N - ddof`` with ``ddof``);
    ``fweights`` (integer repeat counts) and ``aweights`` (relative importances) weight the
    observations. A single variable gives a 0-d result.

    Example: ``fnp.cov(fnp.array([[0., 1., 2.], [2., 1., 0.]]))`` is ``[[1., -1.], [-1., 1.]]``.
    """
    name = "fx.numpy.cov"
    x = _variables(m, rowvar, name)
    if y is not None:
        x, yv = promote_dtypes(x, _variables(y, rowvar, name), name=name)
        if get_aval(x).shape[1] != get_aval(yv).shape[1]:
            raise ValueError(f"{name}: m and y need the same number of observations, got "
                             f"{get_aval(x).shape[1]} and {get_aval(yv).shape[1]}")
        x = lax.concatenate([x, yv], 0)
    if dtype is not None:
        x = lax.convert_element_type(x, dtypes.canonicalize(dtype))
    (x,) = promote_to_inexact(x, name=name)
    dt = get_aval(x).dtype
    nvar, n = get_aval(x).shape
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        w = lax.convert_element_type(_weights(fweights, n, "fweights", name, True), dt)
    if aweights is not None:
        a = lax.convert_element_type(_weights(aweights, n, "aweights", name, False), dt)
        w = a if w is None else lax.mul(w, a)
    if w is None:
        avg = reductions.mean(x, axis=1)
        fact = lax.full((), float(n - ddof), dt)
    else:
        w_sum = reductions.sum(w)
        avg = lax.div(reductions.sum(lax.mul(x, lax.broadcast_in_dim(w, (nvar, n), (1,))),
                                     axis=1), w_sum)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = lax.sub(w_sum, float(ddof))
        else:
            fact = lax.sub(w_sum, lax.div(lax.mul(float(ddof), reductions.sum(
                lax.mul(w, a))), w_sum))
    fact = lax.max(fact, lax.full_like(fact, 0))
    xc = lax.sub(x, lax.broadcast_in_dim(avg, (nvar, n), (0,)))
    xw = xc if w is None else lax.mul(xc, lax.broadcast_in_dim(w, (nvar, n), (1,)))
    if dtypes.is_complex(dt):  # E[(x - mean) conj(y - mean)], as numpy and jax
        xw = lax.conj(xw)
    c = lax.dot_general(xc, xw, (((1,), (1,)), ((), ())))
    c = lax.div(c, fact)
    return squeeze(c)


def corrcoef(x, y=None, rowvar: bool = True, dtype=None):
    """Pearson correlation coefficients of the variables (see :func:`cov`), clipped to
    ``[-1, 1]`` (complex coefficients: the real and imaginary parts separately, as jax).
    Example: ``fnp.corrcoef(fnp.array([1., 2., 3.]), fnp.array([3., 2., 1.]))``
    is ``[[1., -1.], [-1., 1.]]``."""
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:
        return lax.div(c, c)
    k = get_aval(c).shape[0]
    d = lax.reduce_sum(lax.select(lax.eq(lax.broadcasted_iota(dtypes.int32, (k, k), 0),
                                         lax.broadcasted_iota(dtypes.int32, (k, k), 1)),
                                  c, lax.full_like(c, 0)), (1,))
    cplx = dtypes.is_complex(get_aval(c).dtype)
    # The diagonal of a complex covariance is real: jax takes its real part's square root.
    d = lax.convert_element_type(lax.sqrt(lax.real(d)), get_aval(c).dtype) if cplx else lax.sqrt(d)
    c = lax.div(c, lax.broadcast_in_dim(d, (k, k), (0,)))
    c = lax.div(c, lax.broadcast_in_dim(d, (k, k), (1,)))
    if cplx:
        return lax.complex(lax.clamp(-1.0, lax.real(c), 1.0), lax.clamp(-1.0, lax.imag(c), 1.0))
    return lax.clamp(-1.0, c, 1.0)


# --- gradient -------------------------------------------------------------------------------


def _gradient_along(f, h, axis: int):
    """Second-order central differences inside, first-order at the two ends; ``h`` is a
    scalar spacing or the 1-d coordinates along ``axis``."""
    nd = get_aval(f).ndim
    first = lax.sub(_slice(f, 1, 2, axis), _slice(f, 0, 1, axis))
    last = lax.sub(_slice(f, -1, None, axis), _slice(f, -2, -1, axis))
    if get_aval(h).ndim == 0:
        inner = lax.div(lax.sub(_slice(f, 2, None, axis), _slice(f, None, -2, axis)),
                        lax.mul(h, 2.0))
        first, last = lax.div(first, h), lax.div(last, h)
    else:
        shape = tuple(get_aval(f).shape[axis] if i == axis else 1 for i in range(nd))
        x = lax.reshape(h, shape)
        step = lax.sub(_slice(x, 1, None, axis), _slice(x, None, -1, axis))
        div, mul = ufuncs.true_divide, ufuncs.multiply
        first = div(first, _slice(step, 0, 1, axis))
        last = div(last, _slice(step, -1, None, axis))
        # With left and right steps s and t, the derivative at the middle point is
        # (s**2 f[+1] + (t**2 - s**2) f[0] - t**2 f[-1]) / (s t (s + t)).
        s, t = _slice(step, None, -1, axis), _slice(step, 1, None, axis)
        denom = lax.mul(lax.mul(s, t), lax.add(s, t))
        inner = div(ufuncs.add(ufuncs.subtract(mul(lax.mul(s, s), _slice(f, 2, None, axis)),
                                               mul(lax.mul(t, t), _slice(f, None, -2, axis))),
                               mul(lax.sub(lax.mul(t, t), lax.mul(s, s)),
                                   _slice(f, 1, -1, axis))), denom)
    shape = get_aval(f).shape
    grid = tuple(d if i != axis else get_aval(inner).shape[axis] for i, d in enumerate(shape))
    inner = broadcast_to_shape(inner, grid, "fx.numpy.gradient")
    return lax.concatenate([first, inner, last], axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The derivative of sampled data ``f`` along each axis (``axis`` picks some): central
    differences inside, one-sided at the boundaries. ``varargs`` give the spacing: nothing
    (1), one scalar for all axes, or one scalar or 1-d coordinate array per axis. Returns one
    array for a single axis, else a list.

    Example: ``fnp.gradient(fnp.array([1., 2., 4., 7.]))`` is ``[1., 1.5, 2.5, 3.]``.
    """
    name = "fx.numpy.gradient"
    if edge_order is not None:
        raise NotImplementedError(f"{name}: edge_order is not supported (as in JAX); the "
                                  "boundaries use first-order differences")
    (f,) = promote_to_inexact(to_array(f, name), name=name)
    aval = get_aval(f)
    single = isinstance(axis, (int, np.integer))
    axes = canonical_axes(axis, aval.ndim, name) if axis is not None else tuple(range(aval.ndim))
    if single:
        axes = (canonical_axis(axis, aval.ndim, name),)
    if len(varargs) == 0:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"{name}: expected 0, 1 or {len(axes)} spacings (one per axis), got "
                        f"{len(varargs)}")
    out = []
    for ax, h in zip(axes, spacings):
        if aval.shape[ax] < 2:
            raise ValueError(f"{name}: shape of f along axis {ax} must be at least 2 to take "
                             f"a difference, got shape {aval.shape}")
        h = lax.convert_element_type(to_array(h, name), aval.dtype)
        if get_aval(h).ndim == 1 and get_aval(h).shape[0] != aval.shape[ax]:
            raise ValueError(f"{name}: coordinates of length {get_aval(h).shape[0]} for axis "
                             f"{ax} of length {aval.shape[ax]}")
        if get_aval(h).ndim > 1:
            raise ValueError(f"{name}: spacing must be a scalar or 1-d, got shape "
                             f"{get_aval(h).shape}")
        out.append(_gradient_along(f, h, ax))
    return out[0] if len(out) == 1 else out


# --- interp ---------------------------------------------------------------------------------


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` (``xp`` increasing) at
    ``x``. Outside ``[xp[0], xp[-1]]`` it gives ``left``/``right`` (default: ``fp[0]`` and
    ``fp[-1]``), or continues the end segment with ``"extrapolate"``; with ``period`` the
    points repeat and ``left``/``right`` are ignored. Complex ``fp`` (and ``left``/``right``)
    interpolate their real and imaginary parts; complex ``x``/``xp`` raise ``ValueError``,
    as in jax.

    Example: ``fnp.interp(2.5, fnp.array([1., 2., 3.]), fnp.array([3., 2., 0.]))`` is ``1.0``.
    """
    name = "fx.numpy.interp"
    if any(dtypes.is_complex(get_aval(to_array(v, name)).dtype) for v in (x, xp)):
        raise ValueError(f"{name}: complex x and xp values are not supported")
    if dtypes.is_complex(get_aval(to_array(fp, name)).dtype):
        fp = to_array(fp, name)

        def part(fn, v):
            return v if v is None or isinstance(v, str) else fn(to_array(v, name))

        re, im = (interp(x, xp, fn(fp), part(fn, left), part(fn, right), period)
                  for fn in (lax.real, lax.imag))
        return lax.complex(re, im)
    x, xp, fp = promote_to_inexact(x, xp, fp, name=name)
    if get_aval(xp).ndim != 1 or get_aval(fp).ndim != 1:
        raise ValueError(f"{name}: xp and fp must be 1-d, got shapes {get_aval(xp).shape} and "
                         f"{get_aval(fp).shape}")
    if get_aval(xp).shape != get_aval(fp).shape or get_aval(xp).shape[0] == 0:
        raise ValueError(f"{name}: xp and fp must have the same non-zero length, got "
                         f"{get_aval(xp).shape} and {get_aval(fp).shape}")
    for side, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"{name}: {side} must be a number, None or 'extrapolate', got "
                             f"{v!r}")
    dt = get_aval(x).dtype
    if period is not None:
        period = lax.convert_element_type(to_array(period, name), dt)
        x = lax.rem(x, period)
        x = lax.select(lax.lt(x, 0), lax.add(x, period), x)
        xm = lax.rem(xp, period)
        xm = lax.select(lax.lt(xm, 0), lax.add(xm, period), xm)
        xp, fp = lax.sort((xm, fp), 0, num_keys=1)
        xp = lax.concatenate([lax.sub(_slice(xp, -1, None, 0), period), xp,
                              lax.add(_slice(xp, 0, 1, 0), period)], 0)
        fp = lax.concatenate([_slice(fp, -1, None, 0), fp, _slice(fp, 0, 1, 0)], 0)
    n = get_aval(xp).shape[0]
    if n == 1:
        return broadcast_to_shape(fp, get_aval(x).shape, name) if get_aval(x).shape else \
            lax.reshape(fp, ())
    i = lax.clamp(1, sorting.searchsorted(xp, x, side="right"), n - 1)
    lo_x, hi_x = take(xp, lax.sub(i, 1)), take(xp, i)
    lo_f, hi_f = take(fp, lax.sub(i, 1)), take(fp, i)
    dx = lax.sub(hi_x, lo_x)
    flat = lax.le(lax.abs(dx), 0)
    safe = lax.select(flat, lax.full_like(dx, 1), dx)
    f = lax.add(lo_f, lax.mul(lax.div(lax.sub(x, lo_x), safe), lax.sub(hi_f, lo_f)))
    f = lax.select(flat, lo_f, f)
    if period is not None:
        return f
    x0, x1 = _slice(xp, 0, 1, 0), _slice(xp, 1, 2, 0)
    xn, xm1 = _slice(xp, -1, None, 0), _slice(xp, -2, -1, 0)
    f0, f1 = _slice(fp, 0, 1, 0), _slice(fp, 1, 2, 0)
    fn, fm1 = _slice(fp, -1, None, 0), _slice(fp, -2, -1, 0)
    shape = get_aval(x).shape

    def scalar(v):
        return broadcast_to_shape(lax.reshape(v, ()), shape, name) if shape else \
            lax.reshape(v, ())

    for side, value in (("left", left), ("right", right)):
        edge_x, edge_f = (x0, f0) if side == "left" else (xn, fn)
        outside = lax.lt(x, scalar(x0)) if side == "left" else lax.gt(x, scalar(xn))
        if value is None:
            repl = scalar(edge_f)
        elif isinstance(value, str):
            nx, nf = (x1, f1) if side == "left" else (xm1, fm1)
            slope = lax.div(lax.sub(nf, edge_f), lax.sub(nx, edge_x))
            repl = lax.add(scalar(edge_f), lax.mul(lax.sub(x, scalar(edge_x)), scalar(slope)))
        else:
            repl = broadcast_to_shape(lax.convert_element_type(to_array(value, name), dt),
                                      shape, name)
        f = lax.select(outside, repl, f)
    return f


# --- trapezoid, unwrap ----------------------------------------------------------------------


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x``
    (1-d, or ``y``'s shape) or with constant spacing ``dx``.

    Example: ``fnp.trapezoid(fnp.array([1., 2., 3.]))`` is ``4.0``.
    """
    name = "fx.numpy.trapezoid"
    if x is None:
        (y,) = promote_to_inexact(to_array(y, name), name=name)
    else:
        y, x = promote_to_inexact(y, x, name=name)
    if get_aval(y).ndim == 0:
        raise ValueError(f"{name}: y must be at least 1-d, got a scalar")
    axis = canonical_axis(axis, get_aval(y).ndim, name)
    y = moveaxis(y, axis, -1)
    n = get_aval(y).shape[-1]
    last = get_aval(y).ndim - 1
    if x is None:
        d = lax.convert_element_type(to_array(dx, name), get_aval(y).dtype)
    else:
        if get_aval(x).ndim == 1:
            if get_aval(x).shape[0] != n:
                raise ValueError(f"{name}: x of length {get_aval(x).shape[0]} for y of length "
                                 f"{n} along axis {axis}")
        else:
            x = moveaxis(x, axis, -1)
        d = lax.sub(_slice(x, 1, None, get_aval(x).ndim - 1),
                    _slice(x, None, -1, get_aval(x).ndim - 1))
    mid = lax.mul(lax.add(_slice(y, 1, None, last), _slice(y, None, -1, last)), 0.5)
    prod = lax.mul(broadcast_to_shape(d, get_aval(mid).shape, name) if get_aval(d).ndim else d,
                   mid)
    return lax.reduce_sum(prod, (last,))


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` (default ``period / 2``) along ``axis``
    replaced by their value modulo ``period``, as ``numpy.unwrap`` (integer data with an
    integer period stays integer).

    Example: ``fnp.unwrap(fnp.array([0., 3., 6.5]))`` is ``[0., 3., 0.21681469]``.
    """
    name = "fx.numpy.unwrap"
    p, period = promote_dtypes(to_array(p, name), period, name=name)
    dt = get_aval(p).dtype
    if dt == dtypes.bool_:
        raise TypeError(f"{name}: bool input is not supported; convert it to a number type")
    if dtypes.is_complex(dt):
        raise ValueError(f"{name} does not support complex inputs, got {get_aval(p).str_short()}")
    if get_aval(p).ndim == 0:
        raise ValueError(f"{name}: p must be at least 1-d, got a scalar")
    axis = canonical_axis(axis, get_aval(p).ndim, name)
    dd = sorting.diff(p, axis=axis)
    if dtypes.is_float(dt):
        high, ambiguous = lax.div(period, 2.0), None
    else:
        # An integer period splits into integer halves; an odd one has no ambiguous boundary.
        high = ufuncs.floor_divide(period, 2)
        ambiguous = lax.eq(ufuncs.remainder(period, 2), 0)
    if discont is None:
        discont = ufuncs.true_divide(period, 2)
    low = lax.neg(high)
    ddmod = lax.add(ufuncs.remainder(lax.sub(dd, low), period), low)
    at_low = lax.and_(lax.eq(ddmod, low), lax.gt(dd, 0))
    if ambiguous is not None:
        at_low = lax.and_(at_low, ambiguous)
    ddmod = ufuncs.where(at_low, high, ddmod)
    correct = lax.sub(ddmod, dd)
    small = ufuncs.less(ufuncs.absolute(dd), discont)
    correct = ufuncs.where(small, lax.full_like(correct, 0), correct)
    shifted = sorting.cumsum(correct, axis=axis)
    head = _slice(p, 0, 1, axis)
    return lax.concatenate([head, lax.add(_slice(p, 1, None, axis), shifted)], axis)
