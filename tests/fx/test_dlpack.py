"""DLPack: fx arrays to NumPy/jax and back without copies where the protocol allows, the
read-only guarantee, jax's argument semantics (copy=, device=) and errors, CuPy where present."""

from __future__ import annotations

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import run_doctests

import fx
import fx.dlpack
import fx.numpy as fnp

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]


def _data(dtype, shape=(2, 3)):
    return (np.arange(np.prod(shape)).reshape(shape) % 2 == 1 if dtype is np.bool_ else
            np.arange(np.prod(shape)).reshape(shape).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_fx_to_numpy_is_a_read_only_view(dtype):
    x = fnp.asarray(_data(dtype))
    view = np.from_dlpack(x)
    assert view.dtype == x.dtype and view.shape == x.shape
    assert np.shares_memory(view, np.asarray(x))
    assert not view.flags.writeable  # fx arrays are immutable
    np.testing.assert_array_equal(view, _data(dtype))
    assert x.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_to_fx_shares_memory(dtype):
    host = _data(dtype)
    x = fx.dlpack.from_dlpack(host)
    assert isinstance(x, fx.Array) and x.dtype == host.dtype and not x.weak_type
    assert np.shares_memory(np.asarray(x), host)
    np.testing.assert_array_equal(np.asarray(x), host)
    want = jax.dlpack.from_dlpack(host)
    assert (x.shape, x.dtype) == (want.shape, want.dtype)


def test_shapes_strides_and_scalars():
    for host in (np.full((), 3.5, np.float32), np.zeros((0, 4), np.float32),
                 np.arange(24.0).reshape(2, 3, 4)[:, ::2, 1:], np.arange(6.0).reshape(2, 3).T):
        x = fx.dlpack.from_dlpack(host)
        np.testing.assert_array_equal(np.asarray(x), host)
        np.testing.assert_array_equal(np.asarray(fnp.sum(x)), host.sum())
        np.testing.assert_array_equal(np.asarray(fx.jit(lambda v: v * 2)(x)), host * 2)


def test_copy_argument():
    host = np.arange(4.0)
    assert not np.shares_memory(np.asarray(fx.dlpack.from_dlpack(host, copy=True)), host)
    assert np.shares_memory(np.asarray(fx.dlpack.from_dlpack(host, copy=False)), host)
    x = fnp.arange(3.0)
    assert np.from_dlpack(x, copy=True).flags.writeable
    assert not np.shares_memory(np.from_dlpack(x, copy=True), np.asarray(x))


@pytest.mark.default_mode
def test_default_mode_narrows_64_bit_data_as_jax():
    for source in (np.arange(4.0), np.arange(4)):
        got, want = fx.dlpack.from_dlpack(source), jax.dlpack.from_dlpack(source)
        assert got.dtype == want.dtype and got.dtype.itemsize == 4
        np.testing.assert_array_equal(np.asarray(got), source)


def test_round_trips_and_jax_interop():
    x = fnp.linspace(0.0, 1.0, 5)
    back = fx.dlpack.from_dlpack(x)
    assert np.shares_memory(np.asarray(back), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(fnp.from_dlpack(x)), np.asarray(x))
    # jax → fx: a view of jax's buffer; fx → jax: jax's importer (a pre-1.0 DLPack consumer)
    # gets a private copy, so it can never write into the fx array.
    j = jnp.arange(6.0).reshape(2, 3)
    from_jax = fx.dlpack.from_dlpack(j)
    assert np.shares_memory(np.asarray(from_jax), np.asarray(j))
    to_jax = jax.dlpack.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(to_jax), np.asarray(x))
    assert not np.shares_memory(np.asarray(to_jax), np.asarray(x))


def test_legacy_consumers_get_a_copy_or_an_error():
    x = fnp.arange(3.0)
    capsule = x.__dlpack__()  # no max_version: a DLPack 0.x consumer
    assert type(capsule).__name__ == "PyCapsule"
    with pytest.raises(BufferError, match="immutable.*copy=False"):
        x.__dlpack__(copy=False)
    versioned = x.__dlpack__(max_version=(1, 0), copy=False)  # zero-copy, marked read-only
    assert type(versioned).__name__ == "PyCapsule"


def test_errors_as_jax():
    for from_dlpack in (fx.dlpack.from_dlpack, jax.dlpack.from_dlpack):
        with pytest.raises(TypeError, match="must have __dlpack__ and __dlpack_device__"):
            from_dlpack([1.0, 2.0])
    with pytest.raises(RuntimeError, match="stream=None"):  # NumPy's rule for CPU memory
        fnp.arange(3.0).__dlpack__(stream=1, max_version=(1, 0))

    class OnTPU:
        def __dlpack__(self, **kw):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            return (4, 0)

    with pytest.raises(TypeError, match="unsupported device type"):
        fx.dlpack.from_dlpack(OnTPU())
    gpu = fx.Device("cuda", 0)
    with pytest.raises(ValueError, match="requires a copy since the source device.*copy=False"):
        fx.dlpack.from_dlpack(np.arange(3.0), device=gpu, copy=False)
    x = fnp.arange(3.0)
    fx.jit(lambda v: v + 1, donate_argnums=0)(x)
    with pytest.raises(RuntimeError, match="deleted"):
        np.from_dlpack(x)


def test_supported_dtypes():
    assert all(fx.dlpack.is_supported_dtype(d) for d in DTYPES)
    assert fx.dlpack.is_supported_dtype(np.float32) == jax.dlpack.is_supported_dtype(np.float32)
    assert not fx.dlpack.is_supported_dtype(fnp.bfloat16)  # NumPy has no DLPack code for it
    with pytest.raises(TypeError):
        fx.dlpack.is_supported_dtype(None)


def test_module_has_jax_dlpack_names():
    public = {n for n in dir(jax.dlpack) if not n.startswith("_")}
    assert public <= set(dir(fx.dlpack)), public - set(dir(fx.dlpack))


def test_docstring_example():
    assert run_doctests(fx.dlpack) >= 4


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None or fx.devices.cupy_module() is None,
                    reason="CuPy with a GPU is not available here")
def test_cupy_interop():
    import cupy as cp

    g = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    x = fx.dlpack.from_dlpack(g)
    assert x.device.platform == "cuda"
    back = cp.from_dlpack(x)
    assert back.data.ptr == g.data.ptr  # zero-copy both ways
    cp.testing.assert_array_equal(back, g)
    host = fx.dlpack.from_dlpack(g, device=fx.devices.CPU)
    np.testing.assert_array_equal(np.asarray(host), cp.asnumpy(g))
