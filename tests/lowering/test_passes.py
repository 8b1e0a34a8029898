"""The graph passes: each is a pure Jaxpr -> Jaxpr function whose result type-checks."""

from __future__ import annotations

import numpy as np

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.jaxpr import check_jaxpr
from fx.lowering.passes.eliminate_common_subexpressions import eliminate_common_subexpressions
from fx.lowering.passes.eliminate_dead_code import eliminate_dead_code
from fx.lowering.passes.fold_constants import fold_constants
from fx.lowering.passes.inline_calls import inline_calls
from fx.lowering.passes.merge_reduced_axes import merge_reduced_axes
from fx.lowering.passes.simplify_algebra import simplify_algebra


def _jaxpr(f, *args):
    return fx.make_jaxpr(f)(*args).jaxpr


def _prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def test_dce_drops_unused_work():
    j = eliminate_dead_code(_jaxpr(lambda x: (fnp.sin(x), fnp.cos(x))[0], fnp.ones(3)))
    check_jaxpr(j)
    assert _prims(j) == ["sin"]


def test_cse_merges_equal_equations():
    j = eliminate_common_subexpressions(_jaxpr(lambda x: fnp.sin(x) + fnp.sin(x), fnp.ones(3)))
    check_jaxpr(j)
    assert _prims(j).count("sin") == 1


def test_simplify_removes_identities_and_composes_chains():
    def f(x):
        y = (x * 1.0 - 0.0) + -0.0
        y = lax.neg(lax.neg(y))
        y = lax.transpose(lax.transpose(y, (1, 0)), (1, 0))
        return lax.reshape(lax.reshape(y, (6,)), (3, 2))

    j = eliminate_dead_code(simplify_algebra(_jaxpr(f, fnp.ones((2, 3)))))
    check_jaxpr(j)
    assert _prims(j) == ["reshape"]


def test_cse_keys_literals_by_their_bits():
    # By value, 0.0 == -0.0 would merge the two products (jit returned +0 where eager gave -0),
    # and a NaN literal would never equal itself.
    def f(x):
        return x * 0.0, x * -0.0, x * np.float32(np.nan), x * np.float32(np.nan)

    j = eliminate_common_subexpressions(_jaxpr(f, fnp.ones(3)))
    check_jaxpr(j)
    assert _prims(j) == ["mul", "mul", "mul"]


def test_cse_keeps_pads_with_signed_zero_fills_apart():
    def f(x):
        return lax.pad(x, -0.0, ((1, 1, 0),)), lax.pad(x, 0.0, ((1, 1, 0),))

    j = eliminate_common_subexpressions(_jaxpr(f, fnp.ones(3)))
    assert _prims(j).count("pad") == 2


def test_simplify_applies_identities_only_where_they_are_exact():
    cases = [  # (function, whether its one equation is rewritten away)
        (lambda x: x + -0.0, True), (lambda x: -0.0 + x, True), (lambda x: x - 0.0, True),
        (lambda x: x * 1.0, True), (lambda x: 1.0 * x, True), (lambda x: x / 1.0, True),
        (lambda x: x + 0.0, False), (lambda x: 0.0 + x, False), (lambda x: x - -0.0, False),
        (lambda x: x * 0.0, False), (lambda x: x * -1.0, False), (lambda x: x / -1.0, False),
    ]
    for f, removed in cases:
        j = eliminate_dead_code(simplify_algebra(_jaxpr(f, fnp.ones(3))))
        check_jaxpr(j)
        assert (not j.eqns) == removed, fx.make_jaxpr(f)(fnp.ones(3))
    for f in (lambda i: i + 0, lambda i: 0 + i, lambda i: i - 0, lambda i: i * 1):
        assert not simplify_algebra(_jaxpr(f, fnp.ones(3, fnp.int32))).eqns


def test_simplify_keeps_nan_sensitive_rewrites_out():
    j = simplify_algebra(_jaxpr(lambda x: x * 0.0 + (x - x), fnp.ones(3)))
    assert "mul" in _prims(j) and "sub" in _prims(j)


