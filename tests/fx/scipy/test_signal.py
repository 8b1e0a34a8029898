"""fx.scipy.signal against jax.scipy.signal (and SciPy): convolutions per mode and method,
2-d forms, fftconvolve over axes, detrend, stft/istft, csd and welch; dtypes, gradients of
the convolutions, jit against eager, and jax's errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.signal as jss
import numpy as np
import pytest
import scipy.signal

import fx
import fx.numpy as fnp
import fx.scipy.signal as fss
from tests.harness import assert_allclose

RNG = np.random.default_rng(1)
A1, B1 = RNG.normal(size=7), RNG.normal(size=3)
A2, B2 = RNG.normal(size=(5, 4)), RNG.normal(size=(2, 3))
C1 = RNG.normal(size=6) + 1j * RNG.normal(size=6)
MODES = ["full", "same", "valid"]


def _jit_jax(fn, *args, **kw):
    return jax.jit(lambda *a: fn(*a, **kw))(*[jnp.asarray(a) for a in args])


def _fx(fn, *args, **kw):
    return fn(*[fnp.asarray(a) for a in args], **kw)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_convolve_correlate_nd_match_scipy(name):
    for mode in MODES:
        for a, b in [(A1, B1), (B1, A1), (A2, B2), (C1, B1[:2])]:
            for method in ("direct", "fft"):
                got = _fx(getattr(fss, name), a, b, mode=mode, method=method)
                # jax (and fx) keep in1's role in 'valid' FFT mode where SciPy swaps back.
                if not (mode == "valid" and a.shape[0] < b.shape[0] and method == "fft"):
                    want = getattr(scipy.signal, name)(a, b, mode, method)
                    assert_allclose(got, want, rtol=1e-10, atol=1e-12,
                                    what=f"{mode} {method} {a.shape}")


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_convolve_correlate_match_jax(name):
    # One jit of jax per case: the swapped 'valid' FFT case SciPy differs on, and complex.
    for a, b, mode, method in [(B1, A1, "valid", "fft"), (C1, B1[:2], "same", "direct"),
                               (A2, B2, "full", "fft")]:
        got = _fx(getattr(fss, name), a, b, mode=mode, method=method)
        want = _jit_jax(getattr(jss, name), a, b, mode=mode, method=method)
        assert_allclose(got, want, rtol=1e-10, atol=1e-12, what=f"{mode} {method}")


@pytest.mark.parametrize("name", ["convolve2d", "correlate2d"])
def test_2d_forms_match_scipy_and_jax(name):
    for mode in MODES:
        for a, b in [(A2, B2), (B2, A2), (A2, A2 + 1j), (A2[:2, :3], B2)]:
            got = _fx(getattr(fss, name), a, b, mode=mode)
            want = getattr(scipy.signal, name)(a, b, mode)
            assert_allclose(got, want, rtol=1e-10, atol=1e-12, what=f"{mode} {a.shape}")
    got = _fx(getattr(fss, name), B2, A2 + 1j, mode="full")
    assert_allclose(got, _jit_jax(getattr(jss, name), B2, A2 + 1j, mode="full"), rtol=1e-10,
                    atol=1e-12)


def test_fftconvolve_axes_dtypes_and_errors():
    x, y = RNG.normal(size=(3, 8)), RNG.normal(size=(3, 4))
    for mode in MODES:
        got = _fx(fss.fftconvolve, x, y, mode=mode, axes=1)
        assert_allclose(got, scipy.signal.fftconvolve(x, y, mode=mode, axes=1), rtol=1e-10,
                        atol=1e-12)
    i32 = np.arange(5, dtype=np.int32)
    f32, g32 = A1.astype(np.float32), B1.astype(np.float32)

    def cases(sig, xp):
        return (sig.convolve(xp.asarray(i32), xp.asarray(i32[:2])),
                sig.convolve(xp.asarray(f32), xp.asarray(g32), mode="same"),
                sig.fftconvolve(xp.asarray(x), xp.asarray(y), mode="same", axes=1))

    assert_allclose(cases(fss, fnp), jax.jit(lambda: cases(jss, jnp))(), rtol=None)
    with pytest.raises(ValueError, match="smaller than the other"):
        _fx(fss.convolve, A2, B2.T[:, :1].repeat(6, 0))
    with pytest.raises(ValueError, match="method"):
        _fx(fss.convolve, A1, B1, method="bogus")
    with pytest.raises(NotImplementedError, match="boundary"):
        _fx(fss.convolve2d, A2, B2, boundary="wrap")
    with pytest.raises(ValueError, match="2-dimensional"):
        _fx(fss.correlate2d, A1, B1)


def test_convolve_grads_and_jit():
    w = RNG.normal(size=9)

    def f(a, b):
        return (fss.convolve(a, b) * w).sum()

    def jf(a, b):
        return (jss.convolve(a, b) * w).sum()

    got = fx.grad(f, argnums=(0, 1))(fnp.asarray(A1), fnp.asarray(B1))
    assert_allclose(got, jax.jit(jax.grad(jf, argnums=(0, 1)))(jnp.asarray(A1),
                                                               jnp.asarray(B1)), rtol=1e-10)
    g_fft = fx.grad(lambda a, b: (fss.convolve(a, b, method="fft") * w).sum())(
        fnp.asarray(A1), fnp.asarray(B1))
    assert_allclose(g_fft, got[0], rtol=1e-9, atol=1e-12)
    assert_allclose(fx.jit(fx.grad(f))(fnp.asarray(A1), fnp.asarray(B1)), got[0], rtol=1e-10)
    for fn in (fss.convolve2d, fss.correlate2d):
        eager = _fx(fn, A2, B2, mode="same")
        assert_allclose(fx.jit(lambda a, b, fn=fn: fn(a, b, mode="same"))(
            fnp.asarray(A2), fnp.asarray(B2)), eager, rtol=1e-12, atol=1e-14)


def test_detrend_matches_jax_and_scipy():
    x = RNG.normal(size=(3, 12)) + np.arange(12.0)
    for kw in [{}, {"type": "constant"}, {"bp": [4, 9]}, {"axis": 0, "type": "linear"}]:
        got = _fx(fss.detrend, x, **kw)
        assert_allclose(got, scipy.signal.detrend(x, **kw), rtol=1e-9, atol=1e-10)
    got = _fx(fss.detrend, x.astype(np.float32), bp=[4, 9])
    assert_allclose(got, _jit_jax(jss.detrend, x.astype(np.float32), bp=[4, 9]), atol=1e-4)
    assert_allclose(fx.jit(fss.detrend)(fnp.asarray(x)), fss.detrend(fnp.asarray(x)),
                    rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="trend type"):
        _fx(fss.detrend, x, type="cubic")


X = RNG.normal(size=(2, 40))
Y = RNG.normal(size=(2, 40))
STFT_CASES = [
    {"nperseg": 8},
    {"nperseg": 9, "noverlap": 3, "nfft": 12, "boundary": "even", "padded": False},
    {"nperseg": 8, "boundary": "odd", "detrend": "linear", "window": "hamming"},
    {"nperseg": 6, "boundary": None, "return_onesided": False, "axis": 0},
]


def test_stft_matches_scipy_and_jax():
    for kw in STFT_CASES:
        x = X.T if kw.get("axis") == 0 else X
        got = _fx(fss.stft, x, fs=2.0, **kw)
        assert_allclose(got, scipy.signal.stft(x, fs=2.0, **kw), rtol=1e-10, atol=1e-12,
                        what=str(kw))
    kw = STFT_CASES[1]
    assert_allclose(_fx(fss.stft, X, fs=2.0, **kw), _jit_jax(jss.stft, X, fs=2.0, **kw),
                    rtol=1e-10, atol=1e-12)


def test_istft_roundtrip_matches_scipy_and_jax():
    _, _, z = scipy.signal.stft(X, nperseg=8)
    for kw in [{}, {"nperseg": 8, "noverlap": 4}, {"window": "hamming"}]:
        got = _fx(fss.istft, z, **kw)
        assert_allclose(got, scipy.signal.istft(z, **kw), rtol=1e-10, atol=1e-12, what=str(kw))
    t, x = _fx(fss.istft, z)
    assert_allclose(x[..., :40], X, rtol=1e-10, atol=1e-12)
    zt = np.swapaxes(z, -1, -2)
    assert_allclose(_fx(fss.istft, zt, time_axis=-2, freq_axis=-1),
                    _jit_jax(jss.istft, zt, time_axis=-2, freq_axis=-1), rtol=1e-10,
                    atol=1e-12)


CSD_CASES = [
    {"nperseg": 8},
    {"nperseg": 10, "noverlap": 2, "scaling": "spectrum", "average": "median"},
    {"nperseg": 8, "detrend": "linear", "nfft": 11, "return_onesided": False},
]


def test_csd_welch_match_scipy():
    for kw in CSD_CASES:
        assert_allclose(_fx(fss.csd, X, Y, fs=3.0, **kw), scipy.signal.csd(X, Y, fs=3.0, **kw),
                        rtol=1e-9, atol=1e-12, what=str(kw))
        assert_allclose(_fx(fss.welch, X, fs=3.0, **kw), scipy.signal.welch(X, fs=3.0, **kw),
                        rtol=1e-9, atol=1e-12, what=str(kw))


def test_csd_welch_match_jax_and_jit():
    kw = CSD_CASES[1]
    got = _fx(fss.csd, X, Y, fs=3.0, **kw)
    assert_allclose(got, _jit_jax(jss.csd, X, Y, fs=3.0, **kw), rtol=1e-10, atol=1e-12)
    jitted = fx.jit(lambda x, y: fss.csd(x, y, fs=3.0, **kw))(fnp.asarray(X), fnp.asarray(Y))
    assert_allclose(jitted, got, rtol=1e-12, atol=1e-14)


def test_welch_float32_and_grad():
    x32 = X.astype(np.float32)
    got = _fx(fss.welch, x32, nperseg=8)
    assert got[1].dtype == np.float32
    assert_allclose(got, _jit_jax(jss.welch, x32, nperseg=8))
    g = fx.grad(lambda x: fss.welch(x, nperseg=8)[1].sum())(fnp.asarray(X))
    jg = jax.jit(jax.grad(lambda x: jss.welch(x, nperseg=8)[1].sum()))(jnp.asarray(X))
    assert_allclose(g, jg, rtol=1e-9, atol=1e-12)
