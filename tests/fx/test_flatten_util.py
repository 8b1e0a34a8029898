"""fx.flatten_util.ravel_pytree against jax.flatten_util.ravel_pytree (the oracle, run in the
same dtype mode as fx): flat values and dtype, unravel's shapes and dtypes, errors, and
ravel/unravel under jit, grad and vmap."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree as jax_ravel

import fx
import fx.numpy as fnp
from fx.flatten_util import ravel_pytree


def _jax_mode():
    return jax.enable_x64(fx.dtypes.x64_enabled())


def _to_np(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


# Each case is built twice, once with each library's arrays (``m`` is fnp or jnp).
CASES = {
    "one dtype": lambda m: {"w": m.ones((2, 3), "float32"), "b": m.arange(3.0, dtype="float32")},
    "mixed": lambda m: {"a": m.ones((2,), "float16"), "b": m.arange(3, dtype="int32"),
                        "c": 1.5, "d": True},
    "python scalars": lambda m: [1, 2.0],
    "int and bool": lambda m: [m.asarray(1, "int32"), m.asarray([True, False])],
    "uint and float": lambda m: (m.arange(2, dtype="uint32"), m.arange(2, dtype="float32")),
    "bfloat16 and float32": lambda m: (np.ones(2, np.float32), m.ones(2, "bfloat16")),
    "nested with None": lambda m: [None, (m.zeros((1, 2), "float32"), {"k": 2.5})],
    "0-d and empty leaves": lambda m: [m.zeros((0, 3), "float32"), m.asarray(4.0, "float32")],
}


@pytest.mark.parametrize("name", list(CASES))
def test_ravel_and_unravel_match_jax(name):
    tree = CASES[name](fnp)
    flat, unravel = ravel_pytree(tree)
    with _jax_mode():
        jflat, junravel = jax_ravel(CASES[name](jnp))
        jback = _to_np(junravel(jflat))
        jflat = np.asarray(jflat)
    assert flat.dtype == jflat.dtype and flat.shape == jflat.shape
    np.testing.assert_array_equal(np.asarray(flat).astype(np.float64), jflat.astype(np.float64))
    back = unravel(flat)
    assert jax.tree_util.tree_structure(back) == jax.tree_util.tree_structure(jback)
    for got, want in zip(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(jback)):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want)


def test_empty_tree():
    flat, unravel = ravel_pytree({"a": None, "b": []})
    with _jax_mode():
        jflat, _ = jax_ravel({"a": None, "b": []})
    assert flat.shape == (0,) and flat.dtype == jflat.dtype
    assert unravel(flat) == {"a": None, "b": []}


def test_one_dtype_unravel_keeps_the_input_dtype_like_jax():
    tree = [fnp.ones(2, "float32"), fnp.zeros((1, 1), "float32")]
    _, unravel = ravel_pytree(tree)
    out = unravel(fnp.arange(3, dtype="int32"))
    with _jax_mode():
        _, junravel = jax_ravel([jnp.ones(2, "float32"), jnp.zeros((1, 1), "float32")])
        jout = _to_np(junravel(jnp.arange(3, dtype="int32")))
    assert [np.asarray(o).dtype for o in out] == [o.dtype for o in jout]


def test_errors():
    _, unravel = ravel_pytree({"a": fnp.ones(2, "float16"), "b": fnp.ones(2, "float32")})
    with pytest.raises(ValueError, match=r"unravel: expected a flat array of shape \(4,\), got "
                                         r"shape \(3,\)"):
        unravel(fnp.ones(3, "float32"))
    with pytest.raises(ValueError, match=r"shape \(4,\), got shape \(2, 2\)"):
        unravel(fnp.ones((2, 2), "float32"))
    with pytest.raises(TypeError, match=r"unravel: given an array of dtype float16, but "
                                        r"expected dtype float32 .* \.astype\('float32'\)"):
        unravel(fnp.ones(4, "float16"))
    with pytest.raises(TypeError, match="ravel_pytree: the leaves must be arrays or scalars, "
                                        "got str"):
        ravel_pytree({"a": "text"})


def _params():
    return {"w": fnp.asarray(np.arange(6.0).reshape(2, 3), "float32"),
            "b": fnp.asarray([0.5, -1.0, 2.0], "float32")}


def test_under_jit_grad_and_vmap():
    params = _params()
    flat, unravel = ravel_pytree(params)

    # jit of ravel and of unravel agree with the eager results.
    np.testing.assert_array_equal(np.asarray(fx.jit(lambda t: ravel_pytree(t)[0])(params)),
                                  np.asarray(flat))
    back = fx.jit(unravel)(flat * 2)
    np.testing.assert_array_equal(np.asarray(back["w"]), 2 * np.asarray(params["w"]))

    # grad through ravel: d/dt sum(ravel(t)**2) = 2t, leaf by leaf.
    g = fx.grad(lambda t: fnp.sum(ravel_pytree(t)[0] ** 2))(params)
    for k in params:
        np.testing.assert_allclose(np.asarray(g[k]), 2 * np.asarray(params[k]))

    # grad through unravel: the flat gradient of a loss of the tree, matching jax's.
    def loss(v, m):
        t = unravel(v) if m is fnp else junravel(v)
        return m.sum(m.tanh(t["w"]) @ t["b"])

    with _jax_mode():
        jflat, junravel = jax_ravel({k: jnp.asarray(np.asarray(v)) for k, v in params.items()})
        jg = np.asarray(jax.grad(loss)(jflat, jnp))
    np.testing.assert_allclose(np.asarray(fx.grad(loss)(flat, fnp)), jg, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fx.jit(fx.grad(lambda v: loss(v, fnp)))(flat)), jg,
                               rtol=1e-6, atol=1e-6)

    # vmap of unravel over a batch of flat vectors, and of ravel over a batched tree.
    batch = fnp.stack([flat, -flat, 0 * flat])
    out = fx.vmap(unravel)(batch)
    assert out["w"].shape == (3, 2, 3) and out["b"].shape == (3, 3)
    np.testing.assert_array_equal(np.asarray(out["w"][1]), -np.asarray(params["w"]))
    flats = fx.vmap(lambda t: ravel_pytree(t)[0])(out)
    np.testing.assert_array_equal(np.asarray(flats), np.asarray(batch))


def test_unravel_is_hashable_and_works_as_a_static_argument():
    flat, unravel = ravel_pytree(_params())
    _, again = ravel_pytree(_params())
    assert unravel == again and hash(unravel) == hash(again)
    f = fx.jit(lambda u, v: u(v)["b"].sum(), static_argnums=0)
    assert float(f(unravel, flat)) == pytest.approx(1.5)
