"""fx.example_libraries.optimizers against jax.example_libraries.optimizers (the oracle, run
in fx's dtype mode): every optimizer step by step on the same gradients, eagerly and under
fx.jit, the schedules, the utilities, state packing, errors, and jax's stax + optimizers MNIST
example run on scikit-learn's digits with only its imports changed."""

from __future__ import annotations

import contextlib
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import run_doctests
from jax.example_libraries import optimizers as jopt

import fx
import fx.numpy as fnp
from fx import tree_util
from fx.example_libraries import optimizers as opt


def _jax_mode():
    return jax.enable_x64(fx.dtypes.x64_enabled())


def _params(rng):
    return {"w": rng.normal(size=(3, 4)).astype(np.float32),
            "b": rng.normal(size=(4,)).astype(np.float32),
            "s": np.float32(rng.normal())}


def _grads(rng, n):
    return [_params(rng) for _ in range(n)]


def _as(m, tree):
    return jax.tree_util.tree_map(m.asarray, tree)


SCHEDULE = lambda m: (lambda i: 0.05 / (1 + 0.1 * i))  # a schedule written against either lib

OPTIMIZERS = [
    ("sgd", (0.1,), {}),
    ("sgd", (SCHEDULE,), {}),
    ("momentum", (0.1,), {"mass": 0.9}),
    ("nesterov", (0.1, 0.8), {}),
    ("adagrad", (0.1,), {}),
    ("adagrad", (0.1,), {"momentum": 0.5}),
    ("rmsprop", (0.01,), {"gamma": 0.8}),
    ("rmsprop_momentum", (0.01,), {}),
    ("adam", (1e-2,), {}),
    ("adam", (SCHEDULE,), {"b1": 0.8, "b2": 0.99, "eps": 1e-6}),
    ("adamax", (1e-2,), {}),
    ("sm3", (0.1,), {}),
    ("sm3", (0.1,), {"momentum": 0.5}),
]
OPT_IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(OPTIMIZERS)]


def _make(lib, m, name, args, kwargs):
    args = tuple(a(m) if a is SCHEDULE else a for a in args)
    return getattr(lib, name)(*args, **kwargs)


def _assert_states_close(fstate, jstate, what):
    f_leaves, j_leaves = tree_util.tree_leaves(fstate), jax.tree_util.tree_leaves(jstate)
    assert len(f_leaves) == len(j_leaves), what
    for a, b in zip(f_leaves, j_leaves):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, what
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("name,args,kwargs", OPTIMIZERS, ids=OPT_IDS)
def test_steps_match_jax(name, args, kwargs):
    rng = np.random.default_rng(1)
    params, grads = _params(rng), _grads(rng, 6)
    f_init, f_update, f_get = _make(opt, fnp, name, args, kwargs)
    fs = f_init(_as(fnp, params))
    with _jax_mode():
        j_init, j_update, j_get = _make(jopt, jnp, name, args, kwargs)
        js = j_init(_as(jnp, params))
        for i, g in enumerate(grads):
            fs = f_update(i, _as(fnp, g), fs)
            js = j_update(i, _as(jnp, g), js)
            _assert_states_close(fs, js, f"{name} step {i} state")
            _assert_states_close(f_get(fs), j_get(js), f"{name} step {i} params")
    assert isinstance(fs, opt.OptimizerState)
    assert set(f_get(fs)) == {"w", "b", "s"}


@pytest.mark.parametrize("name,args,kwargs",
                         [o for o in OPTIMIZERS if o[0] != "sm3"],
                         ids=[i for i, o in zip(OPT_IDS, OPTIMIZERS) if o[0] != "sm3"])
def test_jitted_update_matches_jax(name, args, kwargs):
    # sm3 keeps each leaf's shape as ints in its state, so under jit those are traced and
    # get_params cannot reshape (jax's sm3 fails the same way); it is checked eagerly above.
    rng = np.random.default_rng(2)
    params, grads = _params(rng), _grads(rng, 4)
    f_init, f_update, f_get = _make(opt, fnp, name, args, kwargs)
    step = fx.jit(f_update)
    fs = f_init(_as(fnp, params))
    with _jax_mode():
        j_init, j_update, j_get = _make(jopt, jnp, name, args, kwargs)
        js = j_init(_as(jnp, params))
        for i, g in enumerate(grads):
            fs = step(i, _as(fnp, g), fs)
            js = j_update(i, _as(jnp, g), js)
        _assert_states_close(f_get(fs), j_get(js), f"jit({name})")


