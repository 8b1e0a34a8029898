"""The array-API names of ``fx.numpy.linalg``: vector_norm, matrix_norm, vecdot, cross,
diagonal, matrix_transpose, trace and multi_dot, with jax.numpy.linalg's signatures.

They act on the trailing dimension(s) (``diagonal``/``trace`` on the last two, unlike the
``fx.numpy`` functions of the same names, whose default axes are the first two) and are
compositions of ``fx.numpy`` functions, so they differentiate, batch and compile.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fx.numpy._promote import ensure_arraylike, promote_to_inexact
from fx.numpy.linalg_norms import norm

__all__ = ["cross", "diagonal", "matrix_norm", "matrix_transpose", "multi_dot", "trace",
           "vecdot", "vector_norm"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):  # noqa: A002
    """Vector norm over ``axis`` (all axes when None): ``ord`` 2, 1, inf, -inf, 0 (count of
    nonzeros) or any other number p (``sum(|x|**p)**(1/p)``).

    >>> fx.numpy.linalg.vector_norm(fx.numpy.array([[3., 4.], [0., 0.]]))
    Array(5., dtype=float32)
    """
    fnp = _fnp()
    ensure_arraylike("fx.numpy.linalg.vector_norm", x)
    (x,) = promote_to_inexact(x, name="fx.numpy.linalg.vector_norm")
    if ord is None or ord == 2:
        return fnp.sqrt(fnp.sum(fnp.real(x * fnp.conj(x)), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        msg = f"Invalid order '{ord}' for vector norm."
        if ord in ("inf", "-inf"):
            msg += f"Use '{'-' if ord[0] == '-' else ''}jax.numpy.inf' instead."
        raise ValueError(msg)
    if ord == np.inf:
        return fnp.max(fnp.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return fnp.min(fnp.abs(x), axis=axis, keepdims=keepdims)
    real = fnp.abs(x).dtype
    if ord == 0:
        return fnp.sum(x != 0, dtype=real, axis=axis, keepdims=keepdims)
    if ord == 1:
        return fnp.sum(fnp.abs(x), axis=axis, keepdims=keepdims)
    p = np.asarray(ord, real)
    return fnp.power(fnp.sum(fnp.abs(x) ** p, axis=axis, keepdims=keepdims),
                     np.asarray(1.0 / p, real))


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):  # noqa: A002
    """Matrix norm of the trailing two dimensions (``norm(x, ord, axis=(-2, -1))``).

    >>> fx.numpy.linalg.matrix_norm(fx.numpy.array([[3., 0.], [0., 4.]]), ord=2)
    Array(4., dtype=float32)
    """
    ensure_arraylike("fx.numpy.linalg.matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def matrix_transpose(x, /):
    """Swap the last two dimensions.

    >>> fx.numpy.linalg.matrix_transpose(fx.numpy.ones((2, 3, 4))).shape
    (2, 4, 3)
    """
    fnp = _fnp()
    ensure_arraylike("fx.numpy.linalg.matrix_transpose", x)
    x = fnp.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={x.ndim}")
    return fnp.matrix_transpose(x)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """``sum(conj(x1) * x2, axis)`` with broadcasting.

    >>> fx.numpy.linalg.vecdot(fx.numpy.array([1., 2.]), fx.numpy.array([3., 4.]))
    Array(11., dtype=float32)
    """
    ensure_arraylike("fx.numpy.linalg.vecdot", x1, x2)
    return _fnp().vecdot(x1, x2, axis=axis, precision=precision,
                         preferred_element_type=preferred_element_type)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of (arrays of) 3-vectors along ``axis``.

    >>> fx.numpy.linalg.cross(fx.numpy.array([1., 0., 0.]), fx.numpy.array([0., 1., 0.]))
    Array([0., 0., 1.], dtype=float32)
    """
    fnp = _fnp()
    ensure_arraylike("fx.numpy.linalg.cross", x1, x2)
    x1, x2 = fnp.asarray(x1), fnp.asarray(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"have x1.shape[axis]={x1.shape[axis]} and "
                         f"x2.shape[axis]={x2.shape[axis]}")
    return fnp.cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset: int = 0):
    """The diagonals of the trailing matrices (``diagonal(x, offset, -2, -1)``).

    >>> fx.numpy.linalg.diagonal(fx.numpy.arange(8.).reshape(2, 2, 2))
    Array([[0., 3.],
           [4., 7.]], dtype=float32)
    """
    ensure_arraylike("fx.numpy.linalg.diagonal", x)
    return _fnp().diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset: int = 0, dtype=None):
    """The traces of the trailing matrices (``trace(x, offset, -2, -1, dtype)``).

    >>> fx.numpy.linalg.trace(fx.numpy.arange(8.).reshape(2, 2, 2))
    Array([ 3., 11.], dtype=float32)
    """
    ensure_arraylike("fx.numpy.linalg.trace", x)
    return _fnp().trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def multi_dot(arrays: Sequence, *, precision=None):
    """The product of a chain of matrices (the first and last may be vectors), contracted in
    a cheap order by ``einsum``.

    >>> fx.numpy.linalg.multi_dot([fx.numpy.ones(2), fx.numpy.eye(2), fx.numpy.ones(2)])
    Array(2., dtype=float32)
    """
    fnp = _fnp()
    ensure_arraylike("fx.numpy.linalg.multi_dot", *arrays)
    arrs = [fnp.asarray(a) for a in arrays]
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
    if not (arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2)
            and all(a.ndim == 2 for a in arrs[1:-1])):
        raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                         "first and last array which may be 1 or 2 dimensional. Got array "
                         f"shapes {[a.shape for a in arrs]}")
    if any(a.shape[-1] != b.shape[0] for a, b in zip(arrs[:-1], arrs[1:])):
        raise ValueError("multi_dot: last dimension of each array must match first dimension "
                         f"of following array. Got array shapes {[a.shape for a in arrs]}")
    axes = [[i, i + 1] for i in range(len(arrs))]
    if arrs[0].ndim == 1:
        axes[0] = axes[0][1:]
    if arrs[-1].ndim == 1:
        axes[-1] = axes[-1][:1]
    operands = [x for pair in zip(arrs, axes) for x in pair]
    return fnp.einsum(*operands, optimize="greedy", precision=precision)
