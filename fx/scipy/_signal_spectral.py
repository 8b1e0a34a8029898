"""The spectral half of ``fx.scipy.signal``: ``stft``, ``istft``, ``csd`` and ``welch``, as
``jax.scipy.signal``'s (which follow SciPy's ``_spectral_helper``), and ``detrend``, which
they apply to each segment.

Segments of ``nperseg`` samples, ``noverlap`` apart, are detrended, windowed and transformed
(``rfft`` one-sided for real input, ``fft`` two-sided otherwise); ``csd``/``welch`` average the
cross/power spectra over segments (mean or bias-corrected median). The default ``'hann'``
window is built here; other named windows come from ``scipy.signal.get_window`` (as jax).
Lengths (``nperseg``, ``noverlap``, ``nfft``) must be concrete. Complex results have the
complex dtype matching the input's precision, frequencies and times its real dtype.
"""

from __future__ import annotations

import math
import operator
import warnings
from functools import partial

import numpy as np

from fx import dtypes, lax
from fx.numpy._promote import canonical_axis, promote_to_inexact
from fx.vectorize import vmap

__all__ = ["csd", "detrend", "istft", "stft", "welch"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def _to_complex(x):
    dt = x.dtype
    return x if dtypes.is_complex(dt) else x.astype(dtypes.complex_dtype(dt))


def _hann(n: int):
    fnp = _fnp()
    if n == 1:
        return fnp.array([1.0])
    return fnp.sin(fnp.linspace(0, np.pi, n, endpoint=False)) ** 2


def _named_window(window, n: int):
    if isinstance(window, str) and window == "hann":
        return _hann(n)
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(f"scipy must be available to use {window=}") from err
    return get_window(window, n)


def _triage_segments(window, nperseg: int | None, input_length: int, dtype):
    fnp = _fnp()
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else int(nperseg)
        if n > input_length:
            warnings.warn(f"nperseg={n} is greater than {input_length=}, using "
                          f"nperseg={input_length}", stacklevel=4)
            n = input_length
        return fnp.asarray(_named_window(window, n), dtype=dtype), n
    win = fnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < win.size:
        raise ValueError("window is longer than input signal")
    if n != win.size:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, n


def _median_bias(n: int):
    ii_2 = np.arange(2.0, n, 2)
    return 1 + np.sum(1.0 / (ii_2 + 1) - 1.0 / ii_2)


def _fft_helper(x, win, detrend_func, nperseg: int, noverlap: int, nfft: int, sides: str):
    fnp = _fnp()
    if x.dtype.kind == "i":
        x = x.astype(win.dtype)
    *batch_shape, signal_length = x.shape
    if nperseg == 1 and noverlap == 0:
        result = x[..., np.newaxis]
    else:
        step = nperseg - noverlap
        starts = fnp.arange(0, signal_length - nperseg + 1, step)
        result = vmap(lambda s: lax.dynamic_slice_in_dim(x, s, nperseg, axis=-1),
                      out_axes=-2)(starts)
    result = detrend_func(result)
    if fnp.iscomplexobj(win):
        result = _to_complex(result)
    result = win.reshape((1,) * len(batch_shape) + (1, nperseg)) * result
    if sides == "twosided":
        return fnp.fft.fft(result, n=nfft)
    return fnp.fft.rfft(result.real, n=nfft)


def _odd_ext(x, n: int, axis: int = -1):
    fnp = _fnp()
    if n < 1:
        return x
    if n > x.shape[axis] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {x.shape[axis] - 1}.")
    size = x.shape[axis]
    left_end = lax.slice_in_dim(x, 0, 1, axis=axis)
    left_ext = fnp.flip(lax.slice_in_dim(x, 1, n + 1, axis=axis), axis=axis)
    right_end = lax.slice_in_dim(x, size - 1, size, axis=axis)
    right_ext = fnp.flip(lax.slice_in_dim(x, size - n - 1, size - 1, axis=axis), axis=axis)
    return fnp.concatenate((2 * left_end - left_ext, x, 2 * right_end - right_ext), axis=axis)


def _make_pad(mode: str, **kwargs):
    def pad(x, n, axis=-1):
        width = [(0, 0)] * x.ndim
        width[axis] = (n, n)
        return _fnp().pad(x, width, mode, **kwargs)

    return pad


_BOUNDARY_FUNCS = {
    "even": _make_pad("reflect"),
    "odd": _odd_ext,
    "constant": _make_pad("edge"),
    "zeros": _make_pad("constant", constant_values=0.0),
    None: lambda x, *args, **kwargs: x,
}


def _concrete_int(v, what: str) -> int:
    try:
        return operator.index(v) if not isinstance(v, float) else int(v)
    except TypeError as err:
        raise TypeError(f"{what} must be a concrete integer, got {v!r}") from err


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
                     detrend_type="constant", return_onesided=True, scaling="density",
                     axis=-1, mode="psd", boundary=None, padded=False):
    fnp = _fnp()
    name = "fx.scipy.signal"
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARY_FUNCS:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARY_FUNCS)}")
    x = fnp.asarray(x)
    axis = canonical_axis(_concrete_int(axis, "axis of windowed-FFT"), x.ndim, name)
    if y is None:
        (x,) = promote_to_inexact(x, name=name)
        y_arr = x
        outershape = x.shape[:axis] + x.shape[axis + 1:]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        x, y_arr = promote_to_inexact(x, fnp.asarray(y), name=name)
        if x.ndim != y_arr.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs "
                             f"{y_arr.ndim}).")
        try:
            outershape = np.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:],
                                             y_arr.shape[:axis] + y_arr.shape[axis + 1:])
        except ValueError as err:
            raise ValueError("x and y cannot be broadcast together.") from err
    result_dtype = dtypes.complex_dtype(x.dtype) if not dtypes.is_complex(x.dtype) else x.dtype
    freq_dtype = np.finfo(result_dtype).dtype

    nperseg_int = None
    if nperseg is not None:
        nperseg_int = _concrete_int(nperseg, "nperseg of windowed-FFT")
        if nperseg_int < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg_int = _triage_segments(window, nperseg_int, input_length=x.shape[axis],
                                        dtype=x.dtype)
    noverlap_int = (nperseg_int // 2 if noverlap is None
                    else _concrete_int(noverlap, "noverlap of windowed-FFT"))
    nfft_int = nperseg_int if nfft is None else _concrete_int(nfft, "nfft of windowed-FFT")

    if y is None:
        if x.size == 0:
            return (fnp.zeros(x.shape, freq_dtype), fnp.zeros(x.shape, freq_dtype),
                    fnp.zeros(x.shape, result_dtype))
    elif x.size == 0 or y_arr.size == 0:
        shape = outershape[:axis] + (min(x.shape[axis], y_arr.shape[axis]),) + outershape[axis:]
        return (fnp.zeros(shape, freq_dtype), fnp.zeros(shape, freq_dtype),
                fnp.zeros(shape, result_dtype))

    x = fnp.moveaxis(x, axis, -1)
    if y is not None and y_arr.ndim > 1:
        y_arr = fnp.moveaxis(y_arr, axis, -1)
    if y is not None and x.shape[-1] != y_arr.shape[-1]:
        if x.shape[-1] < y_arr.shape[-1]:
            extra = (*x.shape[:-1], y_arr.shape[-1] - x.shape[-1])
            x = fnp.concatenate((x, fnp.zeros(extra, x.dtype)), -1)
        else:
            extra = (*y_arr.shape[:-1], x.shape[-1] - y_arr.shape[-1])
            y_arr = fnp.concatenate((y_arr, fnp.zeros(extra, x.dtype)), -1)

    if nfft_int < nperseg_int:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap_int >= nperseg_int:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg_int - noverlap_int

    if boundary is not None:
        ext = _BOUNDARY_FUNCS[boundary]
        x = ext(x, nperseg_int // 2, axis=-1)
        if y is not None:
            y_arr = ext(y_arr, nperseg_int // 2, axis=-1)
    if padded:
        # Pad to a whole number of segments: length nperseg + (nseg - 1) * nstep.
        nadd = (-(x.shape[-1] - nperseg_int) % nstep) % nperseg_int
        x = fnp.concatenate((x, fnp.zeros((*x.shape[:-1], nadd), x.dtype)), axis=-1)
        if y is not None:
            y_arr = fnp.concatenate((y_arr, fnp.zeros((*y_arr.shape[:-1], nadd), x.dtype)),
                                    axis=-1)

    if isinstance(detrend_type, str):
        detrend_func = partial(detrend, type=detrend_type, axis=-1)
    elif callable(detrend_type):
        if axis != -1:
            def detrend_func(d):
                return fnp.moveaxis(detrend_type(fnp.moveaxis(d, axis, -1)), -1, axis)
        else:
            detrend_func = detrend_type
    elif not detrend_type:
        def detrend_func(d):
            return d
    else:
        raise ValueError(f"Unsupported detrend type: {detrend_type}")

    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = fnp.sqrt(scale)
    scale = _to_complex(fnp.asarray(scale))

    sides = "twosided"
    if return_onesided:
        if fnp.iscomplexobj(x) or (y is not None and fnp.iscomplexobj(y_arr)):
            warnings.warn("Input data is complex, switching to return_onesided=False",
                          stacklevel=3)
        else:
            sides = "onesided"
    if sides == "twosided":
        freqs = fnp.fft.fftfreq(nfft_int, 1 / fs, dtype=freq_dtype)
    else:
        freqs = fnp.fft.rfftfreq(nfft_int, 1 / fs, dtype=freq_dtype)

    result = _fft_helper(x, win, detrend_func, nperseg_int, noverlap_int, nfft_int, sides)
    if y is not None:
        result_y = _fft_helper(y_arr, win, detrend_func, nperseg_int, noverlap_int, nfft_int,
                               sides)
        result = fnp.conjugate(result) * result_y
    elif mode == "psd":
        result = fnp.conjugate(result) * result
    result = result * scale
    if sides == "onesided" and mode == "psd":
        end = None if nfft_int % 2 else -1
        result = result.at[..., 1:end].multiply(2)

    time = fnp.arange(nperseg_int / 2, x.shape[-1] - nperseg_int / 2 + 1,
                      nperseg_int - noverlap_int, dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg_int / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real  # the imaginary parts are zero
    return freqs, time, fnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap: int | None = None,
         nfft: int | None = None, detrend: bool = False, return_onesided: bool = True,
         boundary: str | None = "zeros", padded: bool = True, axis: int = -1):
    """Short-time Fourier transform, as :func:`jax.scipy.signal.stft`: ``(freqs, times, Zxx)``.

    >>> import fx
    >>> f, t, z = fx.scipy.signal.stft(fx.numpy.ones(16), nperseg=8)
    >>> z.shape
    (5, 5)
    """
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, scaling="spectrum", axis=axis, mode="stft",
                            boundary=boundary, padded=padded)


def csd(x, y, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
        nfft: int | None = None, detrend="constant", return_onesided: bool = True,
        scaling: str = "density", axis: int = -1, average: str = "mean"):
    """Cross power spectral density by Welch's method, as :func:`jax.scipy.signal.csd`:
    ``(freqs, Pxy)``; ``y=None`` gives the power spectral density of ``x``.

    >>> import fx
    >>> f, p = fx.scipy.signal.csd(fx.numpy.arange(8.), fx.numpy.ones(8), nperseg=4)
    >>> p.shape
    (3,)
    """
    fnp = _fnp()
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, mode="psd")
    if y is not None:
        pxy = _to_complex(pxy)  # complex output even when x is y
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1])
                if fnp.iscomplexobj(pxy):
                    pxy = lax.complex(fnp.median(fnp.real(pxy), axis=-1),
                                      fnp.median(fnp.imag(pxy), axis=-1))
                else:
                    pxy = fnp.median(pxy, axis=-1)
                pxy = pxy / fnp.asarray(bias, pxy.dtype)
            elif average == "mean":
                pxy = pxy.mean(axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = fnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
          nfft: int | None = None, detrend="constant", return_onesided: bool = True,
          scaling: str = "density", axis: int = -1, average: str = "mean"):
    """Power spectral density by Welch's method, as :func:`jax.scipy.signal.welch`:
    ``(freqs, Pxx)``.

    >>> import fx
    >>> f, p = fx.scipy.signal.welch(fx.numpy.arange(8.), nperseg=4)
    >>> p.shape
    (3,)
    """
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, pxx.real


