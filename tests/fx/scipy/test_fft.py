"""fx.scipy.fft (dct/idct/dctn/idctn): type 2 against jax.scipy.fft (values, dtypes, both
modes), type 3 against scipy.fft; grads against jax and finite differences; vmap against a
loop; jit against eager; round trips and errors."""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp
import jax.scipy.fft as jfft
import numpy as np
import pytest
import scipy.fft as sfft

import fx
import fx.numpy as fnp
from fx.test_util import check_grads
from tests.harness import assert_allclose

F = importlib.import_module("fx.scipy.fft")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5))
Z = X + 1j * RNG.standard_normal(X.shape)
INTS = (np.arange(60).reshape(3, 4, 5) % 7).astype(np.int32)
ONE_D = [{}, dict(n=3), dict(n=7, axis=1), dict(axis=0, norm="ortho"), dict(norm="backward")]
N_D = [{}, dict(s=(3, 6)), dict(axes=(0, 2)), dict(axes=(2, 0), s=(2, 6), norm="ortho"),
       dict(axes=(1,)), dict(s=(2, 3, 4), norm="ortho")]


def _tol(dtype):
    return 1e-10 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-5


def _against_jax(name, arg, **kw):
    """Values against scipy.fft (jax's type 2 equals SciPy's to rounding; jitting jax's own
    for every case would compile an XLA program each), dtype and shape against jax's (traced
    only, by ``jax.eval_shape``)."""
    got = getattr(F, name)(fnp.asarray(arg), **kw)
    spec = jax.eval_shape(lambda: getattr(jfft, name)(jnp.asarray(arg), **kw))
    assert (got.shape, got.dtype) == (spec.shape, spec.dtype), f"{name}{kw}"
    t = _tol(spec.dtype)
    want = getattr(sfft, name)(arg, **kw)
    assert_allclose(got, want, rtol=t, atol=10 * t, check_dtype=False, what=f"{name}{kw}")


@pytest.mark.parametrize("name", ["dct", "idct"])
def test_type_2_one_axis_matches_jax(name):
    for arg in (X, Z, INTS):
        for kw in ONE_D:
            _against_jax(name, arg, **kw)


@pytest.mark.parametrize("name", ["dctn", "idctn"])
def test_type_2_several_axes_matches_jax(name):
    for arg in (X, Z):
        for kw in N_D:
            _against_jax(name, arg, **kw)


@pytest.mark.default_mode
@pytest.mark.parametrize("name", ["dct", "idct", "dctn", "idctn"])
def test_default_mode_matches_jax(name):
    for arg in (X, X.astype(np.float32), INTS, Z):
        for norm in (None, "ortho"):
            _against_jax(name, arg, norm=norm)


def test_values_match_jax_itself():
    for name, kw in [("dct", dict(n=7, norm="ortho")), ("idctn", dict(axes=(0, 2)))]:
        got = getattr(F, name)(fnp.asarray(X), **kw)
        want = jax.jit(lambda v: getattr(jfft, name)(v, **kw))(jnp.asarray(X))  # noqa: B023
        assert_allclose(got, want, what=name)


@pytest.mark.parametrize("name", ["dct", "idct", "dctn", "idctn"])
def test_type_3_matches_scipy(name):
    for arg in (X, Z):
        for kw in ONE_D if name in ("dct", "idct") else N_D:
            got = getattr(F, name)(fnp.asarray(arg), type=3, **kw)
            assert got.dtype == arg.dtype
            assert_allclose(got, getattr(sfft, name)(arg, type=3, **kw), what=f"{name}{kw}")


@pytest.mark.parametrize("typ", [2, 3])
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_round_trips(typ, norm):
    x = fnp.asarray(X)
    assert_allclose(F.idct(F.dct(x, typ, norm=norm), typ, norm=norm), X)
    assert_allclose(F.idctn(F.dctn(x, typ, norm=norm), typ, norm=norm), X)


@pytest.mark.parametrize("name, kw", [("dct", dict(norm="ortho")), ("idct", dict(n=6)),
                                      ("dctn", dict(axes=(0, 2))),
                                      ("dct", dict(type=3, axis=0))])
def test_grads_match_jax_and_finite_differences(name, kw):
    x = X[:2, :3]
    w = RNG.standard_normal(np.shape(getattr(sfft, name)(x, **kw)))

    def loss(mod, m, v):
        return m.sum(m.sin(getattr(mod, name)(v, **kw)) * w)

    got = fx.grad(lambda v: loss(F, fnp, v))(fnp.asarray(x))
    if kw.get("type", 2) == 2:
        want = jax.jit(jax.grad(lambda v: loss(jfft, jnp, v)))(jnp.asarray(x))
        assert_allclose(got, want)
    check_grads(lambda v: loss(F, fnp, v), (fnp.asarray(x),), order=2)


def test_vmap_matches_a_loop_and_jit_matches_eager():
    f = lambda v: F.dctn(v, axes=(0, 1), norm="ortho")  # noqa: E731
    got = fx.vmap(f, in_axes=2)(fnp.asarray(X))
    rows = [np.asarray(f(fnp.asarray(X[:, :, i]))) for i in range(X.shape[2])]
    assert_allclose(got, np.stack(rows), rtol=1e-12, atol=1e-12)
    g = lambda v: (F.idct(v, n=6), F.dct(v, 3, axis=0))  # noqa: E731
    assert_allclose(fx.jit(g)(fnp.asarray(X)), g(fnp.asarray(X)), rtol=0, atol=0)


def test_errors():
    x = fnp.asarray(X)
    with pytest.raises(ValueError, match="norm='forward' is not implemented"):
        F.idctn(x, norm="forward")
    with pytest.raises(ValueError, match="at most x.ndim"):
        F.dctn(x, s=(1, 2, 3, 4))
    with pytest.raises(TypeError, match="requires ndarray or scalar"):
        F.dct([1.0, 2.0])


@pytest.mark.parametrize("name", ["dct", "idct", "dctn", "idctn"])
@pytest.mark.parametrize("typ", [1, 4])
def test_types_jax_refuses_are_refused_the_same_way(name, typ):
    """jax.scipy.fft (0.10) implements type 2 only and raises NotImplementedError for the
    others; fx adds type 3 (SciPy's) and raises the same for types 1 and 4, naming the op."""
    with pytest.raises(NotImplementedError):
        getattr(jfft, name)(jnp.asarray(X), type=typ)
    with pytest.raises(NotImplementedError, match=rf"fx.scipy.fft.{name}: DCT type {typ} is "
                                                  "not implemented"):
        getattr(F, name)(fnp.asarray(X), type=typ)


def test_names_and_docstring_examples():
    from tests.harness import run_doctests

    assert set(F.__all__) == {n for n in dir(jfft) if not n.startswith("_")}
    assert run_doctests(F) >= 4
