"""Polynomials as 1-d coefficient arrays, highest power first, as in ``numpy.poly*``:
``poly``, ``polyadd``, ``polysub``, ``polymul``, ``polydiv``, ``polyder``, ``polyint``,
``polyval``, ``polyfit``.

Lengths are static (they are shapes), so everything is a fixed sequence of ``fx.lax`` ops:
``polyval`` is Horner's rule, ``polymul`` a convolution, ``polydiv`` unrolled long division,
``polyfit`` a Householder QR least-squares solve of the column-scaled Vandermonde matrix.
All differentiate, vmap and compile. ``roots`` (and ``poly`` of a matrix) need eigenvalues,
which fx does not have yet, and are not provided.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import Tracer, get_aval
from fx.numpy import ufuncs
from fx.numpy._promote import promote_dtypes, promote_to_inexact, to_array
from fx.numpy.convolutions import convolve

__all__ = ["poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
           "polysub", "polyval"]


def _coeffs(name: str, *ps, inexact: bool = False) -> list:
    arrs = (promote_to_inexact if inexact else promote_dtypes)(*ps, name=f"fx.numpy.{name}")
    out = []
    for a in arrs:
        aval = get_aval(a)
        if aval.ndim > 1:
            raise ValueError(f"fx.numpy.{name}: coefficients must be 1-d (highest power "
                             f"first), got shape {aval.shape}")
        out.append(lax.reshape(a, (1,)) if aval.ndim == 0 else a)
    return out


def _length(p) -> int:
    return get_aval(p).shape[0]


def _pad_front(p, n: int):
    extra = n - _length(p)
    if extra <= 0:
        return p
    return lax.concatenate([lax.full((extra,), 0, get_aval(p).dtype), p], 0)


def polyadd(a1, a2):
    """The sum of two polynomials (the shorter padded with leading zeros).

    Example: ``fnp.polyadd(fnp.array([1, 2]), fnp.array([1, 0, 0]))`` is ``[1, 1, 2]``.
    """
    a1, a2 = _coeffs("polyadd", a1, a2)
    n = max(_length(a1), _length(a2))
    return ufuncs.add(_pad_front(a1, n), _pad_front(a2, n))


def polysub(a1, a2):
    """The difference of two polynomials, ``a1 - a2``."""
    a1, a2 = _coeffs("polysub", a1, a2)
    n = max(_length(a1), _length(a2))
    return ufuncs.subtract(_pad_front(a1, n), _pad_front(a2, n))


def _trim_leading_zeros(p, name: str):
    if isinstance(p, Tracer):
        raise TypeError(f"fx.numpy.{name}: trim_leading_zeros=True needs concrete coefficients "
                        "(the result's length would depend on traced values); trim outside "
                        "jit")
    host = np.asarray(p)
    nz = np.flatnonzero(host)
    start = int(nz[0]) if nz.size else host.size - 1
    return lax.slice_in_dim(p, max(start, 0), host.size, 1, 0)


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials (the convolution of their coefficients). Integer
    coefficients compute in float, as in JAX.

    Example: ``fnp.polymul(fnp.array([1., 1.]), fnp.array([1., -1.]))`` is ``[1., 0., -1.]``.
    """
    a1, a2 = _coeffs("polymul", a1, a2, inexact=True)
    if trim_leading_zeros:
        a1, a2 = _trim_leading_zeros(a1, "polymul"), _trim_leading_zeros(a2, "polymul")
    if _length(a1) == 0 or _length(a2) == 0:
        return lax.full((1,), 0, get_aval(a1).dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """Quotient and remainder of ``u / v`` by long division: ``u == polyadd(polymul(q, v),
    r)``. The remainder keeps ``u``'s length (leading entries are zero up to rounding) unless
    ``trim_leading_zeros``, which drops the leading ones within ``sqrt(eps)`` of zero
    (concrete inputs only). A zero leading coefficient of ``v`` gives inf/NaN, as in JAX.

    Example: ``fnp.polydiv(fnp.array([1., 3., 2.]), fnp.array([1., 1.]))`` is ``([1., 2.],
    [0., 0., 0.])``.
    """
    u, v = _coeffs("polydiv", u, v, inexact=True)
    m, n = _length(u) - 1, _length(v) - 1
    if n < 0:
        raise ValueError("fx.numpy.polydiv: the divisor v has no coefficients")
    lead = lax.slice_in_dim(v, 0, 1, 1, 0)
    rows = []
    rem = u
    for k in range(max(m - n + 1, 0)):
        d = lax.div(lax.slice_in_dim(rem, k, k + 1, 1, 0), lead)
        rows.append(d)
        shifted = _pad_front(lax.mul(v, lax.broadcast_in_dim(lax.reshape(d, ()), (n + 1,), ())),
                             k + n + 1)
        rem = lax.sub(rem, _pad_back(shifted, m + 1))
    dt = get_aval(u).dtype
    q = lax.concatenate(rows, 0) if rows else lax.full((1,), 0, dt)
    if trim_leading_zeros:
        if isinstance(rem, Tracer):
            raise TypeError("fx.numpy.polydiv: trim_leading_zeros=True needs concrete "
                            "coefficients; trim outside jit")
        host = np.asarray(rem)
        tol = np.sqrt(dtypes.finfo(dt).eps)
        big = np.flatnonzero(np.abs(host) > tol)
        start = int(big[0]) if big.size else host.size - 1
        rem = lax.slice_in_dim(rem, max(start, 0), host.size, 1, 0)
    return q, rem


def _pad_back(p, n: int):
    extra = n - _length(p)
    if extra <= 0:
        return p
    return lax.concatenate([p, lax.full((extra,), 0, get_aval(p).dtype)], 0)


def polyder(p, m: int = 1):
    """The ``m``-th derivative of the polynomial ``p``. Integer coefficients compute in
    float, as in JAX.

    Example: ``fnp.polyder(fnp.array([1., 1., 1.]))`` is ``[2., 1.]``.
    """
    m = int(m)
    if m < 0:
        raise ValueError(f"fx.numpy.polyder: the order of derivative must be non-negative, "
                         f"got m={m}")
    (p,) = _coeffs("polyder", p, inexact=True)
    for _ in range(m):
        n = _length(p)
        if n <= 1:
            return lax.full((0,), 0, get_aval(p).dtype)
        powers = np.arange(n - 1, 0, -1).astype(get_aval(p).dtype)
        p = lax.mul(lax.slice_in_dim(p, 0, n - 1, 1, 0), to_array(powers))
    return p


def polyint(p, m: int = 1, k=None):
    """The ``m``-th antiderivative of ``p``, with integration constants ``k`` (a scalar for
    all, or ``m`` of them in the order of integration; default 0). Integer coefficients
    compute in float.

    Example: ``fnp.polyint(fnp.array([3., 2.]), k=5.)`` is ``[1.5, 2., 5.]``.
    """
    m = int(m)
    if m < 0:
        raise ValueError(f"fx.numpy.polyint: the order of integral must be non-negative, "
                         f"got m={m}")
    if k is None:
        (p,) = _coeffs("polyint", p, inexact=True)
        kk = lax.full((m,), 0, get_aval(p).dtype)
    else:
        # The constants take part in the promotion, as in JAX.
        p, kk = promote_to_inexact(p, k, name="fx.numpy.polyint")
        (p,) = _coeffs("polyint", p)
    dt = get_aval(p).dtype
    if m == 0:
        return p
    if get_aval(kk).ndim == 0:
        kk = lax.broadcast_in_dim(kk, (m,), ())
    if get_aval(kk).shape != (m,):
        raise ValueError(f"fx.numpy.polyint: k must be a scalar or hold m={m} constants, got "
                         f"shape {get_aval(kk).shape}")
    for i in range(m):
        n = _length(p)
        divisors = np.arange(n, 0, -1).astype(dt)
        p = lax.concatenate([lax.div(p, to_array(divisors)) if n else p,
                             lax.slice_in_dim(kk, i, i + 1, 1, 0)], 0)
    return p


def polyval(p, x, *, unroll: int = 16):
    """The polynomial ``p`` at ``x`` (any shape), by Horner's rule. ``unroll`` is accepted for
    compatibility (the loop is always fully unrolled: its length is the static degree).

    Example: ``fnp.polyval(fnp.array([3., 0., 1.]), 5.)`` is ``76.0``.
    """
    del unroll
    (p,) = _coeffs("polyval", p)
    p, x = promote_dtypes(p, x, name="fx.numpy.polyval")
    n = _length(p)
    acc = ufuncs.multiply(x, 0)
    for i in range(n):
        coeff = lax.reshape(lax.slice_in_dim(p, i, i + 1, 1, 0), ())
        acc = ufuncs.add(ufuncs.multiply(acc, x), coeff)
    return acc


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots:
    ``prod_i (x - r_i)``. (A square matrix's characteristic polynomial needs its
    eigenvalues, which fx does not compute yet.)

    Example: ``fnp.poly(fnp.array([1., 2.]))`` is ``[1., -3., 2.]``.
    """
    name = "fx.numpy.poly"
    (z,) = promote_to_inexact(to_array(seq_of_zeros, name), name=name)
    aval = get_aval(z)
    if aval.ndim == 2 and aval.shape[0] == aval.shape[1] and aval.shape[0] > 0:
        raise NotImplementedError(f"{name}: the characteristic polynomial of a matrix (shape "
                                  f"{aval.shape}) needs eigenvalues, which fx does not have "
                                  "yet; pass the roots as a 1-d array")
    if aval.ndim > 1:
        raise ValueError(f"{name}: input must be 1-d or a square matrix, got shape "
                         f"{aval.shape}")
    z = lax.reshape(z, (aval.size,))
    out = lax.full((1,), 1, aval.dtype)
    for i in range(aval.size):
        root = lax.slice_in_dim(z, i, i + 1, 1, 0)
        out = convolve(out, lax.concatenate([lax.full((1,), 1, aval.dtype), lax.neg(root)], 0))
    return lax.reshape(out, ()) if aval.size == 0 else out


# --- least squares ----------------------------------------------------------------------------


def _householder_solve(a, b):
    """Least-squares ``x`` minimizing ``|a x - b|`` for a tall ``a`` (n, k) of full column
    rank and ``b`` (n, r): QR by Householder reflections (k of them, unrolled), then back
    substitution. Also returns R (k, k), for the covariance."""
    n, k = get_aval(a).shape
    dt = get_aval(a).dtype
    rows = lax.broadcasted_iota(dtypes.int32, (n,), 0)
    for j in range(k):
        col = lax.reshape(lax.slice_in_dim(a, j, j + 1, 1, 1), (n,))
        below = lax.ge(rows, j)
        x = lax.select(below, col, lax.full_like(col, 0))
        norm = lax.sqrt(lax.reduce_sum(lax.mul(x, x), (0,)))
        x0 = lax.reshape(lax.slice_in_dim(col, j, j + 1, 1, 0), ())
        # Reflect onto -sign(x0) |x| e_j (no cancellation in x0 - alpha).
        alpha = lax.select(lax.ge(x0, 0), lax.neg(norm), norm)
        v = lax.select(lax.eq(rows, j), lax.sub(x, lax.broadcast_in_dim(alpha, (n,), ())), x)
        vv = lax.reduce_sum(lax.mul(v, v), (0,))
        safe = lax.select(lax.gt(vv, 0), vv, lax.full_like(vv, 1))
        scale = lax.div(lax.full((), 2, dt), safe)

        def reflect(m, v=v, scale=scale):
            proj = lax.dot_general(v, m, (((0,), (0,)), ((), ())))  # v^T m
            upd = lax.mul(lax.broadcast_in_dim(v, get_aval(m).shape, (0,)),
                          lax.broadcast_in_dim(lax.mul(proj, scale), get_aval(m).shape, (1,)))
            return lax.sub(m, upd)

        a, b = reflect(a), reflect(b)
    r = lax.slice(a, (0, 0), (k, k))
    qb = lax.slice(b, (0, 0), (k, get_aval(b).shape[1]))
    sol = [None] * k
    for i in reversed(range(k)):
        acc = lax.slice_in_dim(qb, i, i + 1, 1, 0)
        for j in range(i + 1, k):
            rij = lax.reshape(lax.slice(r, (i, j), (i + 1, j + 1)), ())
            acc = lax.sub(acc, lax.mul(sol[j], rij))
        rii = lax.reshape(lax.slice(r, (i, i), (i + 1, i + 1)), ())
        sol[i] = lax.div(acc, rii)
    return lax.concatenate(sol, 0), r


def _upper_inverse(r):
    """``R^-1`` of an upper-triangular (k, k) ``R`` by back substitution, column by column."""
    k = get_aval(r).shape[0]
    dt = get_aval(r).dtype
    inv = [[None] * k for _ in range(k)]
    for c in range(k):
        for i in reversed(range(k)):
            acc = lax.full((), 1.0 if i == c else 0.0, dt)
            for j in range(i + 1, k):
                acc = lax.sub(acc, lax.mul(lax.reshape(lax.slice(r, (i, j), (i + 1, j + 1)), ()),
                                           inv[j][c]))
            inv[i][c] = lax.div(acc, lax.reshape(lax.slice(r, (i, i), (i + 1, i + 1)), ()))
    rows = [lax.concatenate([lax.reshape(inv[i][c], (1, 1)) for c in range(k)], 1)
            for i in range(k)]
    return lax.concatenate(rows, 0)


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """The least-squares polynomial of degree ``deg`` through the points ``(x, y)``
    (``y`` may hold several data sets in its columns), highest power first, as
    ``numpy.polyfit``; ``w`` weights each point's residual.

    Solved by a Householder QR of the Vandermonde matrix with unit-norm columns, which is as
    accurate as numpy's SVD for full-rank problems; ``rcond`` (an SVD rank cutoff) has
    nothing to cut and is accepted for compatibility. ``cov=True`` also returns the
    coefficients' covariance (scaled by the residual variance; ``cov="unscaled"`` leaves it
    out). ``full=True`` (residuals, rank, singular values) needs an SVD and is not supported.

    Example: ``fnp.polyfit(fnp.array([0., 1., 2.]), fnp.array([1., 3., 5.]), 1)`` is
    ``[2., 1.]``.
    """
    name = "fx.numpy.polyfit"
    deg = int(deg)
    if deg < 0:
        raise ValueError(f"{name}: expected deg >= 0, got {deg}")
    if full:
        raise NotImplementedError(f"{name}: full=True needs a singular value decomposition, "
                                  "which fx does not have yet; call without full=")
    del rcond
    x, y = promote_to_inexact(x, y, name=name)
    xa, ya = get_aval(x), get_aval(y)
    if xa.ndim != 1:
        raise TypeError(f"{name}: expected 1-d x, got shape {xa.shape}")
    if ya.ndim not in (1, 2) or ya.shape[0] != xa.shape[0]:
        raise TypeError(f"{name}: expected y of shape ({xa.shape[0]},) or ({xa.shape[0]}, K), "
                        f"got {ya.shape}")
    n, order = xa.shape[0], deg + 1
    if n < order:
        raise ValueError(f"{name}: {n} points cannot determine a polynomial of degree {deg}; "
                         "lower deg")
    dt = xa.dtype
    cols = [lax.full((n, 1), 1, dt)]
    for _ in range(deg):
        cols.insert(0, lax.mul(cols[0], lax.reshape(x, (n, 1))))
    lhs = lax.concatenate(cols, 1)
    rhs = y if ya.ndim == 2 else lax.reshape(y, (n, 1))
    if w is not None:
        w = lax.convert_element_type(to_array(w, name), dt)
        if get_aval(w).shape != (n,):
            raise TypeError(f"{name}: expected w of shape ({n},), got {get_aval(w).shape}")
        lhs = lax.mul(lhs, lax.broadcast_in_dim(w, (n, order), (0,)))
        rhs = lax.mul(rhs, lax.broadcast_in_dim(w, get_aval(rhs).shape, (0,)))
    scale = lax.sqrt(lax.reduce_sum(lax.mul(lhs, lhs), (0,)))
    lhs = lax.div(lhs, lax.broadcast_in_dim(scale, (n, order), (1,)))
    c, r = _householder_solve(lhs, rhs)
    c = lax.div(c, lax.broadcast_in_dim(scale, get_aval(c).shape, (0,)))
    coeffs = c if ya.ndim == 2 else lax.reshape(c, (order,))
    if not cov:
        return coeffs
    rinv = _upper_inverse(r)
    base = lax.dot_general(rinv, rinv, (((1,), (1,)), ((), ())))  # (A^T A)^-1, scaled A
    base = lax.div(base, lax.mul(lax.broadcast_in_dim(scale, (order, order), (0,)),
                                 lax.broadcast_in_dim(scale, (order, order), (1,))))
    if cov == "unscaled":
        fac = lax.full((get_aval(rhs).shape[1],), 1, dt)
    else:
        if n <= order:
            raise ValueError(f"{name}: the number of data points ({n}) must exceed the order "
                             f"({order}) to scale the covariance; use cov='unscaled'")
        resid = lax.sub(lax.dot_general(lhs, lax.mul(c, lax.broadcast_in_dim(
            scale, get_aval(c).shape, (0,))), (((1,), (0,)), ((), ()))), rhs)
        fac = lax.div(lax.reduce_sum(lax.mul(resid, resid), (0,)), float(n - order))
    if ya.ndim == 1:
        return coeffs, lax.mul(base, lax.reshape(fac, ()))
    k = get_aval(rhs).shape[1]
    grid = (order, order, k)
    return coeffs, lax.mul(lax.broadcast_in_dim(base, grid, (0, 1)),
                           lax.broadcast_in_dim(fac, grid, (2,)))
