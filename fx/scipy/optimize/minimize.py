"""``minimize`` and ``OptimizeResults``: jax's front end over :mod:`.bfgs`.

Takes a scalar function of a 1-d array (plus ``args``), returns an ``OptimizeResults``
namedtuple whose fields are fx arrays (traced under ``jit``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from fx.scipy.optimize.bfgs import minimize_bfgs

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """The result of :func:`minimize`, as jax's.

    Attributes:
      x: the final point.
      success: whether the gradient norm fell below ``gtol`` without a line-search failure.
      status: 0 converged, 1 ``maxiter`` reached, 2 + the line search's status when it
        failed (3 for a zoom failure, 5 for its iteration limit), -1 otherwise.
      fun: the function's value at ``x``.
      jac: its gradient at ``x``.
      hess_inv: the BFGS estimate of the inverse Hessian at ``x``.
      nfev, njev: how many function and gradient evaluations were made.
      nit: how many iterations were made.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def minimize(fun: Callable, x0, args: tuple = (), *, method: str = "BFGS",
             tol: float | None = None, options: Mapping[str, Any] | None = None
             ) -> OptimizeResults:
    """Minimize a scalar function of one 1-d array, as :func:`jax.scipy.optimize.minimize`.

    Args:
      fun: ``fun(x, *args) -> scalar``, differentiable by :func:`fx.grad`.
      x0: the starting point, a 1-d array.
      args: extra positional arguments for ``fun`` (a tuple).
      method: ``'BFGS'`` (case-insensitive), the only method.
      tol: accepted and ignored, as by jax; use ``options={'gtol': ...}``.
      options: keyword arguments of the solver: ``maxiter`` (default ``200 * x0.size``),
        ``norm`` (of the gradient, default ``inf``), ``gtol`` (default ``1e-5``),
        ``line_search_maxiter`` (default 10).

    Returns:
      An :class:`OptimizeResults`.

    >>> import fx
    >>> f = lambda x: ((x - fx.numpy.array([1., 2.])) ** 2).sum()
    >>> res = fx.scipy.optimize.minimize(f, fx.numpy.zeros(2), method="BFGS")
    >>> bool(res.success), fx.numpy.round(res.x, 4)
    (True, Array([1., 2.], dtype=float32))
    """
    options = {} if options is None else dict(options)
    if not isinstance(args, tuple):
        raise TypeError("args argument to fx.scipy.optimize.minimize must be a tuple, got "
                        f"{args}")

    def fun_with_args(x):
        return fun(x, *args)

    if method.lower() == "bfgs":
        r = minimize_bfgs(fun_with_args, x0, **options)
        return OptimizeResults(x=r.x_k, success=r.converged & ~r.failed, status=r.status,
                               fun=r.f_k, jac=r.g_k, hess_inv=r.H_k, nfev=r.nfev,
                               njev=r.ngev, nit=r.k)
    raise ValueError(f"fx.scipy.optimize.minimize: method {method} not recognized (only "
                     "'BFGS' is implemented)")