def test_fold_constants_computes_scalar_literal_equations():
    def f(x):
        c = lax.exp(lax.full((), 1.0, fnp.float32)) * 2.0
        return x * c

    j = fold_constants(_jaxpr(f, fnp.ones(3)))
    check_jaxpr(j)
    assert _prims(j) == ["mul"]


def test_inline_calls_flattens_nested_jits_twice_called():
    g = fx.jit(lambda x: fnp.sin(x) * 2.0)
    closed = fx.make_jaxpr(lambda x: g(x) + g(x + 1.0))(fnp.ones(3))
    assert "jit" in _prims(closed.jaxpr)
    flat = inline_calls(closed)
    check_jaxpr(flat)
    assert "jit" not in _prims(flat.jaxpr)
    assert _prims(flat.jaxpr).count("sin") == 2


def test_simplify_writes_a_transposed_matrix_product_directly():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))

    def f(a, b):  # a weight gradient as reverse mode writes it: (a^T b)^T
        return lax.transpose(lax.dot_general(a, b, (((0,), (0,)), ((), ()))), (1, 0))

    j = eliminate_dead_code(simplify_algebra(_jaxpr(f, a, b)))
    check_jaxpr(j)
    assert _prims(j) == ["dot_general"]
    (eqn,) = j.eqns
    assert eqn.invars == j.invars[::-1]
    np.testing.assert_allclose(np.asarray(fx.jit(f)(a, b)), (a.T @ b).T, rtol=1e-12)
    # Batched products and other permutations keep their transpose.
    c = rng.standard_normal((2, 5, 3))
    g = lambda c: lax.transpose(lax.dot_general(c, c, (((1,), (1,)), ((0,), (0,)))), (0, 2, 1))
    assert "transpose" in _prims(simplify_algebra(_jaxpr(g, c)))


def test_reductions_over_adjacent_axes_reduce_one_merged_axis_with_the_same_bits():
    from fx.interpreters.eval import eval_jaxpr

    x = np.random.default_rng(0).standard_normal((3, 4, 5, 6, 2)).astype(np.float32)

    def f(x):
        return (fnp.sum(x, axis=(0, 1, 2)), fnp.max(x, axis=(1, 2, 4)), fnp.min(x, axis=(0, 3)),
                fnp.sum(x, axis=(1, 2, 3, 4)))

    closed = fx.make_jaxpr(f)(x)
    j = merge_reduced_axes(closed.jaxpr)
    check_jaxpr(j)
    axes = [e.params["axes"] for e in j.eqns if e.primitive.name.startswith("reduce_")]
    assert axes == [(0,), (1, 3), (0, 3), (1,)]
    for got, want in zip(eval_jaxpr(j, [], x), eval_jaxpr(closed.jaxpr, [], x)):
        np.testing.assert_array_equal(np.asarray(got).view(np.uint32),
                                      np.asarray(want).view(np.uint32))


def test_reshapes_sink_below_elementwise_chains_with_the_same_bits():
    from fx.lowering.passes.sink_reshapes import sink_reshapes

    def f(x, y):
        flat = fnp.reshape(x, (2, 12))
        scaled = fnp.clip(fnp.round(flat * 3.5), -4.0, 4.0).astype(np.int8)  # scalars only
        mixed = fnp.reshape(x, (2, 12)) + y  # a full-shape second operand: stays
        return scaled, mixed

    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    x.flat[:3] = [np.nan, -0.0, np.inf]
    y = np.ones((2, 12), np.float32)
    j = eliminate_dead_code(sink_reshapes(_jaxpr(f, x, y)))
    check_jaxpr(j)
    made = {v: e for e in j.eqns for v in e.outvars}
    scaled, mixed = (made[v] for v in j.outvars)
    assert scaled.primitive.name == "reshape"  # the chain ran on (2, 3, 4), then one reshape
    assert made[scaled.invars[0]].invars[0].aval.shape == (2, 3, 4)
    assert mixed.primitive.name == "add"
    eager = [np.asarray(v) for v in f(fnp.asarray(x), fnp.asarray(y))]
    jitted = [np.asarray(v) for v in fx.jit(f)(x, y)]
    for e, g in zip(eager, jitted, strict=True):
        assert e.dtype == g.dtype and np.array_equal(e.view(np.uint8), g.view(np.uint8))
