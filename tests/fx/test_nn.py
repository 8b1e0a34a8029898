"""Tests of fx.nn against jax.nn (x64 enabled): values with inf/nan in every float dtype,
jvp/vjp, check_grads at order 2 in float64, vmap, derivative conventions at kinks, and the
numerical stability of derivatives at extreme inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
    to_jax,
)
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.nn
import fx.numpy as fnp
from fx.test_util import shapes

FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
SPECIAL = np.array([-np.inf, -30.0, -6.5, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 6.0, 6.5,
                    30.0, np.inf, np.nan])

# name -> (keyword variants, interval where it is smooth, whether check_grads applies there)
ACTIVATIONS = {
    "relu": ([{}], (0.1, 3.0)),
    "relu6": ([{}], (0.1, 5.9)),
    "sigmoid": ([{}], (-4.0, 4.0)),
    "log_sigmoid": ([{}], (-4.0, 4.0)),
    "softplus": ([{}], (-4.0, 4.0)),
    "soft_sign": ([{}], (0.1, 3.0)),
    "silu": ([{}], (-4.0, 4.0)),
    "swish": ([{}], (-4.0, 4.0)),
    "mish": ([{}], (-4.0, 4.0)),
    "gelu": ([{}, {"approximate": False}], (-4.0, 4.0)),
    "elu": ([{}, {"alpha": 0.5}], (-3.0, -0.1)),
    "celu": ([{}, {"alpha": 2.0}], (-3.0, -0.1)),
    "selu": ([{}], (-3.0, -0.1)),
    "leaky_relu": ([{}, {"negative_slope": 0.2}], (-3.0, -0.1)),
    "hard_tanh": ([{}], (-0.9, 0.9)),
    "hard_sigmoid": ([{}], (-2.9, 2.9)),
    "hard_silu": ([{}], (-2.9, 2.9)),
    "hard_swish": ([{}], (-2.9, 2.9)),
}
ACT_CASES = [(n, kw) for n, (kws, _) in ACTIVATIONS.items() for kw in kws]
ACT_IDS = [n + "".join(f"-{k}={v}" for k, v in kw.items()) for n, kw in ACT_CASES]
REDUCING = {"softmax", "log_softmax", "logsumexp", "standardize", "one_hot", "glu"}


def test_every_function_is_tested():
    assert set(fx.nn.__all__) == set(ACTIVATIONS) | REDUCING


def _fns(name, kw):
    return (lambda x: getattr(fx.nn, name)(x, **kw)), (lambda x: getattr(jax.nn, name)(x, **kw))


@pytest.mark.parametrize("name,kw", ACT_CASES, ids=ACT_IDS)
def test_activation_values_every_float_dtype(name, kw):
    fx_fn, jax_fn = _fns(name, kw)
    inputs = [SPECIAL.astype(dt) for dt in FLOATS]
    wants = jax.jit(lambda xs: [jax_fn(x) for x in xs])([jnp.asarray(x) for x in inputs])
    for x, want in zip(inputs, wants):
        assert_allclose(fx_fn(fnp.asarray(x)), want, what=f"{name}({x.dtype})")


# Points where some activation has a kink: derivatives there follow jax's conventions
# (relu'(0) = 0, not 1/2; hard_tanh'(1) = 1; ...).
KINKS = [-6.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0]


@pytest.mark.parametrize("name,kw", ACT_CASES, ids=ACT_IDS)
def test_activation_derivatives(name, kw):
    fx_fn, jax_fn = _fns(name, kw)
    case = OpCase(name, fx_fn, jax_fn, None)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-7, 7, 8), KINKS])
    check_jvp(case, [x], rng)
    check_vjp(case, [x], rng)
    lo, hi = ACTIVATIONS[name][1]
    check_grads_f64(case, [rng.uniform(lo, hi, (4,))])
    check_vmap(case, [x.reshape(3, 5).astype(np.float32)], (1,))


def test_relu_derivative_at_zero_is_zero():
    assert float(fx.grad(fx.nn.relu)(0.0)) == 0.0
    assert float(fx.grad(fx.nn.relu)(1e-30)) == 1.0
    assert float(fx.grad(fx.grad(fx.nn.relu))(2.0)) == 0.0
    assert [float(fx.grad(fx.nn.relu6)(v)) for v in (0.0, 3.0, 6.0)] == [0.0, 1.0, 0.0]


@pytest.mark.default_mode  # float32 defaults
def test_integer_inputs():
    i = np.array([-2, 0, 3, 9], np.int32)
    for name in ("relu", "hard_tanh"):
        assert_allclose(getattr(fx.nn, name)(fnp.asarray(i)), getattr(jax.nn, name)(
            jnp.asarray(i)), what=name)
    # jax-x64 makes relu6 of integers float64 (its default float); fx float32.
    out = fx.nn.relu6(fnp.asarray(i))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), np.asarray(jax.nn.relu6(i)))
    out = fx.nn.sigmoid(fnp.asarray(i))  # computes in float (jax's lax.logistic would raise)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), 1 / (1 + np.exp(-i)), rtol=1e-6)


@pytest.mark.default_mode  # float32 defaults
def test_python_scalars():
    out = fx.nn.relu(-2.0)
    assert out.dtype == np.float32 and float(out) == 0.0
    assert float(fx.nn.sigmoid(0.0)) == 0.5
    assert float(fx.nn.gelu(1.0, approximate=False)) == pytest.approx(0.8413447460685429)


def test_gelu_exact_and_approximate_differ():
    x = np.linspace(-3, 3, 7)
    exact = np.asarray(fx.nn.gelu(fnp.asarray(x), approximate=False))
    approx = np.asarray(fx.nn.gelu(fnp.asarray(x)))
    assert 1e-5 < np.max(np.abs(exact - approx)) < 1e-2
    np.testing.assert_allclose(exact, np.asarray(jax.nn.gelu(x, approximate=False)), rtol=1e-12)


@pytest.mark.parametrize("name,x,want", [
    ("softplus", [100.0, -100.0], [1.0, 0.0]),
    ("log_sigmoid", [-100.0, 100.0], [1.0, 0.0]),
    ("elu", [100.0, -100.0], [1.0, 0.0]),
    ("sigmoid", [100.0, -100.0], [0.0, 0.0]),
    ("silu", [100.0, -100.0], [1.0, 0.0]),
    ("mish", [100.0, -100.0], [1.0, 0.0]),
    ("gelu", [100.0, -100.0], [1.0, 0.0]),
])
def test_gradients_are_finite_at_extremes(name, x, want):
    g = fx.vmap(fx.grad(getattr(fx.nn, name)))(fnp.asarray(np.array(x, np.float32)))
    np.testing.assert_allclose(np.asarray(g), want, atol=1e-6)


# --- softmax, log_softmax, logsumexp --------------------------------------------------------------

AXES = [-1, 0, 1, None, (0, 2)]


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_softmax_family_matches_jax(name, axis):
    rng = np.random.default_rng(1)
    x = rng.normal(0, 3, (2, 3, 4))
    f = lambda v: getattr(fx.nn, name)(v, axis=axis)  # noqa: E731
    g = lambda v: getattr(jax.nn, name)(v, axis=axis)  # noqa: E731
    case = OpCase(name, f, g, None)
    inputs = [x.astype(dt) for dt in (np.float32, np.float64, np.float16)]
    wants = jax.jit(lambda xs: [g(v) for v in xs])(inputs)  # one compile for all dtypes
    for v, want in zip(inputs, wants):
        assert_allclose(f(fnp.asarray(v)), want, what=f"{name} {v.dtype}")
    if axis == -1:  # jax compiles its derivatives per axis: compare one, self-check the rest
        check_jvp(case, [x], rng)
        check_vjp(case, [x], rng)
    check_grads_f64(case, [x])
    if axis in (-1, 1):
        check_vmap(case, [x.astype(np.float32)], (0,))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_family_with_where(name):
    rng = np.random.default_rng(2)
    x = rng.normal(0, 2, (3, 5))
    mask = rng.uniform(size=(3, 5)) > 0.3
    mask[:, 0] = True  # every row keeps at least one entry
    f = lambda v: getattr(fx.nn, name)(v, axis=-1, where=mask)  # noqa: E731
    g = lambda v: getattr(jax.nn, name)(v, axis=-1, where=mask)  # noqa: E731
    case = OpCase(name, f, g, None)
    assert_allclose(f(fnp.asarray(x)), g(jnp.asarray(x)), what=f"{name} where")
    check_vjp(case, [x], rng)
    # Masked log_softmax entries are -inf, where finite differences are NaN: check the rest.
    if name == "log_softmax":
        finite = OpCase(name, lambda v: fnp.where(mask, f(v), 0.0), None, None)
        check_grads_f64(finite, [x])
    else:
        check_grads_f64(case, [x])


SPECIAL_ROWS = [
    [1000.0, 1000.0, -1000.0],  # overflow without the max shift
    [-np.inf, -np.inf, -np.inf],  # everything masked by -inf
    [-np.inf, 0.0, 1.0],
    [np.inf, 0.0, 1.0],  # inf / inf: NaN (as in jax)
    [np.nan, 0.0, 1.0],
    [-1e30, 0.0, 1e-30],
]


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16], ids=str)
def test_softmax_family_special_values(name, dtype):
    x = np.array(SPECIAL_ROWS, dtype)
    got = getattr(fx.nn, name)(fnp.asarray(x), axis=-1)
    assert_allclose(got, getattr(jax.nn, name)(jnp.asarray(x), axis=-1), what=name)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_family_gradients_at_special_values(name):
    x = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, 0.0, 1.0], [-1e30, 0.0, 1e-30]])
    ct = np.ones(3) if name == "logsumexp" else np.ones((3, 3))
    _, pull = fx.vjp(lambda v: getattr(fx.nn, name)(v, axis=-1), fnp.asarray(x))
    _, jpull = jax.vjp(lambda v: getattr(jax.nn, name)(v, axis=-1), jnp.asarray(x))
    g = pull(fnp.asarray(ct))[0]
    assert_allclose(g, jpull(jnp.asarray(ct))[0], what=f"{name} vjp")
    assert np.isfinite(np.asarray(g)).all()


@pytest.mark.parametrize("axis,keepdims", [(-1, False), (0, False), (None, False),
                                           ((0, 2), False), (1, True), (None, True)], ids=str)
def test_logsumexp_matches_jax(axis, keepdims):
    rng = np.random.default_rng(3)
    x = rng.normal(0, 3, (2, 3, 4))
    f = lambda v: fx.nn.logsumexp(v, axis=axis, keepdims=keepdims)  # noqa: E731
    g = lambda v: jax.nn.logsumexp(v, axis=axis, keepdims=keepdims)  # noqa: E731
    case = OpCase("logsumexp", f, g, None)
    assert_allclose(f(fnp.asarray(x.astype(np.float32))), g(jnp.asarray(x.astype(np.float32))))
    if axis == -1 and not keepdims:
        check_jvp(case, [x], rng)
        check_vjp(case, [x], rng)
    check_grads_f64(case, [x])


def test_logsumexp_with_b_and_sign():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 4))
    b = np.array([1.0, -2.0, 0.0, 0.5])
    b_pos = np.array([1.0, 2.0, 0.0, 0.5])
    for bb in (b, b_pos):
        assert_allclose(fx.nn.logsumexp(fnp.asarray(a), axis=1, b=bb),
                        jax.nn.logsumexp(jnp.asarray(a), axis=1, b=bb), what="b")  # NaN if < 0
        got = fx.nn.logsumexp(fnp.asarray(a), axis=1, b=bb, return_sign=True)
        want = jax.nn.logsumexp(jnp.asarray(a), axis=1, b=bb, return_sign=True)
        assert_allclose(got, want, what="return_sign")
    case = OpCase("logsumexp_b", lambda v, w: fx.nn.logsumexp(v, axis=1, b=w),
                  lambda v, w: jax.nn.logsumexp(v, axis=1, b=w), None, diff_argnums=(0, 1))
    b_safe = np.array([1.0, 2.0, 0.3, 0.5])
    check_jvp(case, [a, b_safe], rng)
    check_vjp(case, [a, b_safe], rng)
    check_grads_f64(case, [a, b_safe])
    # An exponential with b == 0 does not count, even when it is inf.
    out = fx.nn.logsumexp(fnp.asarray(np.array([np.inf, 0.0])), b=np.array([0.0, 1.0]))
    assert float(out) == 0.0


def test_logsumexp_dtypes_and_scalars():
    assert fx.nn.logsumexp(fnp.asarray(np.ones(3, np.float16))).dtype == np.float16
    ints = np.ones(3, np.int64)
    assert fx.nn.logsumexp(fnp.asarray(ints)).dtype == jax.nn.logsumexp(ints).dtype
    assert float(fx.nn.logsumexp(2.0)) == 2.0
    assert_allclose(fx.nn.logsumexp(fnp.zeros((0, 3)), axis=0),
                    jax.nn.logsumexp(jnp.zeros((0, 3)), axis=0))


@given(shapes(min_dims=1, max_dims=3, min_side=1), st.integers(0, 2**16))
def test_softmax_sums_to_one_and_matches_exp_log_softmax(shape, seed):
    x = np.random.default_rng(seed).normal(0, 10, shape).astype(np.float32)
    s = np.asarray(fx.nn.softmax(fnp.asarray(x)))
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.exp(np.asarray(fx.nn.log_softmax(fnp.asarray(x)))), s,
                               rtol=1e-5, atol=1e-7)
    lse = np.asarray(fx.nn.logsumexp(fnp.asarray(x), axis=-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(fx.nn.log_softmax(fnp.asarray(x))), x - lse,
                               rtol=1e-5, atol=1e-5)


# --- standardize, one_hot, glu --------------------------------------------------------------------


@pytest.mark.parametrize("kw", [
    {}, {"axis": 0}, {"axis": (0, 1)}, {"axis": None}, {"epsilon": 0.5},
    {"algorithm": "stable"}, {"mean": 0.5, "variance": 2.0},
], ids=str)
def test_standardize_matches_jax(kw):
    rng = np.random.default_rng(5)
    x = rng.normal(1, 2, (3, 4))
    f = lambda v: fx.nn.standardize(v, **kw)  # noqa: E731
    g = lambda v: jax.nn.standardize(v, **kw)  # noqa: E731
    case = OpCase("standardize", f, g, None)
    assert_allclose(f(fnp.asarray(x.astype(np.float32))), g(jnp.asarray(x.astype(np.float32))))
    if not kw or "algorithm" in kw:
        check_jvp(case, [x], rng)
        check_vjp(case, [x], rng)
    check_grads_f64(case, [x])
    if kw.get("axis", -1) == -1:
        check_vmap(case, [x.astype(np.float32)], (0,))


def test_standardize_where_and_constant_rows():
    x = np.array([[1.0, 2.0, 3.0, 100.0], [5.0, 5.0, 5.0, 5.0]])
    mask = np.array([[True, True, True, False], [True, True, True, True]])
    assert_allclose(fx.nn.standardize(fnp.asarray(x), where=mask),
                    jax.nn.standardize(jnp.asarray(x), where=mask))
    out = np.asarray(fx.nn.standardize(fnp.asarray(x)))
    np.testing.assert_array_equal(out[1], 0.0)  # zero variance: epsilon keeps it finite
    with pytest.raises(ValueError, match="fx.nn.standardize: unknown algorithm 'exact'"):
        fx.nn.standardize(fnp.asarray(x), algorithm="exact")


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", [None, np.int32, np.float64, np.bool_])
@pytest.mark.default_mode  # float32 defaults
def test_one_hot_matches_jax(axis, dtype):
    x = np.array([[0, 2, 5], [-1, 1, 3]], np.int32)
    got = fx.nn.one_hot(fnp.asarray(x), 4, dtype=dtype, axis=axis)
    want = jax.nn.one_hot(jnp.asarray(x), 4, dtype=dtype or np.float32, axis=axis)
    assert_allclose(got, want, what="one_hot")
    assert fx.nn.one_hot(fnp.asarray(x), 4).dtype == np.float32  # jax-x64: float64


@pytest.mark.default_mode  # float32 defaults
def test_one_hot_under_transformations_and_errors():
    labels = np.array([1, 0, 2], np.int32)
    batched = fx.vmap(lambda i: fx.nn.one_hot(i, 3))(fnp.asarray(labels))
    assert_allclose(batched, jax.nn.one_hot(labels, 3, dtype=np.float32))
    assert_allclose(fx.nn.one_hot(fnp.asarray(np.int64(2)), 3), np.array([0, 0, 1], np.float32))
    jaxpr = fx.make_jaxpr(lambda i: fx.nn.one_hot(i, 3))(labels)
    assert [str(a) for a in jaxpr.out_avals] == ["f32[3,3]"]
    with pytest.raises(TypeError, match="fx.nn.one_hot: num_classes must be a concrete integer"):
        fx.make_jaxpr(lambda i, n: fx.nn.one_hot(i, n))(labels, 3)
    with pytest.raises(ValueError, match="fx.nn.one_hot: num_classes must be non-negative"):
        fx.nn.one_hot(fnp.asarray(labels), -1)


def test_glu_matches_jax():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(3, 4))
    for axis in (-1, 1):
        case = OpCase("glu", lambda v, a=axis: fx.nn.glu(v, axis=a),
                      lambda v, a=axis: jax.nn.glu(v, axis=a), None)
        assert_allclose(case.fx_fn(*to_fx([x])), case.jax_fn(*to_jax([x])))
        check_jvp(case, [x], rng)
        check_vjp(case, [x], rng)
    with pytest.raises(ValueError, match=r"fx.nn.glu: axis 0 of f64\[3,4\] has odd size 3"):
        fx.nn.glu(fnp.asarray(x), axis=0)


# --- a small end-to-end model ---------------------------------------------------------------------


def test_mlp_classifier_loss_and_gradients_match_jax():
    rng = np.random.default_rng(7)
    params = {"w1": rng.normal(size=(4, 8)) * 0.5, "b1": np.zeros(8),
              "w2": rng.normal(size=(8, 3)) * 0.5, "b2": np.zeros(3)}
    x, labels = rng.normal(size=(5, 4)), np.array([0, 2, 1, 1, 0], np.int32)

    def make_loss(np_, nn):
        def loss(p, x, y):
            h = nn.gelu(x @ p["w1"] + p["b1"])
            logits = nn.standardize(h) @ p["w2"] + p["b2"]
            logp = nn.log_softmax(logits)
            return -np_.mean(np_.sum(nn.one_hot(y, 3, dtype=np.float64) * logp, axis=-1))
        return loss

    fx_loss, jax_loss = make_loss(fnp, fx.nn), make_loss(jnp, jax.nn)
    val, grads = fx.value_and_grad(fx_loss)(to_fx(params), fnp.asarray(x), fnp.asarray(labels))
    jval, jgrads = jax.value_and_grad(jax_loss)(to_jax(params), jnp.asarray(x),
                                                jnp.asarray(labels))
    assert_allclose(val, jval, rtol=1e-9, what="loss")
    assert_allclose(grads, jgrads, rtol=1e-9, atol=1e-12, what="grads")
