"""Tests of the jax.nn functions beyond test_nn.py's (squareplus, log1mexp, attention…), the
initializers (fx.nn.initializers) and the key utilities of fx.random, against jax.

Functions: values and dtypes against jax, jvp/vjp against jax, ``check_grads`` at order 2 in
float64, vmap against a loop and jax.vmap, jit against eager. Initializers: the same values as
jax's for the same key (seeds x shapes x dtypes x axes), under jit too. Keys: the round trip
through jax's typed keys.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    assert_bitwise,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    run_doctests,
    to_fx,
)

import fx
import fx.nn
import fx.numpy as fnp
import fx.random

F32 = np.float32


def _normal(*shape, scale=2.0):
    return lambda rng: (rng.standard_normal(shape) * scale).astype(F32)


def _positive(*shape):
    return lambda rng: (rng.uniform(0.05, 4.0, shape)).astype(F32)


def _away_from(points, *shape):
    """Normal draws kept 0.05 away from the kinks in ``points`` (for finite differences)."""
    def draw(rng):
        x = rng.standard_normal(shape) * 2
        for p in points:
            x = np.where(np.abs(x - p) < 0.05, x + 0.1, x)
        return x.astype(F32)
    return draw


def _case(name, fx_fn, jax_fn, *draws, diff=(0,), **kw):
    return OpCase(name, fx_fn, jax_fn, lambda rng: [d(rng) for d in draws], diff_argnums=diff,
                  **kw)


def _same(name, *draws, **kw):
    return _case(name, getattr(fx.nn, name), getattr(jax.nn, name), *draws, **kw)


Q, KV, KV1 = (2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 4, 8)
MASK = np.random.default_rng(9).random((2, 1, 5, 7)) > 0.3
Q_LENGTHS, KV_LENGTHS = np.array([3, 5], np.int32), np.array([7, 2], np.int32)


# The softmax is computed in float32 whatever the dtype (as jax's): finite differences in
# float64 see its rounding, so the attention rows check gradients at order 1 to 1e-2 (their
# jvp and vjp are compared with jax's above to float32 precision).
ATTENTION_GRADS = dict(grad_order=1, grad_tol=1e-2)


def _attention(tag, **kw):
    def fx_fn(q, k, v, *bias):
        return fx.nn.dot_product_attention(q, k, v, *bias, **kw)

    def jax_fn(q, k, v, *bias):
        return jax.nn.dot_product_attention(q, k, v, *bias, **kw)

    return fx_fn, jax_fn


CASES = [
    _same("identity", _normal(3, 4)),
    _same("squareplus", _normal(3, 4)),
    _case("squareplus-b", lambda x: fx.nn.squareplus(x, 0.5),
          lambda x: jax.nn.squareplus(x, 0.5), _normal(5)),
    _same("sparse_plus", _away_from((-1, 1), 4, 5)),
    _same("sparse_sigmoid", _away_from((-1, 1), 4, 5), grad_order=1),
    _same("tanh", _normal(6)),
    _same("log1mexp", _positive(3, 5)),
    _same("logmeanexp", _normal(3, 5)),
    _case("logmeanexp-axis", lambda x: fx.nn.logmeanexp(x, axis=1, keepdims=True),
          lambda x: jax.nn.logmeanexp(x, axis=1, keepdims=True), _normal(3, 5)),
    _case("logmeanexp-where", lambda x: fx.nn.logmeanexp(x, axis=0, where=MASK[0, 0]),
          lambda x: jax.nn.logmeanexp(x, axis=0, where=MASK[0, 0]), _normal(5, 7)),
    _case("attention", *_attention(""), _normal(*Q, scale=1), _normal(*KV, scale=1),
          _normal(*KV, scale=1), diff=(0, 1, 2), **ATTENTION_GRADS),
    _case("attention-causal-mha", *_attention("", is_causal=True), _normal(*Q, scale=1),
          _normal(*KV1, scale=1), _normal(*KV1, scale=1), diff=(0, 1, 2), **ATTENTION_GRADS),
    _case("attention-bias-mask-scale", *_attention("", mask=MASK, scale=0.3),
          _normal(*Q, scale=1), _normal(*KV, scale=1), _normal(*KV, scale=1),
          _normal(1, 4, 5, 7, scale=1), diff=(0, 1, 2, 3), **ATTENTION_GRADS),
    _case("attention-window", *_attention("", local_window_size=(1, 2)), _normal(*Q, scale=1),
          _normal(*KV, scale=1), _normal(*KV, scale=1), diff=(0, 2), **ATTENTION_GRADS),
    _case("attention-lengths", *_attention("", query_seq_lengths=Q_LENGTHS,
                                           key_value_seq_lengths=KV_LENGTHS),
          _normal(*Q, scale=1), _normal(*KV, scale=1), _normal(*KV, scale=1), diff=(0, 1, 2),
          **ATTENTION_GRADS),
    _case("attention-residual", *_attention("", is_causal=True, return_residual=True),
          _normal(*Q, scale=1), _normal(*KV, scale=1), _normal(*KV, scale=1), diff=(0,),
          tags={"stopped-output"}),
    _case("attention-rank3", *_attention("", local_window_size=1), _normal(5, 4, 8, scale=1),
          _normal(7, 2, 8, scale=1), _normal(7, 2, 8, scale=1), diff=(0, 1, 2), **ATTENTION_GRADS),
]


# The heaviest attention variants run with -m slow (CI's time budget); plain, masked and
# biased attention stay.
_SLOW_CASES = {"attention-causal-mha", "attention-rank3", "attention-residual"}


def _params(cases):
    return [pytest.param(c, id=repr(c), marks=[pytest.mark.slow] if repr(c) in _SLOW_CASES
                         else []) for c in cases]


@pytest.mark.parametrize("case", _params(CASES))
def test_eval_jvp_vjp(case):
    rng = np.random.default_rng(0)
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)


@pytest.mark.parametrize("case", [c for c in CASES if "stopped-output" not in c.tags], ids=repr)
def test_check_grads(case):
    """Against finite differences (not for an output under stop_gradient, whose jvp is 0)."""
    check_grads_f64(case, case.args(np.random.default_rng(1)))


@pytest.mark.parametrize("case", _params(CASES))
def test_vmap(case):
    rng = np.random.default_rng(2)
    draws = [case.args(rng) for _ in range(3)]
    n = len(draws[0])
    for i in range(n):
        batched = [np.stack([d[j] for d in draws]) if j == i else draws[0][j] for j in range(n)]
        check_vmap(case, batched, tuple(0 if j == i else None for j in range(n)))


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_jit_equals_eager(case):
    args = to_fx(case.args(np.random.default_rng(3)))
    assert_allclose(fx.jit(case.fx_fn)(*args), case.fx_fn(*args), what=f"{case.name} jit")


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_attention_dtypes(dtype):
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in (Q, KV, KV))
    with fx.enable_x64():
        got = fx.nn.dot_product_attention(q, k, v, is_causal=True)
    want = jax.nn.dot_product_attention(q, k, v, is_causal=True)
    # float64 inputs: jax's softmax still runs in float32, and rounds its own way.
    tol = 1e-5 if dtype == np.float64 else None
    assert_allclose(got, want, rtol=tol, atol=tol, what=f"attention {np.dtype(dtype)}")


def test_log1mexp_edges():
    x = np.array([0.0, 1e-30, 1e-6, np.log(2), 30.0, 100.0, np.inf], F32)
    assert_allclose(fx.nn.log1mexp(x), jax.nn.log1mexp(x))
    g = fx.grad(lambda v: fx.nn.log1mexp(v))(F32(1e-3))
    assert_allclose(g, jax.grad(jax.nn.log1mexp)(F32(1e-3)))


@pytest.mark.parametrize("call, match", [
    (lambda: fx.nn.dot_product_attention(np.ones((2, 5, 3, 8), F32), np.ones((2, 7, 2, 8), F32),
                                          np.ones((2, 7, 2, 8), F32)), r"3 heads .* key's 2"),
    (lambda: fx.nn.dot_product_attention(np.ones((2, 5, 4, 8), F32), np.ones((2, 7, 2, 8), F32),
                                          np.ones((2, 7, 2, 4), F32)),
     r"value must have shape \(2, 7, 2, 8\), got f32\[2,7,2,4\]"),
    (lambda: fx.nn.dot_product_attention(np.ones((1, 2, 2, 4), F32), np.ones((1, 2, 2, 4), F32),
                                          np.ones((1, 2, 2, 4), F32), mask=np.ones((1, 1, 2, 2))),
     r"mask must have dtype bool"),
    (lambda: fx.nn.dot_product_attention(np.ones((1, 2, 2, 4), F32), np.ones((1, 2, 2, 4), F32),
                                          np.ones((1, 2, 2, 4), F32), implementation="cudnn"),
     r"implementation='cudnn' is not available"),
])
def test_attention_errors(call, match):
    with pytest.raises((TypeError, ValueError, NotImplementedError), match=match):
        call()


# --- initializers ---------------------------------------------------------------------------------

I, J = fx.nn.initializers, jax.nn.initializers
INITS = [
    ("zeros", None), ("ones", None), ("constant", (0.3,)), ("uniform", ()),
    ("uniform", (0.5,)), ("normal", ()), ("normal", (2.0,)), ("truncated_normal", ()),
    ("truncated_normal", (1.0, None, -1.0, 0.5)),
    ("glorot_uniform", ()), ("glorot_normal", ()), ("xavier_uniform", ()),
    ("xavier_normal", ()), ("he_uniform", ()), ("he_normal", ()), ("kaiming_uniform", ()),
    ("kaiming_normal", ()), ("lecun_uniform", ()), ("lecun_normal", ()),
    ("glorot_normal", (0, 1)), ("he_uniform", ((0, 1), -1, 2)),
]


def _make(module, name, args):
    fn = getattr(module, name)
    return fn if args is None else fn(*args)


# Each draw of a new (shape, dtype) costs jax a compile of its sampler (~1-1.5 s for the
# normal family) and fx a compile per jitted (shape, dtype): the default run draws one pair
# per initializer (every shape and every dtype among them, each also under jit);
# test_initializer_every_shape_and_dtype (-m slow) draws the full product. The families' second
# forms and jax's xavier aliases of glorot_* and kaiming_* of he_*, and he_*/lecun_normal (the
# variance-scaling samplers glorot_normal and lecun_uniform already run) run with -m slow (each
# sampler keeps one default test, and he_uniform's second form the axis arguments).
_SLOW_INITS = {"normal", "truncated_normal", "glorot_uniform", "xavier_normal",
               "xavier_uniform", "truncated_normal(1.0, None, -1.0, 0.5)", "kaiming_uniform",
               "kaiming_normal", "glorot_normal(0, 1)", "he_uniform", "he_normal",
               "lecun_normal"}
_SHAPES = ((3, 4), (5, 2, 3), (2, 3, 4, 5))
_DTYPES = (np.float32, np.float64, np.float16)


def _check_initializer(name, args, pairs):
    for shape, dt in pairs:
        with fx.enable_x64():
            init = _make(I, name, args)
            compiled = fx.jit(lambda k, f=init, s=shape, d=dt: f(k, s, d))
        for seed in (0, 1, 42):
            want = _make(J, name, args)(jax.random.key(seed), shape, dt)
            with fx.enable_x64():
                got = init(fx.random.key(seed), shape, dt)
                jitted = compiled(fx.random.key(seed))
            what = f"{name}{args} seed={seed} {shape} {np.dtype(dt)}"
            tol = {np.float16: 4e-3, np.float32: 1e-6, np.float64: 1e-13}[dt]
            assert_allclose(got, want, rtol=tol, atol=tol, what=what)
            # fx.random.normal in float16 rounds differently compiled (~5 ulps seen).
            jtol = 1e-2 if dt == np.float16 else tol
            assert_allclose(jitted, got, rtol=jtol, atol=jtol, what=what + " jit")


def _shapes_for(args):
    # batch_axis=2 needs a 4th dimension.
    return [s for s in _SHAPES if args is None or len(args) < 3 or len(s) == 4]


_INIT_PARAMS = [pytest.param(n, a, id=f"{n}{a or ''}",
                             marks=[pytest.mark.slow] if f"{n}{a or ''}" in _SLOW_INITS else [])
                for n, a in INITS]


@pytest.mark.parametrize("name, args", _INIT_PARAMS)
def test_initializer_matches_jax(name, args):
    # One (shape, dtype) per initializer, rotating with its place in the table, so that the
    # default rows draw every shape and every dtype between them (each pair costs a compile
    # in jax and in fx: ~2 s); test_initializer_every_shape_and_dtype draws them all.
    # (The dtype offset puts float16, where the compiled normal rounds differently, on a
    # normal-family row: glorot_normal.)
    shapes, i = _shapes_for(args), INITS.index((name, args))
    _check_initializer(name, args, [(shapes[i % len(shapes)],
                                     _DTYPES[(i + 1) % len(_DTYPES)])])


@pytest.mark.slow
@pytest.mark.parametrize("name, args", [pytest.param(n, a, id=f"{n}{a or ''}") for n, a in INITS])
def test_initializer_every_shape_and_dtype(name, args):
    _check_initializer(name, args, [(s, d) for s in _shapes_for(args) for d in _DTYPES])


_ORTHO = [((4, 3), -1), ((3, 5), -1), ((2, 3, 4), 0), ((6, 6), -1), ((3, 4, 5), 1),
          ((64, 32), -1)]


# Each row compiles a QR in jax and in fx (~4 s with a cold cache): the default run takes each
# geometry in one dtype, alternating (both dtypes, every geometry); the other dtype with -m slow.
@pytest.mark.parametrize("dtype, shape, axis", [
    pytest.param(dt, shape, axis, id=f"{np.dtype(dt)}-{shape}-{axis}",
                 marks=[pytest.mark.slow] if (i + j) % 2 else [])
    for i, (shape, axis) in enumerate(_ORTHO) for j, dt in enumerate((np.float32, np.float64))])
def test_orthogonal_matches_jax(shape, axis, dtype):
    want = J.orthogonal(1.5, axis)(jax.random.key(1), shape, dtype)
    with fx.enable_x64():
        init = I.orthogonal(1.5, axis)
        got = init(fx.random.key(1), shape, dtype)
        jitted = fx.jit(lambda k: init(k, shape, dtype))(fx.random.key(1))
    tol = 2e-6 if dtype == np.float32 else 1e-13
    assert_allclose(got, want, rtol=tol, atol=tol)
    assert_allclose(jitted, got, rtol=tol, atol=tol)
    m = np.moveaxis(np.asarray(got, np.float64), axis, -1).reshape(-1, shape[axis]) / 1.5
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, np.eye(len(gram)), atol=50 * tol)


@pytest.mark.parametrize("shape", [(3, 2, 4), (3, 3, 2, 2), (3, 1, 2, 3, 5)])
def test_delta_orthogonal_matches_jax(shape):
    want = J.delta_orthogonal(0.5)(jax.random.key(2), shape, np.float32)
    got = I.delta_orthogonal(0.5)(fx.random.key(2), shape, np.float32)
    assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_initializer_default_dtype_is_the_modes():
    assert I.glorot_uniform()(fx.random.key(0), (2, 3)).dtype == fx.dtypes.default_float_dtype()
    with fx.enable_x64():
        assert I.zeros(fx.random.key(0), (2,)).dtype == np.float64


@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg", "fan_geo_avg"])
@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
def test_variance_scaling_matches_jax(mode, distribution):
    kw = dict(in_axis=(0, 1), out_axis=-1, batch_axis=2)
    want = J.variance_scaling(0.7, mode, distribution, **kw)(jax.random.key(3), (2, 3, 4, 5),
                                                             np.float32)
    got = I.variance_scaling(0.7, mode, distribution, **kw)(fx.random.key(3), (2, 3, 4, 5),
                                                            np.float32)
    assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_initializer_statistics():
    w = np.asarray(I.he_normal()(fx.random.key(5), (400, 300), np.float32))
    assert abs(w.std() - np.sqrt(2 / 400)) < 0.02 * np.sqrt(2 / 400)
    u = np.asarray(I.glorot_uniform()(fx.random.key(6), (300, 200), np.float32))
    limit = np.sqrt(6 / 500)
    assert u.max() <= limit and u.min() >= -limit and u.max() > 0.99 * limit


@pytest.mark.parametrize("call, match", [
    (lambda: I.glorot_uniform()(fx.random.key(0), (5,), np.float32), r"rank >= 2"),
    (lambda: I.variance_scaling(1.0, "fan_sum", "normal"), r"invalid mode 'fan_sum'"),
    (lambda: I.variance_scaling(1.0, "fan_in", "cauchy"), r"invalid distribution 'cauchy'"),
    (lambda: I.normal()(fx.random.key(0), (2,), np.int32), r"normal: needs a floating dtype"),
    (lambda: I.ones(fx.random.key(0), (2, -1)), r"ones: negative dimension"),
    (lambda: I.orthogonal()(fx.random.key(0), (3,)), r"orthogonal: needs a shape of rank >= 2"),
    (lambda: I.delta_orthogonal()(fx.random.key(0), (3, 4)), r"needs a 3-D, 4-D or 5-D"),
    (lambda: I.delta_orthogonal()(fx.random.key(0), (3, 4, 2)), r"in features 4 must be <="),
])
def test_initializer_errors(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


# --- key utilities --------------------------------------------------------------------------------


def test_key_round_trip_with_jax_typed_keys():
    typed = jax.random.split(jax.random.key(7), 3)
    fx_keys = fx.random.wrap_key_data(jax.random.key_data(typed))
    assert_bitwise(fx.random.key_data(fx_keys), jax.random.key_data(typed))
    back = jax.random.wrap_key_data(np.asarray(fx.random.key_data(fx_keys)))
    assert_bitwise(jax.random.key_data(back), jax.random.key_data(typed))
    # The same draws from the same key data.
    assert_allclose(fx.random.uniform(fx_keys[1], (4,), np.float32),
                    jax.random.uniform(typed[1], (4,), np.float32))


def test_key_helpers():
    k, jk = fx.random.key(3), jax.random.key(3)
    data = fx.random.key_data
    assert fx.random.key_impl(k) == str(jax.random.key_impl(jk)) == "threefry2x32"
    assert_bitwise(data(fx.random.clone(k)), jax.random.key_data(jax.random.clone(jk)))
    assert fnp.issubdtype(k.dtype, fx.dtypes.prng_key)
    assert jnp.issubdtype(jk.dtype, jax.dtypes.prng_key)
    assert not fnp.issubdtype(fx.random.PRNGKey(3).dtype, fx.dtypes.prng_key)
    assert not jnp.issubdtype(jax.random.PRNGKey(3).dtype, jax.dtypes.prng_key)
    assert fx.random.split(k, (2, 3)).shape == jax.random.split(jk, (2, 3)).shape == (2, 3)
    assert_bitwise(data(fx.random.split(k, (2, 3))),
                   jax.random.key_data(jax.random.split(jk, (2, 3))))
    assert_bitwise(fx.jit(data)(k), data(k))
    assert_bitwise(data(fx.vmap(fx.random.clone)(fx.random.split(k, 4))),
                   data(fx.random.split(k, 4)))


@pytest.mark.parametrize("call, match", [
    (lambda: fx.random.key_data(np.zeros(3, np.uint32)), r"key_data: .* trailing dimension"),
    (lambda: fx.random.wrap_key_data(np.zeros((2, 2), np.int32)), r"wrap_key_data: .*i32"),
    (lambda: fx.random.wrap_key_data(np.zeros(2, np.uint32), impl="rbg"), r"impl 'rbg'"),
    (lambda: fx.random.key_impl(3), r"key_impl: .*fx.random.key\(3\)"),
])
def test_key_errors(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


def test_docstring_examples():
    from fx.nn import activations, attention, encoding, initializers

    assert run_doctests(activations, attention, encoding, initializers) >= 8
