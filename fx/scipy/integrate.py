"""``fx.scipy.integrate``: ``trapezoid`` as ``jax.scipy.integrate.trapezoid``.

It is ``fx.numpy.trapezoid`` under SciPy's name: the composite trapezoidal rule along
``axis``, over sample points ``x`` or a uniform spacing ``dx``; integer samples integrate to
floating values. Differentiable in ``y``, ``x`` and ``dx``.
"""

from __future__ import annotations

from fx.numpy import trapezoid as _np_trapezoid

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    r"""Integrate ``y`` along ``axis`` with the composite trapezoidal rule, as
    :func:`scipy.integrate.trapezoid`.

    Args:
      y: samples to integrate.
      x: optional sample points (same length as ``y`` along ``axis``, or broadcastable);
        without it the points are spaced ``dx`` apart.
      dx: the spacing when ``x`` is None (default 1.0).
      axis: the axis to integrate along (default -1).

    Returns:
      The approximate integral, with ``axis`` removed.

    >>> import fx
    >>> y = fx.numpy.array([1, 2, 3, 2, 3, 2, 1])
    >>> fx.scipy.integrate.trapezoid(y, dx=1.0)
    Array(13., dtype=float32)
    >>> fx.scipy.integrate.trapezoid(y, fx.numpy.array([0, 2, 5, 7, 10, 15, 20]))
    Array(43., dtype=float32)
    """
    return _np_trapezoid(y, x, dx, axis)