def _overlap_and_add(x, step_size: int):
    fnp = _fnp()
    if x.ndim < 2:
        raise ValueError("Input must have (..., frames, frame_length) shape.")
    *batch_shape, nframes, segment_len = x.shape
    flat = math.prod(batch_shape)
    x = x.reshape((flat, nframes, segment_len))
    output_size = step_size * (nframes - 1) + segment_len
    nstep_per_segment = 1 + (segment_len - 1) // step_size
    # TensorFlow's trick: pad each frame to whole steps, then read the flattened frames back
    # with one row fewer, which shifts each frame by one step relative to the previous.
    padded_len = nstep_per_segment * step_size
    x = fnp.pad(x, ((0, 0), (0, 0), (0, padded_len - segment_len)))
    x = x.reshape((flat, nframes, nstep_per_segment, step_size))
    x = x.transpose((0, 2, 1, 3))
    x = fnp.pad(x, ((0, 0), (0, 0), (0, nframes), (0, 0)))
    shrunken = x.shape[2] - 1
    x = x.reshape((flat, -1))[:, :nstep_per_segment * shrunken * step_size]
    x = x.reshape((flat, nstep_per_segment, shrunken * step_size))
    x = x.sum(axis=1)[:, :output_size]
    return x.reshape(tuple(batch_shape) + (-1,))


