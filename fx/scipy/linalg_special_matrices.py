"""``fx.scipy.linalg``'s special-matrix constructors: ``block_diag``, ``circulant``,
``companion``, ``convolution_matrix``, ``dft``, ``fiedler``, ``fiedler_companion``,
``hadamard``, ``hankel``, ``helmert``, ``hilbert``, ``invhilbert``, ``invpascal``, ``leslie``,
``pascal``, ``toeplitz`` (re-exported by ``fx.scipy.linalg``), with jax.scipy.linalg's
signatures, dtypes and errors.

Constructors from arrays (``companion``, ``fiedler``, ``fiedler_companion``, ``leslie``,
``convolution_matrix``) take batches over leading dimensions and are differentiable in their
entries, as jax's. Constructors from a size build NumPy constants: the binomial matrices
(``pascal``, ``invpascal``, ``invhilbert``) are exact integers (then rounded to the dtype),
where jax's lgamma-based binomials are off by about 1e-6 relative (``pascal(12)[-1, -1]`` is
705431.6 in jax, 705432 here).
"""

from __future__ import annotations

import math
import operator
from math import comb

import numpy as np

from fx import dtypes

__all__ = ["block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "toeplitz"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def _default_float():
    return np.dtype(dtypes.canonicalize(np.float64))


def _inexact(*args, name):
    from fx.numpy._promote import promote_to_inexact

    return promote_to_inexact(*args, name=f"fx.scipy.linalg.{name}")


def leslie(f, s):
    """The Leslie matrix of fecundities ``f`` ([..., n]) and survival rates ``s`` ([...,
    n-1]): ``f`` in the first row, ``s`` on the subdiagonal.

    >>> fx.scipy.linalg.leslie(fx.numpy.array([0.1, 2.0, 1.0]), fx.numpy.array([0.2, 0.8]))
    Array([[0.1, 2. , 1. ],
           [0.2, 0. , 0. ],
           [0. , 0.8, 0. ]], dtype=float32)
    """
    fnp = _fnp()
    f, s = fnp.atleast_1d(fnp.asarray(f)), fnp.atleast_1d(fnp.asarray(s))
    if f.shape[-1] < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape "
                         f"{f.shape}.")
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis "
                         f"must be one less than the length of f; got f shape {f.shape} and "
                         f"s shape {s.shape}.")
    dtype = fnp.result_type(f, s)
    n = f.shape[-1]
    batch = np.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    i = np.arange(n - 1)
    out = fnp.zeros((*batch, n, n), dtype).at[..., i + 1, i].set(s.astype(dtype))
    return out.at[..., 0, :].set(f.astype(dtype))


def companion(a):
    """The companion matrix of the polynomial with coefficients ``a`` ([..., n], highest
    degree first): first row ``-a[1:] / a[0]``, ones on the subdiagonal.

    >>> fx.scipy.linalg.companion(fx.numpy.array([1., -3., 2.]))
    Array([[ 3., -2.],
           [ 1.,  0.]], dtype=float32)
    """
    fnp = _fnp()
    (a,) = _inexact(a, name="companion")
    a = fnp.atleast_1d(a)
    if a.shape[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape "
                         f"{a.shape}.")
    first = -a[..., 1:] / a[..., :1]
    m = a.shape[-1] - 1
    base = fnp.broadcast_to(fnp.eye(m, m, k=-1, dtype=first.dtype), (*a.shape[:-1], m, m))
    return base.at[..., 0, :].set(first)


