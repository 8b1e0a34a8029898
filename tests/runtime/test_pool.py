"""Per-call state pools, and the CUDA executor's hand-over of an arena between streams
(checked with a stand-in for CuPy that records what the executor asks of it)."""

from __future__ import annotations

import threading

import numpy as np

import fx
import fx.numpy as fnp
from fx.lowering.pipeline import lower
from fx.runtime.cuda import CudaExecutable
from fx.runtime.pool import StatePool


def test_pool_reuses_released_states_and_bounds_the_idle_ones():
    made = []
    pool = StatePool(lambda: made.append(object()) or made[-1], keep=2)
    a, b, c = pool.acquire(), pool.acquire(), pool.acquire()
    assert len({id(a), id(b), id(c)}) == 3 and pool.created == 3
    for s in (a, b, c):
        pool.release(s)
    assert pool.idle == 2  # the third is dropped
    assert pool.acquire() in (a, b) and pool.created == 3


def test_pool_never_hands_one_state_to_two_holders():
    pool = StatePool(object, keep=4)
    held, lock, errors = set(), threading.Lock(), []

    def work():
        for _ in range(2000):
            s = pool.acquire()
            with lock:
                if id(s) in held:
                    errors.append(s)
                held.add(id(s))
            with lock:
                held.discard(id(s))
            pool.release(s)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and pool.created <= 4


# --- the CUDA executor's streams, with a stand-in for CuPy ----------------------------------------


class _Event:
    def __init__(self, stream):
        self.stream = stream


class _Stream:
    def __init__(self, name):
        self.name, self.waited, self.recorded = name, [], []

    def record(self):
        e = _Event(self)
        self.recorded.append(e)
        return e

    def wait_event(self, e):
        self.waited.append(e)


class _FakeCuda:
    def __init__(self):
        self.local = threading.local()

    def Device(self):  # noqa: N802 (CuPy's spelling)
        return type("D", (), {"attributes": {"MultiProcessorCount": 4}})()

    def get_current_stream(self):
        return self.local.stream


class _FakeCupy:
    """Just what CudaExecutable touches: arrays are NumPy arrays, kernels record launches."""

    ndarray = np.ndarray
    uint8 = np.uint8

    def __init__(self):
        self.cuda = _FakeCuda()
        self.launches = []
        cp = self

        class RawModule:
            def __init__(self, code, options):
                self.code = code

            def get_function(self, name):
                def launch(grid, block, args, shared_mem=0):
                    cp.launches.append((name, cp.cuda.local.stream.name, args))
                return launch

        self.RawModule = RawModule

    empty = staticmethod(np.empty)
    asarray = staticmethod(np.asarray)
    ascontiguousarray = staticmethod(np.ascontiguousarray)


def _two_kernel_program():
    # tanh, then a row sum the next kernel reads from the arena: a temporary in between.
    f = lambda x: fnp.exp(fnp.sum(fnp.tanh(x), axis=1))[:, None] * x
    return lower(fx.make_jaxpr(f)(fnp.ones((8, 64))), "cuda")


def test_cuda_state_handed_to_another_stream_waits_for_its_last_use():
    low = _two_kernel_program()
    assert low.plan.arena_bytes > 0
    cp = _FakeCupy()
    exe = CudaExecutable(low, cp=cp)
    a, b = _Stream("a"), _Stream("b")
    x = np.ones((8, 64), np.float32)
    cp.cuda.local.stream = a
    exe([x])
    assert a.waited == [] and len(a.recorded) == 1
    cp.cuda.local.stream = b
    exe([x])
    # The one pooled arena moved from stream a to stream b: b waited for a's event first.
    assert b.waited == [a.recorded[0]] and exe.states.created == 1
    assert {s for _, s, _ in cp.launches} == {"a", "b"}


def test_concurrent_cuda_calls_launch_over_separate_arenas():
    low = _two_kernel_program()
    cp = _FakeCupy()
    exe = CudaExecutable(low, cp=cp)
    gate = threading.Barrier(2)
    run = exe._launch

    def gated(views):
        gate.wait()
        run(views)

    exe._launch = gated
    x = np.ones((8, 64), np.float32)

    def call(name):
        cp.cuda.local.stream = _Stream(name)
        exe([x])

    ts = [threading.Thread(target=call, args=(n,)) for n in "ab"]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert exe.states.created == 2
    arenas = {}
    for _, stream, args in cp.launches:
        for arg in args:
            if isinstance(arg, np.ndarray) and arg.base is not None and arg.base.dtype == np.uint8:
                arenas.setdefault(stream, set()).add(id(_root(arg)))
    assert set(arenas) == {"a", "b"} and not arenas["a"] & arenas["b"]


def _root(a):
    while a.base is not None:
        a = a.base
    return a
