"""The complex-number functions of ``fx.numpy``: parts, conjugates, angles and tests, as
``jax.numpy``'s (real inputs pass through where numpy's do: ``real(x)`` is ``x``, ``imag(x)``
zeros and ``conj(x)`` ``x``)."""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import promote_and_broadcast, to_array

__all__ = ["angle", "conj", "conjugate", "imag", "iscomplex", "isreal", "real", "sort_complex"]


def _arg(x, name: str):
    (x,) = promote_and_broadcast(to_array(x, f"fx.numpy.{name}"), name=f"fx.numpy.{name}")
    return x, dtypes.is_complex(get_aval(x).dtype)


def real(val, /):
    """The real part (``val`` itself for a real array)."""
    x, is_complex = _arg(val, "real")
    return lax.real(x) if is_complex else x


def imag(val, /):
    """The imaginary part (zeros of ``val``'s dtype for a real array)."""
    x, is_complex = _arg(val, "imag")
    return lax.imag(x) if is_complex else lax.full_like(x, 0)


def conjugate(x, /):
    """The complex conjugate (``x`` itself for a real array)."""
    x, is_complex = _arg(x, "conjugate")
    return lax.conj(x) if is_complex else x


conj = conjugate


def angle(z, deg: bool = False):
    """The counterclockwise angle from the positive real axis, in radians (or degrees);
    integers are promoted to the default float, as jax's."""
    x, is_complex = _arg(z, "angle")
    if is_complex:
        re, im = lax.real(x), lax.imag(x)
    else:
        dt = dtypes.to_inexact_dtype(get_aval(x).dtype)
        re = lax.convert_element_type(x, dt, get_aval(x).weak_type)
        im = lax.full_like(re, 0)
    out = lax.atan2(im, re)
    return lax.mul(out, 180 / np.pi) if deg else out


def iscomplex(x, /):
    """Where the imaginary part is nonzero (all False for a real array)."""
    a, is_complex = _arg(x, "iscomplex")
    if not is_complex:
        return lax.full_like(a, False, dtypes.bool_)
    return lax.ne(lax.imag(a), 0)


def isreal(x, /):
    """Where the imaginary part is zero (all True for a real array)."""
    a, is_complex = _arg(x, "isreal")
    if not is_complex:
        return lax.full_like(a, True, dtypes.bool_)
    return lax.eq(lax.imag(a), 0)


def sort_complex(a, /):
    """``a`` sorted along its last axis by real part, then imaginary part, and returned
    complex (a real array is converted to the complex dtype of its precision)."""
    x, is_complex = _arg(a, "sort_complex")
    if not is_complex:
        dt = dtypes.complex_dtype(dtypes.to_inexact_dtype(get_aval(x).dtype))
        x = lax.convert_element_type(x, dt)
    if get_aval(x).ndim == 0:
        return x
    return lax.sort(x, dimension=get_aval(x).ndim - 1)
