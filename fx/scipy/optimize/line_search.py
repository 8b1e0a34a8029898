"""jax's inexact line search (``jax._src.scipy.optimize.line_search``): find a step ``a``
along ``pk`` satisfying the strong Wolfe conditions (Nocedal & Wright, Algorithm 3.5), with
the zoom phase (Algorithm 3.6) interpolating by cubic, then quadratic, then bisection.

Every branch is computed and merged with ``where`` (no ``cond``), as jax, and both loops are
``fx.lax.while_loop``; constants (``c1=1e-4``, ``c2=0.9``, zoom's ``delta1=0.2``,
``delta2=0.1``, its 30-step cap and 1e-10/1e-5 interval thresholds) are jax's, so the
iterates and evaluation counts match jax's step for step.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from fx import dtypes, lax
from fx.autodiff import value_and_grad
from fx.numpy._promote import promote_to_inexact


def _fnp():
    import fx.numpy as fnp

    return fnp


def _dot(a, b):
    return _fnp().dot(a, b, precision=lax.Precision.HIGHEST)


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimizer of the cubic through ``(a, fa)``, ``(b, fb)``, ``(c, fc)`` with slope
    ``fpa`` at ``a`` (NaN when it has none)."""
    fnp = _fnp()
    C = fpa
    db = b - a
    dc = c - a
    denom = (db * dc) ** 2 * (db - dc)
    # The 2x2 solve written out: [A, B] = [[dc^2, -db^2], [-dc^3, db^3]] @ [r1, r2] / denom.
    r1 = fb - fa - C * db
    r2 = fc - fa - C * dc
    A = (dc ** 2 * r1 - db ** 2 * r2) / denom
    B = (-(dc ** 3) * r1 + db ** 3 * r2) / denom
    radical = B * B - 3.0 * A * C
    return a + (-B + fnp.sqrt(radical)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
    """The minimizer of the quadratic through ``(a, fa)``, ``(b, fb)`` with slope ``fpa``
    at ``a``."""
    db = b - a
    B = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2.0 * B)


def _binary_replace(replace_bit, original: dict, new: dict, keys=None) -> dict:
    where = _fnp().where
    keys = new.keys() if keys is None else keys
    return {k: where(replace_bit, new[k], original[k]) for k in keys}


class _ZoomState(NamedTuple):
    done: Any
    failed: Any
    j: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any
    ngev: Any


def _zoom(restricted_func_and_grad, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi,
          phi_hi, dphi_hi, g_0, pass_through):
    fnp = _fnp()
    adt = a_lo.dtype
    i32 = np.int32
    state = _ZoomState(
        done=fnp.asarray(False), failed=fnp.asarray(False), j=fnp.asarray(0, i32),
        a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi,
        a_rec=(a_lo + a_hi) / 2.0, phi_rec=(phi_lo + phi_hi) / 2.0,
        a_star=fnp.asarray(1.0, adt), phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0,
        nfev=fnp.asarray(0, i32), ngev=fnp.asarray(0, i32),
    )
    delta1 = 0.2
    delta2 = 0.1
    threshold = 1e-5 if dtypes.finfo(adt).bits < 64 else 1e-10

    def body(state):
        dalpha = state.a_hi - state.a_lo
        a = fnp.minimum(state.a_hi, state.a_lo)
        b = fnp.maximum(state.a_hi, state.a_lo)
        cchk = delta1 * dalpha
        qchk = delta2 * dalpha
        # An interval this small stops the search; the Wolfe conditions do not hold, so the
        # minimization stops too.
        state = state._replace(failed=state.failed | (dalpha <= threshold))
        # The cubic minimizer is sometimes NaN; the bounds check then rejects it.
        a_j_cubic = _cubicmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi,
                              state.phi_hi, state.a_rec, state.phi_rec)
        use_cubic = (state.j > 0) & (a_j_cubic > a + cchk) & (a_j_cubic < b - cchk)
        a_j_quad = _quadmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi)
        use_quad = ~use_cubic & (a_j_quad > a + qchk) & (a_j_quad < b - qchk)
        a_j_bisection = (state.a_lo + state.a_hi) / 2.0
        use_bisection = ~use_cubic & ~use_quad
        a_j = fnp.where(use_cubic, a_j_cubic, state.a_rec)
        a_j = fnp.where(use_quad, a_j_quad, a_j)
        a_j = fnp.where(use_bisection, a_j_bisection, a_j)

        phi_j, dphi_j, g_j = restricted_func_and_grad(a_j)
        phi_j = phi_j.astype(state.phi_lo.dtype)
        dphi_j = dphi_j.astype(state.dphi_lo.dtype)
        g_j = g_j.astype(state.g_star.dtype)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)

        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= state.phi_lo)
        star_to_j = wolfe_two(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (state.a_hi - state.a_lo) >= 0.0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j

        state = state._replace(**_binary_replace(hi_to_j, state._asdict(), dict(
            a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=state.a_hi, phi_rec=state.phi_hi)))
        state = state._replace(done=star_to_j | state.done, **_binary_replace(
            star_to_j, state._asdict(),
            dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j)))
        state = state._replace(**_binary_replace(hi_to_lo, state._asdict(), dict(
            a_hi=state.a_lo, phi_hi=state.phi_lo, dphi_hi=state.dphi_lo, a_rec=state.a_hi,
            phi_rec=state.phi_hi)))
        state = state._replace(**_binary_replace(lo_to_j & ~hi_to_lo, state._asdict(), dict(
            a_rec=state.a_lo, phi_rec=state.phi_lo)))
        state = state._replace(**_binary_replace(lo_to_j, state._asdict(), dict(
            a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)))
        state = state._replace(j=state.j + 1)
        # jax's cap, above SciPy's 10: its zoom needs more steps to reach the same value.
        return state._replace(failed=state.failed | (state.j >= 30))

    return lax.while_loop(lambda s: ~s.done & ~pass_through & ~s.failed, body, state)


