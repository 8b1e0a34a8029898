"""cond/switch, scan/map, fori_loop and while_loop against jax on the same programs.

Every row of ``CASES`` is one program written once over (lax, numpy) and instantiated with
fx and with jax. Each row is checked for values, jvp and vjp against jax, derivatives to
order 2 (``check_grads`` in float64), vmap with batched and unbatched predicates/carries
(against jax.vmap and a Python loop), ``fx.jit`` (through the compiler's opaque fallback) and
the type checker on the jaxprs of the transformed programs. ``while_loop`` rows are
forward-mode only (reverse mode is an error, as in jax). Inputs are float64 and away from
branch boundaries, so finite differences never switch branches.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
    to_jax,
)

import fx
import fx.numpy as fnp
from fx.jaxpr import check_jaxpr

W = np.array([0.5, -1.0, 2.0])
X = np.array([0.7, -0.4, 1.1])  # sum > 0, x[0] > 0, x[1] < 0
Y = np.array([0.3, 0.9, -0.6])
XS = np.array([[0.2, -0.5, 0.8], [1.0, 0.3, -0.7], [-0.4, 0.6, 0.1], [0.5, -0.2, 0.9]])
N = np.array(3, np.int32)


def programs(L, np_):
    """The same programs over jax.lax/jax.numpy or fx.lax/fx.numpy."""
    w = np_.asarray(W)  # closed over: a constant hoisted into the primitive's operands

    def cond_arith(x, y):
        return L.cond(x.sum() > 0, lambda a, b: np_.sin(a) * b, lambda a, b: a - b ** 2, x, y)

    def cond_pytree(x, y):
        out = L.cond(y[0] > 0,
                     lambda d: {"u": d["a"] * w, "v": (d["b"].sum(),)},
                     lambda d: {"u": np_.exp(d["b"]), "v": (d["a"][0] * 2.0,)},
                     {"a": x, "b": y})
        return out["u"] * out["v"][0]

    def cond_const_branch(x, y):
        # One branch's outputs ignore the operand (zero tangents in that branch only).
        a, b = L.cond(x[0] > y[0], lambda v: (v * 2.0, w), lambda v: (w, v ** 3), x)
        return a * b + y

    def cond_numeric_pred(x, y):
        return L.cond((x > 0).sum(), lambda a: np_.cos(a) * y, lambda a: a * y, x)

    def switch3(x, y):
        i = (x[0] > 0).astype(np.int32) + (x[1] > 0).astype(np.int32)
        return L.switch(i, [lambda a, b: a * b, lambda a, b: np_.sin(a + b),
                            lambda a, b: a ** 2 - b], x, y)

    def switch_clamped(x, y):
        hi = L.switch(7, [lambda a: a, lambda a: a * 3.0, lambda a: np_.tanh(a) * y], x)
        lo = L.switch(-2, [lambda a: a * y, lambda a: a], x)
        return hi + lo

    def scan_carry(x, xs):
        c, ys = L.scan(lambda c, a: (np_.sin(c) * a + c * w, c * a), x, xs)
        return c.sum() + (ys ** 2).sum()

    def scan_reverse_tree(x, xs):
        def body(c, a):
            new = {"p": c["p"] * np_.cos(a[0]) + c["q"], "q": c["q"] * 0.9}
            return new, (c["p"] * a, a.sum())

        c, (ys, zs) = L.scan(body, {"p": x, "q": x * 2.0}, xs, reverse=True)
        return c["p"] + c["q"] + np_.tanh(ys).sum(0) + zs.sum()

    def scan_fixed_point(x, xs):
        # The first carry's tangent becomes nonzero only in the second iteration.
        def body(c, a):
            u, v, k = c
            return (v, a * w + x, k + 1), u * np_.sin(a)

        (u, v, k), ys = L.scan(body, (x * 0.0, x * 0.0, 0), xs)
        return u * v + ys.sum(0) * k

    def scan_length_only(x, xs):
        c, ys = L.scan(lambda c, _: (c * 0.5 + np_.sin(c) * xs[0], c), x, None, length=3)
        return c + ys.sum(0)

    def scan_zero_length(x, xs):
        c, ys = L.scan(lambda c, a: (c * a, c + a), x, xs[:0])
        return c + ys.sum(0)

    def fori_static(x, xs):
        return L.fori_loop(1, 4, lambda i, c: c * np_.cos(c) + i * xs[i], x)

    def fori_empty(x, xs):
        return L.fori_loop(3, 1, lambda i, c: c * 2.0, x) + xs[0]

    def map_rows(x, xs):
        return L.map(lambda r: np_.sin(r) * x + r.sum(), xs)

    def nested(x, xs):
        def body(c, a):
            c = L.cond(a.sum() > 0, lambda c: c * a, lambda c: np_.sin(c) + a, c)
            c = L.fori_loop(0, 2, lambda i, d: d * 0.5 + np_.cos(d), c)
            return c, c.sum()

        c, ys = L.scan(body, x, xs)
        return c * ys.sum()

    def while_arith(x, y):
        def body(c):
            i, v = c
            return i + 1, np_.sin(v) * y + v

        return L.while_loop(lambda c: c[0] < 3, body, (0, x))[1]

    def while_data_pred(x, y):
        # The trip count depends on the data: under vmap the predicate is batched.
        return L.while_loop(lambda v: (v ** 2).sum() < 40.0, lambda v: v * 1.5 + y, x)

    def fori_traced(x, n):
        return L.fori_loop(0, n, lambda i, c: c * np_.cos(c) + x, x)

    return {k: v for k, v in locals().items() if callable(v) and not k.startswith("_")}


FX = programs(fx.lax, fnp)
JX = {k: jax.jit(v) for k, v in programs(jax.lax, jnp).items()}  # one XLA compile per use

# name -> (args, reverse-differentiable, diff_argnums, [(in_axes, batched args), ...])
_Bx = np.stack([X, -X, 2 * X, -0.5 * X])
_By = np.stack([Y, -Y, Y * 0.5, -2 * Y])
_Bxs = np.stack([XS, -XS, XS * 0.5])
_PAIR_BATCHES = [((0, None), [_Bx, Y]), ((None, 0), [X, _By]), ((0, 0), [_Bx, _By])]
_SCAN_BATCHES = [((0, None), [_Bx, XS]), ((None, 0), [X, _Bxs]), ((None, 1), [X, np.moveaxis(
    _Bxs, 0, 1)]), ((0, 0), [_Bx[:3], _Bxs])]
SPECS = {
    "cond_arith": ([X, Y], True, (0, 1), _PAIR_BATCHES),
    "cond_arith_false": ([-X, Y], True, (0, 1), []),
    "cond_pytree": ([X, Y], True, (0, 1), _PAIR_BATCHES),
    "cond_pytree_false": ([X, -Y], True, (0, 1), []),
    "cond_const_branch": ([X, Y], True, (0, 1), _PAIR_BATCHES),
    "cond_const_branch_false": ([-X, Y], True, (0, 1), []),
    "cond_numeric_pred": ([X, Y], True, (0, 1), _PAIR_BATCHES[:1]),
    "switch3": ([X, Y], True, (0, 1), _PAIR_BATCHES),
    "switch3_low": ([-np.abs(X), Y], True, (0, 1), []),
    "switch3_high": ([np.abs(X), Y], True, (0, 1), []),
    "switch_clamped": ([X, Y], True, (0, 1), _PAIR_BATCHES[:2]),
    "scan_carry": ([X, XS], True, (0, 1), _SCAN_BATCHES),
    "scan_reverse_tree": ([X, XS], True, (0, 1), _SCAN_BATCHES[:2]),
    "scan_fixed_point": ([X, XS], True, (0, 1), _SCAN_BATCHES),
    "scan_length_only": ([X, XS], True, (0, 1), _SCAN_BATCHES[:2]),
    "scan_zero_length": ([X, XS], True, (0, 1), _SCAN_BATCHES[:1]),
    "fori_static": ([X, XS], True, (0, 1), _SCAN_BATCHES[:2]),
    "fori_empty": ([X, XS], True, (0, 1), []),
    "map_rows": ([X, XS], True, (0, 1), _SCAN_BATCHES[:2]),
    "nested": ([X, XS], True, (0, 1), _SCAN_BATCHES[:2]),
    "while_arith": ([X, Y], False, (0, 1), _PAIR_BATCHES),
    "while_data_pred": ([X, Y], False, (0, 1), _PAIR_BATCHES[:1]),
    "fori_traced": ([X, N], False, (0,), [((0, None), [_Bx, N]),
                                          ((None, 0), [X, np.array([0, 2, 5], np.int32)])]),
}


def _case(name: str) -> OpCase:
    base = name.removesuffix("_false").removesuffix("_low").removesuffix("_high")
    args, _, diff, _ = SPECS[name]
    return OpCase(name, FX[base], JX[base], lambda rng, a=args: a, diff_argnums=diff)


NAMES = list(SPECS)
REVERSE = [n for n in NAMES if SPECS[n][1]]


@pytest.mark.parametrize("name", NAMES)
def test_eval_and_jvp(name):
    case, rng = _case(name), np.random.default_rng(0)
    check_eval(case, SPECS[name][0])
    check_jvp(case, SPECS[name][0], rng)


@pytest.mark.parametrize("name", REVERSE)
def test_vjp_and_grads_order2(name):
    case = _case(name)
    check_vjp(case, SPECS[name][0], np.random.default_rng(1))
    check_grads_f64(case, SPECS[name][0])


@pytest.mark.parametrize("name", ["cond_arith", "switch3", "scan_fixed_point", "nested"])
def test_hessian_matches_jax(name):
    f, j = FX[name], JX[name]
    args = SPECS[name][0]
    got = fx.hessian(lambda x, y: f(x, y).sum(), argnums=(0, 1))(*to_fx(args))
    want = jax.jit(jax.hessian(lambda x, y: j(x, y).sum(), argnums=(0, 1)))(*to_jax(args))
    assert_allclose(got, want, what=f"{name} hessian")


@pytest.mark.parametrize("name,in_axes", [(n, spec[0]) for n in NAMES for spec in SPECS[n][3]],
                         ids=str)
def test_vmap(name, in_axes):
    batched = dict(SPECS[name][3])[in_axes]
    check_vmap(_case(name), batched, in_axes)


@pytest.mark.parametrize("name", ["cond_arith", "switch3", "scan_carry", "fori_static"])
def test_vmap_of_grad_and_grad_of_vmap(name):
    f, j = FX[name], JX[name]
    in_axes, (bx, y) = _PAIR_BATCHES[0] if "scan" not in name and "fori" not in name else \
        _SCAN_BATCHES[0]
    got = fx.vmap(fx.grad(lambda x, y: f(x, y).sum()), in_axes)(*to_fx([bx, y]))
    want = jax.vmap(jax.grad(lambda x, y: j(x, y).sum()), in_axes)(*to_jax([bx, y]))
    assert_allclose(got, want, what=f"{name} vmap(grad)")
    got = fx.grad(lambda b: fx.vmap(f, in_axes)(b, to_fx(y)).sum())(to_fx(bx))
    want = jax.grad(lambda b: jax.vmap(j, in_axes)(b, to_jax(y)).sum())(to_jax(bx))
    assert_allclose(got, want, what=f"{name} grad(vmap)")


@pytest.mark.parametrize("name", ["cond_pytree", "switch3", "scan_reverse_tree", "nested",
                                  "while_data_pred", "fori_traced"])
def test_jit(name):
    args = SPECS[name][0]
    want = JX[name](*to_jax(args))
    assert_allclose(fx.jit(FX[name])(*to_fx(args)), want, what=f"{name} jit")
    if SPECS[name][1]:
        loss = lambda *a: FX[name](*a).sum()  # noqa: E731
        gj = jax.grad(lambda *a: JX[name](*a).sum(), argnums=(0, 1))(*to_jax(args))
        g = fx.jit(fx.grad(loss, argnums=(0, 1)))(*to_fx(args))
        assert_allclose(g, gj, what=f"{name} jit(grad)")
        g = fx.grad(fx.jit(loss), argnums=(0, 1))(*to_fx(args))
        assert_allclose(g, gj, what=f"{name} grad(jit)")


@pytest.mark.parametrize("name", NAMES)
def test_transformed_jaxprs_typecheck(name):
    args, reverse, diff, batches = SPECS[name]
    f = _case(name).fx_fn
    fs = [f, lambda *a: fx.jvp(f, tuple(a), tuple(fnp.ones_like(x) if i in diff else x
                                                  for i, x in enumerate(a)))]
    if reverse:
        fs.append(fx.grad(lambda *a: f(*a).sum(), argnums=diff))
    for fn in fs:
        check_jaxpr(fx.make_jaxpr(fn)(*to_fx(args)))
    for in_axes, batched in batches[:1]:
        check_jaxpr(fx.make_jaxpr(fx.vmap(f, in_axes))(*to_fx(batched)))


def test_linearize_of_while_loop_matches_jax():
    f, j = FX["while_arith"], JX["while_arith"]
    y, f_jvp = fx.linearize(lambda x: f(x, Y), to_fx(X))
    yj, j_jvp = jax.linearize(lambda x: j(x, Y), to_jax(X))
    assert_allclose(y, yj, what="primal")
    assert_allclose(f_jvp(to_fx(Y)), j_jvp(to_jax(Y)), what="linearized jvp")
