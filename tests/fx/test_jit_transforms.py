"""``fx.jit`` composed with the other transformations, against eager fx and jax.

Every composition is written once against a namespace ``T`` of transformations (``fx``, or
``EAGER``: fx with ``jit`` as the identity) and applied to functions written against a namespace
``m`` of array functions (fx.numpy or jax.numpy, and lax). The result must equal the same
composition without jit, and the value jax gives: each composition's value is assembled from
jax's value, gradients, per-example values and gradients, jvp and Hessian of the function,
computed once per function (one XLA compilation each instead of one per composition). Inputs
are float64, so the tolerance is tight (1e-10).

Covered (on an MLP, a trigonometric polynomial, structural ops and control flow): jit(grad),
grad(jit), jit(grad(jit)), value_and_grad(jit), vmap(jit), jit(vmap), vmap(grad(jit)),
jit(vmap(grad)), jvp(jit), jit(jvp), vjp(jit), linearize(jit), jvp(grad(jit)), hessian(jit),
nested jits; then jit of closures over arrays and over outer tracers, static_argnums and
static_argnames, pytrees in and out, Python scalar arguments (weak types), constants and inputs
returned, methods, and jit around custom_jvp, custom_vjp and checkpoint.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose

import fx
import fx.lax as lax
import fx.numpy as fnp

TOL = 1e-10
FX = SimpleNamespace(np=fnp, lax=lax)
JX = SimpleNamespace(np=jnp, lax=jax.lax)
EAGER = SimpleNamespace(**{k: getattr(fx, k) for k in (
    "grad", "value_and_grad", "vmap", "jvp", "vjp", "linearize", "jacfwd", "jacrev", "hessian")},
    jit=lambda f, **kw: f)


def close(got, want, what: str, tol: float = TOL, check_dtype: bool = True) -> None:
    """Leafwise, within ``tol`` (float64) or a few ulp (float32: XLA may contract a * b + c)."""
    for g, w in zip(fx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        t = tol if np.asarray(w).dtype != np.float32 else 2e-6
        assert_allclose(g, w, rtol=t, atol=t, check_dtype=check_dtype, what=what)
    assert len(fx.tree_util.tree_leaves(got)) == len(jax.tree_util.tree_leaves(want)), what


def rand(*shape, seed=0):
    return np.random.default_rng(seed + 7 * len(shape)).uniform(-1.5, 1.5, shape)


# --- functions: f(params, x) -> scalar, written against m -------------------------------------


def _softmax(m, z):
    e = m.np.exp(z - m.np.max(z, axis=-1, keepdims=True))
    return e / m.np.sum(e, axis=-1, keepdims=True)


def mlp(m, p, x):
    h = m.np.tanh(m.np.matmul(x, p["w1"]) + p["b1"])
    out = m.np.sum(_softmax(m, m.np.matmul(h, p["w2"])) * m.np.asarray([1.0, -2.0]))
    return out + m.np.var(h) - m.np.mean(m.np.abs(h)) * m.np.min(h)


def trig_poly(m, p, x):
    a, b = p
    return m.np.sum(m.np.sin(a * x) * b ** 2 + m.np.exp(-x * x) * a) / (1 + b * b)


def structural(m, p, x):
    o = m.np.outer(x, p)
    y = m.lax.pad(o, np.float64(0.5), [(1, 0, 1), (0, 2, 0)])
    y = m.np.concatenate([y, m.lax.rev(y, (0,))], axis=1)[1:, ::2]
    return m.np.sum(m.np.transpose(y) * m.np.cos(y.T)) + m.np.sum(m.np.cumsum(o, axis=0) ** 2)


def control_flow(m, p, x):
    def body(c, r):
        c = m.np.tanh(c * p + r)
        return c, m.np.sum(c * r)

    c, ys = m.lax.scan(body, x, m.np.stack([x, x * 2, -x]))
    return m.lax.cond(m.np.sum(c) > 0, lambda c: m.np.sum(c * c), lambda c: m.np.sum(m.np.sin(c)),
                      c) + m.np.sum(ys)


FUNCS = {  # name: (f, params, x shape)
    "mlp": (mlp, {"w1": rand(3, 4), "b1": rand(4), "w2": rand(4, 2)}, (3,)),
    "trig_poly": (trig_poly, (rand(3), np.float64(0.7)), (3,)),
    "structural": (structural, rand(3), (3,)),
    "control_flow": (control_flow, rand(3), (3,)),
}




@functools.cache
def oracle(fname: str) -> SimpleNamespace:
    """The jax quantities every composition's result is made of, computed once per function
    (each under jax.jit): value, gradients, per-example values and gradients, a jvp, the
    Hessian in x."""
    func, p, x, xs, tp, tx = inputs(fname)
    f = functools.partial(func, JX)
    v, (gp, gx) = jax.jit(jax.value_and_grad(f, (0, 1)))(p, x)
    vb, gpb = jax.jit(jax.vmap(jax.value_and_grad(f), (None, 0)))(p, xs)
    _, jt = jax.jit(lambda *a: jax.jvp(f, a[:2], a[2:]))(p, x, tp, tx)
    h = jax.jit(jax.jacfwd(jax.grad(f, 1), 1))(p, x)
    return SimpleNamespace(v=v, gp=gp, gx=gx, vb=vb, gpb=gpb, jt=jt, h=h,
                           twice=2 * v + jax.jit(f)(p, -x), tx=tx)


def inputs(fname: str):
    func, p, shape = FUNCS[fname]
    tp = jax.tree_util.tree_map(lambda a: rand(*np.shape(a), seed=3), p)
    return func, p, rand(*shape, seed=1), rand(2, *shape, seed=2), tp, rand(*shape, seed=4)


# name: (the composition of T's transformations on f applied to (p, x, xs, tp, tx),
#        its value from the jax quantities o)
COMPOSITIONS = {
    "grad(jit)": (lambda T, f, p, x, xs, tp, tx: T.grad(T.jit(f))(p, x), lambda o: o.gp),
    "jit(grad)": (lambda T, f, p, x, xs, tp, tx: T.jit(T.grad(f, argnums=(0, 1)))(p, x),
                  lambda o: (o.gp, o.gx)),
    "jit(grad(jit))": (lambda T, f, p, x, xs, tp, tx: T.jit(T.grad(T.jit(f), argnums=1))(p, x),
                       lambda o: o.gx),
    "value_and_grad(jit)": (lambda T, f, p, x, xs, tp, tx: T.value_and_grad(
        T.jit(f), argnums=(0, 1))(p, x), lambda o: (o.v, (o.gp, o.gx))),
    "vmap(jit)": (lambda T, f, p, x, xs, tp, tx: T.vmap(T.jit(f), in_axes=(None, 0))(p, xs),
                  lambda o: o.vb),
    "jit(vmap)": (lambda T, f, p, x, xs, tp, tx: T.jit(T.vmap(f, in_axes=(None, 0)))(p, xs),
                  lambda o: o.vb),
    "vmap(grad(jit))": (lambda T, f, p, x, xs, tp, tx: T.vmap(T.grad(T.jit(f)), (None, 0))(
        p, xs), lambda o: o.gpb),
    "jit(vmap(grad))": (lambda T, f, p, x, xs, tp, tx: T.jit(T.vmap(T.grad(f), (None, 0)))(
        p, xs), lambda o: o.gpb),
    "jvp(jit)": (lambda T, f, p, x, xs, tp, tx: T.jvp(T.jit(f), (p, x), (tp, tx)),
                 lambda o: (o.v, o.jt)),
    "jit(jvp)": (lambda T, f, p, x, xs, tp, tx: T.jit(lambda *a: T.jvp(f, a[:2], a[2:]))(
        p, x, tp, tx), lambda o: (o.v, o.jt)),
    "vjp(jit)": (lambda T, f, p, x, xs, tp, tx: T.vjp(T.jit(f), p, x)[1](np.float64(1.5)),
                 lambda o: jax.tree_util.tree_map(lambda g: 1.5 * g, (o.gp, o.gx))),
    "linearize(jit)": (lambda T, f, p, x, xs, tp, tx: (lambda y, lin: (y, lin(tx)))(
        *T.linearize(lambda x: T.jit(f)(p, x), x)), lambda o: (o.v, jnp.vdot(o.gx, o.tx))),
    "jvp(grad(jit))": (lambda T, f, p, x, xs, tp, tx: T.jvp(
        lambda x: T.grad(T.jit(f), argnums=1)(p, x), (x,), (tx,)),
        lambda o: (o.gx, o.h @ o.tx)),
    "jit(jit)-twice": (lambda T, f, p, x, xs, tp, tx: T.jit(
        lambda p, x: T.jit(f)(p, x) * 2 + T.jit(f)(p, -x))(p, x), lambda o: o.twice),
}

@pytest.mark.parametrize("fname,comp", [
    pytest.param(f, c, id=f"{f}-{c}") for f in sorted(FUNCS) for c in COMPOSITIONS])
def test_composition_matches_eager_and_jax(fname, comp):
    func, p, x, xs, tp, tx = inputs(fname)
    build, expected = COMPOSITIONS[comp]
    f = functools.partial(func, FX)
    got = build(fx, f, p, x, xs, tp, tx)
    close(got, build(EAGER, f, p, x, xs, tp, tx), f"{comp} of {fname}: jit vs eager")
    close(got, expected(oracle(fname)), f"{comp} of {fname}: jit vs jax")


def test_hessian_of_jit():
    func, p, x, *_ = inputs("trig_poly")
    f = functools.partial(func, FX)
    got = fx.hessian(fx.jit(f), argnums=1)(p, x)
    close(got, fx.hessian(f, argnums=1)(p, x), "hessian(jit) vs eager")
    close(got, oracle("trig_poly").h, "hessian(jit) vs jax")


# --- closures ------------------------------------------------------------------------------------

X = rand(3, seed=11)
XS = rand(4, 3, seed=12)


def test_jit_of_closures_over_arrays():
    c_np, c_fx = rand(3, seed=13), fnp.asarray(rand(3, seed=14))

    def body(m, c1, c2):
        return lambda x: m.np.sin(x * c1) + c2 * 2

    f = fx.jit(body(FX, c_np, c_fx))
    want = jax.jit(body(JX, c_np, np.asarray(c_fx)))(X)
    close(f(X), want, "jit closing over a NumPy and an fx array")
    close(fx.grad(lambda x: fnp.sum(f(x)))(X),
          jax.grad(lambda x: jnp.sum(jnp.sin(x * c_np)))(X), "grad through it")


def _inner_closure(T, m):
    def outer(w):
        g = T.jit(lambda x: m.np.sum(m.np.sin(x * w)) * w)  # w: a tracer of the outer transform
        return g(X) + g(-X) * w
    return outer


@pytest.mark.parametrize("how", ["grad", "jvp", "vmap", "jit", "grad(grad)"])
def test_jitted_closure_over_an_outer_tracer(how):
    w = np.float64(0.8)
    ws = rand(4, seed=15)

    def run(T, m):
        outer = _inner_closure(T, m)
        if how == "grad":
            return T.grad(outer)(w)
        if how == "jvp":
            return T.jvp(outer, (w,), (np.float64(0.3),))
        if how == "vmap":
            return T.vmap(outer)(ws)
        if how == "jit":
            return T.jit(outer)(w)
        return T.grad(T.grad(outer))(w)

    got = run(fx, FX)
    close(got, run(EAGER, FX), f"{how}: jit vs eager")
    close(got, run(jax, JX), f"{how}: jit vs jax")


def test_jit_inside_jit_closing_over_the_outer_argument():
    def run(T, m):
        @T.jit
        def outer(a, b):
            inner = T.jit(lambda x: x * a + m.np.cos(b))  # closes over outer's tracers
            return inner(a) + inner(b) * 2
        return outer(X, -X)

    close(run(fx, FX), run(jax, JX), "nested jit closure")


# --- static arguments ----------------------------------------------------------------------------


def _static_fn(m):
    def f(x, n, shape, *, axis, mode):
        y = m.np.reshape(x ** n, shape)
        return m.np.sum(y, axis=axis) if mode == "sum" else m.np.max(y, axis=axis)
    return f


def test_static_argnums_and_argnames():
    f = fx.jit(_static_fn(FX), static_argnums=(1, 2), static_argnames=("axis", "mode"))
    g = jax.jit(_static_fn(JX), static_argnums=(1, 2), static_argnames=("axis", "mode"))
    x = rand(6, seed=16)
    for n, shape, axis, mode in [(2, (2, 3), 0, "sum"), (3, (3, 2), 1, "max"),
                                 (2, (2, 3), None, "max"), (2, (2, 3), 0, "sum")]:
        close(f(x, n, shape, axis=axis, mode=mode), g(x, n, shape, axis=axis, mode=mode),
              f"static {n, shape, axis, mode}")
    assert f.cache_size() == 3
    neg = fx.jit(lambda x, n: x * n, static_argnums=-1)
    close(neg(x, 3), x * 3, "negative static_argnums")


def test_transformations_of_jit_with_static_arguments():
    f = fx.jit(_static_fn(FX), static_argnums=(1, 2), static_argnames=("axis", "mode"))
    g = jax.jit(_static_fn(JX), static_argnums=(1, 2), static_argnames=("axis", "mode"))
    x, xs = rand(6, seed=17), rand(3, 6, seed=18)

    def scalar(h):
        return lambda x: h(x, 3, (2, 3), axis=None, mode="sum")

    close(fx.grad(scalar(f))(x), jax.grad(scalar(g))(x), "grad of jit with statics")
    close(fx.vmap(lambda x: f(x, 2, (3, 2), axis=1, mode="max"))(xs),
          jax.vmap(lambda x: g(x, 2, (3, 2), axis=1, mode="max"))(xs), "vmap of jit with statics")
    close(fx.jit(fx.grad(scalar(f)))(x), jax.grad(scalar(g))(x), "jit(grad(jit with statics))")


# --- pytrees, Python scalars, constants and inputs -----------------------------------------------


def _tree_fn(m):
    def f(d, t, none):
        assert none is None
        return {"a": d["x"] * t[0], "b": (t[1] + 1, None), "c": [m.np.sum(d["y"]), d["x"]]}
    return f


def test_pytrees_in_and_out():
    d = {"x": rand(3, seed=19), "y": rand(2, 2, seed=20)}
    t = (rand(3, seed=21), np.float64(2.0))
    got = fx.jit(_tree_fn(FX))(d, t, None)
    assert got["b"][1] is None and isinstance(got["c"], list)
    close(got, jax.jit(_tree_fn(JX))(d, t, None), "pytrees through jit")

    def loss(T, m):
        return lambda d, t: T.jit(_tree_fn(m))(d, t, None)["c"][0] * t[1]

    close(fx.grad(loss(fx, FX), argnums=(0, 1))(d, t), jax.grad(loss(jax, JX), argnums=(0, 1))(
        d, t), "grad with respect to dicts and tuples")
    in_axes = ({"x": 0, "y": None}, (None, None))
    ds = {"x": rand(4, 3, seed=22), "y": d["y"]}
    close(fx.vmap(loss(fx, FX), in_axes)(ds, t), jax.vmap(loss(jax, JX), in_axes)(ds, t),
          "vmap with pytree in_axes")


def test_degenerate_signatures_and_keyword_arguments():
    def run(T, m):
        return (T.jit(lambda x: ())(X), T.jit(lambda: m.np.ones(2) * 2)(),
                T.jit(lambda x: None)(X), T.jit(lambda x, *, s: x * s)(X, s=np.float64(2.0)),
                T.jit(lambda xs: xs[0] + xs[1] * 2)([X, -X]))

    got, want = run(fx, FX), run(jax, JX)
    assert got[0] == () and got[2] is None
    close([got[1], got[3], got[4]], [want[1], want[3], want[4]], "degenerate signatures",
          check_dtype=False)  # ones(2) is float32 in fx, float64 in jax with x64


def test_vmap_of_jit_with_axes_and_aux():
    def run(T, m):
        f = T.jit(lambda r: (r * 2 + m.np.sum(r), m.np.float64(3.0)))
        g = T.jit(T.grad(lambda x: (m.np.sum(m.np.sin(x)), {"x": x}), has_aux=True))
        return (T.vmap(f, in_axes=1, out_axes=(1, None))(XS), T.vmap(g, in_axes=1)(XS),
                T.grad(T.jit(lambda x: (m.np.sum(x ** 3), x * 2)), has_aux=True)(X))

    close(run(fx, FX), run(jax, JX), "in_axes/out_axes and has_aux")


@pytest.mark.default_mode  # Python scalars are float32 there
def test_python_scalars_are_weakly_typed():
    x32 = rand(3, seed=23).astype(np.float32)
    f = fx.jit(lambda x, s: x * s + s)
    for s in (2.0, 3, True):
        out = f(x32, s)
        assert out.dtype == np.float32, (s, out.dtype)
        close(out, jax.jit(lambda x, s: x * s + s)(x32, s), f"x * {s!r}")
    assert f.cache_size() == 3  # one entry per Python type (float, int, bool), not per value
    # Two Python floats: a weakly typed float32 in fx (jax with x64 would give float64).
    out = fx.jit(lambda a, b: a * b)(2.0, 3.5)
    assert out.dtype == np.float32 and out.weak_type and float(out) == 7.0
    assert (out + x32).dtype == np.float32 and (fx.jit(lambda a: a * 2)(1.5) + x32).dtype \
        == np.float32
    # A NumPy scalar is strongly typed (float64 data is float32 in the default mode).
    assert fx.jit(lambda x, s: x * s)(x32, np.float64(2.0)).dtype == np.float32
    with fx.enable_x64():
        assert fx.jit(lambda x, s: x * s)(x32, np.float64(2.0)).dtype == np.float64
    # The gradient with respect to a Python float is a float32, as in jax without x64.
    g = fx.grad(fx.jit(lambda s, x: fnp.sum(x * s) * s))(1.5, X)
    assert g.dtype == np.float32
    close(g, jax.grad(lambda s, x: jnp.sum(x * s) * s)(1.5, X), "grad with respect to a float",
          tol=1e-6, check_dtype=False)


def test_returning_inputs_and_constants_under_transformations():
    def body(m):
        return lambda x: (x, 2.0 * x, m.np.asarray(3.0, np.float64), m.np.ones(2, np.float64))

    f, g = fx.jit(body(FX)), jax.jit(body(JX))
    close(f(X), g(X), "jit")
    close(fx.vmap(f)(XS), jax.vmap(g)(XS), "vmap broadcasts the constants")
    close(fx.jvp(f, (X,), (X * 0 + 1,)), jax.jvp(g, (X,), (X * 0 + 1,)), "jvp: zero tangents")
    close(fx.grad(lambda x: fnp.sum(f(x)[0]) + f(x)[2])(X), np.ones(3), "grad through identity")
    same = fx.jit(lambda x, y: (y, x, x))
    a, b, c = same(X, XS)
    close((a, b, c), (XS, X, X), "permuted and duplicated inputs")
    assert b is not c or np.shares_memory(np.asarray(b), np.asarray(c))


# --- nesting -------------------------------------------------------------------------------------


def _nested():
    traces = []

    @fx.jit
    def inner(x):
        traces.append(x.shape)
        return fnp.sin(x) * 2

    @fx.jit
    def middle(x):
        return inner(x) + inner(x[:2])[0]

    return inner, fx.jit(lambda x: middle(x) * middle(x)), traces


def _nested_jax(x):
    return (jnp.sin(x) * 2 + jnp.sin(x[0]) * 2) ** 2


def test_nested_jits_retrace_per_signature():
    inner, outer, traces = _nested()
    close(outer(X), _nested_jax(X), "three levels")
    close(fx.jit(fx.jit(inner))(X), jnp.sin(X) * 2, "jit(jit(f))")
    assert sorted(set(traces)) == [(2,), (3,)]


def test_grad_through_nested_jits():
    _, outer, _ = _nested()
    close(fx.grad(lambda x: fnp.sum(outer(x)))(X),
          jax.grad(lambda x: jnp.sum(_nested_jax(x)))(X), "grad through nested jits")


def test_jit_of_a_method():
    class Model:
        def __init__(self, w):
            self.w = w

        def apply(self, x):
            return fnp.tanh(x * self.w)

        apply_jit = fx.jit(apply, static_argnums=0)  # self is static (hashed by identity)
        apply_traced_self = fx.jit(apply)

    model = Model(X)
    close(model.apply_jit(XS), jnp.tanh(XS * X), "jitted method")
    with pytest.raises(TypeError):  # self is neither an array nor a pytree
        model.apply_traced_self(XS)


# --- custom derivatives, checkpoint and control flow under jit --------------------------------


def _softplus(T):
    @T.custom_jvp
    def softplus(x):
        return (fnp if T is fx else jnp).log1p((fnp if T is fx else jnp).exp(x))

    @softplus.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * 0.5  # deliberately not the true derivative

    return softplus


def _clip_grad(T):
    @T.custom_vjp
    def clip(x):
        return x * 1.0

    clip.defvjp(lambda x: (x * 1.0, None), lambda _, g: ((fnp if T is fx else jnp).clip(
        g, -0.1, 0.1),))
    return clip


@pytest.mark.parametrize("name", ["custom_jvp", "custom_vjp", "checkpoint"])
def test_custom_rules_and_checkpoint_survive_jit(name):
    def loss(T, m):
        wrap = {"custom_jvp": _softplus, "custom_vjp": _clip_grad,
                "checkpoint": lambda T: T.checkpoint(lambda x: m.np.sin(m.np.exp(x)))}[name](T)
        return lambda x: m.np.sum(wrap(x * 3.0) ** 2)

    fl, jl = loss(fx, FX), loss(jax, JX)
    want = jax.grad(jl)(X)
    for what, got in [("grad(jit)", fx.grad(fx.jit(fl))(X)), ("jit(grad)", fx.jit(fx.grad(fl))(X)),
                      ("vmap(jit(grad))", fx.vmap(fx.jit(fx.grad(fl)))(XS))]:
        close(got, want if what != "vmap(jit(grad))" else jax.vmap(jax.grad(jl))(XS),
              f"{name} {what}")
