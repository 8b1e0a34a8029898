"""``fx.numpy.fft``: NumPy's discrete Fourier transforms with jax's signatures and semantics.

Every transform takes an array (lists are refused, as jax's ``ensure_arraylike``), moves the
transformed axes to the end, crops or zero-pads them to ``n``/``s``, and binds
``fx.lax.fft`` once over all of them; so each is linear, differentiable, batchable and
jittable through that one primitive. Dtypes are jax's: real input of ``fft``/``ifft``
becomes complex (integers and bools complex64 in the default mode), ``rfft`` keeps float32
and float64, ``irfft`` returns the real dtype of its complex input. ``norm`` is ``None``
or ``"backward"`` (forward unscaled, inverse ``1/n``), ``"ortho"`` (``1/sqrt(n)`` both
ways) or ``"forward"`` (forward ``1/n``), the factor computed in the result's dtype.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from fx import dtypes
from fx import lax as _lax
from fx.array import device_put
from fx.core import get_aval
from fx.lax.fft import FftType
from fx.numpy import complex_functions, creation, manipulation, padding, reductions, ufuncs
from fx.numpy._promote import asarray, ensure_arraylike, to_array

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq",
           "rfftn"]

Shape = Sequence[int]


def _fft_norm(s, func_name: str, norm: str):
    if norm == "backward":
        return None
    prod = reductions.prod(s)
    inverse = func_name.startswith("i")
    if norm == "ortho":
        root = ufuncs.sqrt(prod)
        return root if inverse else 1 / root
    if norm == "forward":
        return prod if inverse else 1 / prod
    raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')


def _fft_core(func_name: str, fft_type: FftType, a, s: Shape | None,
              axes: Sequence[int] | None, norm: str | None):
    full_name = f"fx.numpy.fft.{func_name}"
    ensure_arraylike(full_name, a)
    arr = to_array(a, full_name)
    ndim = get_aval(arr).ndim
    if s is not None:
        s = tuple(map(operator.index, s))
        if any(x <= 0 for x in s):
            raise ValueError("Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")

    orig_axes = axes
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    axes = tuple(axes)
    if len(axes) != len(set(axes)):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    if orig_axes is not None:
        axes = tuple(range(ndim - len(axes), ndim))
        arr = manipulation.moveaxis(arr, orig_axes, axes)

    shape = get_aval(arr).shape
    if s is not None:
        in_s = list(shape)
        for axis, x in zip(axes, s):
            in_s[axis] = x
        if fft_type == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        arr = arr[tuple(slice(x) for x in in_s)]
        cut = get_aval(arr).shape
        if tuple(cut) != tuple(in_s):
            arr = padding.pad(arr, [(0, x - y) for x, y in zip(in_s, cut)])
    elif fft_type == FftType.IRFFT:
        s = [shape[axis] for axis in axes[:-1]]
        if axes:
            s += [max(0, 2 * (shape[axes[-1]] - 1))]
    else:
        s = [shape[axis] for axis in axes]

    transformed = _lax.fft(arr, fft_type, tuple(s))
    if norm is not None:
        factor = _fft_norm(creation.array(s, dtype=get_aval(transformed).dtype), func_name, norm)
        if factor is not None:
            transformed = transformed * factor
    if orig_axes is not None:
        transformed = manipulation.moveaxis(transformed, axes, orig_axes)
    return transformed


def _axis_check_1d(func_name: str, axis) -> None:
    if isinstance(axis, (list, tuple)):
        full_name = f"fx.numpy.fft.{func_name}"
        raise ValueError(f"{full_name} does not support multiple axes. Please use "
                         f"{full_name}n. Got axis = {axis!r}.")


def _fft_core_1d(func_name: str, fft_type: FftType, a, n: int | None, axis: int | None,
                 norm: str | None):
    _axis_check_1d(func_name, axis)
    axes = None if axis is None else [axis]
    s = None if n is None else [n]
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def _fft_core_2d(func_name: str, fft_type: FftType, a, s: Shape | None, axes: Sequence[int],
                 norm: str | None):
    if len(axes) != 2:
        raise ValueError(f"fx.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
    return _fft_core(func_name, fft_type, a, s, axes, norm)


# --- one-dimensional transforms --------------------------------------------------------------


def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The one-dimensional discrete Fourier transform along ``axis`` (``numpy.fft.fft``).

    ``n`` crops or zero-pads the axis first. Real input becomes complex (complex64 in the
    default mode for integers, bools and float32).

    >>> fx.numpy.fft.fft(fx.numpy.array([1.0, 2.0, 3.0, 4.0]))
    Array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex64)
    """
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The one-dimensional inverse discrete Fourier transform (``numpy.fft.ifft``):
    ``ifft(fft(a)) == a``.

    >>> fx.numpy.fft.ifft(fx.numpy.array([4.0, 0.0, 0.0, 0.0]))
    Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
    """
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The discrete Fourier transform of real input (``numpy.fft.rfft``): the ``n // 2 + 1``
    non-negative frequency terms (the others are their conjugates).

    >>> fx.numpy.fft.rfft(fx.numpy.array([1.0, 2.0, 3.0, 4.0]))
    Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`rfft` (``numpy.fft.irfft``): a real signal of length ``n``
    (default ``2 * (m - 1)`` for ``m`` input terms) from its half spectrum.

    >>> fx.numpy.fft.irfft(fx.numpy.array([10.0, -2 + 2j, -2.0]))
    Array([1., 2., 3., 4.], dtype=float32)
    """
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The transform of a Hermitian-symmetric signal given by its first half: a real
    spectrum (``numpy.fft.hfft``), ``irfft(conj(a), n) * n``.

    >>> fx.numpy.fft.hfft(fx.numpy.array([1.0, 2.0, 3.0]))
    Array([ 8., -2.,  0., -2.], dtype=float32)
    """
    _axis_check_1d("hfft", axis)
    conj_a = complex_functions.conj(a)
    nn = (get_aval(conj_a).shape[axis] - 1) * 2 if n is None else n
    return _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm) * nn


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`hfft` (``numpy.fft.ihfft``): ``conj(rfft(a, n)) / n``.

    >>> fx.numpy.fft.ihfft(fx.numpy.array([8.0, -2.0, 0.0, -2.0]))
    Array([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
    """
    _axis_check_1d("ihfft", axis)
    arr = asarray(a)
    nn = get_aval(arr).shape[axis] if n is None else n
    output = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    return complex_functions.conj(output) * (1 / nn)


