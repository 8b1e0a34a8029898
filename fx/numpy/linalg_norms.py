"""Norms of ``fx.numpy.linalg``: ``norm`` (vector and matrix norms, as
``numpy.linalg.norm``) and ``cond`` (the condition number in such a norm), jax.numpy.linalg's
signatures and semantics.

Vector norms and the matrix norms 'fro', 1, -1, inf and -inf are reductions of ``|x|``; the
matrix norms 2, -2 and 'nuc' come from singular values (``svd`` of
:mod:`fx.numpy.linalg_decompositions`, which this module builds on), so all differentiate,
batch and compile as those do.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy import reductions as red
from fx.numpy._promote import axis_list, ensure_arraylike, promote_to_inexact
from fx.numpy.linalg_decompositions import inv, svd, svdvals

__all__ = ["cond", "norm"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    """Vector or matrix norm, as ``numpy.linalg.norm``.

    Vectors: ``ord`` None/2 (Euclidean), 1, inf, -inf, 0 (count of nonzeros) or any other
    number p (``sum(|x|**p)**(1/p)``). Matrices (``axis`` a pair, or a 2-D ``x``): None/'fro',
    1, -1, inf, -inf, and from singular values 2, -2 (largest/smallest) and 'nuc' (their sum).
    Example: ``norm(fnp.array([3., 4.]))`` is ``5.``.
    """
    (x,) = promote_to_inexact(x, name="fx.numpy.linalg.norm")
    nd = get_aval(x).ndim
    if axis is None:
        if ord is None:
            r = lax.sqrt(red.sum(_abs2(x)))
            return lax.reshape(r, (1,) * nd) if keepdims else r
        if nd not in (1, 2):
            raise ValueError(f"fx.numpy.linalg.norm: ord={ord!r} needs a 1-D or 2-D input or an "
                             f"axis, got rank {nd}")
        axes = tuple(range(nd))
    else:
        axes = axis_list(axis, nd, "linalg.norm")
        if len(set(axes)) != len(axes):
            raise ValueError(f"fx.numpy.linalg.norm: repeated axis in {axis}")
    if len(axes) == 1:
        return _vector_norm(red, x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(red, x, ord, axes, keepdims)
    raise ValueError(f"fx.numpy.linalg.norm: axis must name 1 or 2 dimensions, got {axis}")


def _abs2(x):
    """``|x|**2``: ``x * x``, or ``real(x * conj(x))`` for complex ``x`` (as jax's)."""
    if dtypes.is_complex(get_aval(x).dtype):
        return lax.real(lax.mul(x, lax.conj(x)))
    return lax.mul(x, x)


def _vector_norm(red, x, ord, axis, keepdims):  # noqa: A002
    ax = lax.abs(x)
    if ord is None or ord == 2:
        return lax.sqrt(red.sum(_abs2(x), axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"fx.numpy.linalg.norm: invalid norm order {ord!r} for vectors")
    if ord == np.inf:
        return red.max(ax, axis, keepdims=keepdims)
    if ord == -np.inf:
        return red.min(ax, axis, keepdims=keepdims)
    if ord == 0:
        nz = lax.convert_element_type(lax.ne(x, 0), get_aval(ax).dtype)
        return red.sum(nz, axis, keepdims=keepdims)
    if ord == 1:
        return red.sum(ax, axis, keepdims=keepdims)
    p = float(ord)
    return lax.pow(red.sum(lax.pow(ax, p), axis, keepdims=keepdims), 1.0 / p)


def _matrix_norm(red, x, ord, axes, keepdims):  # noqa: A002
    row, col = axes
    if ord is None or ord == "fro":
        return lax.sqrt(red.sum(_abs2(x), axes, keepdims=keepdims))
    if ord in (2, -2, "nuc"):
        return _svd_norm(x, ord, axes, keepdims)
    if ord in (1, -1):
        sums = red.sum(lax.abs(x), row, keepdims=True)
        pick = red.max if ord == 1 else red.min
    elif ord in (np.inf, -np.inf):
        sums = red.sum(lax.abs(x), col, keepdims=True)
        pick = red.max if ord == np.inf else red.min
        row, col = col, row
    else:
        raise ValueError(f"fx.numpy.linalg.norm: invalid norm order {ord!r} for matrices")
    r = pick(sums, col, keepdims=True)
    if keepdims:
        return r
    return lax.reshape(r, tuple(d for i, d in enumerate(get_aval(r).shape) if i not in axes))


def _svd_norm(x, ord, axes, keepdims):  # noqa: A002
    """The matrix norms ``ord`` 2, -2 and 'nuc' over ``axes`` from singular values (jax's)."""
    fnp = _fnp()
    s = svd(fnp.moveaxis(x, axes, (-2, -1)), compute_uv=False)
    y = fnp.max(s, axis=-1) if ord == 2 else fnp.min(s, axis=-1) if ord == -2 else (
        fnp.sum(s, axis=-1))
    return fnp.expand_dims(y, axes) if keepdims else y


def cond(x, p=None):
    """Condition number in the norm ``p`` (None/2/-2 from singular values; others as
    ``norm(x, p) * norm(inv(x), p)``), inf for singular matrices as jax.

    >>> fx.numpy.linalg.cond(fx.numpy.array([[2., 0.], [0., 1.]]))
    Array(2., dtype=float32)
    """
    fnp = _fnp()
    ensure_arraylike("fx.numpy.linalg.cond", x)
    arr = fnp.asarray(x)
    if arr.ndim < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                         f"arr.shape={arr.shape}")
    if arr.shape[-1] == 0 or arr.shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got "
                         f"arr.shape={arr.shape}")
    if p is None or p == 2:
        s = svdvals(arr)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(arr)
        r = s[..., -1] / s[..., 0]
    else:
        if arr.shape[-2] != arr.shape[-1]:
            raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got "
                             f"arr.shape={arr.shape}")
        r = norm(arr, ord=p, axis=(-2, -1)) * norm(inv(arr), ord=p, axis=(-2, -1))
    return fnp.where(fnp.isnan(r) & ~fnp.isnan(arr).any(axis=(-2, -1)), np.inf, r)
