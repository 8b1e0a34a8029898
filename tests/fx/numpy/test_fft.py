"""fx.numpy.fft against jax.numpy.fft: values and dtypes in x64 and default mode, every norm,
``n``/``s`` cropping and padding, axes; derivatives of real losses against jax and finite
differences; vmap against a loop; jit against eager; the coverage of jax.numpy.fft's names
and jax's errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx.test_util import check_grads
from tests.harness import assert_allclose, random_like, to_fx, to_jax

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 6))
Z = X + 1j * RNG.standard_normal(X.shape)
INTS = (np.arange(72).reshape(3, 4, 6) % 7).astype(np.int32)

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "rfftn"}
NORMS = [None, "backward", "ortho", "forward"]


def _compare(name, arg, **kw):
    """Values against ``numpy.fft`` (jax's equal them to rounding; comparing with jax's own
    values would compile an XLA program per call), dtype and shape against jax's (traced
    only, by ``jax.eval_shape``)."""
    got = getattr(fnp.fft, name)(fnp.asarray(arg), **kw)
    spec = jax.eval_shape(lambda: getattr(jnp.fft, name)(jnp.asarray(arg), **kw))
    assert (got.shape, got.dtype) == (spec.shape, spec.dtype), f"{name}{kw}"
    if kw.get("s") is not None and kw.get("axes") is None:  # NumPy 2 wants the axes named
        kw = dict(kw, axes=tuple(range(arg.ndim - len(kw["s"]), arg.ndim)))
    want = getattr(np.fft, name)(arg, **kw)
    tol = 1e-10 if spec.dtype in (np.float64, np.complex128) else 2e-5
    assert_allclose(got, want, rtol=tol, atol=10 * tol, check_dtype=False, what=f"{name}{kw}")


def test_values_match_jax_itself():
    for name, arg, kw in [("fft", Z, dict(n=5, norm="ortho")), ("irfft", Z, dict(axis=1)),
                          ("rfftn", X, dict(s=(2, 5), norm="forward")), ("ihfft", X, {}),
                          ("hfft", Z, dict(n=7))]:
        got = getattr(fnp.fft, name)(fnp.asarray(arg), **kw)
        want = jax.jit(lambda v: getattr(jnp.fft, name)(v, **kw))(jnp.asarray(arg))  # noqa: B023
        assert_allclose(got, want, what=name)


def _inputs(name):
    return [X, INTS] if name in REAL_ONLY else [X, Z, INTS]


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional_transforms_match_jax(name, norm):
    for arg in _inputs(name):
        for kw in [{}, dict(n=4), dict(n=9), dict(n=5, axis=1), dict(axis=0)]:
            _compare(name, arg, norm=norm, **kw)


@pytest.mark.parametrize("name", N_D)
def test_multi_dimensional_transforms_match_jax(name):
    extra = [dict(s=(4,)), dict(axes=(0, 1, 2), s=(2, 5, 4)), dict(axes=(2,))] \
        if name.endswith("n") else []
    for arg in _inputs(name):
        for kw in [{}, dict(s=(3, 7)), dict(axes=(0, 2)), dict(axes=(2, 0), s=(2, 3)),
                   dict(norm="ortho"), dict(norm="forward", axes=(1, 0))] + extra:
            _compare(name, arg, **kw)


@pytest.mark.default_mode
@pytest.mark.parametrize("name", ONE_D + N_D)
def test_default_mode_dtypes_and_values_match_jax(name):
    for arg in _inputs(name) + [X.astype(np.float32)]:
        for norm in NORMS:
            _compare(name, arg, norm=norm)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("mode", ["x64", "default"])
def test_frequencies_match_jax(name, mode):
    from tests.harness import same_mode

    with same_mode(mode == "x64"):
        for n in (1, 4, 7):
            for kw in [{}, dict(d=0.25), dict(dtype=np.float32), dict(dtype=np.complex64)] + (
                    [dict(dtype=np.int32)] if name == "rfftfreq" else []):
                got = getattr(fnp.fft, name)(n, **kw)
                spec = jax.eval_shape(lambda: getattr(jnp.fft, name)(n, **kw))  # noqa: B023
                assert (got.shape, got.dtype) == (spec.shape, spec.dtype), (name, n, kw)
                want = getattr(np.fft, name)(n, kw.get("d", 1.0))
                assert_allclose(got, want, rtol=1e-6, check_dtype=False, what=f"{name}{kw}")


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_match_jax(name):
    for arg in (X, np.arange(7)):
        for axes in [None, 0, (-1,), (0, 2)] if arg.ndim == 3 else [None, 0]:
            got = getattr(fnp.fft, name)(fnp.asarray(arg), axes=axes)
            spec = jax.eval_shape(lambda: getattr(jnp.fft, name)(arg, axes=axes))  # noqa: B023
            assert got.dtype == spec.dtype
            assert_allclose(got, getattr(np.fft, name)(arg, axes=axes))


def test_round_trips():
    x = fnp.asarray(X)
    assert_allclose(fnp.fft.ifft(fnp.fft.fft(x)), X + 0j)
    assert_allclose(fnp.fft.irfftn(fnp.fft.rfftn(x), s=X.shape), X)
    assert_allclose(fnp.fft.ihfft(fnp.fft.hfft(fnp.fft.ihfft(x))), fnp.fft.ihfft(x))
    odd = fnp.asarray(X[..., :5])
    assert_allclose(fnp.fft.irfft(fnp.fft.rfft(odd, norm="ortho"), n=5, norm="ortho"), X[..., :5])


# --- derivatives -------------------------------------------------------------------------------

LOSSES = {
    "rfft": lambda m, x: m.sum(m.abs(m.fft.rfft(x, n=7)) ** 2),
    "irfft": lambda m, x: m.sum(m.fft.irfft(x * (1 + 1j), n=9) ** 3),
    "rfft2-ortho": lambda m, x: m.sum(m.real(m.fft.rfft2(x, norm="ortho") ** 2)),
    "irfftn": lambda m, x: m.sum(m.sin(m.fft.irfftn(x + 0.5j * x, s=(3, 6), axes=(0, 2)))),
    "fft-forward": lambda m, x: m.sum(m.imag(m.fft.fft(x, axis=1, norm="forward") ** 2)),
    "ifftn-pad": lambda m, x: m.sum(m.abs(m.fft.ifftn(x, s=(5, 8))) ** 2),
    "hfft": lambda m, x: m.sum(m.fft.hfft(x + 1j * x ** 2) ** 2),
    "ihfft": lambda m, x: m.sum(m.real(m.fft.ihfft(x, n=4) * (2 - 1j))),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grad_of_a_real_loss_matches_jax_and_finite_differences(name):
    loss = LOSSES[name]
    x = X[:, :3, :5]
    got = fx.grad(lambda v: loss(fnp, v))(fnp.asarray(x))
    want = jax.jit(jax.grad(lambda v: loss(jnp, v)))(jnp.asarray(x))
    assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    check_grads(lambda v: loss(fnp, v), (fnp.asarray(x),), order=1)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "irfftn"])
def test_vjp_and_jvp_of_complex_valued_transforms_match_jax(name):
    arg = X if name in REAL_ONLY else Z
    f, g = getattr(fnp.fft, name), getattr(jnp.fft, name)
    kw = dict(norm="ortho")
    rng = np.random.default_rng(5)
    out, pull = fx.vjp(lambda v: f(v, **kw), *to_fx([arg]))
    ct = random_like(rng, np.asarray(out))
    jpull = jax.jit(lambda v, c: jax.vjp(lambda u: g(u, **kw), v)[1](c))
    assert_allclose(pull(to_fx(ct)), jpull(*to_jax([arg, ct])))
    t = random_like(rng, arg)
    jtan = jax.jit(lambda v, w: jax.jvp(lambda u: g(u, **kw), (v,), (w,))[1])
    assert_allclose(fx.jvp(lambda v: f(v, **kw), to_fx([arg]), to_fx([t]))[1],
                    jtan(*to_jax([arg, t])))


# --- vmap and jit ------------------------------------------------------------------------------


@pytest.mark.parametrize("name, kw", [("fft", dict(n=5)), ("rfft", dict(axis=0, norm="ortho")),
                                      ("irfft", dict(n=6)), ("fftn", dict(axes=(0,))),
                                      ("irfft2", dict(s=(3, 4)))])
def test_vmap_matches_a_loop(name, kw):
    arg = X if name in REAL_ONLY else Z
    f = lambda v: getattr(fnp.fft, name)(v, **kw)  # noqa: E731
    for axis in (0, 2):
        got = fx.vmap(f, in_axes=axis)(fnp.asarray(arg))
        rows = [np.asarray(f(fnp.asarray(np.take(arg, i, axis=axis))))
                for i in range(arg.shape[axis])]
        assert_allclose(got, np.stack(rows), rtol=1e-12, atol=1e-12)


def test_jit_matches_eager():
    def f(x, z):
        a = fnp.fft.rfft2(x, s=(4, 4), norm="ortho")
        b = fnp.fft.ifftn(z, axes=(0, 2), norm="forward")
        return a, fnp.fft.irfft(a, n=4), fnp.fft.fftshift(b, axes=1), fnp.fft.hfft(b[0], n=5)

    args = to_fx([X, Z])
    assert_allclose(fx.jit(f)(*args), f(*args), rtol=0, atol=0)


# --- coverage and errors -----------------------------------------------------------------------


def test_every_jax_numpy_fft_name_is_in_fx_numpy_fft():
    public = {n for n in dir(jnp.fft) if not n.startswith("_")}
    assert public - set(dir(fnp.fft)) == set()
    assert set(fnp.fft.__all__) == public
    import fx.numpy.fft as by_path  # noqa: PLC0415

    assert by_path is fnp.fft


def test_errors_are_jaxs():
    x = fnp.asarray(X)
    with pytest.raises(ValueError, match="does not support multiple axes"):
        fnp.fft.fft(x, axis=(0, 1))
    with pytest.raises(ValueError, match="only supports 2 axes"):
        fnp.fft.fft2(x, axes=(0,))
    with pytest.raises(ValueError, match="does not support repeated axes"):
        fnp.fft.fftn(x, axes=(1, 1))
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        fnp.fft.fftn(x, s=(2, 2), axes=(0,))
    with pytest.raises(ValueError, match="Shape should be positive"):
        fnp.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="Invalid norm value"):
        fnp.fft.fft(x, norm="sideways")
    with pytest.raises(ValueError, match="only real valued inputs"):
        fnp.fft.rfft(fnp.asarray(Z))
    with pytest.raises(TypeError, match="requires ndarray or scalar"):
        fnp.fft.fft([1.0, 2.0])
    with pytest.raises(ValueError, match="only takes an int"):
        fnp.fft.fftfreq([4])


def test_docstring_examples():
    from tests.harness import run_doctests

    assert run_doctests(fnp.fft) >= 10