# --- two- and n-dimensional transforms -------------------------------------------------------


def fft2(a, s: Shape | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """The two-dimensional discrete Fourier transform over ``axes`` (``numpy.fft.fft2``)."""
    return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s: Shape | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """The two-dimensional inverse discrete Fourier transform (``numpy.fft.ifft2``)."""
    return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s: Shape | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """The two-dimensional transform of real input (``numpy.fft.rfft2``): the last of
    ``axes`` holds ``s[-1] // 2 + 1`` terms."""
    return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s: Shape | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """The inverse of :func:`rfft2` (``numpy.fft.irfft2``)."""
    return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s: Shape | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
    """The n-dimensional discrete Fourier transform (``numpy.fft.fftn``): over ``axes``
    (default: the last ``len(s)`` axes, or all), each cropped or padded to ``s``.

    >>> fx.numpy.fft.fftn(fx.numpy.ones((2, 2)))
    Array([[4.+0.j, 0.+0.j],
           [0.+0.j, 0.+0.j]], dtype=complex64)
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """The n-dimensional inverse discrete Fourier transform (``numpy.fft.ifftn``)."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """The n-dimensional transform of real input (``numpy.fft.rfftn``): the last of ``axes``
    holds ``s[-1] // 2 + 1`` terms."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s: Shape | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None):
    """The inverse of :func:`rfftn` (``numpy.fft.irfftn``): the last of ``axes`` becomes
    ``s[-1]`` long (default ``2 * (m - 1)``)."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# --- frequencies and shifts ------------------------------------------------------------------


def _check_freq_args(name: str, n, d) -> None:
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of fx.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of fx.numpy.fft.{name} only takes a single value. "
                         f"Got d = {list(d)}.")


def _on(x, device):
    return x if device is None else device_put(x, device)


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``
    (``numpy.fft.fftfreq``): ``[0, 1, ..., n//2 - 1 (or n//2), -(n//2), ..., -1] / (d * n)``.

    >>> fx.numpy.fft.fftfreq(4)
    Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)
    """
    dtype = dtype or dtypes.default_float_dtype()
    _check_freq_args("fftfreq", n, d)
    out_dtype = dtype
    dtype = dtypes.real_dtype(dtypes.to_inexact_dtype(dtypes.requested(dtype, "fftfreq")))
    i = creation.arange(n, dtype=dtype)
    k = (i + n // 2) % n - n // 2
    result = k.astype(dtype) / creation.array(d * n, dtype=dtype)
    return _on(result.astype(out_dtype), device)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of :func:`rfft`'s terms (``numpy.fft.rfftfreq``):
    ``[0, 1, ..., n // 2] / (d * n)``.

    >>> fx.numpy.fft.rfftfreq(4)
    Array([0.  , 0.25, 0.5 ], dtype=float32)
    """
    dtype = dtype or dtypes.default_float_dtype()
    _check_freq_args("rfftfreq", n, d)
    k = creation.arange(0, n // 2 + 1 if n % 2 == 0 else (n - 1) // 2 + 1, dtype=dtype)
    return _on(k / creation.array(d * n, dtype=dtype), device)


def _shift(name: str, x, axes, sign: int):
    ensure_arraylike(name, x)
    x = to_array(x, name)
    shape = get_aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
        shift = [sign * (dim // 2) for dim in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = sign * (shape[axes] // 2)
    else:
        shift = [sign * (shape[ax] // 2) for ax in axes]
    return manipulation.roll(x, shift, axes)


def fftshift(x, axes: None | int | Sequence[int] = None):
    """Move the zero-frequency term to the center (``numpy.fft.fftshift``): a roll by half of
    each of ``axes`` (default all).

    >>> fx.numpy.fft.fftshift(fx.numpy.fft.fftfreq(4))
    Array([-0.5 , -0.25,  0.  ,  0.25], dtype=float32)
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes: None | int | Sequence[int] = None):
    """The inverse of :func:`fftshift` (``numpy.fft.ifftshift``); they differ for odd
    lengths."""
    return _shift("ifftshift", x, axes, -1)
