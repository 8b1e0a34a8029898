"""The differentiation API against jax: signatures, pytrees, argnums, has_aux, stop_gradient,
error messages, concrete Python control flow, and the shape of the reverse pass (cotangent
accumulation with ``add_any``, no dead code after DCE).

Everything runs in float64 with explicit numpy dtypes, so fx and jax (x64) agree on dtypes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose

import fx
import fx.numpy as fnp
from fx.interpreters.eval import eval_jaxpr
from fx.jaxpr import DropVar, check_jaxpr, dce_jaxpr

RNG = np.random.default_rng(0)
X = np.array([0.3, -1.2, 2.0])
P = {"w": np.array([1.0, -2.0, 0.5]), "b": np.array([0.25])}


def loss(np_, p, x):
    return np_.sum(np_.tanh(x * p["w"] + p["b"]) ** 2)


def fx_loss(p, x):
    return loss(fnp, p, x)


def jax_loss(p, x):
    return loss(jnp, p, x)


_AUX_LEAK = ("has_aux returns the aux as a leaked JVPTracer when it is computed from the inputs; "
             "repro: fx.grad(lambda x: (x * 1.0, x * x), has_aux=True)(1.0)[1]")


# --- jvp / linearize / vjp ----------------------------------------------------------------------


def test_jvp_pytree_matches_jax():
    t = {"w": np.array([0.1, 0.2, -0.3]), "b": np.array([1.0])}
    got = fx.jvp(fx_loss, (P, X), (t, np.ones(3)))
    want = jax.jvp(jax_loss, (P, X), (t, np.ones(3)))
    assert_allclose(got, want, what="jvp")


def test_jvp_has_aux_returns_concrete_aux():
    def f(x):
        return fnp.sin(x), {"sq": x * x}

    y, y_dot, aux = fx.jvp(f, (X,), (np.ones(3),), has_aux=True)
    assert_allclose(y_dot, np.cos(X), what="tangent")
    assert isinstance(aux["sq"], fx.Array)
    assert_allclose(aux["sq"], X * X, what="aux")


def test_jvp_accepts_list_arguments_and_returns_output_structure():
    out, t_out = fx.jvp(lambda a, b: (a * b, [a + b]), [X, X], [np.ones(3), np.zeros(3)])
    assert isinstance(out, tuple) and isinstance(out[1], list)
    assert_allclose(t_out, (X, [np.ones(3)]), what="tangents")


@pytest.mark.parametrize(
    "primals, tangents, match",
    [
        ((X,), (np.ones(2),), r"primal and tangent 0 .* f64\[3\] and f64\[2\]"),
        ((X,), (np.ones(3, np.float32),), r"f64\[3\] and f32\[3\]"),
        ((X,), ({"a": X},), "differ in structure"),
    ],
)
def test_jvp_tangent_errors(primals, tangents, match):
    with pytest.raises((ValueError, TypeError), match=match):
        fx.jvp(fnp.sin, primals, tangents)


def test_jvp_requires_tuples():
    with pytest.raises(TypeError, match="must be tuples"):
        fx.jvp(fnp.sin, X, np.ones(3))


def test_linearize_matches_jvp_for_many_tangents():
    y, f_jvp = fx.linearize(fx_loss, P, X)
    assert_allclose(y, jax_loss(P, X), what="primal")
    for _ in range(3):
        t = ({"w": RNG.standard_normal(3), "b": RNG.standard_normal(1)}, RNG.standard_normal(3))
        assert_allclose(f_jvp(*t), jax.jvp(jax_loss, (P, X), t)[1], what="linearized jvp")


def test_linearize_tangent_structure_error():
    _, f_jvp = fx.linearize(fx_loss, P, X)
    with pytest.raises(ValueError, match="tangents .* must match primals"):
        f_jvp(np.ones(3), np.ones(3))


def _dict_out(np_):
    return lambda p, x: {"y": np_.tanh(p["w"] * x), "s": np_.sum(p["b"] * x)}


def test_vjp_pytree_matches_jax():
    y, pull = fx.vjp(_dict_out(fnp), P, X)
    yj, pullj = jax.vjp(_dict_out(jnp), P, X)
    ct = {"y": np.array([1.0, -1.0, 0.5]), "s": np.array(2.0)}
    assert_allclose(y, yj, what="primal")
    assert_allclose(pull(ct), pullj(ct), what="cotangents")
    assert isinstance(pull(ct), tuple) and isinstance(pull(ct)[0], dict)


def test_vjp_has_aux_returns_concrete_aux():
    def f(np_):
        return lambda p, x: (_dict_out(np_)(p, x), x * 2)

    y, pull, aux = fx.vjp(f(fnp), P, X, has_aux=True)
    yj, pullj, auxj = jax.vjp(f(jnp), P, X, has_aux=True)
    assert isinstance(aux, fx.Array)
    assert_allclose(aux, auxj, what="aux")


def test_vjp_integer_input_gets_a_zero_cotangent():
    # jax returns a float0 cotangent for integer inputs; fx returns zeros of the input's dtype
    # (it has no float0). Either way the value carries no derivative.
    _, pull = fx.vjp(lambda x, n: x * n, X, np.int32(3))
    ct_x, ct_n = pull(np.ones(3))
    assert_allclose(ct_x, np.full(3, 3.0), what="float input")
    assert np.asarray(ct_n).shape == () and np.asarray(ct_n) == 0


@pytest.mark.parametrize(
    "ct, match",
    [
        (np.ones(2), r"cotangent 0 has shape \(2,\), expected \(3,\)"),
        ((np.ones(3), np.ones(3)), "cotangent has structure"),
    ],
)
def test_vjp_cotangent_errors(ct, match):
    _, pull = fx.vjp(fnp.sin, X)
    with pytest.raises(ValueError, match=match):
        pull(ct)


# --- grad / value_and_grad ----------------------------------------------------------------------


@pytest.mark.parametrize("argnums", [0, 1, -1, (0,), (0, 1), (1, 0)])
def test_grad_argnums_match_jax(argnums):
    got = fx.grad(fx_loss, argnums=argnums)(P, X)
    want = jax.jit(jax.grad(jax_loss, argnums=argnums))(P, X)
    assert_allclose(got, want, what=f"grad argnums={argnums}")
    if isinstance(argnums, tuple):
        assert isinstance(got, tuple) and len(got) == len(argnums)


def test_grad_dict_params_keep_their_structure():
    g = fx.grad(fx_loss)(P, X)
    assert isinstance(g, dict) and sorted(g) == ["b", "w"]
    assert np.asarray(g["b"]).shape == (1,)


def test_value_and_grad_matches_jax():
    v, g = fx.value_and_grad(fx_loss)(P, X)
    assert_allclose((v, g), jax.value_and_grad(jax_loss)(P, X), what="value_and_grad")
    v, g = fx.value_and_grad(fx_loss, argnums=(0, 1))(P, X)
    assert_allclose((v, g), jax.value_and_grad(jax_loss, argnums=(0, 1))(P, X), what="argnums")


def test_grad_has_aux_and_value_and_grad_match_jax():
    def f(np_):
        return lambda p, x: (loss(np_, p, x), {"pred": np_.tanh(x)})

    g, aux = fx.grad(f(fnp), has_aux=True)(P, X)
    gj, auxj = jax.grad(f(jnp), has_aux=True)(P, X)
    assert_allclose((g, aux), (gj, auxj), what="grad has_aux")
    (v, aux), g = fx.value_and_grad(f(fnp), argnums=(0, 1), has_aux=True)(P, X)
    (vj, auxj), gj = jax.value_and_grad(f(jnp), argnums=(0, 1), has_aux=True)(P, X)
    assert_allclose((v, aux, g), (vj, auxj, gj), what="value_and_grad has_aux")
    assert isinstance(aux["pred"], fx.Array)


def test_grad_passes_keyword_arguments_through():
    g = fx.grad(lambda x, *, scale: fnp.sum(x * x) * scale)(X, scale=3.0)
    assert_allclose(g, 6 * X, what="kwargs")


def test_grad_ignores_integer_arguments_outside_argnums():
    g = fx.grad(lambda x, n: fnp.sum(x**2) * n)(X, np.int32(2))
    assert_allclose(g, 4 * X, what="int arg not differentiated")


def test_grad_keeps_input_dtype():
    assert fx.grad(lambda x: x * x)(np.float32(3.0)).dtype == np.float32
    assert fx.grad(lambda x: x * x)(np.float64(3.0)).dtype == np.float64


def test_stop_gradient_matches_jax():
    def f(np_, sg):
        return lambda x: np_.sum(sg(x) * x + np_.sin(sg(x * 2.0)))

    assert_allclose(fx.grad(f(fnp, fx.stop_gradient))(X),
                    jax.grad(f(jnp, jax.lax.stop_gradient))(X), what="grad")
    _, t = fx.jvp(fx.stop_gradient, (X,), (np.ones(3),))
    assert_allclose(t, np.zeros(3), what="jvp of stop_gradient")


def test_stop_gradient_on_pytree():
    out = fx.stop_gradient({"a": X, "b": X})
    assert_allclose(out, {"a": X, "b": X})


# --- errors -------------------------------------------------------------------------------------


def test_grad_of_non_scalar_output_names_shape_and_remedy():
    def vec(x):
        return x * 2

    with pytest.raises(TypeError, match=r"scalar output.*vec returned f64\[3\].*jacrev"):
        fx.grad(vec)(X)
    with pytest.raises(TypeError, match="scalar output.*tuple"):
        fx.grad(lambda x: (x, x))(np.float64(1.0))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_])
def test_grad_of_integer_input_names_argument_and_dtype(dtype):
    with pytest.raises(TypeError, match=rf"floating-point (or complex )?inputs.*argument 0.*"
                                        rf"{np.dtype(dtype)}"):
        fx.grad(lambda x: x)(np.zeros((), dtype))
    with pytest.raises(TypeError, match="argument 1 .* int32"):
        fx.grad(lambda x, p: x, argnums=1)(1.0, {"a": np.int32(1)})


def test_grad_of_integer_output_is_an_error():
    with pytest.raises(TypeError, match=r"floating-point output.*i32\[\]"):
        fx.grad(lambda x: fnp.sum(x).astype(np.int32))(X)


@pytest.mark.parametrize("argnums", [2, -3, (0, 5)])
def test_grad_argnums_out_of_range(argnums):
    with pytest.raises(ValueError, match=r"argnums .* out of range .* 2 positional arguments"):
        fx.grad(fx_loss, argnums=argnums)(P, X)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True.*\(output, aux\)"):
        fx.grad(lambda x: x * 2, has_aux=True)(np.float64(1.0))


def test_has_aux_error_names_the_users_function():
    def my_fun(x):
        return x * 2

    with pytest.raises(TypeError, match="my_fun"):
        fx.grad(my_fun, has_aux=True)(np.float64(1.0))


# --- jacobians and hessian ----------------------------------------------------------------------


def _vec_f(np_):
    return lambda p, x: {"u": np_.sin(p["w"] * x), "v": np_.sum(p["b"] * x ** 2)}


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_jacobian_pytrees_match_jax(kind, argnums):
    got = getattr(fx, kind)(_vec_f(fnp), argnums=argnums)(P, X)
    want = jax.jit(getattr(jax, kind)(_vec_f(jnp), argnums=argnums))(P, X)
    assert_allclose(got, want, what=f"{kind} argnums={argnums}")


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_jacobian_shapes_output_then_input(kind):
    j = getattr(fx, kind)(lambda x: fnp.outer(x, x))(np.arange(5.0))
    assert j.shape == (5, 5, 5)
    j = getattr(fx, kind)(fnp.sin)(np.float64(1.0))
    assert j.shape == () and np.isclose(j, np.cos(1.0))
    assert getattr(fx, kind)(fnp.sin)(np.ones((0,))).shape == (0, 0)


def test_jacobian_with_scalar_leaf_in_dict():
    p = {"w": np.array([1.0, 2.0, 3.0]), "b": np.float64(0.5)}

    def f(np_):
        return lambda p: np_.tanh(p["w"]) * p["b"]

    assert_allclose(fx.jacrev(f(fnp))(p), jax.jacrev(f(jnp))(p), what="jacrev")


def test_jacfwd_with_scalar_leaf_in_dict():
    p = {"w": np.array([1.0, 2.0, 3.0]), "b": np.float64(0.5)}

    def f(np_):
        return lambda p: np_.tanh(p["w"]) * p["b"]

    assert_allclose(fx.jacfwd(f(fnp))(p), jax.jacfwd(f(jnp))(p), what="jacfwd")


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev", "hessian"])
def test_jacobian_has_aux(kind):
    def f(np_):
        return lambda x: (np_.sum(np_.sin(x) ** 2), {"aux": x * 2})

    jac, aux = getattr(fx, kind)(f(fnp), has_aux=True)(X)
    jacj, auxj = getattr(jax, kind)(f(jnp), has_aux=True)(X)
    assert_allclose((jac, aux), (jacj, auxj), what=f"{kind} has_aux")


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_jacobian_of_integer_input_is_an_error(kind):
    with pytest.raises(TypeError, match="int32"):
        getattr(fx, kind)(lambda x: x)(np.int32(1))


def test_hessian_pytree_matches_jax():
    # jax.jit: one XLA compile instead of one per primitive (op-by-op jax is slow here).
    assert_allclose(fx.hessian(fx_loss, argnums=(0, 1))(P, X),
                    jax.jit(jax.hessian(jax_loss, argnums=(0, 1)))(P, X), what="hessian")


# --- concrete Python control flow ---------------------------------------------------------------


def _piecewise(np_):
    def f(x):
        if x > 0:
            return np_.sin(x) * x
        return x**3

    return f


@pytest.mark.parametrize("x", [1.3, -0.7])
def test_python_branches_under_grad_and_jvp(x):
    x = np.float64(x)
    want = np.sin(x) + x * np.cos(x) if x > 0 else 3 * x**2
    assert_allclose(fx.grad(_piecewise(fnp))(x), want, what="grad")
    assert_allclose(fx.jvp(_piecewise(fnp), (x,), (np.float64(2.0),))[1], 2 * want, what="jvp")
    want2 = 2 * np.cos(x) - x * np.sin(x) if x > 0 else 6 * x
    assert_allclose(fx.grad(fx.grad(_piecewise(fnp)))(x), want2, what="second order")


def test_python_loop_with_data_dependent_stop_under_grad():
    def newton_sqrt(a):
        # Iterate until converged; the trip count depends on the value of a.
        x = a
        for _ in range(50):
            nxt = 0.5 * (x + a / x)
            if abs(float(nxt - x)) < 1e-12:
                break
            x = nxt
        return x

    a = np.float64(2.0)
    assert_allclose(fx.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-9, what="d sqrt")


# --- the reverse pass ---------------------------------------------------------------------------


def _accum(np_):
    return lambda x: x * x + np_.sin(x) * x


def test_reverse_pass_accumulates_cotangents_of_every_use():
    x = np.float64(0.7)
    analytic = 2 * x + np.cos(x) * x + np.sin(x)
    assert_allclose(fx.grad(_accum(fnp))(x), analytic, what="value vs analytic")
    assert_allclose(fx.grad(_accum(fnp))(x), jax.grad(_accum(jnp))(x), what="vs jax")
    jaxpr = fx.make_jaxpr(fx.grad(_accum(fnp)))(x).jaxpr
    check_jaxpr(jaxpr)
    prims = [e.primitive.name for e in jaxpr.eqns]
    # x is read four times (x*x twice, sin x, sin(x)*x); the four cotangents are summed with
    # three add_any equations, and the gradient is the result of the last of them.
    assert prims.count("add_any") == 3, jaxpr
    last = next(e for e in reversed(jaxpr.eqns) if e.outvars[0] is jaxpr.outvars[0])
    assert last.primitive.name == "add_any", jaxpr


def test_grad_jaxpr_has_no_dead_equations_after_dce():
    x = np.float64(0.7)
    closed = fx.make_jaxpr(fx.grad(_accum(fnp)))(x)
    pruned, used_inputs = dce_jaxpr(closed.jaxpr)
    check_jaxpr(pruned)
    assert used_inputs == [True]
    # The primal output (x*x + sin(x)*x) is not returned by grad, so its add is dead.
    assert len(pruned.eqns) < len(closed.jaxpr.eqns)
    assert "add" not in [e.primitive.name for e in pruned.eqns]
    live = {v for v in pruned.outvars}
    for eqn in reversed(pruned.eqns):
        assert all(not isinstance(v, DropVar) for v in eqn.outvars)
        assert any(v in live for v in eqn.outvars), f"dead equation {eqn.primitive.name}"
        live.update(eqn.invars)
    (g,) = eval_jaxpr(pruned, closed.consts, x)
    assert_allclose(g, fx.grad(_accum(fnp))(x), what="pruned jaxpr evaluates the gradient")
    # DCE is idempotent on the pruned program.
    again, _ = dce_jaxpr(pruned)
    assert len(again.eqns) == len(pruned.eqns)


def test_unused_input_gets_zero_gradient_without_work():
    g = fx.grad(lambda x, y: fnp.sum(x * 2.0), argnums=(0, 1))(X, X)
    assert_allclose(g, (np.full(3, 2.0), np.zeros(3)), what="zero cotangent")
    jaxpr = fx.make_jaxpr(fx.grad(lambda x, y: fnp.sum(fnp.sin(x)), argnums=1))(X, X).jaxpr
    pruned, _ = dce_jaxpr(jaxpr)
    assert "sin" not in str(pruned) and "cos" not in str(pruned)
