"""One jitted function called from many threads at once: every result is checked bitwise
against the same executable run alone, and two threads racing on a new signature trace and
compile it once.

The stress tests are bounded (a few threads, a few dozen calls each) so that they run in
seconds; a barrier starts the threads together so that their calls really interleave.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx.lowering import pipeline
from fx.runtime import cc

pytestmark = pytest.mark.skipif(cc.compiler() is None, reason="needs a C compiler")

THREADS = 4


def run_threads(work, threads: int = THREADS) -> None:
    """Run ``work(t)`` on ``threads`` threads started together; re-raise the first error."""
    barrier = threading.Barrier(threads)
    errors = []

    def main(t):
        try:
            barrier.wait()
            work(t)
        except BaseException as e:  # noqa: B036 (reported to the test below)
            errors.append(e)

    pool = [threading.Thread(target=main, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    if errors:
        raise errors[0]


def bits(x) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(x))
    return a.view(np.uint8) if a.dtype.itemsize else a


def assert_same_bits(got, want) -> None:
    for g, w in zip(fx.tree_util.tree_leaves(got), fx.tree_util.tree_leaves(want)):
        assert np.asarray(g).shape == np.asarray(w).shape
        assert np.array_equal(bits(g), bits(w)), "a concurrent call returned other bits"


def stress(f, inputs: list, calls: int = 40) -> None:
    """Call ``f`` on every input from several threads (each thread in its own order) and
    compare every result with the one computed before the threads started."""
    want = [f(*args) for args in inputs]
    counts = [0] * THREADS

    def work(t):
        for i in range(calls):
            k = (t * 7 + i) % len(inputs)
            assert_same_bits(f(*inputs[k]), want[k])
            counts[t] += 1

    run_threads(work)
    assert counts == [calls] * THREADS


def _rng():
    return np.random.default_rng(0)


def test_matmul_and_elementwise_from_threads_with_two_shapes():
    f = fx.jit(lambda a: fnp.tanh(a) @ a.T + 1.0)
    r = _rng()
    inputs = [(r.standard_normal(s).astype(np.float32),) for s in [(48, 48), (32, 16)] * 3]
    stress(f, inputs)
    stress(f, [(fnp.asarray(a),) for (a,) in inputs])  # the fx-array fast path too


def test_large_fused_kernels_from_threads():
    # Above the OpenMP threshold: each call runs a parallel region of its own.
    f = fx.jit(lambda x, y: fnp.exp(-x * x) * y + fnp.maximum(x, y).sum(axis=1, keepdims=True))
    r = _rng()
    inputs = [(r.standard_normal((256, 300)).astype(np.float32),
               r.standard_normal((256, 300)).astype(np.float32)) for _ in range(3)]
    stress(f, inputs, calls=10)


def _mlp_loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = fnp.tanh(h @ w + b)
    w, b = params[-1]
    return fnp.mean((h @ w + b - y) ** 2)


def test_jit_of_grad_from_threads():
    r = _rng()
    sizes = [(8, 16), (16, 16), (16, 1)]
    g = fx.jit(fx.grad(_mlp_loss))
    inputs = []
    for _ in range(4):
        params = [(r.standard_normal(s).astype(np.float32) * 0.3,
                   r.standard_normal(s[1]).astype(np.float32)) for s in sizes]
        inputs.append((params, r.standard_normal((10, 8)).astype(np.float32),
                       r.standard_normal((10, 1)).astype(np.float32)))
    stress(g, inputs, calls=20)


def test_vmap_inside_jit_from_threads():
    f = fx.jit(fx.vmap(lambda x, w: fnp.sum(fnp.sin(x @ w)), in_axes=(0, None)))
    r = _rng()
    inputs = [(r.standard_normal((6, 5, 4)).astype(np.float32),
               r.standard_normal((4, 3)).astype(np.float32)) for _ in range(4)]
    stress(f, inputs)


def test_compiled_loop_from_threads():
    # Elementwise body: the loop is one C function with its carries in the call's arena.
    def f(x):
        return fx.lax.fori_loop(0, 50, lambda i, c: fnp.roll(c, 1) * 0.5 + fnp.sin(c), x)

    jf = fx.jit(f)
    r = _rng()
    inputs = [(r.standard_normal(64).astype(np.float32),) for _ in range(4)]
    assert "compiled loop" in jf.lower(*inputs[0]).as_text()
    stress(jf, inputs)


def test_grad_through_host_loop_from_threads():
    # A matmul in the body: the loop runs in Python over the body's executable (the case that
    # aborted the process when calls shared the body's arena).
    def loss(w, x):
        h = fx.lax.fori_loop(0, 5, lambda i, h: fnp.tanh(h @ w) + 0.1 * h, x)
        return fnp.sum(h ** 2)

    g = fx.jit(fx.grad(loss))
    r = _rng()
    x = r.standard_normal((8, 16)).astype(np.float32)
    inputs = [(r.standard_normal((16, 16)).astype(np.float32) * 0.3, x) for _ in range(4)]
    stress(g, inputs, calls=20)


def test_scan_and_cond_from_threads():
    def f(xs, c0):
        def body(c, x):
            c = fx.lax.cond(x > 0, lambda c: c * x, lambda c: c - x, c)
            return c, c + 1.0

        return fx.lax.scan(body, c0, xs)

    jf = fx.jit(f)
    r = _rng()
    inputs = [(r.standard_normal(30).astype(np.float32), np.float32(r.standard_normal()))
              for _ in range(4)]
    stress(jf, inputs)


def test_donated_arguments_from_threads():
    # The sorted product is a temporary in the arena, read by the update written into w.
    step = fx.jit(lambda w, g: w - 0.5 * fnp.sort(g * w), donate_argnums=0)
    r = _rng()
    gs = [r.standard_normal(1000).astype(np.float32) for _ in range(THREADS)]
    w0 = r.standard_normal(1000).astype(np.float32)
    want = []
    for g in gs:
        w, rows = fnp.asarray(w0), []
        for _ in range(20):
            w = step(w, fnp.asarray(g))
            rows.append(np.asarray(w).copy())
        want.append(rows)

    def work(t):
        w = fnp.asarray(w0)
        for i in range(20):
            new = step(w, fnp.asarray(gs[t]))
            assert w.is_deleted()
            assert np.array_equal(bits(new), bits(want[t][i]))
            w = new

    run_threads(work)


def test_aot_compiled_from_threads():
    r = _rng()
    x = r.standard_normal((20, 20)).astype(np.float32)
    compiled = fx.jit(lambda x: fnp.cumsum(fnp.tanh(x) * 2, axis=0)).lower(x).compile()
    stress(compiled, [(r.standard_normal((20, 20)).astype(np.float32),) for _ in range(4)])


def test_threads_racing_on_a_first_call_trace_and_compile_once():
    traced = []
    lowered = []

    def f(x):
        traced.append(1)
        return fnp.tanh(x) * 3.0 + 1.0

    def observe(low):
        if low.name == "f":
            lowered.append(low)

    jf = fx.jit(f)
    pipeline.observers.append(observe)
    try:
        xs = [np.full(16, t, np.float32) for t in range(THREADS)]
        outs = [None] * THREADS

        def work(t):
            outs[t] = np.asarray(jf(xs[t]))

        run_threads(work)
    finally:
        pipeline.observers.remove(observe)
    assert len(traced) == 1 and len(lowered) == 1
    assert jf.cache_size() == 1
    for t in range(THREADS):
        assert_same_bits(outs[t], np.tanh(xs[t]) * np.float32(3) + np.float32(1))


def test_threads_racing_on_two_new_signatures_compile_each_once():
    traced = []

    def f(x):
        traced.append(x.shape)
        return x * 2.0

    jf = fx.jit(f)
    shapes = [(3,), (5,)]

    def work(t):
        x = np.ones(shapes[t % 2], np.float32)
        assert_same_bits(jf(x), x * 2)

    run_threads(work)
    assert sorted(traced) == sorted(shapes) and jf.cache_size() == 2


def test_a_failed_trace_is_retried_not_cached():
    calls = []

    def f(x):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("first trace fails")
        return x + 1.0

    jf = fx.jit(f)
    with pytest.raises(ValueError, match="first trace"):
        jf(np.ones(2, np.float32))
    assert_same_bits(jf(np.ones(2, np.float32)), np.full(2, 2, np.float32))


def test_kernels_run_without_the_gil():
    # ctypes.CDLL functions release the GIL around the call (PyDLL's would hold it): the
    # threads' kernels really overlap.
    jf = fx.jit(lambda x: fnp.sin(x) + 1.0)
    exe = jf.lower(np.ones(8, np.float32)).compile()._exe
    assert type(exe.lib) is ctypes.CDLL
    for is_c, fn in exe.calls:
        if is_c:
            assert not fn._flags_ & ctypes._FUNCFLAG_PYTHONAPI


def test_concurrent_calls_use_separate_states_and_reuse_them():
    x = np.arange(8, dtype=np.float32)
    compiled = fx.jit(lambda x: fnp.tanh(x) * 2.0 + x).lower(x).compile()
    exe = compiled._exe
    gate = threading.Barrier(THREADS)
    seen = []
    run = exe.run

    def gated_run(state, args):  # every call waits inside the executable for the others
        seen.append(state)
        gate.wait()
        return run(state, args)

    exe.run = gated_run
    try:
        run_threads(lambda t: compiled(x))
        assert len({id(s) for s in seen}) == THREADS  # four calls at once, four arenas
        assert exe.states.created == THREADS and exe.states.idle == THREADS
        seen.clear()
        run_threads(lambda t: compiled(x))  # the next four reuse them
        assert exe.states.created == THREADS
        assert len({id(s.arena) for s in seen}) == THREADS
    finally:
        del exe.run


def test_first_run_checks_run_once_before_any_step_even_from_threads():
    # Compilation.first_run (a native collective's cross-process agreement): run once, under a
    # lock, before the first call's steps; a check that raises fails that call and runs again
    # in the next one.
    x = np.arange(8, dtype=np.float32)
    f = lambda x: fnp.tanh(x) * 2.0 + x  # noqa: E731
    want = fx.jit(f)(x)  # the same kernel, without the check
    lowered = fx.jit(f).lower(x)
    ran, fail = [], [True]
    gate = threading.Barrier(THREADS)

    def check():
        ran.append(threading.get_ident())
        if fail[0]:
            fail[0] = False
            raise RuntimeError("the other processes disagree")

    lowered.program.first_run = (check,)
    compiled = lowered.compile()
    exe = compiled._exe
    run = exe.run

    def counted_run(state, args):
        assert len(ran) == 2  # the failed check and the one that passed, both before
        return run(state, args)

    exe.run = counted_run
    try:
        with pytest.raises(RuntimeError, match="disagree"):
            compiled(x)
        assert len(ran) == 1

        def call(t):
            gate.wait()
            assert_same_bits(compiled(x), want)

        run_threads(call)
        assert len(ran) == 2
    finally:
        del exe.run
