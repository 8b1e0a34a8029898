"""Samplers that need linear algebra: ``multivariate_normal`` and ``orthogonal``.

``multivariate_normal`` is ``mean + factor @ normal`` with jax's factor for each ``method``:
the Cholesky factor (from ``fx.numpy.linalg.cholesky`` when it exists, else a small private
column-by-column Cholesky), or ``u sqrt(s)`` / ``v sqrt(w)`` from ``fx.numpy.linalg.svd`` /
``eigh``, which need fx.numpy.linalg (NotImplementedError until it has them). ``orthogonal``
is the Q factor of a normal draw with the signs that make R's diagonal positive (unique, so
any QR gives jax's matrix up to rounding); until fx.numpy.linalg has ``qr`` it uses the
Householder QR of ``fx.nn.initializers``. Values agree with jax to rounding (the normal draws
go through ``erf_inv``, the factorizations are not LAPACK's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import get_aval
from fx.random.distributions import normal
from fx.random.sampling import float_dtype, value
from fx.random.threefry import canonical_shape, check_key

Shape = int | Sequence[int]


def _linalg(name: str):
    import fx.numpy as fnp

    return getattr(getattr(fnp, "linalg", None), name, None)


def _cholesky(a):
    """The lower Cholesky factor of the symmetric positive definite matrices ``a[..., n, n]``
    (NaN where a pivot is not positive, as LAPACK-backed jax), one column at a time."""
    import fx.numpy as fnp

    n = a.shape[-1]
    cols = []
    for j in range(n):
        c = a[..., :, j]
        if j:
            prev = fnp.stack(cols, axis=-1)                       # (..., n, j)
            c = c - fnp.einsum("...ik,...k->...i", prev, prev[..., j, :])
        d = fnp.sqrt(c[..., j])
        col = c / d[..., None]
        mask = np.arange(n) >= j
        cols.append(fnp.where(mask, col, fnp.zeros_like(col)))
    return fnp.stack(cols, axis=-1)


def multivariate_normal(key, mean, cov, shape: Shape | None = None, dtype=None,
                        method: str = "cholesky") -> Array:
    """Samples of the multivariate normal distribution ``N(mean, cov)``, as
    ``jax.random.multivariate_normal``: the result has shape ``shape + mean.shape[-1:]``
    (``shape`` by default the broadcast of ``mean.shape[:-1]`` and ``cov.shape[:-2]``).
    ``method`` is 'cholesky' (the default), 'eigh' or 'svd'. Differentiable in ``mean`` and
    ``cov``.

    Example::

        >>> fx.random.multivariate_normal(fx.random.key(0), fx.numpy.zeros(2), fx.numpy.eye(2))
    """
    import fx.numpy as fnp

    name = "multivariate_normal"
    key = check_key(name, key)
    mean, cov = value(name, "mean", mean), value(name, "cov", cov)
    common = dtypes.to_inexact_dtype(dtypes.result_type(mean, cov))
    mean, cov = lax.convert_element_type(mean, common), lax.convert_element_type(cov, common)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("fx.random.multivariate_normal: method must be one of "
                         "{'svd', 'eigh', 'cholesky'}")
    dtype = common if dtype is None else float_dtype(name, dtype)
    if not dtypes.is_float(dtype):
        raise ValueError(f"fx.random.multivariate_normal: dtype argument must be a float "
                         f"dtype, got {dtype}")
    ms, cs = get_aval(mean).shape, get_aval(cov).shape
    if len(ms) < 1:
        raise ValueError(f"fx.random.multivariate_normal requires mean.ndim >= 1, got "
                         f"mean.ndim == {len(ms)}")
    if len(cs) < 2:
        raise ValueError(f"fx.random.multivariate_normal requires cov.ndim >= 2, got "
                         f"cov.ndim == {len(cs)}")
    n = ms[-1]
    if cs[-2:] != (n, n):
        raise ValueError(f"fx.random.multivariate_normal requires cov.shape == (..., n, n) "
                         f"for n={n}, but got cov.shape == {cs}.")
    batch = tuple(np.broadcast_shapes(ms[:-1], cs[:-2]))
    if shape is None:
        shape = batch
    else:
        shape = canonical_shape(name, shape)
        if tuple(np.broadcast_shapes(shape, ms[:-1], cs[:-2])) != shape:
            raise ValueError(
                f"fx.random.multivariate_normal: parameter shapes must be broadcast-compatible "
                f"with shape argument, and the result of broadcasting the shapes must equal the "
                f"shape argument, but got result "
                f"{tuple(np.broadcast_shapes(shape, ms[:-1], cs[:-2]))} for shape argument "
                f"{shape}.")
    if method == "cholesky":
        chol = _linalg("cholesky")
        factor = chol(cov) if chol is not None else _cholesky(cov)
    else:
        fn = _linalg(method)
        if fn is None:
            raise NotImplementedError(
                f"fx.random.multivariate_normal: method={method!r} needs "
                f"fx.numpy.linalg.{method}, which fx does not have yet; use method='cholesky'")
        if method == "svd":
            u, s, _ = fn(cov)
            factor = u * fnp.sqrt(s[..., None, :])
        else:
            w, v = fn(cov)
            factor = v * fnp.sqrt(w[..., None, :])
    z = normal(key, tuple(shape) + (n,), dtype)
    return fnp.add(mean, _matvec(factor, z))


def _matvec(factor, z):
    """``einsum('...ij,...j->...i', factor, z)`` as XLA CPU's dot loop computes it: the first
    product, then one fma per further term, in order."""
    import fx.numpy as fnp
    from fx.random import xla_math as xm

    terms = [fnp.broadcast_arrays(factor[..., :, j], z[..., None, j])
             for j in range(get_aval(z).shape[-1])]
    acc = fnp.multiply(*terms[0])
    for f, x in terms[1:]:
        acc = xm.fma(f, x, acc)
    return acc


def orthogonal(key, n: int, shape: Shape = (), dtype=None, m: int | None = None) -> Array:
    """Random (semi-)orthogonal matrices of shape ``shape + (n, m)`` (``m`` defaults to
    ``n``), Haar-distributed: the Q factor of a normal draw, as ``jax.random.orthogonal``.

    Example::

        >>> fx.random.orthogonal(fx.random.key(0), 3)
    """
    name = "orthogonal"
    shape = canonical_shape(name, shape)
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    try:
        n = int(n)
        m = n if m is None else int(m)
    except TypeError:
        raise TypeError("fx.random.orthogonal: n and m must be static integers") from None
    rows, cols = max(n, m), min(n, m)
    z = normal(key, (*shape, rows, cols), dtype)
    qr = _linalg("qr")
    if qr is not None:
        import fx.numpy as fnp

        q, r = qr(z)
        d = fnp.diagonal(r, axis1=-2, axis2=-1)
        x = q * fnp.expand_dims(fnp.sign(d), -2)
    else:
        from fx.nn.initializers import _orthonormal_columns
        from fx.vectorize import vmap

        size = math.prod(shape)
        flat = lax.reshape(z, (size, rows, cols))
        x = lax.reshape(vmap(_orthonormal_columns)(flat) if size else flat,
                        (*shape, rows, cols))
    if n < m:
        nd = len(shape)
        x = lax.transpose(x, (*range(nd), nd + 1, nd))
    return x
