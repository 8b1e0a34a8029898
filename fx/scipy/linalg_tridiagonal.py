"""``fx.scipy.linalg.eigh_tridiagonal``: eigenvalues of a real symmetric (or complex
Hermitian) tridiagonal matrix by bisection on Sturm sequence counts, eigenvectors by inverse
iteration, with jax.scipy.linalg's signature, algorithm and refusals.

Bisection brackets every wanted eigenvalue inside a widened Gershgorin interval and halves
all brackets at once (``while_loop``) until they are within ``eps * ||T||`` (or ``tol``), or
the mantissa runs out; the count of eigenvalues below a point is the number of negative
pivots of ``T - x I`` (a ``scan`` down the diagonal), with LAPACK's ``pivmin`` guard. The
eigenvectors start from jax's fixed random vectors (``key``, default ``random.key(42)``,
the same bits as jax's), take up to 5 steps of inverse iteration with tridiagonal solves,
and are re-orthonormalized (QR) within clusters of close eigenvalues after each step. Their
phases (signs) are those the nearly singular solves give, which rounding decides: they may
differ from jax's.
``select='v'`` is refused, as in jax (its output size would depend on the values).
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.core import get_aval

__all__ = ["eigh_tridiagonal"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def _sturm_counts(alpha, beta_sq, pivmin, alpha0_perturbation, x):
    """How many eigenvalues lie below each point of ``x``: the negative pivots of
    ``T - x I``."""
    from fx import lax

    fnp = _fnp()
    q = alpha[0] - x
    count = fnp.where(q < 0, 1, 0).astype(np.int32)
    q = fnp.where(alpha[0] == x, alpha0_perturbation, q)

    def step(carry, ab):
        q, count = carry
        a, b2 = ab
        q = a - b2 / q - x
        low = q <= pivmin
        return (fnp.where(low, fnp.minimum(q, -pivmin), q),
                fnp.where(low, count + 1, count).astype(np.int32)), None

    (_, count), _ = lax.scan(step, (q, count), (alpha[1:], beta_sq))
    return count


def _orthonormalize_clusters(v, eigvals):
    """Rows of ``v`` (one per eigenvalue, ascending) orthonormalized by QR within each run of
    eigenvalues closer than ``sqrt(eps) ||T||``, whose eigenvectors are not unique."""
    from fx import lax

    fnp = _fnp()
    k, n = get_aval(v).shape
    gap = eigvals[1:] - eigvals[:-1]
    eps = float(np.finfo(get_aval(eigvals).dtype).eps)
    t_norm = fnp.maximum(fnp.abs(eigvals[0]), fnp.abs(eigvals[-1]))
    close = gap < np.sqrt(eps) * t_norm
    left = fnp.pad(close, (1, 0), constant_values=False)
    right = fnp.pad(close, (0, 1), constant_values=False)
    max_clusters = k // 2 + 1
    starts = fnp.nonzero(~left & right, size=max_clusters)[0]
    ends = fnp.nonzero(left & ~right, size=max_clusters)[0] + 1
    arange_k = fnp.arange(k)

    def one_cluster(i, ev):
        start, end = starts[i], ends[i]
        block = lax.dynamic_slice(fnp.pad(ev, ((0, k), (0, 0))), (start, 0), (k, n))
        mask = (arange_k < end - start).astype(ev.dtype)
        q, _ = fnp.linalg.qr((block * mask[:, None]).T)
        update = lax.dynamic_update_slice(fnp.zeros((2 * k, n), ev.dtype),
                                          q.T * mask[:, None], (start, 0))[:k]
        inside = (arange_k >= start) & (arange_k < end)
        return fnp.where(inside[:, None], update, ev)

    return lax.fori_loop(0, fnp.sum(~left & right), one_cluster, v)


def _eigenvectors(alpha, beta, eigvals, key):
    from fx import lax, random
    from fx.lax import linalg as lax_linalg

    fnp = _fnp()
    n, k = get_aval(alpha).shape[0], get_aval(eigvals).shape[0]
    dtype = np.result_type(get_aval(alpha).dtype, get_aval(beta).dtype)
    dl = fnp.broadcast_to(fnp.pad(fnp.conj(beta), (1, 0)), (k, n)).astype(dtype)
    du = fnp.broadcast_to(fnp.pad(beta, (0, 1)), (k, n)).astype(dtype)
    shifted = (alpha[None, :] - eigvals[:, None]).astype(dtype)
    # jax solves with pivots perturbed away from 0 (perturb_singular); fx's tridiagonal_solve
    # does not perturb, so an exactly singular T - w I (a diagonal T, say) is solved again
    # with w moved by eps ||T||, the accuracy of w.
    eps = float(np.finfo(get_aval(eigvals).dtype).eps)
    t_norm = fnp.maximum(fnp.max(fnp.abs(eigvals)), np.finfo(get_aval(eigvals).dtype).tiny)
    nudged = shifted - (eps * t_norm).astype(dtype)
    v = random.normal(key, (k, n), dtype=dtypes.real_dtype(dtype)).astype(dtype)
    v = v / fnp.linalg.norm(v, axis=-1, keepdims=True).astype(dtype)

    def step(state):
        i, v, nrm_v, _ = state
        v_new = lax_linalg.tridiagonal_solve(dl, shifted, du, v[:, :, None],
                                             perturb_singular=True)[..., 0]
        again = lax_linalg.tridiagonal_solve(dl, nudged, du, v[:, :, None])[..., 0]
        finite = fnp.all(fnp.isfinite(v_new), axis=-1, keepdims=True)
        v_new = fnp.where(finite, v_new, again)
        nrm_new = fnp.linalg.norm(v_new, axis=-1, keepdims=True)
        v_new = _orthonormalize_clusters(v_new / nrm_new.astype(v_new.dtype), eigvals)
        return i + 1, v_new, nrm_new[:, 0], nrm_v

    def going(state):
        # LAPACK's xSTEIN: at most 5 steps, while some norm still grows by 10% or more.
        i, _, nrm_v, nrm_old = state
        return (i < 5) & fnp.any(nrm_v >= 1.1 * nrm_old)

    real = get_aval(eigvals).dtype
    init = (np.int32(0), v, fnp.ones(k, real), fnp.zeros(k, real))
    return lax.while_loop(going, step, init)[1]


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
    """Eigenvalues (ascending), and eigenvectors unless ``eigvals_only``, of the symmetric
    (Hermitian) tridiagonal matrix with diagonal ``d`` ([n]) and off-diagonal ``e``
    ([n-1]), as jax's: ``w`` or ``(w, v)`` with ``v[:, i]`` the eigenvector of ``w[i]``.
    ``select='i'`` keeps eigenvalues ``select_range[0] <= i <= select_range[1]``; ``tol``
    raises the absolute bisection tolerance; ``key`` seeds inverse iteration.

    >>> fx.scipy.linalg.eigh_tridiagonal(fx.numpy.array([1., 2., 3., 4.]),
    ...                                  fx.numpy.array([1., 1., 1.]), eigvals_only=True)
    Array([0.2547188, 1.8227171, 3.1772828, 4.745281 ], dtype=float32)
    """
    from fx import lax, random

    fnp = _fnp()
    if not eigvals_only and key is None:
        key = random.key(42)
    alpha, beta = fnp.asarray(d), fnp.asarray(e)
    supported = (np.float32, np.float64, np.complex64, np.complex128)
    if alpha.dtype != beta.dtype:
        raise TypeError("diagonal and off-diagonal values must have same dtype, got "
                        f"{alpha.dtype} and {beta.dtype}")
    if alpha.dtype not in supported:
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        f"jax.scipy.linalg.eigh_tridiagonal, got {alpha.dtype} and "
                        f"{beta.dtype}")
    n = alpha.shape[0]
    if n <= 1:
        w = fnp.real(alpha)
        return w if eigvals_only else (w, fnp.eye(n, dtype=alpha.dtype))
    beta_in = beta
    if dtypes.is_complex(alpha.dtype):
        alpha = fnp.real(alpha)
        beta_sq = fnp.real(beta * fnp.conj(beta))
        beta_abs = fnp.sqrt(beta_sq)
    else:
        beta_abs, beta_sq = fnp.abs(beta), fnp.square(beta)
    # Gershgorin bounds on the spectrum, and an upper bound on ||T||_2.
    row_sums = fnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
    lo_est, hi_est = fnp.min(alpha - row_sums), fnp.max(alpha + row_sums)
    t_norm = fnp.maximum(fnp.abs(lo_est), fnp.abs(hi_est))
    finfo = np.finfo(alpha.dtype)
    one = np.ones([], alpha.dtype)
    safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
    pivmin = safemin * fnp.maximum(1, fnp.max(beta_sq))
    alpha0_perturbation = fnp.square(finfo.eps * beta_abs[0])
    abs_tol = finfo.eps * t_norm
    if tol is not None:
        abs_tol = fnp.maximum(tol, abs_tol)
    max_it = finfo.nmant + 1  # enough halvings to exhaust the mantissa
    if select == "a":
        targets = fnp.arange(n, dtype=np.int32)
    elif select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        if select_range[0] > select_range[1]:
            raise ValueError("Got empty index range in select_range.")
        targets = fnp.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
    elif select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    else:
        raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
    fudge = 2.1  # widen the starting interval a little past Gershgorin's
    slack = np.asarray(n, alpha.dtype) * fudge * finfo.eps * t_norm
    shape = targets.shape
    lower = fnp.broadcast_to(lo_est - slack - 2 * fudge * pivmin, shape)
    upper = fnp.broadcast_to(hi_est + slack + fudge * pivmin, shape)
    pivmin_v = fnp.broadcast_to(pivmin, shape)
    alpha0_v = fnp.broadcast_to(alpha0_perturbation, shape)

    def going(state):
        i, lower, _, upper = state
        return (i < max_it) & (abs_tol < fnp.max(upper - lower))

    def halve(state):
        i, lower, mid, upper = state
        counts = _sturm_counts(alpha, beta_sq, pivmin_v, alpha0_v, mid)
        lower = fnp.where(counts <= targets, mid, lower)
        upper = fnp.where(counts > targets, mid, upper)
        return i + 1, lower, 0.5 * (lower + upper), upper

    init = (np.int32(0), lower, 0.5 * (upper + lower), upper)
    mid = lax.while_loop(going, halve, init)[2]
    if eigvals_only:
        return mid
    return mid, _eigenvectors(alpha, beta_in, mid, key).T
