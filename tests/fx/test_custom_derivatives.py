"""custom_jvp, custom_vjp and checkpoint against jax: the user's rules are the ones used under
jvp, grad, jit and vmap (the rules below are deliberately *not* the true derivatives, so a test
passes only if the rule ran), nondiff_argnums, pytrees, error messages, and rematerialization.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose

import fx
import fx.numpy as fnp

X = np.array([0.3, -1.2, 2.0])
Y = np.array([1.5, 0.5, -0.25])


# --- the same custom functions in fx and in jax -------------------------------------------------


def make_sin2(api, np_):
    """sin(x) whose jvp rule claims the derivative 2 cos(x)."""

    @api.custom_jvp
    def sin2(x):
        return np_.sin(x)

    @sin2.defjvp
    def sin2_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return sin2(x), 2.0 * np_.cos(x) * t

    return sin2


def make_mul3(api, np_):
    """x * y with per-argument jvps (defjvps); the x rule is scaled by 3, y has a None rule."""

    @api.custom_jvp
    def mul3(x, y):
        return x * y

    mul3.defjvps(lambda t, ans, x, y: 3.0 * t * y, None)
    return mul3


def make_sin_times(api, np_):
    """sin(x) * y with a custom_vjp whose x cotangent is scaled by 3."""

    @api.custom_vjp
    def sin_times(x, y):
        return np_.sin(x) * y

    def fwd(x, y):
        return sin_times(x, y), {"c": np_.cos(x), "s": np_.sin(x), "y": y}

    def bwd(res, g):
        return 3.0 * res["c"] * res["y"] * g, res["s"] * g

    sin_times.defvjp(fwd, bwd)
    return sin_times


def make_clip_gradient(api, np_):
    """Identity whose cotangent is clipped to [-0.5, 0.5] (the jax docs' example)."""

    @api.custom_vjp
    def clip_gradient(x):
        return x

    def fwd(x):
        return x, None

    def bwd(res, g):
        return (np_.clip(g, -0.5, 0.5),)

    clip_gradient.defvjp(fwd, bwd)
    return clip_gradient


FX_SIN2, JAX_SIN2 = make_sin2(fx, fnp), make_sin2(jax, jnp)
FX_MUL3, JAX_MUL3 = make_mul3(fx, fnp), make_mul3(jax, jnp)
FX_ST, JAX_ST = make_sin_times(fx, fnp), make_sin_times(jax, jnp)


def _sum_of(f, np_):
    return lambda *a: np_.sum(f(*a))


def _per_example(how, g, xs):
    """``g`` (a scalar gradient function) applied to each of ``xs``: in a Python loop, jitted
    in a loop, or vmapped."""
    if how == "vmap(grad)":
        return fx.vmap(g)(xs)
    g = fx.jit(g) if how == "jit(grad)" else g
    return np.stack([np.asarray(g(x)) for x in xs])


# --- custom_jvp ---------------------------------------------------------------------------------


def test_custom_jvp_rule_is_used_by_jvp():
    got = fx.jvp(FX_SIN2, (X,), (Y,))
    assert_allclose(got, (np.sin(X), 2 * np.cos(X) * Y), what="jvp")
    assert_allclose(got, jax.jvp(JAX_SIN2, (X,), (Y,)), what="vs jax")


@pytest.mark.parametrize("how", ["grad", "jit(grad)", "grad(jit)", "vmap(grad)", "grad(vmap)"])
def test_custom_jvp_rule_under_transformations(how):
    f = _sum_of(FX_SIN2, fnp)
    variants = {
        "grad": fx.grad(f),
        "jit(grad)": fx.jit(fx.grad(f)),
        "grad(jit)": fx.grad(fx.jit(f)),
        "vmap(grad)": fx.vmap(fx.grad(FX_SIN2)),
        "grad(vmap)": fx.grad(lambda x: fnp.sum(fx.vmap(FX_SIN2)(x))),
    }
    want = jax.grad(_sum_of(JAX_SIN2, jnp))(X)
    assert_allclose(variants[how](X), want, what=how)
    assert_allclose(want, 2 * np.cos(X), what="the rule, not the true derivative")


def test_custom_jvp_under_vmap_of_jvp_and_jvp_of_vmap():
    want = jax.vmap(lambda x, t: jax.jvp(JAX_SIN2, (x,), (t,)))(X, Y)
    assert_allclose(fx.vmap(lambda x, t: fx.jvp(FX_SIN2, (x,), (t,)))(X, Y), want, what="vmap(jvp)")
    assert_allclose(fx.jvp(fx.vmap(FX_SIN2), (X,), (Y,)), want, what="jvp(vmap)")


def test_custom_jvp_second_order_differentiates_the_rule():
    x = np.float64(0.8)
    want = jax.grad(jax.grad(JAX_SIN2))(x)
    assert_allclose(fx.grad(fx.grad(FX_SIN2))(x), want, what="grad(grad)")
    assert_allclose(want, -2 * np.sin(x), what="derivative of the rule")
    assert_allclose(fx.jit(fx.grad(fx.grad(FX_SIN2)))(x), want, what="jit(grad(grad))")


def test_custom_jvp_runs_only_the_function_outside_transformations():
    calls = []

    @fx.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append(1)
        return f(primals[0]), fnp.cos(primals[0]) * tangents[0]

    assert_allclose(f(X), np.sin(X), what="eval")
    assert not calls
    fx.grad(lambda x: fnp.sum(f(x)))(X)
    assert calls


def test_custom_jvp_numerically_stable_rule():
    # The classic use: log(1 + exp(x)) has a NaN gradient for large x by autodiff of the
    # expression, and the exact one through a custom rule.
    def make(api, np_):
        @api.custom_jvp
        def log1pexp(x):
            return np_.log1p(np_.exp(x))

        @log1pexp.defjvp
        def log1pexp_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return log1pexp(x), t * (1.0 - 1.0 / (1.0 + np_.exp(x)))

        return log1pexp

    xs = np.array([0.0, 10.0, 800.0])
    got = fx.vmap(fx.grad(make(fx, fnp)))(xs)
    assert_allclose(got, jax.vmap(jax.grad(make(jax, jnp)))(xs), what="vs jax")
    assert_allclose(got, np.array([0.5, 1 / (1 + np.exp(-10.0)), 1.0]), what="value")


def test_custom_jvp_defjvps_matches_jax():
    a, b = np.float64(2.0), np.float64(5.0)
    got = fx.grad(FX_MUL3, argnums=(0, 1))(a, b)
    assert_allclose(got, jax.grad(JAX_MUL3, argnums=(0, 1))(a, b), what="vs jax")
    assert_allclose(got, (3 * b, 0.0), what="x rule scaled, y rule None means zero")
    assert_allclose(fx.vmap(fx.grad(FX_MUL3))(X, Y), 3 * Y, what="vmap(grad)")
    assert_allclose(fx.jit(fx.grad(FX_MUL3))(a, b), 3 * b, what="jit(grad)")
    one = np.float64(1.0)
    assert_allclose(fx.jvp(FX_MUL3, (a, b), (one, one))[1], np.float64(3 * b), what="jvp")


@pytest.mark.parametrize("how", ["grad", "jit(grad)", "vmap(grad)"])
def test_custom_jvp_nondiff_argnums_callable_and_int(how):
    def make(api, np_):
        @partial(api.custom_jvp, nondiff_argnums=(0, 2))
        def apply_pow(fn, x, n):
            return fn(x) ** n

        @apply_pow.defjvp
        def apply_pow_jvp(fn, n, primals, tangents):
            (x,), (t,) = primals, tangents
            # Not the true derivative: fn is ignored, so the test sees the rule ran.
            return apply_pow(fn, x, n), 10.0 * n * x ** (n - 1) * t

        return apply_pow

    f, fj = make(fx, fnp), make(jax, jnp)
    want = jax.vmap(jax.grad(lambda x: fj(jnp.sin, x, 3)))(X)
    assert_allclose(want, 30 * X**2, what="rule")
    assert_allclose(_per_example(how, fx.grad(lambda x: f(fnp.sin, x, 3)), X), want, what=how)


def test_custom_jvp_pytree_arguments_and_outputs():
    def make(api, np_):
        @api.custom_jvp
        def f(p):
            return {"a": p["x"] * p["y"], "b": np_.sin(p["x"])}

        @f.defjvp
        def f_jvp(primals, tangents):
            (p,), (t,) = primals, tangents
            return f(p), {"a": t["x"] * p["y"] + p["x"] * t["y"], "b": 0.5 * t["x"]}

        return f

    p = {"x": X, "y": Y}
    loss = lambda f, np_: lambda p: np_.sum(f(p)["a"] + f(p)["b"])  # noqa: E731
    assert_allclose(fx.grad(loss(make(fx, fnp), fnp))(p),
                    jax.grad(loss(make(jax, jnp), jnp))(p), what="grad")
    assert_allclose(fx.jacrev(make(fx, fnp))(p), jax.jacrev(make(jax, jnp))(p), what="jacrev")


def test_custom_jvp_errors():
    @fx.custom_jvp
    def no_rule(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined .* no_rule.*defjvp"):
        fx.grad(no_rule)(1.0)

    @fx.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), fnp.sum(t[0])))
    with pytest.raises(TypeError, match=r"tangent outputs.*should be f64\[3\].*got f64\[\]"):
        fx.jvp(f, (X,), (Y,))
    f.defjvp(lambda p, t: (f(p[0]), t[0].astype(np.float32)))
    with pytest.raises(TypeError, match=r"should be f64\[3\].*got f32\[3\]"):
        fx.jvp(f, (X,), (Y,))
    f.defjvp(lambda p, t: f(p[0]))
    with pytest.raises(TypeError, match=r"must return a pair \(primal_out, tangent_out\)"):
        fx.jvp(f, (X,), (Y,))
    # A rule whose primal output is another structure than f's: as in jax, f itself is not
    # traced under differentiation, so the tuple reaches the caller's sum, which refuses it.
    f.defjvp(lambda p, t: ((f(p[0]),), (t[0],)))
    with pytest.raises(TypeError, match="sum requires ndarray or scalar arguments, got tuple"):
        fx.grad(lambda x: fnp.sum(f(x)))(X)


