"""``vmap(..., sum_match=True)`` against ``jax.vmap``: an output with ``out_axes`` None that
varies along the batch is summed over it (jax's ``matchaxis``), one that does not vary is
returned as is; values, dtypes and weak types in both of jax's modes, against a Python loop,
under jit, grad and nested vmap; without ``sum_match`` the same call is an error. Also jax's
positional signature ``vmap(fun, in_axes, out_axes, axis_name, axis_size, spmd_axis_name,
sum_match)``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose, same_mode

import fx
import fx.numpy as fnp

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3)).astype(np.float32)
V = RNG.standard_normal(3).astype(np.float32)
I8 = np.arange(12, dtype=np.int8).reshape(4, 3)
BOOL = A > 0


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request):
    with same_mode(request.param):
        yield request.param


# name, f(np_module) -> function, args, in_axes, out_axes
CASES = [
    ("mapped", lambda m: lambda x: m.sin(x) * 2, (A,), 0, None),
    ("mapped-axis1", lambda m: lambda x: x * x, (A,), 1, None),
    ("unmapped-kept", lambda m: lambda x, y: y * 3, (A, V), (0, None), None),
    ("mixed-tuple", lambda m: lambda x, y: (x * y, y + 1), (A, V), (0, None), None),
    ("per-leaf-out-axes", lambda m: lambda x, y: (x * y, x - y), (A, V), (0, None), (None, 0)),
    ("dict-out", lambda m: lambda x: {"s": x.sum(), "v": x}, (A,), 0, {"s": None, "v": 1}),
    ("int8-promotes-as-sum", lambda m: lambda x: x, (I8,), 0, None),
    ("bool-counts", lambda m: lambda x: x, (BOOL,), 0, None),
    ("weak-scalar", lambda m: lambda x: x.sum() * 0 + 2.0, (A,), 0, None),
    ("python-constant", lambda m: lambda x: m.asarray(2.0), (A,), 0, None),
]


@pytest.mark.parametrize("name,f,args,in_axes,out_axes", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(mode, name, f, args, in_axes, out_axes):
    # Arrays, not NumPy data: jax's eager vmap hands an unbatched or untouched NumPy input
    # back as NumPy, and sums it with NumPy's dtype rules (int8 to int64 in either mode).
    want = jax.vmap(f(jnp), in_axes, out_axes, sum_match=True)(*map(jnp.asarray, args))
    args = [fnp.asarray(a) for a in args]
    got = fx.vmap(f(fnp), in_axes, out_axes, sum_match=True)(*args)
    assert_allclose(got, want, what=name)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert fx.core.get_aval(g).weak_type == w.weak_type, f"{name}: weak type"
    jitted = fx.jit(fx.vmap(f(fnp), in_axes, out_axes, sum_match=True))(*args)
    assert_allclose(jitted, got, what=f"{name} jit")


def test_sum_is_the_loop_sum():
    f = lambda x, y: (fnp.tanh(x) * y, y)  # noqa: E731
    got = fx.vmap(f, (0, None), None, sum_match=True)(A, V)
    rows = [f(A[i], V) for i in range(A.shape[0])]
    assert_allclose(got[0], sum(np.asarray(r[0]) for r in rows), rtol=1e-6, what="summed")
    assert_allclose(got[1], V, what="unmapped output not multiplied by the axis size")


def test_without_sum_match_a_varying_unmapped_output_is_an_error():
    with pytest.raises(ValueError):
        jax.vmap(lambda x: x, out_axes=None)(A)
    with pytest.raises(ValueError, match="out_axes is None"):
        fx.vmap(lambda x: x, out_axes=None)(A)


def test_grad_and_nested_vmap():
    def f(m, vmap):
        return lambda w, x: vmap(lambda x: m.tanh(w * x), (0,), None, sum_match=True)(x).sum()

    want = jax.grad(f(jnp, lambda g, i, o, **k: jax.vmap(g, i, o, **k)))(V, A)
    got = fx.grad(f(fnp, lambda g, i, o, **k: fx.vmap(g, i, o, **k)))(V, A)
    assert_allclose(got, want, rtol=1e-5, what="grad through sum_match")

    def nested(m, vmap):
        inner = vmap(lambda x, y: x * y, (0, None), None, sum_match=True)
        return vmap(inner, (None, 0), 0)

    x3 = A[:, :1]
    want = nested(jnp, jax.vmap)(x3, A)
    got = nested(fnp, fx.vmap)(x3, A)
    assert_allclose(got, want, rtol=1e-6, what="nested vmap")


def test_positional_signature_is_jax():
    # vmap(fun, in_axes, out_axes, axis_name, axis_size, spmd_axis_name, sum_match)
    def total(m, lax):
        return lambda x: lax.psum(x, "i")

    want = jax.vmap(total(jnp, jax.lax), 0, 0, "i", None, None, False)(V)
    got = fx.vmap(total(fnp, fx.lax), 0, 0, "i", None, None, False)(V)
    assert_allclose(got, want, rtol=1e-6, what="axis_name in fourth place")
    want = jax.vmap(lambda: jnp.ones(2), (), 0, None, 3)()
    got = fx.vmap(lambda: fnp.ones(2), (), 0, None, 3)()
    assert_allclose(got, want, what="axis_size in fifth place")