def test_update_inside_jit_with_grad():
    # The usual training step: get_params, grad and update in one compiled function.
    init, update, get_params = opt.momentum(0.1, mass=0.5)
    loss = lambda p: fnp.sum((p["w"] - 3.0) ** 2)
    traces = []

    @fx.jit
    def train_step(i, state):
        traces.append(1)
        return update(i, fx.grad(loss)(get_params(state)), state)

    state = init({"w": fnp.zeros(3)})
    for i in range(60):
        state = train_step(i, state)
    np.testing.assert_allclose(np.asarray(get_params(state)["w"]), 3.0, atol=1e-4)
    assert len(traces) == 1  # the step index is traced, the state's treedefs hit the cache


# --- schedules -----------------------------------------------------------------------------------


SCHEDULES = [
    ("constant", (0.1,), {}),
    ("exponential_decay", (0.1, 10, 0.5), {}),
    ("inverse_time_decay", (0.1, 5, 0.3), {}),
    ("inverse_time_decay", (0.1, 5, 0.3), {"staircase": True}),
    ("polynomial_decay", (0.1, 8, 0.01), {}),
    ("polynomial_decay", (0.1, 8, 0.01), {"power": 2.0}),
    ("piecewise_constant", ([3, 7], [1.0, 0.5, 0.1]), {}),
]


@pytest.mark.parametrize("name,args,kwargs", SCHEDULES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(SCHEDULES)])
def test_schedules_match_jax(name, args, kwargs):
    f_sched = getattr(opt, name)(*args, **kwargs)
    jitted = fx.jit(f_sched) if name != "constant" else f_sched
    with _jax_mode():
        j_sched = getattr(jopt, name)(*args, **kwargs)
        for i in [0, 1, 2, 3, 4, 5, 7, 8, 10, 20]:
            want = np.asarray(j_sched(i))
            np.testing.assert_allclose(np.asarray(f_sched(i)), want, rtol=1e-6, err_msg=str(i))
            np.testing.assert_allclose(np.asarray(jitted(fnp.asarray(i))), want, rtol=1e-6,
                                       err_msg=f"jit {i}")