def istft(Zxx, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
          nfft: int | None = None, input_onesided: bool = True, boundary: bool = True,
          time_axis: int = -1, freq_axis: int = -2):
    """Inverse short-time Fourier transform, as :func:`jax.scipy.signal.istft`:
    ``(times, x)``.

    >>> import fx
    >>> _, _, z = fx.scipy.signal.stft(fx.numpy.arange(16.), nperseg=8)
    >>> t, x = fx.scipy.signal.istft(z, nperseg=8)
    >>> x.shape
    (16,)
    """
    fnp = _fnp()
    name = "fx.scipy.signal.istft"
    Zxx = fnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis = canonical_axis(freq_axis, Zxx.ndim, name)
    time_axis = canonical_axis(time_axis, Zxx.ndim, name)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = _to_complex(Zxx)
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    nperseg_int = _concrete_int(nperseg or n_default, "nperseg: segment length of STFT")
    if nperseg_int < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft_int = n_default
        if input_onesided and nperseg_int == n_default + 1:
            nfft_int += 1  # odd nperseg, no FFT padding
    else:
        nfft_int = _concrete_int(nfft, "nfft of STFT")
    if nfft_int < nperseg_int:
        raise ValueError(f"FFT length ({nfft_int}) must be longer than nperseg "
                         f"({nperseg_int}).")
    noverlap_int = _concrete_int(noverlap or nperseg_int // 2, "noverlap of STFT")
    if noverlap_int >= nperseg_int:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg_int - noverlap_int

    if time_axis != Zxx.ndim - 1 or freq_axis != Zxx.ndim - 2:
        outer = tuple(i for i in range(Zxx.ndim) if i not in {time_axis, freq_axis})
        Zxx = fnp.transpose(Zxx, outer + (freq_axis, time_axis))
    ifunc = fnp.fft.irfft if input_onesided else fnp.fft.ifft
    # xsubs: [..., T, N], N frames of length T.
    xsubs = ifunc(Zxx, axis=-2, n=nfft)[..., :nperseg_int, :]
    if isinstance(window, (str, tuple)):
        win = fnp.asarray(_named_window(window, nperseg_int), dtype=xsubs.dtype)
    else:
        win = fnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg_int:
            raise ValueError(f"window must have length of {nperseg_int}")
    xsubs = xsubs * win.sum()  # undoes the 'spectrum' scaling
    win = lax.expand_dims(win, (*range(xsubs.ndim - 2), xsubs.ndim - 1))
    x = _overlap_and_add((xsubs * win).swapaxes(-2, -1), nstep)
    win_squared = fnp.repeat(win * win, xsubs.shape[-1], axis=-1)
    norm = _overlap_and_add(win_squared.swapaxes(-2, -1), nstep)
    if boundary:
        h = nperseg_int // 2
        x = x[..., h:x.shape[-1] - h]
        norm = norm[..., h:norm.shape[-1] - h]
    x = x / fnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = fnp.moveaxis(x, -1, time_axis)
    time = fnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
    return time, x


def detrend(data, axis: int = -1, type: str = "linear", bp=0,  # noqa: A002
            overwrite_data: None = None):
    """Remove a linear (per segment between breakpoints ``bp``) or constant trend along
    ``axis``, as :func:`jax.scipy.signal.detrend`.

    >>> import fx
    >>> fx.scipy.signal.detrend(fx.numpy.array([1., 2., 3., 4.]), type="constant")
    Array([-1.5, -0.5,  0.5,  1.5], dtype=float32)
    """
    name = "fx.scipy.signal.detrend"
    fnp = _fnp()
    if overwrite_data is not None:
        raise NotImplementedError(f"{name}: overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError(f"{name}: trend type must be 'linear' or 'constant'.")
    (data_arr,) = promote_to_inexact(fnp.asarray(data), name=name)
    if type == "constant":
        return data_arr - data_arr.mean(axis, keepdims=True)
    n = data_arr.shape[axis]
    # Breakpoints are static: NumPy, not traced values.
    bp_arr = np.sort(np.unique(np.r_[0, bp, n]))
    if bp_arr[0] < 0 or bp_arr[-1] > n:
        raise ValueError(f"{name}: breakpoints must be non-negative and less than length of "
                         "data along given axis.")
    dt = data_arr.dtype
    data_arr = fnp.moveaxis(data_arr, axis, 0)
    shape = data_arr.shape
    data_arr = data_arr.reshape(n, -1)
    for m in range(len(bp_arr) - 1):
        npts = int(bp_arr[m + 1] - bp_arr[m])
        a = fnp.vstack([fnp.ones(npts, dtype=dt),
                        fnp.arange(1, npts + 1, dtype=dt) / np.asarray(npts, dt)]).T
        sl = slice(int(bp_arr[m]), int(bp_arr[m + 1]))
        coef = fnp.linalg.lstsq(a, data_arr[sl])[0]
        data_arr = data_arr.at[sl].add(-fnp.matmul(a, coef, precision=lax.Precision.HIGHEST))
    return fnp.moveaxis(data_arr.reshape(shape), 0, axis)
