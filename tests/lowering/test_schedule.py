"""Dependency scheduling: independent large steps run at the same time, with results identical
to running them in order."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fx
import fx.numpy as jnp
from fx.avals import ShapedArray
from fx.jaxpr import Var
from fx.lowering.kernels.cpu import conv_in_place
from fx.lowering.program import operations
from fx.lowering.program.operations import Buffer, HostCall, waves
from fx.runtime.executor import Executable


@pytest.fixture(autouse=True)
def _products_in_blas(monkeypatch):
    # The towers' products as BLAS library calls, the steps the scheduler runs side by side
    # (float32 products are otherwise generated tiles on the kernels' own threads).
    monkeypatch.setattr(conv_in_place, "TILED_PRODUCT_MAX_FLOPS", 0)


def _towers(x, a1, a2, b1, b2):
    return jnp.tanh(x @ a1) @ a2 + jnp.tanh(x @ b1) @ b2


def _args(n=256, k=5, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32) for _ in range(k)]


def test_independent_gemms_share_a_wave_and_show_in_as_text():
    low = fx.jit(_towers).lower(*_args())
    sched = low.program.schedule
    concurrent = [(here, there) for here, there in sched.waves if there]
    assert len(concurrent) == 2  # the first GEMMs of both towers, then the second ones
    for here, there in concurrent:
        kinds = {type(sched.calls[i]) for i in here + there}
        assert kinds == {operations.LibraryCall}
    text = low.as_text()
    assert "# concurrency:" in text and text.count(" || ") == 2


def test_concurrent_schedule_is_bitwise_the_serial_one(monkeypatch):
    args = _args()
    monkeypatch.setenv("FX_CONCURRENT", "1")
    concurrent = fx.jit(_towers)
    assert concurrent.lower(*args).compile()._exe.waves  # really scheduled concurrently
    monkeypatch.setenv("FX_CONCURRENT", "0")
    serial = fx.jit(lambda *a: _towers(*a))
    assert not serial.lower(*args).compile()._exe.waves
    want = np.asarray(serial(*args))
    got = np.asarray(concurrent(*args))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_allclose(got, np.asarray(_towers(*args)), rtol=1e-5, atol=1e-5)


def test_concurrent_programs_called_from_many_threads(monkeypatch):
    monkeypatch.setenv("FX_CONCURRENT", "1")
    f = fx.jit(_towers)
    inputs = [_args(seed=s) for s in range(6)]
    want = [np.asarray(f(*a)) for a in inputs]
    got: dict = {}

    def work(i):
        for _ in range(3):
            got.setdefault(i, []).append(np.asarray(f(*inputs[i])))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(6):
        for r in got[i]:
            assert np.array_equal(r.view(np.uint32), want[i].view(np.uint32))


def test_small_programs_and_programs_with_effects_stay_serial():
    small = fx.jit(_towers).lower(*_args(n=8))
    assert small.program.schedule.waves == ()

    def printing(*a):
        fx.debug.print("x {}", a[0][0, 0])
        return _towers(*a)

    low = fx.jit(printing).lower(*_args()).program
    assert low.schedule.waves == ()
    assert [type(op) for op in low.ops].count(operations.HostCallback) == 1
    assert "host_callback (step" in low.as_text()


def _buf(kind, slot, nbytes=64, offset=-1):
    return Buffer(Var(ShapedArray((nbytes // 4,), np.float32)), kind, slot, offset=offset)


def _op(reads, writes, cost=1e9):
    return HostCall(0, tuple(reads), tuple(writes), cost)


def test_waves_follow_reads_writes_and_overlapping_arena_ranges():
    x = _buf("input", 0)
    t1 = _buf("temp", 1, offset=0)
    t2 = _buf("temp", 2, offset=64)
    t3 = _buf("temp", 3, nbytes=128, offset=0)  # reuses t1's and t2's storage
    out = _buf("output", 4)
    calls = [
        _op([x], [t1]),  # 0
        _op([x], [t2]),  # 0: independent of the first
        _op([t1, t2], [out]),  # 1: reads both
        _op([x], [t3]),  # 2: overwrites what call 2 reads (write after read)
        _op([t3], [out]),  # 3: reads t3 (read after write), rewrites out
    ]
    assert waves(calls) == ((0, 1), (2,), (3,), (4,))


def test_a_donated_output_is_its_arguments_storage():
    x = _buf("input", 0)
    out = _buf("output", 1)
    out.donor = x
    other = _buf("output", 2)
    assert waves([_op([x], [other]), _op([], [out])]) == ((0,), (1,))


class _Waves:
    waves = (((0,), (1, 2)),)
    run_waves = Executable.run_waves


def test_an_error_in_a_concurrent_call_is_raised_after_the_wave_ends():
    done = []

    def call(i):
        if i == 1:
            raise ValueError("step 1 failed")
        done.append(i)

    with pytest.raises(ValueError, match="step 1 failed"):
        _Waves().run_waves(call)
    assert sorted(done) == [0, 2]


def test_cpu_concurrency_by_default_only_where_steps_run_on_one_thread(monkeypatch):
    from fx.runtime import pool

    monkeypatch.delenv("FX_CONCURRENT", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert pool.concurrency_enabled(threaded_libraries=True)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    assert not pool.concurrency_enabled(threaded_libraries=True)  # BLAS uses every core
    assert pool.concurrency_enabled(threaded_libraries=False)  # streams on a GPU
    monkeypatch.setenv("FX_CONCURRENT", "1")
    assert pool.concurrency_enabled(threaded_libraries=True)
    monkeypatch.setenv("FX_CONCURRENT", "0")
    assert not pool.concurrency_enabled(threaded_libraries=False)