# --- custom_vjp ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["grad", "jit(grad)", "grad(jit)", "vmap(grad)"])
def test_custom_vjp_rule_under_transformations(how):
    f = _sum_of(FX_ST, fnp)
    variants = {
        "grad": fx.grad(f, argnums=(0, 1)),
        "jit(grad)": fx.jit(fx.grad(f, argnums=(0, 1))),
        "grad(jit)": fx.grad(fx.jit(f), argnums=(0, 1)),
        "vmap(grad)": fx.vmap(fx.grad(FX_ST, argnums=(0, 1))),
    }
    want = jax.grad(_sum_of(JAX_ST, jnp), argnums=(0, 1))(X, Y)
    assert_allclose(variants[how](X, Y), want, what=how)
    assert_allclose(want, (3 * np.cos(X) * Y, np.sin(X)), what="the rule")


def test_custom_vjp_grad_of_vmap_sums_cotangents_of_unbatched_arguments():
    def loss(st, np_, vmap):
        return lambda x, y: np_.sum(vmap(st, in_axes=(0, None))(x, y))

    y = np.float64(2.0)
    got = fx.grad(loss(FX_ST, fnp, fx.vmap), argnums=(0, 1))(X, y)
    want = jax.grad(loss(JAX_ST, jnp, jax.vmap), argnums=(0, 1))(X, y)
    assert_allclose(got, want, what="grad(vmap) with in_axes None")
    got = fx.vmap(fx.grad(FX_ST, argnums=(0, 1)), in_axes=(0, None))(X, y)
    want = jax.vmap(jax.grad(JAX_ST, argnums=(0, 1)), in_axes=(0, None))(X, y)
    assert_allclose(got, want, what="vmap(grad) with in_axes None")