def test_schedule_errors():
    with pytest.raises(ValueError, match="piecewise_constant: boundaries must be one shorter "
                                         "than values, got 2 boundaries and 2 values"):
        opt.piecewise_constant([1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"piecewise_constant: boundaries and values must be "
                                         r"sequences, got arrays of shapes \(\) and \(2,\)"):
        opt.piecewise_constant(1, [0.1, 0.2])
    with pytest.raises(TypeError, match=r"make_schedule: expected a scalar step size or a "
                                        r"schedule .* got list of shape \(2,\)"):
        opt.sgd([0.1, 0.2])
    assert opt.make_schedule(0.3)(100) == 0.3
    f = lambda i: 1.0 / (i + 1)
    assert opt.make_schedule(f) is f


def test_docstring_examples():
    assert run_doctests(opt) >= 6


# Names jax's module has only because it imports them for its own use (jax, its Array type,
# its safe_map/safe_zip/unzip2 helpers and the builtins it rebinds to them).
JAX_MODULE_IMPORTS = {"Array", "jax", "jnp", "map", "namedtuple", "partial", "safe_map",
                      "safe_zip", "unzip2", "zip"}


def test_covers_jax_optimizers():
    public = lambda m: {n for n in dir(m) if not n.startswith("_")}
    assert public(jopt) - public(opt) == JAX_MODULE_IMPORTS
    assert set(opt.__all__) <= public(opt)


# --- utilities and state packing -----------------------------------------------------------------


def test_l2_norm_and_clip_grads_match_jax():
    rng = np.random.default_rng(3)
    tree = _params(rng)
    with _jax_mode():
        want_norm = np.asarray(jopt.l2_norm(_as(jnp, tree)))
        for max_norm in [0.5, 1e3]:
            want = jopt.clip_grads(_as(jnp, tree), max_norm)
            got = opt.clip_grads(_as(fnp, tree), max_norm)
            _assert_states_close(got, want, f"clip_grads({max_norm})")
    np.testing.assert_allclose(np.asarray(opt.l2_norm(_as(fnp, tree))), want_norm, rtol=1e-6)
    clipped = opt.clip_grads(_as(fnp, tree), 0.5)
    np.testing.assert_allclose(np.asarray(opt.l2_norm(clipped)), 0.5, rtol=1e-5)


def test_unpack_and_pack_optimizer_state():
    init, update, get_params = opt.adam(0.1)
    params = {"a": fnp.ones(2), "b": [fnp.zeros((2, 2)), fnp.asarray(3.0)]}
    state = update(0, params, init(params))
    marked = opt.unpack_optimizer_state(state)
    with _jax_mode():
        jparams = {"a": jnp.ones(2), "b": [jnp.zeros((2, 2)), jnp.asarray(3.0)]}
        jinit, jupdate, _ = jopt.adam(0.1)
        jmarked = jopt.unpack_optimizer_state(jupdate(0, jparams, jinit(jparams)))
    leaves = tree_util.tree_leaves(marked)
    jleaves = jax.tree_util.tree_leaves(jmarked)
    assert [type(x).__name__ for x in leaves] == [type(x).__name__ for x in jleaves] == [
        "JoinPoint"] * 3
    for point, jpoint in zip(leaves, jleaves):
        (sub,), (jsub,) = point, jpoint  # a JoinPoint unpacks to its subtree
        _assert_states_close(sub, jsub, "unpacked state")
    repacked = opt.pack_optimizer_state(marked)
    assert repacked.tree_def == state.tree_def and repacked.subtree_defs == state.subtree_defs
    _assert_states_close(get_params(repacked), get_params(state), "repacked")
    with pytest.raises(TypeError, match="pack_optimizer_state: every leaf must be a JoinPoint "
                                        r".* got int"):
        opt.pack_optimizer_state({"a": 1})


def test_optimizer_state_is_a_pytree():
    init, _, _ = opt.momentum(0.1, 0.9)
    state = init({"w": fnp.ones(3), "b": fnp.zeros(2)})
    assert len(tree_util.tree_leaves(state)) == 4
    doubled = tree_util.tree_map(lambda x: 2 * x, state)
    assert isinstance(doubled, opt.OptimizerState) and doubled.tree_def == state.tree_def
    with _jax_mode():
        jinit, _, _ = jopt.momentum(0.1, 0.9)
        jstate = jinit({"w": jnp.ones(3), "b": jnp.zeros(2)})
    _assert_states_close(state, jstate, "init state")


def test_custom_optimizer_and_errors():
    @opt.optimizer
    def sign_sgd(step_size):
        step_size = opt.make_schedule(step_size)
        return (lambda x0: x0, lambda i, g, x: x - step_size(i) * fnp.sign(g), lambda x: x)

    init, update, get_params = sign_sgd(0.5)
    assert sign_sgd.__name__ == "sign_sgd"
    state = update(0, {"w": fnp.asarray([-2.0, 3.0])}, init({"w": fnp.zeros(2)}))
    np.testing.assert_array_equal(np.asarray(get_params(state)["w"]), [0.5, -0.5])
    with pytest.raises(TypeError, match=r"sign_sgd's update_fun: the gradient tree has "
                                        r"structure PyTreeDef\(\[\*\]\), but the parameters .* "
                                        r"PyTreeDef\(\{'w': \*\}\)"):
        update(0, [fnp.zeros(2)], state)
    with pytest.raises(TypeError, match="sign_sgd's get_params: expected the OptimizerState "
                                        "that init_fun returned, got dict"):
        get_params({"w": fnp.zeros(2)})

    @opt.optimizer
    def growing(step_size):
        return (lambda x0: (x0,), lambda i, g, s: (s[0], g), lambda s: s[0])

    init, update, _ = growing(0.1)
    with pytest.raises(TypeError, match=r"growing's update_fun: the per-leaf update returned a "
                                        r"state of structure PyTreeDef\(\(\*, \*\)\), but init "
                                        r"made PyTreeDef\(\(\*,\)\)"):
        update(0, fnp.ones(2), init(fnp.ones(2)))


# --- jax's MNIST example (examples/mnist_classifier.py) on the digits, imports changed only ------
# The program is jax's, run twice: after fx imports and after jax imports. Sized for the 1,437
# training digits (8x8 inputs, two Dense(256) layers, 200 steps at step size 0.01 instead of
# MNIST's Dense(1024), ten epochs at 0.001) and run in the default (32-bit) mode, as jax's
# example is.


@contextlib.contextmanager
def _default_mode():
    fx_mode = getattr(fx, "enable_x64", None)  # fx's mode switch (fx is 32-bit without it)
    with (fx_mode(False) if fx_mode else contextlib.nullcontext()), jax.enable_x64(False):
        yield


MNIST_EXAMPLE = """
init_random_params, predict = stax.serial(
    Dense(256), Relu,
    Dense(256), Relu,
    Dense(10), LogSoftmax)

def loss(params, batch):
  inputs, targets = batch
  preds = predict(params, inputs)
  return -jnp.mean(jnp.sum(preds * targets, axis=1))

def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)

rng = random.PRNGKey(0)
step_size = 0.01
num_steps = 200
batch_size = 128
momentum_mass = 0.9

num_train = train_images.shape[0]
num_complete_batches, leftover = divmod(num_train, batch_size)
num_batches = num_complete_batches + bool(leftover)

def data_stream():
  rng = npr.RandomState(0)
  while True:
    perm = rng.permutation(num_train)
    for i in range(num_batches):
      batch_idx = perm[i * batch_size:(i + 1) * batch_size]
      yield train_images[batch_idx], train_labels[batch_idx]
batches = data_stream()

opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)

@jit
def update(i, opt_state, batch):
  params = get_params(opt_state)
  return opt_update(i, grad(loss)(params, batch), opt_state)

_, init_params = init_random_params(rng, (-1, 8 * 8))
opt_state = opt_init(init_params)
itercount = itertools.count()
initial_acc = accuracy(get_params(opt_state), (test_images, test_labels))
for _ in range(num_steps):
  opt_state = update(next(itercount), opt_state, next(batches))
params = get_params(opt_state)
train_acc = accuracy(params, (train_images, train_labels))
test_acc = accuracy(params, (test_images, test_labels))
"""

FX_IMPORTS = """
import itertools
import numpy.random as npr
import fx.numpy as jnp
from fx import jit, grad, random
from fx.example_libraries import optimizers, stax
from fx.example_libraries.stax import Dense, Relu, LogSoftmax
"""

JAX_IMPORTS = FX_IMPORTS.replace("fx", "jax")


def _digits():
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[digits.target]
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    n_test = 360
    return dict(train_images=x[n_test:], train_labels=y[n_test:],
                test_images=x[:n_test], test_labels=y[:n_test])


def test_mnist_example_on_digits_with_only_imports_changed():
    data = _digits()
    with _default_mode():
        start = time.perf_counter()
        ns = dict(data)
        exec(FX_IMPORTS + MNIST_EXAMPLE, ns)
        seconds = time.perf_counter() - start
        jns = dict(data)
        exec(JAX_IMPORTS + MNIST_EXAMPLE, jns)
    initial, train, test = (float(ns[k]) for k in ("initial_acc", "train_acc", "test_acc"))
    assert initial < 0.3  # an untrained network guesses
    assert test > 0.9 and train > 0.9, (train, test)
    # Same seed, same batches, same initial weights (fx's stax draws as jax's): the runs agree.
    assert float(jns["initial_acc"]) == pytest.approx(initial, abs=1e-6)
    assert abs(float(jns["test_acc"]) - test) < 0.02, (float(jns["test_acc"]), test)
    assert seconds < 30, f"the fx run took {seconds:.1f} s"
