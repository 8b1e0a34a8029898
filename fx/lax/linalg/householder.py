"""Householder factorizations in LAPACK's packed form: the ``geqrf``, ``householder_product``,
``ormqr``, ``hessenberg`` and ``tridiagonal`` primitives (``fx.lax.linalg.*``), with jax's
signatures.

A packed factorization keeps the elementary reflectors ``H_i = I - tau_i v_i v_i^H`` below
the diagonal (``geqrf``) or below the first subdiagonal (``hessenberg``, ``tridiagonal``
with ``lower``; above the first superdiagonal without) of its first output,
``v_i`` having a unit ``i``-th component that is not stored, and their scalars ``tau_i`` in
the second. ``householder_product`` multiplies the reflectors out into the matrix they stand
for; ``ormqr`` applies it to another matrix without forming it.

Operands are batches of matrices, batch dimensions leading. The impls call LAPACK through
SciPy (``geqrf``, ``orgqr``/``ungqr``, ``ormqr``/``unmqr``, ``gehrd``, ``sytrd``/``hetrd``),
one matrix at a time;
a matrix LAPACK reports a failure for comes back as NaNs, as jax's. jax defines no
derivatives for these primitives (differentiate ``qr``, ``eigh``… instead), so their jvp
rules refuse with a clear error, as jax's missing rules do.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive
from fx.lax.base import shape_error
from fx.lax.linalg._common import (
    batch_at_front,
    check_matrix,
    lapack,
    lapack_per_matrix,
    refuse_jvp,
)

__all__ = ["geqrf", "hessenberg", "householder_product", "ormqr", "tridiagonal"]


# --- geqrf ------------------------------------------------------------------------------------

geqrf_p = Primitive("geqrf", multiple_results=True)  # -> a (packed r and reflectors), taus


@geqrf_p.def_abstract_eval
def _geqrf_abstract_eval(a):
    check_matrix("geqrf", a)
    *batch, m, n = a.shape
    return [a.strip_weak_type(), ShapedArray((*batch, min(m, n)), a.dtype)]


@geqrf_p.def_impl
def _geqrf_impl(a):
    a = np.asarray(a)
    routine = lapack("geqrf", a.dtype)

    def one(x):
        qr, tau, _, info = routine(x)
        return (qr, tau), info == 0

    avals = _geqrf_abstract_eval(ShapedArray(a.shape, a.dtype))
    return lapack_per_matrix(one, [a], a.shape[:-2], avals)


refuse_jvp(geqrf_p, "differentiate fx.lax.linalg.qr instead")
batch_at_front(geqrf_p)


def geqrf(a):
    """Householder QR in LAPACK's packed form: ``(a, taus)`` with ``r`` in the upper triangle
    of ``a`` and the reflectors below it, as jax's internal ``geqrf``.

    >>> import numpy as np
    >>> a, taus = fx.lax.linalg.geqrf(np.array([[3., 1.], [4., 2.]]))
    >>> a[0, 0], taus.shape
    (Array(-5., dtype=float32), (2,))
    """
    return tuple(geqrf_p.bind(a))


# --- householder_product ----------------------------------------------------------------------

householder_product_p = Primitive("householder_product")


@householder_product_p.def_abstract_eval
def _householder_product_abstract_eval(a, taus):
    check_matrix("householder_product", a)
    *batch, m, n = a.shape
    if m < n:
        raise shape_error("householder_product", "needs at least as many rows as columns in "
                          "its first argument", a, taus)
    if taus.dtype != a.dtype or tuple(taus.shape[:-1]) != tuple(batch) or taus.ndim < 1:
        raise shape_error("householder_product", "needs taus [..., k] of a's dtype and batch "
                          "dimensions", a, taus)
    if taus.shape[-1] > min(m, n):
        raise shape_error("householder_product", "must not have more taus than the minimum of "
                          "a's rows and columns", a, taus)
    return a.strip_weak_type()


@householder_product_p.def_impl
def _householder_product_impl(a, taus):
    a, taus = np.asarray(a), np.asarray(taus)
    routine = lapack("orgqr", a.dtype)

    def one(x, t):
        q, _, info = routine(x, t)
        return (q,), info == 0

    return lapack_per_matrix(one, [a, taus], a.shape[:-2],
                             [ShapedArray(a.shape, a.dtype)])[0]


refuse_jvp(householder_product_p, "differentiate fx.lax.linalg.qr instead")
batch_at_front(householder_product_p)


def householder_product(a, taus):
    """The product of the elementary Householder reflectors packed in ``a`` ([..., m, n],
    ``m >= n``) and ``taus`` ([..., k]): the first ``n`` columns of ``H_1 ... H_k``, as
    ``jax.lax.linalg.householder_product``.

    >>> import numpy as np
    >>> x = np.array([[3., 1.], [4., 2.]])
    >>> q = fx.lax.linalg.householder_product(*fx.lax.linalg.geqrf(x))
    >>> np.allclose(np.asarray(q), np.linalg.qr(x)[0], atol=1e-6)
    True
    """
    return householder_product_p.bind(a, taus)


# --- ormqr ------------------------------------------------------------------------------------

ormqr_p = Primitive("ormqr")  # params: left, transpose


@ormqr_p.def_abstract_eval
def _ormqr_abstract_eval(a, taus, c, *, left, transpose):
    check_matrix("ormqr", a)
    check_matrix("ormqr", c)
    *batch, m, _ = a.shape
    if not (a.dtype == taus.dtype == c.dtype):
        raise shape_error("ormqr", "needs operands of one dtype", a, taus, c)
    if tuple(taus.shape[:-1]) != tuple(batch) or tuple(c.shape[:-2]) != tuple(batch):
        raise shape_error("ormqr", "needs equal batch dimensions", a, taus, c)
    if (c.shape[-2] if left else c.shape[-1]) != m:
        side = "rows" if left else "columns"
        raise shape_error("ormqr", f"with left={left} expects c to have as many {side} as the "
                          "Householder matrix a has rows", a, taus, c)
    return c.strip_weak_type()


@ormqr_p.def_impl
def _ormqr_impl(a, taus, c, *, left, transpose):
    a, taus, c = np.asarray(a), np.asarray(taus), np.asarray(c)
    routine = lapack("ormqr", a.dtype)
    trans = ("C" if dtypes.is_complex(a.dtype) else "T") if transpose else "N"
    k = taus.shape[-1]

    def one(x, t, y):
        # LAPACK reads k reflectors from the first k columns of an [m, k] array.
        out, _, info = routine("L" if left else "R", trans, x[:, :k], t, y,
                               max(1, *y.shape) * 64)
        return (out,), info == 0

    return lapack_per_matrix(one, [a, taus, c], a.shape[:-2],
                             [ShapedArray(c.shape, c.dtype)])[0]


refuse_jvp(ormqr_p, "differentiate fx.lax.linalg.qr and a matmul instead")
batch_at_front(ormqr_p)


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """``Q @ c`` (``left``) or ``c @ Q``, with ``Q^H`` for ``transpose``, where ``Q`` is the
    product of the reflectors packed in ``a`` and ``taus`` (from ``geqrf``), without forming
    ``Q``; as ``jax.lax.linalg.ormqr``.

    >>> import numpy as np
    >>> x = np.array([[3., 1.], [4., 2.]])
    >>> a, taus = fx.lax.linalg.geqrf(x)
    >>> np.allclose(np.asarray(fx.lax.linalg.ormqr(a, taus, np.eye(2))), np.linalg.qr(x)[0])
    True
    """
    return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


# --- hessenberg -------------------------------------------------------------------------------

hessenberg_p = Primitive("hessenberg", multiple_results=True)  # -> a (packed), taus [..., n-1]


@hessenberg_p.def_abstract_eval
def _hessenberg_abstract_eval(a):
    check_matrix("hessenberg", a, square=True)
    *batch, n, _ = a.shape
    return [a.strip_weak_type(), ShapedArray((*batch, max(n - 1, 0)), a.dtype)]


@hessenberg_p.def_impl
def _hessenberg_impl(a):
    a = np.asarray(a)
    routine = lapack("gehrd", a.dtype)
    n = a.shape[-1]

    def one(x):
        if n == 0:
            return (x, np.zeros(0, x.dtype)), True
        h, tau, info = routine(x, lo=0, hi=n - 1)
        return (h, tau[: n - 1]), info == 0

    avals = _hessenberg_abstract_eval(ShapedArray(a.shape, a.dtype))
    return lapack_per_matrix(one, [a], a.shape[:-2], avals)


refuse_jvp(hessenberg_p, "the Hessenberg reduction is not unique to first order")
batch_at_front(hessenberg_p)


def hessenberg(a):
    """Reduce square matrices to upper Hessenberg form, as ``jax.lax.linalg.hessenberg``:
    ``[a, taus]`` with the Hessenberg matrix in the upper triangle and first subdiagonal of
    ``a`` and the reflectors (``taus`` [..., n-1]) below.

    >>> import numpy as np
    >>> a, taus = fx.lax.linalg.hessenberg(np.arange(9.).reshape(3, 3))
    >>> float(a[0, 0]), taus.shape
    (0.0, (2,))
    """
    return hessenberg_p.bind(a)


# --- tridiagonal ------------------------------------------------------------------------------

# params: lower; -> a (packed), d [..., n] (real), e [..., n-1] (real), taus [..., n-1]
tridiagonal_p = Primitive("tridiagonal", multiple_results=True)


@tridiagonal_p.def_abstract_eval
def _tridiagonal_abstract_eval(a, *, lower):
    check_matrix("tridiagonal", a, square=True)
    *batch, n, _ = a.shape
    if n == 0:
        raise shape_error("tridiagonal", "needs a nonempty square matrix", a)
    real = dtypes.real_dtype(a.dtype)
    return [a.strip_weak_type(), ShapedArray((*batch, n), real),
            ShapedArray((*batch, n - 1), real), ShapedArray((*batch, n - 1), a.dtype)]


@tridiagonal_p.def_impl
def _tridiagonal_impl(a, *, lower):
    a = np.asarray(a)
    routine = lapack("sytrd", a.dtype)

    def one(x):
        c, d, e, tau, info = routine(x, lower=int(lower))
        return (c, d, e, tau), info == 0

    avals = _tridiagonal_abstract_eval(ShapedArray(a.shape, a.dtype), lower=lower)
    return lapack_per_matrix(one, [a], a.shape[:-2], avals)


refuse_jvp(tridiagonal_p, "differentiate fx.lax.linalg.eigh instead")
batch_at_front(tridiagonal_p)


def tridiagonal(a, *, lower: bool = True):
    """Reduce symmetric (Hermitian) matrices to tridiagonal form ``q^H a q``, reading the
    ``lower`` (or upper) triangle, as ``jax.lax.linalg.tridiagonal``: ``[a, d, e, taus]``
    with the diagonal ``d``, off-diagonal ``e`` (both real) and the reflectors packed in
    ``a`` and ``taus``.

    >>> import numpy as np
    >>> a, d, e, taus = fx.lax.linalg.tridiagonal(np.array([[2., 1.], [1., 3.]]))
    >>> d, e
    (Array([2., 3.], dtype=float32), Array([1.], dtype=float32))
    """
    return tridiagonal_p.bind(a, lower=bool(lower))