def test_custom_vjp_clip_gradient_matches_jax():
    clip_fx, clip_jax = make_clip_gradient(fx, fnp), make_clip_gradient(jax, jnp)
    xs = np.array([0.1, 1.0, 3.0])
    got = fx.vmap(fx.grad(lambda x: clip_fx(x) ** 2))(xs)
    want = jax.vmap(jax.grad(lambda x: clip_jax(x) ** 2))(xs)
    assert_allclose(got, want, what="vs jax")
    assert_allclose(got, np.array([0.2, 0.5, 0.5]), what="clipped")


@pytest.mark.parametrize("how", ["grad", "jit(grad)", "vmap(grad)"])
def test_custom_vjp_nondiff_argnums(how):
    def make(api, np_):
        @partial(api.custom_vjp, nondiff_argnums=(0,))
        def apply(fn, x):
            return fn(x)

        def fwd(fn, x):
            return apply(fn, x), x

        def bwd(fn, x, g):
            return (100.0 * fn(x) * g,)

        apply.defvjp(fwd, bwd)
        return apply

    f, fj = make(fx, fnp), make(jax, jnp)
    want = jax.vmap(jax.grad(lambda x: fj(jnp.sin, x)))(X)
    assert_allclose(want, 100 * np.sin(X), what="rule")
    assert_allclose(_per_example(how, fx.grad(lambda x: f(fnp.sin, x)), X), want, what=how)


