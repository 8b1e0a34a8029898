"""The Array API standard's inspection surface and creation keywords of fx.numpy, against
jax.numpy where jax has them."""

import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp


def test_version_and_namespace():
    assert fnp.__array_api_version__ == jnp.__array_api_version__ == "2024.12"
    x = fnp.ones(3)
    assert x.__array_namespace__() is fnp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="2019.01")


@pytest.mark.parametrize("other", ["some text", 3, None, [1], np.ones(2), object()])
def test_scalar_type_compares_with_anything(other):
    # The suite's reporting fixture compares dtypes with any value: a bool, never a raise.
    assert (fnp.float32 == other) is False
    if not isinstance(other, np.ndarray):  # (jax's raises on a NumPy array)
        assert (jnp.float32 == other) is False


def test_scalar_type_equalities_as_jax():
    for a in (np.float32, np.dtype("float32"), fnp.float32):
        assert (fnp.float32 == a) is True
    assert (fnp.float32 == np.float64) is False
    assert (fnp.int32 == fnp.float32) is False


def test_namespace_info_as_jax():
    info, jinfo = fnp.__array_namespace_info__(), jnp.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is False
    assert info.default_device() in info.devices()
    for kind in (None, "bool", "signed integer", "unsigned integer", "integral",
                 "real floating", "complex floating", "numeric",
                 ("real floating", "complex floating")):
        assert sorted(info.dtypes(kind=kind)) == sorted(jinfo.dtypes(kind=kind)), kind
    want = {k: np.dtype(v) for k, v in jinfo.default_dtypes().items()}
    assert {k: np.dtype(v) for k, v in info.default_dtypes().items()} == want
    with pytest.raises(KeyError):
        info.dtypes(kind="floating-ish")


CREATORS = [
    lambda d: fnp.zeros(2, device=d), lambda d: fnp.ones(2, device=d),
    lambda d: fnp.empty(2, device=d), lambda d: fnp.full(2, 3.0, device=d),
    lambda d: fnp.zeros_like(np.ones(2), device=d), lambda d: fnp.ones_like(np.ones(2), device=d),
    lambda d: fnp.empty_like(np.ones(2), device=d),
    lambda d: fnp.full_like(np.ones(2), 1, device=d), lambda d: fnp.arange(3, device=d),
    lambda d: fnp.linspace(0, 1, 3, device=d), lambda d: fnp.eye(2, device=d),
    lambda d: fnp.asarray([1, 2], device=d),
]


@pytest.mark.parametrize("i", range(len(CREATORS)))
def test_creation_device_keyword(i):
    dev = fnp.__array_namespace_info__().default_device()
    make = CREATORS[i]
    np.testing.assert_array_equal(np.asarray(make(dev)), np.asarray(make(None)))
    with pytest.raises(ValueError, match="is not a device of this process"):
        make("gpu:7")


def test_asarray_copy_and_to_device():
    x = fnp.arange(4)
    assert fnp.asarray(x, copy=False) is x
    y = fnp.asarray(x, copy=True)
    assert y is not x
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(fnp.reshape(x, (2, 2), copy=True)),
                                  np.arange(4).reshape(2, 2))
    dev = fnp.__array_namespace_info__().default_device()
    assert x.to_device(dev) is not None
    np.testing.assert_array_equal(np.asarray(x.to_device(dev)), np.arange(4))
    with pytest.raises(ValueError, match="to_device"):
        x.to_device("nowhere")


def test_eye_far_diagonal_as_jax():
    for n, m, k in [(0, None, 2**31), (3, 4, 2**40), (3, 4, -(2**40)), (3, 4, 3), (3, 4, -3)]:
        want = np.asarray(jnp.eye(n, m, k=k))
        got = np.asarray(fnp.eye(n, m, k=k))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_jit_creation_with_device():
    dev = fnp.__array_namespace_info__().default_device()
    out = fx.jit(lambda x: x + fnp.ones(2, device=dev))(np.ones(2, np.float32))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0])
