"""Typed PRNG key arrays against jax's: ``fx.random.key`` values of dtype ``key<fry>``, the
extended-dtype hierarchy, key_data/wrap_key_data/key_impl, and keys through jit, vmap, scan,
while_loop, cond, split, fold_in, indexing and pytrees; every key compared bitwise by its data
with jax's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import fx
import fx.numpy as fnp
import fx.random as fr


def fx_data(k) -> np.ndarray:
    return np.asarray(fr.key_data(k))


def jax_data(k) -> np.ndarray:
    return np.asarray(jr.key_data(k))


def assert_same_keys(fk, jk):
    assert str(fk.dtype) == str(jk.dtype) == "key<fry>"
    assert fk.shape == jk.shape
    np.testing.assert_array_equal(fx_data(fk), jax_data(jk))


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 - 1])
def test_key_dtype_shape_and_data(seed):
    fk, jk = fr.key(seed), jr.key(seed)
    assert_same_keys(fk, jk)
    assert repr(fk.dtype) == repr(jk.dtype)
    assert fr.key_data(fk).dtype == jr.key_data(jk).dtype == np.uint32
    assert str(fr.key_impl(fk)) == str(jr.key_impl(jk)) == "threefry2x32"


def test_dtype_hierarchy():
    fk, jk = fr.key(0), jr.key(0)
    for f_dt, j_dt in ((fx.dtypes.prng_key, jax.dtypes.prng_key),
                       (fx.dtypes.extended, jax.dtypes.extended)):
        assert fnp.issubdtype(fk.dtype, f_dt) == jnp.issubdtype(jk.dtype, j_dt) is True
        for other in (np.float32, np.uint32, np.int64, np.bool_):
            assert fnp.issubdtype(other, f_dt) == jnp.issubdtype(other, j_dt) is False
    assert fnp.issubdtype(fk.dtype, np.integer) == jnp.issubdtype(jk.dtype, np.integer)
    assert fnp.issubdtype(fr.PRNGKey(0).dtype, fx.dtypes.prng_key) is False


def test_wrap_key_data_round_trip():
    data = np.array([[1, 2], [3, 4], [2**32 - 1, 0]], np.uint32)
    fk, jk = fr.wrap_key_data(data), jr.wrap_key_data(data)
    assert_same_keys(fk, jk)
    np.testing.assert_array_equal(fx_data(fk), data)


@pytest.mark.parametrize("num", [2, 3, (2, 3)])
def test_split_and_fold_in(num):
    fk, jk = fr.key(7), jr.key(7)
    assert_same_keys(fr.split(fk, num), jr.split(jk, num))
    assert_same_keys(fr.fold_in(fk, 12345), jr.fold_in(jk, 12345))
    assert_same_keys(fr.fold_in(fr.split(fk, 4)[2], 3), jr.fold_in(jr.split(jk, 4)[2], 3))


def test_samplers_on_typed_and_raw_keys_agree_with_jax():
    fk, jk = fr.key(3), jr.key(3)
    for fs, js in ((lambda k: fr.uniform(k, (4,), np.float32),
                    lambda k: jr.uniform(k, (4,), np.float32)),
                   (lambda k: fr.randint(k, (5,), 0, 10, np.int32),
                    lambda k: jr.randint(k, (5,), 0, 10, np.int32)),
                   (lambda k: fr.bits(k, (3,)), lambda k: jr.bits(k, (3,), np.uint32)),
                   (lambda k: fr.permutation(k, 6), lambda k: jr.permutation(k, 6))):
        got, want = np.asarray(fs(fk)), np.asarray(js(jk))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.asarray(fs(fr.PRNGKey(3))), got)
    np.testing.assert_allclose(np.asarray(fr.normal(fk, (4,), np.float32)),
                               np.asarray(jr.normal(jk, (4,), np.float32)),
                               rtol=2e-6, atol=2e-6)


def test_keys_through_jit():
    f = lambda k: (fr.split(k, 3)[1], fr.uniform(k, (2,), np.float32))  # noqa: E731
    fk, jk = fr.key(11), jr.key(11)
    (fo, fu), (jo, ju) = fx.jit(f)(fk), jax.jit(
        lambda k: (jr.split(k, 3)[1], jr.uniform(k, (2,), np.float32)))(jk)
    assert_same_keys(fo, jo)
    np.testing.assert_array_equal(np.asarray(fu), np.asarray(ju))
    # A key made inside jit, and fold_in of a traced integer.
    g = fx.jit(lambda s, i: fr.fold_in(fr.key(s), i))
    h = jax.jit(lambda s, i: jr.fold_in(jr.key(s), i))
    assert_same_keys(g(5, 9), h(5, 9))


def test_jaxpr_types_keys():
    fj = fx.make_jaxpr(lambda k: fr.split(k, 2))(fr.key(0))
    assert "key<fry>[]" in str(fj) and "key<fry>[2]" in str(fj)
    assert [str(v.aval.dtype) for v in fj.jaxpr.invars] == ["key<fry>"]


def test_keys_through_vmap():
    fks, jks = fr.split(fr.key(1), 4), jr.split(jr.key(1), 4)
    assert_same_keys(fx.vmap(lambda k: fr.fold_in(k, 2))(fks),
                     jax.vmap(lambda k: jr.fold_in(k, 2))(jks))
    assert_same_keys(fx.vmap(lambda k: fr.split(k))(fks), jax.vmap(lambda k: jr.split(k))(jks))
    np.testing.assert_array_equal(np.asarray(fx.vmap(lambda k: fr.bits(k, (2,)))(fks)),
                                  np.asarray(jax.vmap(lambda k: jr.bits(k, (2,), np.uint32))(jks)))
    # vmap over an integer, one key closed over.
    fk, jk = fr.key(2), jr.key(2)
    assert_same_keys(fx.vmap(lambda i: fr.fold_in(fk, i))(np.arange(3)),
                     jax.vmap(lambda i: jr.fold_in(jk, i))(np.arange(3)))


def test_keys_through_scan_while_and_cond():
    def f_step(k, _):
        k, sub = fr.split(k)
        return k, fr.uniform(sub, (), np.float32)

    def j_step(k, _):
        k, sub = jr.split(k)
        return k, jr.uniform(sub, (), np.float32)

    fk, fs = fx.lax.scan(f_step, fr.key(4), None, length=5)
    jk, js = jax.lax.scan(j_step, jr.key(4), None, length=5)
    assert_same_keys(fk, jk)
    np.testing.assert_array_equal(np.asarray(fs), np.asarray(js))
    # Keys as scanned inputs and outputs.
    fo = fx.lax.scan(lambda c, k: (c, fr.fold_in(k, 1)), 0, fr.split(fr.key(0), 3))[1]
    jo = jax.lax.scan(lambda c, k: (c, jr.fold_in(k, 1)), 0, jr.split(jr.key(0), 3))[1]
    assert_same_keys(fo, jo)
    fw = fx.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, fr.split(c[1])[0]),
                           (0, fr.key(8)))[1]
    jw = jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jr.split(c[1])[0]),
                            (0, jr.key(8)))[1]
    assert_same_keys(fw, jw)
    for pred in (True, False):
        fc = fx.lax.cond(pred, lambda k: fr.fold_in(k, 1), lambda k: k, fr.key(9))
        jc = jax.lax.cond(pred, lambda k: jr.fold_in(k, 1), lambda k: k, jr.key(9))
        assert_same_keys(fc, jc)


def test_key_arrays_index_reshape_and_stack():
    fks, jks = fr.split(fr.key(6), 6), jr.split(jr.key(6), 6)
    assert_same_keys(fks[1:4], jks[1:4])
    assert_same_keys(fks.reshape(2, 3), jks.reshape(2, 3))
    assert_same_keys(fks.reshape(2, 3)[:, 1], jks.reshape(2, 3)[:, 1])
    assert_same_keys(fnp.stack([fks[0], fks[5]]), jnp.stack([jks[0], jks[5]]))
    assert_same_keys(fnp.concatenate([fks[:2], fks[4:]]), jnp.concatenate([jks[:2], jks[4:]]))


def test_keys_are_pytree_leaves():
    fk, jk = fr.key(0), jr.key(0)
    f_leaves = fx.tree_util.tree_leaves({"k": fk, "x": 1.0})
    j_leaves = jax.tree_util.tree_leaves({"k": jk, "x": 1.0})
    assert len(f_leaves) == len(j_leaves) == 2
    assert_same_keys(f_leaves[0], j_leaves[0])
    out = fx.tree_util.tree_map(lambda k: fr.fold_in(k, 3), {"a": fk, "b": [fk]})
    assert_same_keys(out["b"][0], jr.fold_in(jk, 3))


def test_grad_with_a_key_argument():
    # Keys are not differentiated; a loss that samples with a key still has a gradient.
    f = lambda w, k: fnp.sum(w * fr.normal(k, (3,), np.float32))  # noqa: E731
    j = lambda w, k: jnp.sum(w * jr.normal(k, (3,), np.float32))  # noqa: E731
    w = np.ones(3, np.float32)
    np.testing.assert_allclose(np.asarray(fx.grad(f)(w, fr.key(1))),
                               np.asarray(jax.grad(j)(w, jr.key(1))), rtol=2e-6)


@pytest.mark.parametrize("op", ["add", "mul", "neg", "asarray", "convert"])
def test_key_misuse_raises_jax_error_type(op):
    calls = {
        "add": lambda m, k: k + 1,
        "mul": lambda m, k: k * k,
        "neg": lambda m, k: -k,
        "asarray": lambda m, k: np.asarray(k),
        "convert": lambda m, k: m.lax.convert_element_type(k, np.float32),
    }
    with pytest.raises(Exception) as jerr:
        calls[op](jax, jr.key(0))
    with pytest.raises(jerr.type):
        calls[op](fx, fr.key(0))