def fiedler(a):
    """The symmetric Fiedler matrix ``|a[i] - a[j]|`` of ``a`` ([..., n]).

    >>> fx.scipy.linalg.fiedler(fx.numpy.array([1, 4, 2]))
    Array([[0, 3, 1],
           [3, 0, 2],
           [1, 2, 0]], dtype=int32)
    """
    fnp = _fnp()
    a = fnp.atleast_1d(fnp.asarray(a))
    return fnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients ``a``
    ([..., n], highest degree first): the same eigenvalues (the roots) as ``companion(a)``.

    >>> fx.scipy.linalg.fiedler_companion(fx.numpy.array([1., -6., 11., -6.]))
    Array([[  6., -11.,   1.],
           [  1.,   0.,   0.],
           [  0.,   6.,   0.]], dtype=float32)
    """
    fnp = _fnp()
    (a,) = _inexact(a, name="fiedler_companion")
    a = fnp.atleast_1d(a)
    if a.shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {a.shape}.")
    n = a.shape[-1] - 1
    batch = a.shape[:-1]
    if n == 0:
        return fnp.zeros((*batch, 0, 0), a.dtype)
    a = a / a[..., :1]
    if n == 1:
        return -a[..., 1:, None]
    # Fiedler's layout: c[0, 0] = -a[1], c[1, 0] = 1; for even rows i, -a[i+2] at (i, i+1)
    # and 1 at (i, i+2); for even rows i >= 2, -a[i+1] at (i, i-1); for odd rows i >= 3, 1 at
    # (i, i-2).
    out = fnp.zeros((*batch, n, n), a.dtype)
    out = out.at[..., 0, 0].set(-a[..., 1]).at[..., 1, 0].set(1)
    even = np.arange(0, n, 2)
    sup = even[even + 1 < n]
    out = out.at[..., sup, sup + 1].set(-a[..., sup + 2])
    sup2 = even[even + 2 < n]
    out = out.at[..., sup2, sup2 + 2].set(1)
    sub = even[even >= 2]
    out = out.at[..., sub, sub - 1].set(-a[..., sub + 1])
    odd = np.arange(3, n, 2)
    return out.at[..., odd, odd - 2].set(1)


def convolution_matrix(a, n: int, mode: str = "full"):
    """The Toeplitz matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for ``v`` of length
    ``n`` (``mode`` 'full', 'valid' or 'same'); batched over ``a``'s leading dimensions.

    >>> fx.scipy.linalg.convolution_matrix(fx.numpy.array([1., 2.]), 2)
    Array([[1., 0.],
           [2., 1.],
           [0., 2.]], dtype=float32)
    """
    fnp = _fnp()
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    a = fnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = a.shape[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    pad = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    az, raz = fnp.pad(a, pad), fnp.pad(fnp.flip(a, axis=-1), pad)
    length = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = min(n, m) - 1
    else:
        tb = te = 0
    return toeplitz(az[..., tb:length - te], raz[..., length - n - tb:length - tb])


def _binomials(n: int) -> np.ndarray:
    """``comb(i, j)`` for ``i, j < n``, exact (Python integers, as floats)."""
    return np.array([[float(comb(i, j)) for j in range(n)] for i in range(n)])


def _check_kind(kind, article: str) -> str:
    kind = "symmetric" if kind is None else kind
    valid = ["symmetric", "lower", "upper"]
    if kind not in valid:
        raise ValueError(f"Expected kind to be {article} of: {valid}; got {kind}")
    return kind


def pascal(n: int, kind: str | None = None):
    """The ``n x n`` Pascal matrix: binomial coefficients, 'symmetric' (default), 'lower' or
    'upper' triangular; float32, as jax's.

    >>> fx.scipy.linalg.pascal(3)
    Array([[1., 1., 1.],
           [1., 2., 3.],
           [1., 3., 6.]], dtype=float32)
    """
    kind = _check_kind(kind, "on")
    low = _binomials(n)
    out = {"lower": low, "upper": low.T, "symmetric": low @ low.T}[kind]
    return _fnp().asarray(out.astype(np.float32))


def invpascal(n: int, kind: str | None = None):
    """The inverse of ``pascal(n, kind)`` (integer entries ``(-1)^(i-j) comb(i, j)`` for the
    lower one); in the default float dtype.

    >>> fx.scipy.linalg.invpascal(3, kind="lower")[2]
    Array([ 1., -2.,  1.], dtype=float32)
    """
    kind = _check_kind(kind, "one")
    i = np.arange(n)
    low = _binomials(n) * (-1.0) ** (i[:, None] - i[None, :])
    out = {"lower": low, "upper": low.T, "symmetric": low.T @ low}[kind]
    return _fnp().asarray(out.astype(_default_float()))


def invhilbert(n: int):
    """The inverse of the ``n x n`` Hilbert matrix (integer entries), in the default float
    dtype.

    >>> fx.scipy.linalg.invhilbert(2)
    Array([[ 4., -6.],
           [-6., 12.]], dtype=float32)
    """
    out = np.array([[float((-1) ** (i + j) * (i + j + 1) * comb(n + i, n - j - 1)
                           * comb(n + j, n - i - 1) * comb(i + j, i) ** 2)
                     for j in range(n)] for i in range(n)]).reshape(n, n)
    return _fnp().asarray(out.astype(_default_float()))


def helmert(n: int, full: bool = False):
    """The Helmert matrix: ``n - 1`` orthonormal rows orthogonal to the ones vector, and with
    ``full`` the normalized ones vector as a first row.

    >>> fx.scipy.linalg.helmert(2, full=True)
    Array([[ 0.70710677,  0.70710677],
           [ 0.70710677, -0.70710677]], dtype=float32)
    """
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    k = np.arange(1, n, dtype=np.float64)[:, None]
    j = np.arange(n)[None, :]
    denom = np.sqrt(k * (k + 1))
    h = np.where(j < k, 1.0 / denom, np.where(j == k, -k / denom, 0.0))
    if full:
        h = np.concatenate([np.full((1, n), 1.0 / math.sqrt(n)), h], axis=0)
    return _fnp().asarray(h.reshape(-1, n).astype(_default_float()))


def hadamard(n: int, dtype=int):
    """The ``n x n`` Sylvester-Hadamard matrix of ±1 (``n`` a power of 2).

    >>> fx.scipy.linalg.hadamard(2)
    Array([[ 1,  1],
           [ 1, -1]], dtype=int32)
    """
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1))
    for _ in range(int(math.log2(n))):
        h = np.block([[h, h], [h, -h]])
    return _fnp().asarray(h.astype(dtypes.canonicalize(dtype)))


def dft(n: int, scale: str | None = None, *, dtype=None):
    """The ``n x n`` discrete Fourier transform matrix ``exp(-2 pi i j k / n)``, divided by
    ``sqrt(n)`` (``scale='sqrtn'``) or ``n`` ('n'); complex.

    >>> fx.numpy.real(fx.scipy.linalg.dft(2))
    Array([[ 1.,  1.],
           [ 1., -1.]], dtype=float32)
    """
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    if dtype is None:
        dtype = dtypes.canonicalize(np.complex128)
    else:
        dtype = dtypes.canonicalize(dtype)
        if not dtypes.is_complex(dtype):
            raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    a = np.arange(n, dtype=dtype)
    omegas = np.exp(-2j * np.pi * a[:, None] * a[None, :] / n).astype(dtype)
    if scale == "sqrtn":
        omegas = omegas / np.sqrt(n).astype(omegas.real.dtype)
    elif scale == "n":
        omegas = omegas / np.asarray(n, omegas.real.dtype)
    return _fnp().asarray(omegas.astype(dtype))


def block_diag(*arrs):
    """The block-diagonal matrix of the given (up to 2-D) arrays.

    >>> fx.scipy.linalg.block_diag(fx.numpy.ones((1, 1)), 2 * fx.numpy.ones((1, 2)))
    Array([[1., 0., 0.],
           [0., 2., 2.]], dtype=float32)
    """
    fnp = _fnp()
    if not arrs:
        return fnp.zeros((1, 0))
    arrs = [fnp.atleast_2d(fnp.asarray(a)) for a in arrs]
    if any(a.ndim > 2 for a in arrs):
        raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                         "dimensions")
    dtype = fnp.result_type(*arrs)
    cols = sum(a.shape[1] for a in arrs)
    rows, left = [], 0
    for a in arrs:
        right = cols - left - a.shape[1]
        rows.append(fnp.pad(a.astype(dtype), ((0, 0), (left, right))))
        left += a.shape[1]
    return fnp.concatenate(rows, axis=0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (``conj(c)`` if None;
    ``r[0]`` is ignored), batched over leading dimensions as jax.

    >>> fx.scipy.linalg.toeplitz(fx.numpy.array([1., 2., 3.]))
    Array([[1., 2., 3.],
           [2., 1., 2.],
           [3., 2., 1.]], dtype=float32)
    """
    fnp = _fnp()
    c = fnp.asarray(c)
    r = fnp.conj(c) if r is None else fnp.asarray(r)
    dtype = fnp.result_type(c, r)
    c, r = c.astype(dtype), r.astype(dtype)
    m, n = c.shape[-1], r.shape[-1]
    vals = fnp.concatenate([fnp.flip(r[..., 1:], axis=-1), c], axis=-1)  # r[n-1..1], c[0..]
    i = np.arange(m)[:, None] - np.arange(n)[None, :] + (n - 1)
    return vals[..., i]


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (zeros if None).

    >>> fx.scipy.linalg.hankel(fx.numpy.array([1., 2.]))
    Array([[1., 2.],
           [2., 0.]], dtype=float32)
    """
    fnp = _fnp()
    c = fnp.ravel(fnp.asarray(c))
    r = fnp.zeros_like(c) if r is None else fnp.ravel(fnp.asarray(r))
    dtype = fnp.result_type(c, r)
    vals = fnp.concatenate([c.astype(dtype), r[1:].astype(dtype)])
    i = np.arange(c.shape[0])[:, None] + np.arange(r.shape[0])[None, :]
    return vals[i]


def circulant(c):
    """The circulant matrix with first column ``c`` (batched over leading dimensions).

    >>> fx.scipy.linalg.circulant(fx.numpy.array([1., 2., 3.]))
    Array([[1., 3., 2.],
           [2., 1., 3.],
           [3., 2., 1.]], dtype=float32)
    """
    c = _fnp().asarray(c)
    n = c.shape[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def hilbert(n: int):
    """The ``n x n`` Hilbert matrix ``1 / (i + j + 1)``."""
    fnp = _fnp()
    a = fnp.arange(n, dtype=float)
    return 1.0 / (a[:, None] + a[None, :] + 1)
