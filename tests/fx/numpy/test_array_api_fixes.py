"""What the Array API standard's conformance suite (data-apis/array-api-tests) found fx.numpy
doing differently from jax.numpy, each case checked against jax: dtypes in jax's rules,
signatures with the standard's parameter names, special values bitwise."""

import inspect

import jax.numpy as jnp
import numpy as np
import pytest
from harness import same_mode

import fx
import fx.numpy as fnp


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    view = {2: np.uint16, 4: np.uint32, 8: np.uint64}
    if a.dtype.kind == "c":
        a, b = a.view(a.real.dtype), b.view(b.real.dtype)
    if a.dtype.kind == "f":
        a, b = a.view(view[a.dtype.itemsize]), b.view(view[b.dtype.itemsize])
    np.testing.assert_array_equal(a, b)


# --- clip: the standard's (and jax's) parameter names ---------------------------------------


def test_clip_signature_as_jax():
    assert list(inspect.signature(fnp.clip).parameters) == list(
        inspect.signature(jnp.clip).parameters) == ["arr", "min", "max"]


@pytest.mark.parametrize("kw", [dict(min=1), dict(max=4), dict(min=1, max=4),
                                dict(min=4, max=1), dict(min=np.array([0, 5, 1, 2]))])
@pytest.mark.parametrize("dt", ["int8", "uint8", "float32"])
def test_clip_keywords_as_jax(kw, dt):
    x = np.array([0, 3, 9, 2], dt)
    _same(fnp.clip(x, **kw), jnp.clip(x, **kw))
    _same(fx.jit(lambda x: fnp.clip(x, **kw))(x), jnp.clip(x, **kw))


def test_clip_positional_and_errors():
    x = np.array([0.5, -2.0, 7.0], np.float32)
    _same(fnp.clip(x, 0, 1), jnp.clip(x, 0, 1))
    with pytest.raises(ValueError, match="clip"):
        fnp.clip()
    with pytest.raises(ValueError, match="complex"):
        fnp.clip(np.array([1j]), min=0)


# --- cumulative sums and products: jax's dtypes ---------------------------------------------

_CUMULATIVE_DTYPES = ["bool", "int8", "uint8", "uint16", "int32", "uint32", "int64", "float16",
                      "complex64"]


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", [None, "bool", "int16", "float32"])
def test_cumulative_dtypes_as_jax(name, dtype, x64):
    kw = {} if dtype is None else {"dtype": dtype}
    with same_mode(x64):
        for dt in _CUMULATIVE_DTYPES:
            x = np.array([1, 0, 1, 1] if dt == "bool" else [1, 0, 3, 2], dt)
            if dt == "bool" or dtype is None or dt[0] != "c":
                _same(getattr(fnp, name)(x, **kw), getattr(jnp, name)(x, **kw))


def test_cumulative_bool_dtype_counts_nonzeros():
    # A bool result counts nonzeros: -1 and 1 must not cancel.
    x = np.array([-1, 1, 0, 2], np.int8)
    for name in ("cumsum", "cumulative_sum", "cumprod", "cumulative_prod"):
        _same(getattr(fnp, name)(x, dtype=bool), getattr(jnp, name)(x, dtype=bool))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_include_initial_and_axes_as_jax(name):
    x = np.arange(1, 7, dtype=np.uint8).reshape(2, 3)
    for axis in (0, 1, -1):
        for initial in (False, True):
            kw = dict(axis=axis, include_initial=initial)
            _same(getattr(fnp, name)(x, **kw), getattr(jnp, name)(x, **kw))
            _same(fx.jit(lambda x, kw=kw: getattr(fnp, name)(x, **kw))(x),
                  getattr(jnp, name)(x, **kw))
    e = np.zeros((0,), np.uint8)
    _same(getattr(fnp, name)(e, include_initial=True), getattr(jnp, name)(e, include_initial=True))
    with pytest.raises(ValueError, match="axis"):
        getattr(fnp, name)(x)
    with pytest.raises(ValueError):
        getattr(fnp, name)(np.ones((), np.int32))


# --- expm1 of complex values on the real axis: jax's (XLA's) special values ------------------

_AXIS = [0.0, -0.0, 1e-30, -1e-30, 0.5, -2.5, 100.0, 800.0, np.inf, -np.inf, np.nan]


def _same_parts(a, b):
    """Complex ``a`` and ``b`` with the same signs, zeros, infinities and NaNs part by part,
    and finite parts within 1 ulp (NumPy's and XLA's real expm1 may round apart)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype
    for pa, pb in ((a.real, b.real), (a.imag, b.imag)):
        np.testing.assert_array_equal(np.isnan(pa), np.isnan(pb))
        ok = ~np.isnan(pa)
        np.testing.assert_array_equal(np.signbit(pa[ok]), np.signbit(pb[ok]))
        exact = ok & (~np.isfinite(pa) | (pa == 0) | (pb == 0))
        np.testing.assert_array_equal(pa[exact], pb[exact])
        np.testing.assert_array_max_ulp(pa[ok & ~exact], pb[ok & ~exact], maxulp=1)


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_expm1_complex_real_axis_as_jax(dt, x64):
    # The standard's expm1(+inf + 0j) = +inf + 0j and expm1(NaN + 0j) = NaN + 0j; jax also
    # gives +0 for -0 +/- 0j and a +0 imaginary part for any a - 0j (NumPy: inf + NaNj, -0).
    import jax

    x = np.array([complex(a, b) for a in _AXIS for b in (0.0, -0.0)], dt)
    with same_mode(x64):
        want = jnp.expm1(x)
        _same_parts(fnp.expm1(x), want)
        _same_parts(fx.jit(fnp.expm1)(x), want)
        _same_parts(fx.lax.expm1(fnp.asarray(x)), jax.lax.expm1(jnp.asarray(x)))


def test_expm1_complex_off_axis_unchanged():
    vals = [0.0, -0.0, 0.5, -2.5, np.inf, -np.inf, np.nan]
    x = np.array([complex(a, b) for a in vals for b in (1e-3, -2.0, 3.0)], np.complex128)
    got, want = np.asarray(fnp.expm1(x)), np.asarray(jnp.expm1(x))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    # The derivative is exp(x) on and off the axis (the impl changed, not the jvp rule).
    z = np.array([0.0, 2.0 - 0.0j, 1.0 + 1.0j])
    import jax

    g = fx.vmap(fx.grad(lambda z: fnp.real(fnp.expm1(z))))(z)
    want = jax.vmap(jax.grad(lambda z: jnp.real(jnp.expm1(z))))(z)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=1e-14)


# --- finfo: the standard's Python floats, jax's values -----------------------------------------


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64", "complex64",
                                "complex128"])
def test_finfo_python_floats_with_jax_values(dt):
    for arg in (getattr(fnp, dt), np.dtype(jnp.dtype(dt)), fnp.ones(1, dt).dtype):
        info, want = fnp.finfo(arg), jnp.finfo(jnp.dtype(dt))
        for name in ("eps", "epsneg", "max", "min", "resolution", "smallest_normal", "tiny",
                     "smallest_subnormal"):
            value = getattr(info, name)
            assert type(value) is float, (name, type(value))
            assert value == float(getattr(want, name)), name
        assert type(info.bits) is int and info.bits == want.bits
        assert info.dtype == want.dtype and info.nmant == want.nmant
    assert fnp.finfo(fnp.ones(2, dt)).dtype == jnp.finfo(jnp.dtype(dt)).dtype
    with pytest.raises(ValueError):
        fnp.finfo(fnp.int32)