def test_custom_vjp_pytree_arguments():
    def make(api, np_):
        @api.custom_vjp
        def f(p, x):
            return np_.sum(p["w"] * x) + p["b"]

        def fwd(p, x):
            return f(p, x), (p, x)

        def bwd(res, g):
            p, x = res
            return {"w": 2.0 * x * g, "b": g}, p["w"] * g

        f.defvjp(fwd, bwd)
        return f

    p = {"w": X, "b": np.float64(1.0)}
    got = fx.grad(make(fx, fnp), argnums=(0, 1))(p, Y)
    assert_allclose(got, jax.grad(make(jax, jnp), argnums=(0, 1))(p, Y), what="pytree")


def test_custom_vjp_forward_mode_is_a_clear_error():
    with pytest.raises(TypeError, match="forward-mode .* custom_vjp .*fx.grad"):
        fx.jvp(FX_ST, (X, Y), (X, Y))
    with pytest.raises(TypeError, match="forward-mode"):
        fx.jit(lambda x: fx.jvp(FX_ST, (x, Y), (x, Y)))(X)


def test_custom_vjp_jacfwd_is_the_forward_mode_error():
    with pytest.raises(TypeError, match="forward-mode"):
        fx.jacfwd(FX_ST)(X, Y)


def _bad_vjp(bwd):
    @fx.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), (x, y)), bwd)
    return f


@pytest.mark.parametrize(
    "bwd, match",  # jax's types: TypeError for the structure, ValueError for a shape
    [
        (lambda r, g: (g,), r"bwd of f must return a tuple with one cotangent per differentiable "
                            r"argument \(2\), got tuple of length 1"),
        (lambda r, g: g, r"one cotangent per differentiable argument \(2\), got Array"),
        pytest.param(lambda r, g: (g, np.ones(3)), r"cotangent 1 has shape \(3,\), expected \(\)",
                     id="shape"),
        (lambda r, g: (g, {"a": g}), r"structure .* must match the arguments' structure"),
    ],
)
def test_custom_vjp_bwd_returning_the_wrong_structure(bwd, match):
    with pytest.raises(ValueError if "has shape" in match else TypeError, match=match):
        fx.grad(_bad_vjp(bwd))(np.float64(1.0), np.float64(2.0))


def test_custom_vjp_bwd_wrong_structure_under_jit_and_vmap():
    f = _bad_vjp(lambda r, g: (g,))
    with pytest.raises(TypeError, match="one cotangent per differentiable argument"):
        fx.jit(fx.grad(f))(np.float64(1.0), np.float64(2.0))
    with pytest.raises(TypeError, match="one cotangent per differentiable argument"):
        fx.vmap(fx.grad(f))(X, Y)


def test_custom_vjp_fwd_errors():
    @fx.custom_vjp
    def f(x):
        return fnp.sin(x)

    loss = lambda x: fnp.sum(f(x))  # noqa: E731
    f.defvjp(lambda x: f(x), lambda r, g: (g,))
    with pytest.raises(TypeError, match=r"fwd of f must return \(output, residuals\)"):
        fx.grad(loss)(X)
    # Another output structure from fwd than f's reaches the caller's sum, as in jax.
    f.defvjp(lambda x: ((f(x),), None), lambda r, g: (g,))
    with pytest.raises(TypeError, match="sum requires ndarray or scalar arguments, got tuple"):
        fx.grad(loss)(X)
    # fwd's output of another shape than f's: not traced, as in jax, so the mismatch shows at
    # bwd, whose cotangent has the wrong shape (jax: ValueError there too).
    f.defvjp(lambda x: (fnp.sum(f(x)), None), lambda r, g: (g,))
    with pytest.raises(ValueError, match=r"bwd of f: cotangent 0 has shape \(\), expected \(3,\)"):
        fx.grad(loss)(X)

    @fx.custom_vjp
    def no_rule(x):
        return x

    with pytest.raises(AttributeError, match="No VJP defined .* no_rule.*defvjp"):
        fx.grad(no_rule)(1.0)


# --- checkpoint ---------------------------------------------------------------------------------


def _block(np_):
    def block(p, x):
        h = np_.tanh(p["w"] * x + p["b"])
        return np_.sin(h) * h

    return block


def _remat_loss(np_, remat):
    def loss(p, x):
        for _ in range(3):
            x = remat(_block(np_))(p, x)
        return np_.sum(x**2)

    return loss


