"""Tests of fx.numpy's host-side io and printing (save, savez, load, frombuffer, fromstring,
fromiter, array_repr, array_str, print options, iterable) against jax.numpy and NumPy."""

from __future__ import annotations

import io

import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_bitwise, run_doctests

import fx
import fx.numpy as fnp


def test_save_load_roundtrip(tmp_path):
    x = fnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    path = tmp_path / "x.npy"
    fnp.save(path, x)
    back = fnp.load(path)
    assert isinstance(back, fx.Array)
    assert_bitwise(back, jnp.load(path))
    buf = io.BytesIO()
    fnp.save(buf, fnp.asarray(np.array([1, 2], np.int32)))
    buf.seek(0)
    assert_bitwise(fnp.load(buf), np.array([1, 2], np.int32))


def test_savez(tmp_path):
    path = tmp_path / "z.npz"
    fnp.savez(path, fnp.ones(2, np.float32), b=fnp.arange(3, dtype=np.int32))
    with fnp.load(path) as z:
        assert_bitwise(z["arr_0"], np.ones(2, np.float32))
        assert_bitwise(z["b"], np.arange(3, dtype=np.int32))


@pytest.mark.parametrize("name,f", [
    ("frombuffer", lambda m: m.frombuffer(np.arange(4, dtype=np.int32).tobytes(), np.int32)),
    ("frombuffer-offset", lambda m: m.frombuffer(np.arange(4, dtype=np.float32).tobytes(),
                                                 np.float32, count=2, offset=4)),
    ("fromstring", lambda m: m.fromstring("1 2 3.5", np.float32, sep=" ")),
    ("fromstring-int", lambda m: m.fromstring("4,5", np.int32, sep=",")),
])
def test_from_host_data_matches_jax(name, f):
    assert_bitwise(f(fnp), f(jnp), what=name)


def test_fromiter():
    # jax raises NotImplementedError; fx follows NumPy.
    assert_bitwise(fnp.fromiter((i * i for i in range(4)), np.int32),
                   np.fromiter((i * i for i in range(4)), np.int32))
    assert_bitwise(fnp.fromiter(iter([1.5, 2.5, 3.5]), np.float32, count=2),
                   np.array([1.5, 2.5], np.float32))


def test_fromfile(tmp_path):
    path = tmp_path / "raw.bin"
    np.arange(5, dtype=np.int32).tofile(path)
    assert_bitwise(fnp.fromfile(path, np.int32), np.arange(5, dtype=np.int32))
    assert_bitwise(fnp.fromfile(path, np.int32, count=2, offset=4), np.array([1, 2], np.int32))


def test_printing():
    x = np.array([[1.5, 2.25], [3.0, -4.0]], np.float32)
    a = fnp.asarray(x)
    assert fnp.array_str(a) == jnp.array_str(jnp.asarray(x)) == np.array_str(x)
    assert fnp.array_repr(a) == repr(a) == (
        "Array([[ 1.5 ,  2.25],\n       [ 3.  , -4.  ]], dtype=float32)")
    assert fnp.array_repr(a, precision=1) == (
        "Array([[ 1.5,  2.2],\n       [ 3. , -4. ]], dtype=float32)")
    with fnp.printoptions(precision=1):
        assert fnp.get_printoptions()["precision"] == 1
        assert fnp.array_str(a) == "[[ 1.5  2.2]\n [ 3.  -4. ]]"
    assert fnp.get_printoptions()["precision"] == jnp.get_printoptions()["precision"]
    old = fnp.get_printoptions()
    try:
        fnp.set_printoptions(precision=2)
        assert np.get_printoptions()["precision"] == 2
    finally:
        fnp.set_printoptions(**old)
    assert fnp.iterable(a) and fnp.iterable([1]) and not fnp.iterable(3)


def test_host_functions_need_concrete_values(tmp_path):
    with pytest.raises(fx.ConcretizationTypeError):
        fx.jit(lambda v: fnp.save(tmp_path / "t.npy", v))(np.ones(2, np.float32))


def test_docstring_examples():
    import fx.numpy.io

    assert run_doctests(fx.numpy.io) >= 3
