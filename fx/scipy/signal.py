"""``fx.scipy.signal``: the functions of ``jax.scipy.signal`` over fx primitives.

Convolutions: ``convolve``/``correlate`` (N-d) and ``convolve2d``/``correlate2d`` in modes
``'full'``, ``'same'`` and ``'valid'``, by ``lax.conv_general_dilated`` (``method='direct'``
or ``'auto'``, as jax, whose ``'auto'`` is always direct) or by FFT (``method='fft'``, which is
``fftconvolve``). Inputs are promoted to inexact dtypes; one input must be at least as large
as the other in every dimension (the larger is the "signal"). The spectral functions ``stft``,
``istft``, ``csd`` and ``welch``, and ``detrend`` (a constant or piecewise-linear
least-squares fit removed), which they apply to each segment, live in
:mod:`fx.scipy._signal_spectral` and are re-exported here. Everything
is differentiable and works under ``jit``/``vmap``; lengths, modes and breakpoints are static.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Literal

import numpy as np

from fx import lax
from fx.numpy._promote import canonical_axis, promote_to_inexact
from fx.scipy._signal_spectral import csd, detrend, istft, stft, welch
from fx.vectorize import vmap

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]

ModeString = Literal["full", "same", "valid"]
_MODES = ("full", "same", "valid")


def _fnp():
    import fx.numpy as fnp

    return fnp


def _inexact(*args, name: str):
    return promote_to_inexact(*(_fnp().asarray(a) for a in args), name=name)


def fftconvolve(in1, in2, mode: ModeString = "full", axes: Sequence[int] | None = None):
    """N-dimensional convolution by FFT, as :func:`jax.scipy.signal.fftconvolve`.

    ``axes`` names the convolved axes (default all); the others must have equal sizes and are
    mapped over. Real inputs use ``rfftn``/``irfftn``, complex ones ``fftn``/``ifftn``.

    >>> import fx
    >>> fx.scipy.signal.fftconvolve(fx.numpy.array([1., 2., 3.]), fx.numpy.array([0., 1.]))
    Array([0., 1., 2., 3.], dtype=float32)
    """
    name = "fx.scipy.signal.fftconvolve"
    in1, in2 = _inexact(in1, in2, name=name)
    if in1.ndim != in2.ndim:
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}")

    def conv(a, b):
        return _fftconvolve_unbatched(a, b, mode)

    if axes is None:
        return conv(in1, in2)
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    axes = tuple(canonical_axis(operator.index(ax), in1.ndim, name) for ax in axes)
    mapped = set(range(in1.ndim)) - set(axes)
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(f"{name}: mapped axes must have same shape; got {in1.shape=} "
                         f"{in2.shape=} {axes=}")
    for ax in sorted(mapped):
        conv = vmap(conv, in_axes=ax, out_axes=ax)
    return conv(in1, in2)


def _fftconvolve_unbatched(in1, in2, mode: str):
    fnp = _fnp()
    full_shape = tuple(s1 + s2 - 1 for s1, s2 in zip(in1.shape, in2.shape))
    if mode == "valid":
        no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
        swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
        if not (no_swap or swap):
            raise ValueError("fx.scipy.signal.fftconvolve: for 'valid' mode, one input must be "
                             "at least as large as the other in every dimension.")
        if swap:
            in1, in2 = in2, in1
    if all(s1 == 1 or s2 == 1 for s1, s2 in zip(in1.shape, in2.shape)):
        conv = in1 * in2  # an outer product: no transform needed
    else:
        if fnp.iscomplexobj(in1):
            fft, ifft = fnp.fft.fftn, fnp.fft.ifftn
        else:
            fft, ifft = fnp.fft.rfftn, fnp.fft.irfftn
        conv = ifft(fft(in1, full_shape) * fft(in2, full_shape), full_shape)
    if mode == "full":
        out_shape = full_shape
    elif mode == "same":
        out_shape = in1.shape
    else:
        out_shape = tuple(s1 - s2 + 1 for s1, s2 in zip(in1.shape, in2.shape))
    start = tuple((f - o) // 2 for f, o in zip(full_shape, out_shape))
    return lax.dynamic_slice(conv, start, out_shape)


def _convolve_nd(in1, in2, mode: str, *, precision, name: str):
    # Not fx.numpy.convolve: its padding for 'same' differs (it centres on the first input).
    fnp = _fnp()
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}")
    in1, in2 = _inexact(in1, in2, name=name)
    if in1.ndim != in2.ndim:
        raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"{name}: zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")
    no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError(f"{name}: one input must be smaller than the other in every dimension.")
    shape_o = in2.shape
    if swap:
        in1, in2 = in2, in1
    shape = in2.shape
    in2 = fnp.flip(in2)
    if mode == "valid":
        padding = [(0, 0) for _ in shape]
    elif mode == "same":
        padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2)
                   for s, so in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    out = lax.conv_general_dilated(in1[None, None], in2[None, None], (1,) * len(shape),
                                   padding, precision=precision)
    return out[0, 0]


def convolve(in1, in2, mode: ModeString = "full", method: str = "auto", precision=None):
    """N-dimensional convolution, as :func:`jax.scipy.signal.convolve`.

    ``method`` is ``'auto'`` or ``'direct'`` (``lax.conv_general_dilated``) or ``'fft'``
    (:func:`fftconvolve`). ``'same'`` is centred on ``in1``'s shape.

    >>> import fx
    >>> fx.scipy.signal.convolve(fx.numpy.array([1., 2., 3.]), fx.numpy.array([1., 1.]))
    Array([1., 3., 5., 3.], dtype=float32)
    """
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method in ("direct", "auto"):
        return _convolve_nd(in1, in2, mode, precision=precision, name="fx.scipy.signal.convolve")
    raise ValueError(f"fx.scipy.signal.convolve: got {method=}; expected 'auto', 'fft', or "
                     "'direct'.")


def _check_2d(name: str, in1, in2, boundary: str, fillvalue) -> None:
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode: ModeString = "full", boundary: str = "fill", fillvalue=0,
               precision=None):
    """2-d convolution, as :func:`jax.scipy.signal.convolve2d` (``boundary='fill'`` with
    ``fillvalue=0`` only).

    >>> import fx
    >>> fx.scipy.signal.convolve2d(fx.numpy.ones((2, 2)), fx.numpy.ones((1, 2)))
    Array([[1., 2., 1.],
           [1., 2., 1.]], dtype=float32)
    """
    _check_2d("fx.scipy.signal.convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode, precision=precision, name="fx.scipy.signal.convolve2d")


def correlate(in1, in2, mode: ModeString = "full", method: str = "auto", precision=None):
    """N-dimensional cross-correlation, as :func:`jax.scipy.signal.correlate`: the
    convolution with ``in2`` flipped and conjugated.

    >>> import fx
    >>> fx.scipy.signal.correlate(fx.numpy.array([1., 2., 3.]), fx.numpy.array([1., 0.]))
    Array([0., 1., 2., 3.], dtype=float32)
    """
    in2 = _fnp().asarray(in2)
    return convolve(in1, _fnp().flip(in2.conj()), mode, precision=precision, method=method)


def correlate2d(in1, in2, mode: ModeString = "full", boundary: str = "fill", fillvalue=0,
                precision=None):
    """2-d cross-correlation, as :func:`jax.scipy.signal.correlate2d` (``boundary='fill'``
    with ``fillvalue=0`` only), including SciPy's input swap when ``in2`` is the larger.

    >>> import fx
    >>> fx.scipy.signal.correlate2d(fx.numpy.ones((2, 2)), fx.numpy.ones((1, 1)), "valid")
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    name = "fx.scipy.signal.correlate2d"
    _check_2d(name, in1, in2, boundary, fillvalue)
    fnp = _fnp()
    in1, in2 = fnp.asarray(in1), fnp.asarray(in2)
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    same_shape = all(s1 == s2 for s1, s2 in zip(in1.shape, in2.shape))

    def conv(a, b):
        return _convolve_nd(a, b, mode, precision=precision, name=name)

    if mode == "same":
        return fnp.flip(conv(fnp.flip(in1), in2.conj()))
    if mode == "valid":
        if swap and not same_shape:
            return conv(fnp.flip(in2), in1.conj())
        return fnp.flip(conv(fnp.flip(in1), in2.conj()))
    if swap:
        return conv(fnp.flip(in2), in1.conj()).conj()
    return fnp.flip(conv(fnp.flip(in1), in2.conj()))
