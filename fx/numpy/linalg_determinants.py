"""``fx.numpy.linalg``'s determinants: ``slogdet`` (LU or QR, closed forms for 1x1 and 2x2)
and ``det`` (closed forms for 2x2 and 3x3), with jax.numpy.linalg's signatures, algorithms
and derivative rules (re-exported by ``fx.numpy.linalg``).

- ``slogdet``'s jvp is ``d log|det a| = trace(a^-1 da)`` (custom, as jax's: the sign is not
  differentiable at 0, and autodiff through the factorization would not give this formula).
- ``det``'s jvp is ``trace(adj(a) da)``, the adjugate from an LU factorization with its last
  pivot replaced (jax's ``_cofactor_solve``): finite where ``a`` is singular — of rank
  ``n - 1`` the derivative is the rank-one adjugate, of lower rank it is 0 — where
  ``det(a) a^-1`` would be NaN.
- ``slogdet(method='qr')`` reads the sign from the Householder reflectors of ``geqrf`` (each
  nontrivial one has determinant -1); real matrices only, as in jax.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.lax import linalg as lax_linalg
from fx.lax.linalg.solvers import solve_square
from fx.numpy._promote import ensure_arraylike, promote_to_inexact
from fx.numpy.linalg_decompositions import SlogdetResult

__all__ = ["det", "slogdet"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def _sign_and_log(det):
    fnp = _fnp()
    return fnp.sign(det), fnp.real(fnp.log(fnp.abs(det)))


def _slogdet_small_value(a):
    n = get_aval(a).shape[-1]
    if n == 1:
        return _sign_and_log(a[..., 0, 0])
    return _sign_and_log(a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0])


def _slogdet_lu_value(a):
    fnp = _fnp()
    dtype = get_aval(a).dtype
    lu, pivots, _ = lax_linalg.lu(a)
    diag = fnp.diagonal(lu, axis1=-2, axis2=-1)
    is_zero = fnp.any(diag == 0, axis=-1)
    parity = fnp.count_nonzero(pivots != fnp.arange(get_aval(a).shape[-1], dtype=np.int32),
                               axis=-1)
    if dtypes.is_complex(dtype):
        sign = fnp.prod(diag / fnp.abs(diag).astype(dtype), axis=-1)
    else:
        sign = fnp.ones((), dtype)
        parity = parity + fnp.count_nonzero(diag < 0, axis=-1)
    sign = fnp.where(is_zero, fnp.zeros((), dtype),
                     sign * (-2 * (parity % 2) + 1).astype(dtype))
    real = dtypes.real_dtype(dtype)
    logdet = fnp.where(is_zero, fnp.full((), -np.inf, real),
                       fnp.sum(fnp.log(fnp.abs(diag)), axis=-1))
    return sign, logdet


def _slogdet_qr_value(a):
    fnp = _fnp()
    if dtypes.is_complex(get_aval(a).dtype):
        raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
    n = get_aval(a).shape[-1]
    r, taus = lax_linalg.geqrf(a)
    diag = fnp.diagonal(r, axis1=-2, axis2=-1)
    log_abs = fnp.sum(fnp.log(fnp.abs(diag)), axis=-1)
    sign_diag = fnp.prod(fnp.sign(diag), axis=-1)
    flips = fnp.prod(fnp.where(taus[..., :n - 1] != 0, -1, 1), axis=-1)
    return sign_diag * flips.astype(sign_diag.dtype), log_abs


def _slogdet_jvp_rule(value_fn):
    """``value_fn`` (one of the three above) with jax's slogdet jvp."""
    fn = custom_jvp(value_fn)

    @fn.defjvp
    def _jvp(primals, tangents):
        fnp = _fnp()
        (x,), (g,) = primals, tangents
        sign, ans = fn(x)
        n = get_aval(x).shape[-1]
        if value_fn is _slogdet_small_value and n == 1:
            ans_dot = g[..., 0, 0] / x[..., 0, 0]
        elif value_fn is _slogdet_small_value:
            ans_dot = (g[..., 0, 0] * x[..., 1, 1] - g[..., 0, 1] * x[..., 1, 0]
                       - g[..., 1, 0] * x[..., 0, 1] + g[..., 1, 1] * x[..., 0, 0]) / (
                           x[..., 0, 0] * x[..., 1, 1] - x[..., 0, 1] * x[..., 1, 0])
        else:
            ans_dot = fnp.trace(solve_square(x, g), axis1=-2, axis2=-1)
        if dtypes.is_complex(get_aval(x).dtype):
            sign_dot = (ans_dot - fnp.real(ans_dot).astype(ans_dot.dtype)) * sign
            ans_dot = fnp.real(ans_dot)
        else:
            sign_dot = fnp.zeros_like(sign)
        return (sign, ans), (sign_dot, ans_dot)

    return fn


