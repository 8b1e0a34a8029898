"""fx.optim against hand-written NumPy references of each update rule (optax is not a test
dependency; the references follow optax's documented formulas), several steps, float32 and
float64, jitted and eager; schedules against NumPy formulas; state handling and errors."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import fx
import fx.numpy as fnp
import fx.optim as optim
from fx.tree_util import tree_leaves, tree_map

STEPS = 6


# --- NumPy references --------------------------------------------------------------------------
# Each takes the list of gradient pytrees (dicts of np arrays) and the initial params, and returns
# the params after every step.


def _ref_run(init, step, params, grads):
    state = init(params)
    out = []
    for t, g in enumerate(grads, start=1):
        upd, state = step(g, state, params, t)
        params = {k: (params[k] + upd[k]).astype(params[k].dtype) for k in params}
        out.append(params)
    return out


def ref_sgd(lr, momentum=None, nesterov=False, lr_fn=None):
    def init(p):
        return {k: np.zeros_like(v) for k, v in p.items()}

    def step(g, tr, p, t):
        rate = lr_fn(t - 1) if lr_fn else lr
        if momentum is None:
            return {k: (-rate * g[k]).astype(g[k].dtype) for k in g}, tr
        tr = {k: g[k] + momentum * tr[k] for k in g}
        d = {k: g[k] + momentum * tr[k] for k in g} if nesterov else tr
        return {k: (-rate * d[k]).astype(g[k].dtype) for k in g}, tr

    return init, step


def ref_adam(lr, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, weight_decay=None):
    def init(p):
        return ({k: np.zeros_like(v) for k, v in p.items()},
                {k: np.zeros_like(v) for k, v in p.items()})

    def step(g, state, p, t):
        m, v = state
        m = {k: (1 - b1) * g[k] + b1 * m[k] for k in g}
        v = {k: (1 - b2) * g[k] ** 2 + b2 * v[k] for k in g}
        upd = {}
        for k in g:
            dt = g[k].dtype
            m_hat = m[k] / (1 - dt.type(b1) ** dt.type(t))
            v_hat = v[k] / (1 - dt.type(b2) ** dt.type(t))
            u = m_hat / (np.sqrt(v_hat + eps_root) + eps)
            if weight_decay is not None:
                u = u + weight_decay * p[k]
            upd[k] = (-lr * u).astype(dt)
        return upd, (m, v)

    return init, step


def ref_rmsprop(lr, decay=0.9, eps=1e-8, initial_scale=0.0, centered=False, momentum=None,
                nesterov=False):
    def init(p):
        return ({k: np.full_like(v, initial_scale) for k, v in p.items()},
                {k: np.zeros_like(v) for k, v in p.items()},
                {k: np.zeros_like(v) for k, v in p.items()})

    def step(g, state, p, t):
        nu, mu, tr = state
        nu = {k: (1 - decay) * g[k] ** 2 + decay * nu[k] for k in g}
        if centered:
            mu = {k: (1 - decay) * g[k] + decay * mu[k] for k in g}
            d = {k: g[k] / np.sqrt(nu[k] - mu[k] ** 2 + eps) for k in g}
        else:
            d = {k: g[k] / np.sqrt(nu[k] + eps) for k in g}
        if momentum is not None:
            tr = {k: d[k] + momentum * tr[k] for k in g}
            d = {k: d[k] + momentum * tr[k] for k in g} if nesterov else tr
        return {k: (-lr * d[k]).astype(g[k].dtype) for k in g}, (nu, mu, tr)

    return init, step


# --- driver ------------------------------------------------------------------------------------


def _problem(dtype, seed=0):
    rng = np.random.default_rng(seed)
    params = {"b": rng.standard_normal(3).astype(dtype),
              "w": rng.standard_normal((4, 3)).astype(dtype)}
    grads = [{k: (rng.standard_normal(v.shape) * 2.0 ** (i - 2)).astype(dtype)
              for k, v in params.items()} for i in range(STEPS)]
    return params, grads


def _fx_run(opt, params, grads, jit=True):
    p = tree_map(fnp.asarray, params)
    state = opt.init(p)

    def step(p, state, g):
        upd, state = opt.update(g, state, p)
        return optim.apply_updates(p, upd), state

    step_fn = fx.jit(step) if jit else step
    out = []
    for g in grads:
        p, state = step_fn(p, state, tree_map(fnp.asarray, g))
        out.append(tree_map(np.asarray, p))
    if jit:
        assert step_fn.cache_size() == 1, "the optimizer state changed its types between steps"
    return out, state


def _check(got, want, dtype, rtol=None):
    rtol = rtol or (2e-5 if dtype == np.float32 else 1e-12)
    for t, (g, w) in enumerate(zip(got, want)):
        for k in w:
            assert g[k].dtype == w[k].dtype, f"step {t} {k}: dtype {g[k].dtype} != {w[k].dtype}"
            np.testing.assert_allclose(g[k], w[k], rtol=rtol, atol=rtol,
                                       err_msg=f"step {t + 1}, leaf {k}")


OPTIMIZERS = [
    ("sgd", lambda: optim.sgd(0.1), lambda: ref_sgd(0.1)),
    ("momentum", lambda: optim.momentum(0.05, 0.9), lambda: ref_sgd(0.05, 0.9)),
    ("nesterov", lambda: optim.sgd(0.05, 0.8, nesterov=True),
     lambda: ref_sgd(0.05, 0.8, nesterov=True)),
    ("adam", lambda: optim.adam(1e-2), lambda: ref_adam(1e-2)),
    ("adam_eps_root", lambda: optim.adam(3e-3, 0.8, 0.99, 1e-6, 1e-8),
     lambda: ref_adam(3e-3, 0.8, 0.99, 1e-6, 1e-8)),
    ("adamw", lambda: optim.adamw(1e-2, weight_decay=0.1),
     lambda: ref_adam(1e-2, weight_decay=0.1)),
    ("rmsprop", lambda: optim.rmsprop(1e-2), lambda: ref_rmsprop(1e-2)),
    ("rmsprop_centered_momentum",
     lambda: optim.rmsprop(1e-2, 0.8, 1e-6, 0.1, centered=True, momentum=0.9),
     lambda: ref_rmsprop(1e-2, 0.8, 1e-6, 0.1, centered=True, momentum=0.9)),
    ("rmsprop_nesterov", lambda: optim.rmsprop(1e-2, momentum=0.5, nesterov=True),
     lambda: ref_rmsprop(1e-2, momentum=0.5, nesterov=True)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,make,make_ref", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizer_matches_numpy_reference(name, make, make_ref, dtype):
    params, grads = _problem(dtype)
    got, state = _fx_run(make(), params, grads)
    want = _ref_run(*make_ref(), params, grads)
    _check(got, want, dtype)
    for leaf in tree_leaves(state):
        assert isinstance(leaf, fx.Array), f"state leaf {leaf!r} is not an fx array"


def test_adam_eager_equals_jitted():
    params, grads = _problem(np.float32, seed=1)
    eager, _ = _fx_run(optim.adam(1e-2), params, grads[:3], jit=False)
    jitted, _ = _fx_run(optim.adam(1e-2), params, grads[:3], jit=True)
    _check(eager, jitted, np.float32)


def test_adam_state_counts_steps_as_int32_array():
    params, grads = _problem(np.float32)
    _, state = _fx_run(optim.adam(1e-2), params, grads)
    adam_state = state[0]
    assert isinstance(adam_state, optim.ScaleByAdamState)
    assert adam_state.count.dtype == np.int32 and int(adam_state.count) == STEPS


# --- schedules ---------------------------------------------------------------------------------

def np_exponential(init, steps, rate, begin=0, staircase=False, end=None):
    def f(c):
        d = c - begin
        p = d / steps
        if staircase:
            p = math.floor(p)
        v = init if d <= 0 else init * rate**p
        if end is not None:
            v = max(v, end) if rate < 1 else min(v, end)
        return v
    return f


def np_cosine(init, steps, alpha=0.0, exponent=1.0):
    return lambda c: init * ((1 - alpha) * (0.5 * (1 + math.cos(math.pi * min(c, steps) / steps)))
                             ** exponent + alpha)


def np_warmup_cosine(init, peak, warmup, decay, end=0.0, exponent=1.0):
    cos = np_cosine(peak, decay - warmup, end / peak, exponent)
    return lambda c: init + (peak - init) * c / warmup if c < warmup else cos(c - warmup)


def np_piecewise(init, bs):
    def f(c):
        v = init
        for b, s in sorted(bs.items()):
            if c > b:
                v *= s
        return v
    return f


SCHEDULES = [
    ("constant", optim.constant_schedule(0.3), lambda c: 0.3),
    ("exponential", optim.exponential_decay(1.0, 4, 0.5), np_exponential(1.0, 4, 0.5)),
    ("exponential_staircase_begin_end",
     optim.exponential_decay(2.0, 3, 0.5, transition_begin=2, staircase=True, end_value=0.3),
     np_exponential(2.0, 3, 0.5, 2, True, 0.3)),
    ("exponential_growth_capped", optim.exponential_decay(1.0, 2, 2.0, end_value=5.0),
     np_exponential(1.0, 2, 2.0, end=5.0)),
    ("cosine", optim.cosine_decay(1.0, 10), np_cosine(1.0, 10)),
    ("cosine_alpha_exponent", optim.cosine_decay_schedule(0.5, 8, alpha=0.1, exponent=2.0),
     np_cosine(0.5, 8, 0.1, 2.0)),
    ("warmup_cosine", optim.warmup_cosine(0.0, 1.0, 4, 14, end_value=0.1),
     np_warmup_cosine(0.0, 1.0, 4, 14, 0.1)),
    ("piecewise", optim.piecewise_constant(1.0, {3: 0.5, 7: 0.1}),
     np_piecewise(1.0, {3: 0.5, 7: 0.1})),
    ("linear", optim.linear_schedule(1.0, 0.2, 5, transition_begin=2),
     lambda c: 1.0 - 0.8 * min(max(c - 2, 0), 5) / 5),
]


@pytest.mark.parametrize("name,sched,ref", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_schedule_matches_formula(name, sched, ref):
    counts = list(range(0, 20))
    want = np.array([ref(c) for c in counts])
    eager = np.array([float(sched(c)) for c in counts])
    traced = np.asarray(fx.jit(fx.vmap(sched))(fnp.asarray(counts, dtype=np.int32)))
    np.testing.assert_allclose(eager, want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(traced, want, rtol=2e-6, atol=1e-7)
    assert traced.dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_schedule_as_learning_rate(dtype):
    sched = optim.exponential_decay(0.1, 2, 0.5)
    params, grads = _problem(dtype)
    for make, make_ref in [(lambda: optim.sgd(sched, 0.9), lambda: ref_sgd(None, 0.9)),
                           (lambda: optim.adam(sched), None)]:
        got, state = _fx_run(make(), params, grads)
        if make_ref is None:
            # Adam with a schedule: the same as a fresh Adam per step with that step's rate.
            init, _ = ref_adam(0.0)
            st = init(params)
            p = params
            want = []
            for t, g in enumerate(grads, start=1):
                upd, st = ref_adam(float(np.float32(0.1 * 0.5 ** ((t - 1) / 2))))[1](g, st, p, t)
                p = {k: (p[k] + upd[k]).astype(dtype) for k in p}
                want.append(p)
        else:
            want = _ref_run(*ref_sgd(None, 0.9, lr_fn=lambda c: float(
                np.float32(0.1 * 0.5 ** (c / 2)))), params, grads)
        # The schedule's rate is float32 (as in optax) whatever the parameters' dtype.
        _check(got, want, dtype, rtol=2e-5)
        assert int(state[-1].count) == STEPS


# --- clipping, chain, weight-decay masks -------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_clip_by_global_norm_then_sgd(dtype):
    params, grads = _problem(dtype)
    got, _ = _fx_run(optim.chain(optim.clip_by_global_norm(1.5), optim.sgd(0.1)), params, grads)
    p = params
    want = []
    for g in grads:
        norm = np.sqrt(sum(np.sum(v.astype(np.float64) ** 2) for v in g.values()))
        factor = 1.0 if norm < 1.5 else 1.5 / norm
        p = {k: (p[k] - 0.1 * g[k] * factor).astype(dtype) for k in p}
        want.append(p)
    _check(got, want, dtype)
    norms = [np.sqrt(sum(np.sum(v**2) for v in g.values())) for g in grads]
    assert min(norms) < 1.5 < max(norms), "the data should exercise both branches"


def test_global_norm():
    tree = {"a": fnp.asarray([3.0, 0.0]), "b": [fnp.asarray(4.0)]}
    assert float(optim.global_norm(tree)) == 5.0
    assert float(optim.global_norm({})) == 0.0


def test_adamw_mask_skips_decay():
    params, grads = _problem(np.float64)
    mask = {"b": False, "w": True}
    got, _ = _fx_run(optim.adamw(1e-2, weight_decay=0.5, mask=mask), params, grads)
    got_fn, _ = _fx_run(optim.adamw(1e-2, weight_decay=0.5, mask=lambda p: mask), params, grads)
    plain, _ = _fx_run(optim.adam(1e-2), params, grads)
    decayed, _ = _fx_run(optim.adamw(1e-2, weight_decay=0.5), params, grads)
    np.testing.assert_allclose(got[-1]["b"], plain[-1]["b"], rtol=1e-12)
    np.testing.assert_allclose(got[-1]["w"], decayed[-1]["w"], rtol=1e-12)
    np.testing.assert_allclose(got_fn[-1]["w"], got[-1]["w"], rtol=1e-12)


def test_apply_updates_keeps_param_dtype():
    p = {"h": fnp.asarray(np.ones(2, np.float16)), "s": fnp.asarray(np.ones(2, np.float32))}
    u = {"h": fnp.asarray(np.full(2, 0.5, np.float32)), "s": fnp.asarray(np.full(2, 0.5))}
    out = optim.apply_updates(p, u)
    assert out["h"].dtype == np.float16 and out["s"].dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out["s"]), [1.5, 1.5])


def test_vmap_over_independent_optimizer_states():
    # Several models trained in lockstep: the optimizer state batches like any pytree.
    opt = optim.adam(0.1)
    ws = fnp.asarray(np.array([[1.0, 2.0], [-1.0, 0.5], [3.0, -2.0]], np.float32))
    states = fx.vmap(opt.init)(ws)

    def step(w, s):
        g = fx.grad(lambda w: fnp.sum(w**2))(w)
        u, s = opt.update(g, s, w)
        return optim.apply_updates(w, u), s

    bw, bs = fx.vmap(step)(ws, states)
    for i in range(3):
        w, s = step(ws[i], opt.init(ws[i]))
        np.testing.assert_allclose(np.asarray(bw[i]), np.asarray(w), rtol=1e-6)
    assert bs[0].count.shape == (3,)


# --- errors ------------------------------------------------------------------------------------


def test_errors_name_the_operation():
    with pytest.raises(ValueError, match="sgd: nesterov=True needs a momentum"):
        optim.sgd(0.1, nesterov=True)
    opt = optim.adamw(0.1)
    p = {"w": fnp.ones(2)}
    with pytest.raises(ValueError, match="add_decayed_weights: update\\(\\) needs params"):
        opt.update(p, opt.init(p))
    with pytest.raises(ValueError, match="scale_by_adam: the updates have structure"):
        opt.update({"v": fnp.ones(2)}, opt.init(p), p)
    with pytest.raises(ValueError, match="chain: state has 1 entries for 3"):
        opt.update(p, (None,), p)
    with pytest.raises(ValueError, match="apply_updates: the updates have structure"):
        optim.apply_updates(p, [fnp.ones(2)])
    with pytest.raises(ValueError, match="decay_steps must be positive"):
        optim.cosine_decay_schedule(1.0, 0)
    with pytest.raises(ValueError, match="must exceed warmup_steps"):
        optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 10)
    with pytest.raises(ValueError, match="3 schedules need 2 boundaries"):
        optim.join_schedules([optim.constant_schedule(1.0)] * 3, [1])
    with pytest.raises(ValueError, match="scale -1 at boundary 3"):
        optim.piecewise_constant_schedule(1.0, {3: -1})


def test_docstring_examples():
    import fx.optim.alias
    import fx.optim.schedules
    import fx.optim.transform

    for module in (fx.optim.alias, fx.optim.schedules, fx.optim.transform):
        result = doctest.testmod(module, extraglobs={"fx": fx},
                                 optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, f"{module.__name__}: {result.failed} doctest failures"