P = {"w": np.array([0.5, -1.0, 2.0]), "b": np.array([0.1, 0.2, -0.3])}


@pytest.mark.parametrize("how", ["grad", "jit(grad)", "vmap(grad)", "grad(grad)"])
def test_checkpoint_gives_the_same_gradients(how):
    plain = _remat_loss(fnp, lambda f: f)
    remat = _remat_loss(fnp, fx.checkpoint)
    jremat = _remat_loss(jnp, jax.checkpoint)
    if how == "grad":
        got, want = fx.grad(remat)(P, X), fx.grad(plain)(P, X)
        assert_allclose(got, jax.grad(jremat)(P, X), what="vs jax.checkpoint")
    elif how == "jit(grad)":
        got, want = fx.jit(fx.grad(remat))(P, X), fx.grad(plain)(P, X)
    elif how == "vmap(grad)":
        xs = np.stack([X, Y])
        got = fx.vmap(fx.grad(remat), in_axes=(None, 0))(P, xs)
        want = jax.vmap(jax.grad(jremat), in_axes=(None, 0))(P, xs)
    else:
        got = fx.grad(lambda x: fnp.sum(fx.grad(remat, argnums=1)(P, x)))(X)
        want = fx.grad(lambda x: fnp.sum(fx.grad(plain, argnums=1)(P, x)))(X)
    assert_allclose(got, want, what=how)


def test_checkpoint_grad_jaxpr_recomputes_in_the_backward_pass():
    x = np.array([0.3, -1.2, 2.0])
    loss = lambda x: fnp.sum(fx.checkpoint(lambda x: fnp.sin(fnp.sin(x)))(x))  # noqa: E731
    jaxpr = fx.make_jaxpr(fx.grad(loss))(x).jaxpr
    remats = [e for e in jaxpr.eqns if e.primitive.name == "checkpoint"]
    assert len(remats) == 2, jaxpr  # the forward call and the backward (recomputing) call
    backward = remats[-1].params["jaxpr"].jaxpr
    names = [e.primitive.name for e in backward.eqns]
    # The backward checkpoint recomputes sin(x) (the intermediate it did not save) and uses it.
    assert "sin" in names and names.count("cos") == 2, backward
    assert remats[-1].invars[0] is jaxpr.invars[0], "only the input is saved"
    # Nothing computed by the forward checkpoint is read by the backward one.
    forward_outs = set(remats[0].outvars)
    assert not forward_outs & set(remats[-1].invars)
    # Without checkpoint, the backward pass reads the saved sin(x) and recomputes nothing.
    plain = fx.make_jaxpr(fx.grad(lambda x: fnp.sum(fnp.sin(fnp.sin(x)))))(x).jaxpr
    assert [e.primitive.name for e in plain.eqns].count("sin") == 2


def test_checkpoint_pytrees_closures_and_other_transforms():
    scale = np.float64(3.0)

    def f(np_, remat):
        return remat(lambda p: {"u": np_.sin(p["a"]) * p["b"] * scale, "v": p["a"]})

    p = {"a": X, "b": Y}
    loss = lambda f, np_: lambda p: np_.sum(f(p)["u"] + f(p)["v"] ** 2)  # noqa: E731
    assert_allclose(fx.grad(loss(f(fnp, fx.checkpoint), fnp))(p),
                    jax.grad(loss(f(jnp, jax.checkpoint), jnp))(p), what="grad")
    assert_allclose(fx.jvp(fx.checkpoint(fnp.sin), (X,), (Y,)), (np.sin(X), np.cos(X) * Y),
                    what="jvp")
    assert_allclose(fx.vmap(fx.checkpoint(fnp.sin))(X), np.sin(X), what="vmap")
    assert fx.remat is fx.checkpoint


def test_checkpoint_policy_is_a_function_of_the_equation():
    # Save policies are in fx.checkpoint_policies (tested against jax in test_toplevel_api.py);
    # any function of (primitive, *avals, **params) is one.
    f = lambda x: fnp.sum(fnp.sin(fnp.sin(x)))  # noqa: E731
    x = np.linspace(0.1, 1.0, 5)
    seen = []
    policy = lambda prim, *avals, **params: seen.append(prim.name) or prim.name == "sin"  # noqa: E731
    assert_allclose(fx.grad(fx.checkpoint(f, policy=policy))(x), fx.grad(f)(x))
    assert "sin" in seen
    with pytest.raises(TypeError, match="policy must be one of fx.checkpoint_policies"):
        fx.checkpoint(f, policy="dots")