_slogdet_small = _slogdet_jvp_rule(_slogdet_small_value)
_slogdet_lu = _slogdet_jvp_rule(_slogdet_lu_value)
_slogdet_qr = _slogdet_jvp_rule(_slogdet_qr_value)


def slogdet(a, *, method: str | None = None):
    """Sign (a unit complex number for complex ``a``) and ``log|det a|``:
    ``SlogdetResult(sign, logabsdet)``, from an LU factorization (``method`` None or 'lu';
    closed forms for 1x1 and 2x2) or Householder QR ('qr', real ``a`` only), as jax's.

    >>> fx.numpy.linalg.slogdet(fx.numpy.array([[0., 2.], [3., 0.]])).sign
    Array(-1., dtype=float32)
    >>> fx.numpy.linalg.slogdet(fx.numpy.eye(3) * 2, method="qr").logabsdet
    Array(2.0794415, dtype=float32)
    """
    ensure_arraylike("fx.numpy.linalg.slogdet", a)
    (a,) = promote_to_inexact(a, name="fx.numpy.linalg.slogdet")
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {shape}")
    if method is None or method == "lu":
        fn = _slogdet_small if shape[-1] in (1, 2) else _slogdet_lu
        return SlogdetResult(*fn(a))
    if method == "qr":
        return SlogdetResult(*_slogdet_qr(a))
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`), "
                     "and 'qr'.")


def _cofactor_solve(a, b):
    """``(det(a), adj(a) @ b)`` for square ``a`` and ``b`` [..., n, n], finite for singular
    ``a`` (jax's algorithm). With ``a = p l u``, ``det(a) a^-1 b = det(a) u^-1 l^-1 p^T b``;
    replacing ``u[n-1, n-1]`` by ``1 / prod(u[i, i], i < n-1)`` (times the permutation's
    sign) and scaling all but the last row of ``l^-1 p^T b`` by ``det(a)`` gives the same
    product when ``a`` is invertible and the right rank-one product when ``a`` has rank
    ``n - 1``. If the modified ``u`` is still singular (rank < ``n - 1``), the answer is 0."""
    fnp = _fnp()
    n = get_aval(a).shape[-1]
    if n == 1:
        return a[..., 0, 0], b
    lu, pivots, perm = lax_linalg.lu(a)
    batch = np.broadcast_shapes(get_aval(lu).shape[:-2], get_aval(b).shape[:-2])
    x = fnp.broadcast_to(b, (*batch, *get_aval(b).shape[-2:]))
    lu = fnp.broadcast_to(lu, (*batch, n, n))
    diag = fnp.diagonal(lu, axis1=-2, axis2=-1)
    parity = fnp.count_nonzero(pivots != fnp.arange(n, dtype=pivots.dtype), axis=-1)
    sign = (-2 * (parity % 2) + 1).astype(get_aval(a).dtype)
    partial_det = fnp.cumprod(diag, axis=-1) * sign[..., None]
    lu = lu.at[..., -1, -1].set(1.0 / partial_det[..., -2])
    perm = fnp.broadcast_to(perm, (*batch, n))
    tri = lax_linalg.triangular_solve
    ones = fnp.ones(get_aval(x).shape[:-1], get_aval(x).dtype)
    probe = tri(lu, ones[..., None], left_side=True, lower=False)[..., 0]
    bad = fnp.any(fnp.isnan(probe) | fnp.isinf(probe), axis=-1)[..., None, None]
    x = fnp.where(bad, 0, x)
    x = fnp.take_along_axis(x, perm[..., :, None], axis=-2)
    x = tri(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = fnp.concatenate([x[..., :-1, :] * partial_det[..., -1, None, None], x[..., -1:, :]],
                        axis=-2)
    x = tri(lu, x, left_side=True, lower=False)
    return partial_det[..., -1], fnp.where(bad, 0, x)


@custom_jvp
def _det(a):
    sign, logdet = slogdet(a)
    return sign * _fnp().exp(logdet).astype(get_aval(sign).dtype)


@_det.defjvp
def _det_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    y, z = _cofactor_solve(x, g)
    return y, _fnp().trace(z, axis1=-1, axis2=-2)


def det(a):
    """The determinant of square matrices: explicit products for 2x2 and 3x3 (as jax), else
    from an LU factorization, with jax's cofactor-based derivative (finite at singular
    matrices).

    >>> fx.numpy.linalg.det(fx.numpy.array([[1., 2.], [3., 4.]]))
    Array(-2., dtype=float32)
    """
    ensure_arraylike("fx.numpy.linalg.det", a)
    (a,) = promote_to_inexact(a, name="fx.numpy.linalg.det")
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to _det() must have shape [..., n, n], got {shape}")
    n = shape[-1]
    if n == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    if n == 3:
        return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
                + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
                + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
                - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
                - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
                - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])
    return _det(a)
