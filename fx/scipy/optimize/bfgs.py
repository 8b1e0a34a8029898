"""The Broyden-Fletcher-Goldfarb-Shanno iteration, as jax's ``minimize_bfgs``.

Takes a scalar function and a 1-d starting point; returns a ``_BFGSResults`` with the final
iterate, its value and gradient, the inverse-Hessian estimate and the counts. The iteration is
one ``fx.lax.while_loop`` (each step runs :func:`.line_search.line_search`, itself a loop), so
the carry's dtypes are fixed: counts int32, flags bool, values in ``x0``'s dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from fx import lax
from fx.autodiff import value_and_grad
from fx.scipy.optimize.line_search import line_search


class _BFGSResults(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    nhev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    status: Any
    line_search_status: Any


def _fnp():
    import fx.numpy as fnp

    return fnp


def _dot(a, b):
    return _fnp().dot(a, b, precision=lax.Precision.HIGHEST)


def minimize_bfgs(fun: Callable, x0, maxiter: int | None = None, norm=np.inf,
                  gtol: float = 1e-5, line_search_maxiter: int = 10) -> _BFGSResults:
    """BFGS from ``x0`` until ``norm(grad, ord=norm) < gtol``, a line-search failure, or
    ``maxiter`` iterations (default ``200 * x0.size``)."""
    fnp = _fnp()
    x0 = fnp.asarray(x0)
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    initial_h = fnp.eye(d, dtype=x0.dtype)
    f_0, g_0 = value_and_grad(fun)(x0)
    i32 = np.int32
    state = _BFGSResults(
        converged=fnp.linalg.norm(g_0, ord=norm) < gtol,
        failed=fnp.asarray(False),
        k=fnp.asarray(0, i32), nfev=fnp.asarray(1, i32), ngev=fnp.asarray(1, i32),
        nhev=fnp.asarray(0, i32),
        x_k=x0, f_k=f_0, g_k=g_0, H_k=initial_h,
        old_old_fval=f_0 + fnp.linalg.norm(g_0) / 2,
        status=fnp.asarray(0, i32), line_search_status=fnp.asarray(0, i32),
    )

    def cond_fun(state):
        return ~state.converged & ~state.failed & (state.k < maxiter)

    def body_fun(state):
        p_k = -_dot(state.H_k, state.g_k)
        ls = line_search(fun, state.x_k, p_k, old_fval=state.f_k,
                         old_old_fval=state.old_old_fval, gfk=state.g_k,
                         maxiter=line_search_maxiter)
        state = state._replace(nfev=state.nfev + ls.nfev, ngev=state.ngev + ls.ngev,
                               failed=ls.failed, line_search_status=ls.status)
        s_k = ls.a_k.astype(p_k.dtype) * p_k
        x_kp1 = state.x_k + s_k
        f_kp1 = ls.f_k
        g_kp1 = ls.g_k
        y_k = g_kp1 - state.g_k
        rho_k = fnp.reciprocal(_dot(y_k, s_k))
        sy_k = s_k[:, np.newaxis] * y_k[np.newaxis, :]
        w = fnp.eye(d, dtype=rho_k.dtype) - rho_k * sy_k
        h_kp1 = (fnp.einsum("ij,jk,lk", w, state.H_k, w, precision=lax.Precision.HIGHEST)
                 + rho_k * s_k[:, np.newaxis] * s_k[np.newaxis, :])
        h_kp1 = fnp.where(fnp.isfinite(rho_k), h_kp1, state.H_k)
        converged = fnp.linalg.norm(g_kp1, ord=norm) < gtol
        return state._replace(converged=converged, k=state.k + 1, x_k=x_kp1, f_k=f_kp1,
                              g_k=g_kp1, H_k=h_kp1, old_old_fval=state.f_k)

    state = lax.while_loop(cond_fun, body_fun, state)
    status = fnp.where(
        state.converged, 0,
        fnp.where(state.k == maxiter, 1,
                  fnp.where(state.failed, 2 + state.line_search_status, -1)))
    return state._replace(status=status.astype(i32))
