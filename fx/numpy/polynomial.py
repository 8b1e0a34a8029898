"""Polynomials as 1-d coefficient arrays, highest power first, as in ``numpy.poly*``:
``poly``, ``polyadd``, ``polysub``, ``polymul``, ``polydiv``, ``polyder``, ``polyint``,
``polyval``, ``polyfit``, and the Vandermonde matrix ``vander``.

Like jax's, they take arrays and scalars, not lists or tuples (a ``TypeError``: wrap them in
``fx.numpy.asarray``). Lengths are static (they are shapes), so everything is a fixed
sequence of ``fx.lax`` ops: ``polyval`` is Horner's rule, ``polymul`` a convolution,
``polydiv`` unrolled long division, ``polyfit`` a Householder QR of the column-scaled
Vandermonde matrix and a Jacobi SVD of its triangular factor. All differentiate, vmap and
compile. ``roots`` (and ``poly`` of a matrix) are the eigenvalues of a companion matrix (of
the matrix), complex, as jax's.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx.core import Tracer, get_aval
from fx.numpy import manipulation, reductions, ufuncs
from fx.numpy._promote import ensure_arraylike, promote_dtypes, promote_to_inexact, to_array
from fx.numpy.convolutions import convolve
from fx.numpy.linalg_decompositions import eigvals

__all__ = ["poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
           "polysub", "polyval", "roots", "vander"]


def _coeffs(name: str, *ps, inexact: bool = False) -> list:
    ensure_arraylike(f"fx.numpy.{name}", *ps)
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
        ensure_arraylike("fx.numpy.polyint", p, k)
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
    ensure_arraylike("fx.numpy.polyval", p, x)
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
    ``prod_i (x - r_i)``; of a square matrix, its characteristic polynomial (from its
    eigenvalues: complex, as jax's).

    Example: ``fnp.poly(fnp.array([1., 2.]))`` is ``[1., -3., 2.]``.
    """
    name = "fx.numpy.poly"
    ensure_arraylike(name, seq_of_zeros)
    (z,) = promote_to_inexact(to_array(seq_of_zeros, name), name=name)
    aval = get_aval(z)
    if aval.ndim == 2 and aval.shape[0] == aval.shape[1] and aval.shape[0] > 0:
        z = eigvals(z)
        aval = get_aval(z)
    if aval.ndim > 1:
        raise ValueError(f"{name}: input must be 1-d or a square matrix, got shape "
                         f"{aval.shape}")
    z = lax.reshape(z, (aval.size,))
    out = lax.full((1,), 1, aval.dtype)
    for i in range(aval.size):
        root = lax.slice_in_dim(z, i, i + 1, 1, 0)
        out = convolve(out, lax.concatenate([lax.full((1,), 1, aval.dtype), lax.neg(root)], 0))
    return lax.reshape(out, ()) if aval.size == 0 else out


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial with coefficients ``p`` (highest power first): the
    eigenvalues of its companion matrix, complex. Leading zeros are stripped, which needs
    concrete coefficients; under ``jit`` pass ``strip_zeros=False``, which keeps the length
    static and returns NaN for the roots the leading zeros stand for (as jax's).

    Example: ``fnp.roots(fnp.array([1., -3., 2.]))`` is ``[2.+0.j, 1.+0.j]``.
    """
    name = "fx.numpy.roots"
    ensure_arraylike(name, p)
    (p,) = promote_to_inexact(to_array(p, name), name=name)
    aval = get_aval(p)
    if aval.ndim == 0:
        p = lax.reshape(p, (1,))
    elif aval.ndim != 1:
        raise ValueError(f"{name}: the coefficients must be rank 1, got shape {aval.shape}")
    n, cdt = _length(p), dtypes.complex_dtype(get_aval(p).dtype)
    if n < 2:
        return lax.full((0,), 0, cdt)
    is_zero = ufuncs.equal(p, 0)
    leading = ufuncs.where(reductions.all(is_zero), n, reductions.argmin(is_zero))
    if strip_zeros:
        if isinstance(leading, Tracer):
            raise TypeError(f"{name}: stripping leading zeros needs concrete coefficients; "
                            "under jit pass strip_zeros=False")
        return _companion_roots(lax.slice_in_dim(p, int(leading), n, 1, 0), cdt)
    # Roll the leading zeros to the end (an all-zero p becomes ones: no LAPACK error), then
    # mark as NaN the roots standing for them, the last ``leading`` after sorting the zero
    # roots last.
    p = ufuncs.where(leading == n, lax.full_like(p, 1), p)
    r = _companion_roots(manipulation.roll(p, -leading), cdt)
    key = lax.convert_element_type(ufuncs.equal(r, 0), dtypes.int32)
    r = lax.sort((key, r), num_keys=1)[1]
    k = get_aval(r).shape[0]
    keep = ufuncs.less(lax.iota(dtypes.int32, k), k - leading)
    return ufuncs.where(keep, r, lax.full_like(r, complex(np.nan, np.nan)))


def _companion_roots(p, cdt):
    n = _length(p)
    if n < 2:
        return lax.full((0,), 0, cdt)
    dt = get_aval(p).dtype
    below = ufuncs.where(lax.iota(dtypes.int32, n - 1)[:, None] - 1
                         == lax.iota(dtypes.int32, n - 1)[None, :], 1, 0).astype(dt)
    lead = lax.slice_in_dim(p, 0, 1, 1, 0)
    first = ufuncs.negative(ufuncs.true_divide(lax.slice_in_dim(p, 1, n, 1, 0), lead))
    companion = lax.concatenate([lax.reshape(first, (1, n - 1)),
                                 lax.slice_in_dim(below, 1, n - 1, 1, 0)], 0)
    return eigvals(companion)


# --- least squares ----------------------------------------------------------------------------


def _householder_qr(a, b):
    """``R`` (k, k) and ``Q^T b`` (k, r) of a tall ``a`` (n, k) and ``b`` (n, r): k
    Householder reflections, unrolled."""
    n, k = get_aval(a).shape
    dt = get_aval(a).dtype
    rows = lax.broadcasted_iota(dtypes.int32, (n,), 0)
    for j in range(k):
        col = lax.reshape(lax.slice_in_dim(a, j, j + 1, 1, 1), (n,))
        x = lax.select(lax.ge(rows, j), col, lax.full_like(col, 0))
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
    return lax.slice(a, (0, 0), (k, k)), lax.slice(b, (0, 0), (k, get_aval(b).shape[1]))


def _dot(x, y):
    return lax.reduce_sum(lax.mul(x, y), (0,))


def _rotate_pairs(w, v):
    """One cyclic sweep of plane rotations over every column pair ``(p, q)`` of ``w``,
    applied to ``v`` too; ``w`` and ``v`` are (k, k)."""
    k = get_aval(w).shape[0]
    wc = [lax.reshape(lax.slice_in_dim(w, j, j + 1, 1, 1), (k,)) for j in range(k)]
    vc = [lax.reshape(lax.slice_in_dim(v, j, j + 1, 1, 1), (k,)) for j in range(k)]
    for p in range(k):
        for q in range(p + 1, k):
            alpha, beta, gamma = _dot(wc[p], wc[p]), _dot(wc[q], wc[q]), _dot(wc[p], wc[q])
            zero = lax.eq(gamma, 0)
            zeta = lax.div(lax.sub(beta, alpha),
                           lax.mul(lax.select(zero, lax.full_like(gamma, 1), gamma), 2.0))
            big = lax.gt(lax.abs(zeta), 1e8)
            z = lax.select(big, lax.full_like(zeta, 1), zeta)
            sgn = lax.select(lax.ge(z, 0), lax.full_like(z, 1), lax.full_like(z, -1))
            t = lax.div(sgn, lax.add(lax.abs(z), lax.sqrt(lax.add(lax.mul(z, z), 1.0))))
            zsafe = lax.select(big, zeta, lax.full_like(zeta, 1))
            t = lax.select(big, lax.div(0.5, zsafe), t)
            t = lax.select(zero, lax.full_like(t, 0), t)
            c = lax.rsqrt(lax.add(lax.mul(t, t), 1.0))
            s = lax.mul(c, t)
            for cols in (wc, vc):
                a, b = cols[p], cols[q]
                cols[p] = lax.sub(lax.mul(a, c), lax.mul(b, s))
                cols[q] = lax.add(lax.mul(a, s), lax.mul(b, c))
    return _stack_columns(wc), _stack_columns(vc)


def _jacobi_svd(r, sweeps: int):
    """One-sided (Hestenes) Jacobi on the columns of a small square ``r``: plane rotations
    ``V`` make the columns of ``W = r V`` orthogonal, so ``r = U S V^T`` with ``S`` the
    column norms of ``W`` and ``U = W / S``. Cyclic sweeps converge quadratically; a fixed
    number of them runs as a loop (``fori_loop``, differentiable with static bounds).
    Returns the columns of ``W`` and of ``V``."""
    k = get_aval(r).shape[0]
    dt = get_aval(r).dtype
    eye = lax.convert_element_type(lax.eq(lax.broadcasted_iota(dtypes.int32, (k, k), 0),
                                          lax.broadcasted_iota(dtypes.int32, (k, k), 1)), dt)
    w, v = lax.fori_loop(0, sweeps, lambda i, wv: _rotate_pairs(*wv), (r, eye))
    w_cols = [lax.reshape(lax.slice_in_dim(w, j, j + 1, 1, 1), (k,)) for j in range(k)]
    v_cols = [lax.reshape(lax.slice_in_dim(v, j, j + 1, 1, 1), (k,)) for j in range(k)]
    return w_cols, v_cols


def _stack_columns(cols):
    k = get_aval(cols[0]).shape[0]
    return lax.concatenate([lax.reshape(c, (k, 1)) for c in cols], 1)


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """The least-squares polynomial of degree ``deg`` through the points ``(x, y)``
    (``y`` may hold several data sets in its columns), highest power first, as
    ``numpy.polyfit``; ``w`` weights each point's residual.

    The Vandermonde matrix, its columns scaled to unit norm, is reduced by a Householder QR
    and its small triangular factor decomposed by one-sided Jacobi (an SVD); singular values
    below ``rcond`` (default ``len(x) * eps``) times the largest are cut, so rank-deficient
    fits give the minimum-norm solution, as numpy's and JAX's SVD-based fits do.
    ``full=True`` returns ``(coefficients, residuals, rank, singular_values, rcond)``;
    ``cov=True`` returns ``(coefficients, covariance)``, the covariance scaled by the
    residual variance unless ``cov="unscaled"``.

    Example: ``fnp.polyfit(fnp.array([0., 1., 2.]), fnp.array([1., 3., 5.]), 1)`` is
    ``[2., 1.]``.
    """
    name = "fx.numpy.polyfit"
    deg = int(deg)
    if deg < 0:
        raise ValueError(f"{name}: expected deg >= 0, got {deg}")
    ensure_arraylike(name, x, y, *(() if w is None else (w,)))
    x, y = promote_to_inexact(x, y, name=name)
    xa, ya = get_aval(x), get_aval(y)
    if xa.ndim != 1 or xa.shape[0] == 0:
        raise TypeError(f"{name}: expected non-empty 1-d x, got shape {xa.shape}")
    if ya.ndim not in (1, 2) or ya.shape[0] != xa.shape[0]:
        raise TypeError(f"{name}: expected y of shape ({xa.shape[0]},) or ({xa.shape[0]}, K), "
                        f"got {ya.shape}")
    n, order = xa.shape[0], deg + 1
    dt = xa.dtype
    if rcond is None:
        rcond = n * float(dtypes.finfo(dt).eps)
    cols = [lax.full((n, 1), 1, dt)]
    for _ in range(deg):
        cols.insert(0, lax.mul(cols[0], lax.reshape(x, (n, 1))))
    lhs = lax.concatenate(cols, 1)
    rhs = y if ya.ndim == 2 else lax.reshape(y, (n, 1))
    nrhs = get_aval(rhs).shape[1]
    if w is not None:
        w = lax.convert_element_type(to_array(w, name), dt)
        if get_aval(w).shape != (n,):
            raise TypeError(f"{name}: expected w of shape ({n},), got {get_aval(w).shape}")
        lhs = lax.mul(lhs, lax.broadcast_in_dim(w, (n, order), (0,)))
        rhs = lax.mul(rhs, lax.broadcast_in_dim(w, get_aval(rhs).shape, (0,)))
    scale = lax.sqrt(lax.reduce_sum(lax.mul(lhs, lhs), (0,)))
    lhs = lax.div(lhs, lax.broadcast_in_dim(scale, (n, order), (1,)))
    # Fewer points than coefficients: zero rows change no residual and let QR run.
    a, b = lhs, rhs
    if n < order:
        a = lax.concatenate([a, lax.full((order - n, order), 0, dt)], 0)
        b = lax.concatenate([b, lax.full((order - n, nrhs), 0, dt)], 0)
    r, qb = _householder_qr(a, b)
    wcols, vcols = _jacobi_svd(r, sweeps=max(8, order))
    sv = lax.sqrt(lax.concatenate([lax.reshape(_dot(c, c), (1,)) for c in wcols], 0))
    cutoff = lax.mul(lax.reduce_max(sv, (0,)), lax.convert_element_type(to_array(rcond), dt))
    kept = lax.gt(sv, cutoff)
    inv_sq = lax.select(kept, lax.div(1.0, lax.mul(sv, sv)), lax.full_like(sv, 0))
    wmat, vmat = _stack_columns(wcols), _stack_columns(vcols)
    # r = U S V^T with U = W / S: the pseudo-inverse solution is V S^-2 W^T (Q^T b).
    proj = lax.mul(lax.broadcast_in_dim(inv_sq, (order, nrhs), (0,)),
                   lax.dot_general(wmat, qb, (((0,), (0,)), ((), ()))))
    c_scaled = lax.dot_general(vmat, proj, (((1,), (0,)), ((), ())))
    c = lax.div(c_scaled, lax.broadcast_in_dim(scale, (order, nrhs), (0,)))
    coeffs = c if ya.ndim == 2 else lax.reshape(c, (order,))
    resid = lax.sub(lax.dot_general(lhs, c_scaled, (((1,), (0,)), ((), ()))), rhs)
    resids = lax.reduce_sum(lax.mul(resid, resid), (0,))
    if full:
        rank = lax.reduce_sum(lax.convert_element_type(kept, dtypes.default_int_dtype()), (0,))
        s_sorted = lax.rev(lax.sort(sv, 0), (0,))
        return coeffs, resids, rank, s_sorted, to_array(rcond)
    if not cov:
        return coeffs
    # (A^T A)^-1 of the scaled A is V S^-2 V^T; undo the column scaling on both sides.
    base = lax.dot_general(lax.mul(vmat, lax.broadcast_in_dim(inv_sq, (order, order), (1,))),
                           vmat, (((1,), (1,)), ((), ())))
    base = lax.div(base, lax.mul(lax.broadcast_in_dim(scale, (order, order), (0,)),
                                 lax.broadcast_in_dim(scale, (order, order), (1,))))
    if cov == "unscaled":
        fac = lax.full((nrhs,), 1, dt)
    else:
        if n <= order:
            raise ValueError(f"{name}: the number of data points ({n}) must exceed the order "
                             f"({order}) to scale the covariance; use cov='unscaled'")
        fac = lax.div(resids, float(n - order))
    if ya.ndim == 1:
        return coeffs, lax.mul(base, lax.reshape(fac, ()))
    grid = (order, order, nrhs)
    return coeffs, lax.mul(lax.broadcast_in_dim(base, grid, (0, 1)),
                           lax.broadcast_in_dim(fac, grid, (2,)))


def vander(x, N: int | None = None, increasing: bool = False):  # noqa: N803
    """The Vandermonde matrix of the 1-D ``x``: column ``j`` is ``x ** (N - 1 - j)`` (``x **
    j`` when ``increasing``), by binary exponentiation in ``x``'s dtype: exact for integers;
    for floats within rounding of jax (which uses ``pow``).

    >>> fx.numpy.vander(fx.numpy.array([2, 3]), 3)
    Array([[4, 2, 1],
           [9, 3, 1]], dtype=int32)
    """
    a = to_array(x, "fx.numpy.vander")
    if get_aval(a).ndim != 1:
        raise ValueError(f"fx.numpy.vander: x must be 1-D, got shape {get_aval(a).shape}")
    n = get_aval(a).shape[0]
    N = n if N is None else operator.index(N)  # noqa: N806
    if N < 0:
        raise ValueError(f"fx.numpy.vander: N must be non-negative, got {N}")
    cols = [lax.reshape(_int_power(a, j), (n, 1)) for j in range(N)]
    if not cols:
        return lax.full((n, 0), 0, get_aval(a).dtype)
    out = lax.concatenate(cols, 1)
    return out if increasing else manipulation.flip(out, 1)


def _int_power(x, j: int):
    """``x ** j`` by square-and-multiply from the low bits (``1`` for ``j = 0``)."""
    acc, base = None, x
    while j:
        if j & 1:
            acc = base if acc is None else lax.mul(acc, base)
        j >>= 1
        if j:
            base = lax.mul(base, base)
    return lax.full_like(x, 1) if acc is None else acc
