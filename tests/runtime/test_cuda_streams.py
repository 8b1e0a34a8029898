"""The CUDA executor's dependency schedule, without a GPU: a stand-in for CuPy records every
launch, library call, event and stream wait, so the test can check that independent steps
go to side streams forked from and joined back to the calling stream. (What the kernels
compute is checked on a GPU by test_cuda.py; here launches only record.)"""

from __future__ import annotations

import contextlib

import numpy as np

import fx
import fx.numpy as jnp
from fx.lowering.pipeline import lower
from fx.runtime.cuda import CudaExecutable


class _Event:
    def __init__(self, stream):
        self.stream = stream


class _Stream:
    def __init__(self, cuda, name):
        self.cuda, self.name = cuda, name

    def record(self):
        event = _Event(self.name)
        self.cuda.log.append(("record", self.name, event))
        return event

    def wait_event(self, event):
        self.cuda.log.append(("wait", self.name, event))

    def synchronize(self):
        pass

    def __enter__(self):
        self.cuda.current.append(self)
        return self

    def __exit__(self, *exc):
        self.cuda.current.pop()


class _Cuda:
    def __init__(self):
        self.log: list = []
        self.current = [_Stream(self, "main")]
        self.streams = 0

    def get_current_stream(self):
        return self.current[-1]

    def Stream(self, non_blocking=False):  # noqa: N802  (CuPy's name)
        self.streams += 1
        return _Stream(self, f"side{self.streams}")

    class Device:
        attributes = {"MultiProcessorCount": 4}


class _Module:
    def __init__(self, cuda):
        self.cuda = cuda

    def get_function(self, name):
        def launch(grid, block, args, shared_mem=0):
            self.cuda.log.append(("launch", self.cuda.get_current_stream().name, name))

        return launch


class _FakeCupy:
    """NumPy arrays as device arrays; launches, events and streams recorded."""

    ndarray = np.ndarray
    uint8 = np.uint8

    def __init__(self):
        self.cuda = _Cuda()
        self.asarray = np.asarray
        self.ascontiguousarray = np.ascontiguousarray

    def empty(self, shape, dtype=np.float32):
        return np.zeros(shape, dtype)

    def RawModule(self, code, options):  # noqa: N802
        return _Module(self.cuda)


def _towers(x, a1, a2, b1, b2):
    return jnp.tanh(x @ a1) @ a2 + jnp.tanh(x @ b1) @ b2


def test_independent_steps_run_on_side_streams_forked_and_joined():
    cp = _FakeCupy()
    a = np.ones((1024, 1024), np.float32)
    low = lower(fx.make_jaxpr(_towers)(a, a, a, a, a), "cuda")
    assert "run on side streams" in low.as_text()
    exe = CudaExecutable(low, cp=cp)
    assert exe.waves
    gemm_stream = []
    for t, call in enumerate(low.schedule.calls):  # record which stream runs each library call
        if not call.native:
            i = next(i for i, g in enumerate(exe.groups) if g and g[0][1] is call.run)

            def recorded(views, run=call.run, t=t):
                gemm_stream.append((t, cp.cuda.get_current_stream().name))
                with contextlib.suppress(Exception):
                    run(views)

            exe.groups[i] = [("py", recorded, None, None, None)]
    exe([a] * 5)
    log = cp.cuda.log
    handed = {i for _, there in exe.waves for i in there}
    assert handed and all(dict(gemm_stream)[t] != "main" for t in handed)
    assert all(name == "main" for t, name in gemm_stream if t not in handed)
    # Each side stream waits for an event the main stream recorded before it, and the main
    # stream waits for the side stream's event before the next wave's first call.
    for k, entry in enumerate(log):
        if entry[0] == "wait" and entry[1] != "main":
            fork = entry[2]
            assert fork.stream == "main" and ("record", "main", fork) in log[:k]
    joins = [e for e in log if e[0] == "wait" and e[1] == "main" and e[2].stream != "main"]
    assert len(joins) == len(handed)
    # The final kernel (the sum of both towers) launches on the main stream after the joins.
    last_launch = max(k for k, e in enumerate(log) if e[0] == "launch")
    assert log[last_launch][1] == "main"
    assert max(log.index(j) for j in joins) < last_launch