class _LineSearchState(NamedTuple):
    done: Any
    failed: Any
    i: Any
    a_i1: Any
    phi_i1: Any
    dphi_i1: Any
    nfev: Any
    ngev: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any


class _LineSearchResults(NamedTuple):
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20) -> _LineSearchResults:
    """A step along ``pk`` from ``xk`` satisfying the strong Wolfe conditions for ``f``.

    ``old_fval``/``gfk`` (``f`` and its gradient at ``xk``) save an evaluation;
    ``old_old_fval`` (the previous iterate's value) picks the first trial step as SciPy.
    ``status``: 0 found, 1 zoom failed, 3 ``maxiter`` reached.
    """
    fnp = _fnp()
    xk, pk = promote_to_inexact(fnp.asarray(xk), fnp.asarray(pk),
                                name="fx.scipy.optimize.line_search")
    # Steps are real, in pk's precision.
    adt = fnp.real(pk).dtype
    i32 = np.int32

    def restricted_func_and_grad(t):
        t = fnp.asarray(t).astype(pk.dtype)
        phi, g = value_and_grad(f)(xk + t * pk)
        dphi = fnp.real(_dot(g, pk))
        return phi, dphi, g

    fresh = old_fval is None or gfk is None
    if fresh:
        phi_0, dphi_0, gfk = restricted_func_and_grad(0.0)
    else:
        phi_0 = fnp.asarray(old_fval)
        dphi_0 = fnp.real(_dot(gfk, pk))
    if old_old_fval is not None:
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start_value = fnp.where(candidate > 1, 1.0, candidate).astype(adt)
    else:
        start_value = fnp.asarray(1.0, adt)

    def wolfe_one(a_i, phi_i):
        return phi_i > phi_0 + c1 * a_i * dphi_0  # the negation of the sufficient decrease

    def wolfe_two(dphi_i):
        return fnp.abs(dphi_i) <= -c2 * dphi_0

    zero = fnp.asarray(0.0, adt)
    state = _LineSearchState(
        done=fnp.asarray(False), failed=fnp.asarray(False),
        # Nocedal & Wright start at 1 (SciPy's 0 is a bug: scipy/scipy#12157).
        i=fnp.asarray(1, i32), a_i1=zero, phi_i1=phi_0, dphi_i1=dphi_0,
        nfev=fnp.asarray(1 if fresh else 0, i32), ngev=fnp.asarray(1 if fresh else 0, i32),
        a_star=zero, phi_star=phi_0, dphi_star=dphi_0, g_star=gfk,
    )

    def body(state):
        # No amax: the trial step doubles, as SciPy's.
        a_i = fnp.where(state.i == 1, start_value, state.a_i1 * 2.0)
        phi_i, dphi_i, g_i = restricted_func_and_grad(a_i)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)
        star_to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= state.phi_i1) & (state.i > 1))
        star_to_i = wolfe_two(dphi_i) & ~star_to_zoom1
        star_to_zoom2 = (dphi_i >= 0.0) & ~star_to_zoom1 & ~star_to_i

        zoom1 = _zoom(restricted_func_and_grad, wolfe_one, wolfe_two, state.a_i1,
                      state.phi_i1, state.dphi_i1, a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)
        state = state._replace(nfev=state.nfev + zoom1.nfev, ngev=state.ngev + zoom1.ngev)
        zoom2 = _zoom(restricted_func_and_grad, wolfe_one, wolfe_two, a_i, phi_i, dphi_i,
                      state.a_i1, state.phi_i1, state.dphi_i1, gfk, ~star_to_zoom2)
        state = state._replace(nfev=state.nfev + zoom2.nfev, ngev=state.ngev + zoom2.ngev)

        keys = ["a_star", "phi_star", "dphi_star", "g_star"]
        state = state._replace(
            done=star_to_zoom1 | state.done,
            failed=(star_to_zoom1 & zoom1.failed) | state.failed,
            **_binary_replace(star_to_zoom1, state._asdict(), zoom1._asdict(), keys=keys))
        state = state._replace(done=star_to_i | state.done, **_binary_replace(
            star_to_i, state._asdict(),
            dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i)))
        state = state._replace(
            done=star_to_zoom2 | state.done,
            failed=(star_to_zoom2 & zoom2.failed) | state.failed,
            **_binary_replace(star_to_zoom2, state._asdict(), zoom2._asdict(), keys=keys))
        return state._replace(i=state.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    state = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = fnp.where(state.failed, 1, fnp.where(state.i > maxiter, 3, 0)).astype(i32)
    # Below 64 bits, a tiny step stalls the optimizer on a zero direction: floor it.
    alpha_k = state.a_star
    if dtypes.finfo(adt).bits != 64:
        alpha_k = fnp.where(fnp.abs(alpha_k) < 1e-8, fnp.sign(alpha_k) * 1e-8, alpha_k)
    return _LineSearchResults(failed=state.failed | ~state.done, nit=state.i - 1,
                              nfev=state.nfev, ngev=state.ngev, k=state.i, a_k=alpha_k,
                              f_k=state.phi_star, g_k=state.g_star, status=status)
