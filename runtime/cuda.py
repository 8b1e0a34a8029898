"""The CUDA executor: a lowered program run with CuPy.

Every generated kernel of one program lives in one ``cupy.RawModule`` (compiled by NVRTC once;
CuPy caches the binary on disk and this module keeps the executable per program). Each call
checks a state out of a pool (one arena allocation holding every temporary as a view at its
planned offset, 256-byte aligned), so concurrent calls never share temporaries; arguments and
outputs are CuPy arrays. Kernels launch on the current stream with a
launch configuration chosen by :func:`launch_config`; library steps (cuBLAS matmul) run through
CuPy; host steps copy their inputs to the host, run NumPy, and copy back — those copies are
explicit steps of the lowered program. ``scan``/``while``/``cond`` whose bodies are all
kernels run on the device (``device_loops``: launch sequences over the loop's scratch area; a
while reads its predicate back once per iteration). Small launch-bound programs, scans
included, can be replayed as one CUDA graph (``FX_CUDA_GRAPHS=1``).

Everything that does not need a device (launch configuration, argument packing) is a pure
function tested on CPU.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass

import numpy as np

from fx.runtime import device_loops
from fx.runtime.executor import Executable
from fx.runtime.platforms import cupy_module

# NVRTC options; CuPy adds -ftz=true for float32 speed (denormals flush to zero on GPU, a
# documented difference from NumPy on CPU). No contraction of a*b+c into FMAs behind our back:
# results must not depend on the compiler (kernels that want an FMA call fmaf).
NVRTC_OPTIONS = ("--std=c++17", "-diag-suppress=177", "--fmad=false")
THREADS = 256
MAX_BLOCKS_PER_SM = 32


@dataclass(frozen=True)
class LaunchConfig:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int = 0


def launch_config(iterations: int, lanes: int = 1, sm_count: int = 132,
                  threads: int = THREADS) -> LaunchConfig:
    """Grid and block for a kernel whose parallel loop has ``iterations`` iterations, each run
    by ``lanes`` cooperating threads. Kernels use grid-stride loops, so the grid is capped at
    a few waves of the device (enough to fill it, no more)."""
    if iterations <= 0:
        return LaunchConfig((1, 1, 1), (threads, 1, 1))
    per_block = max(threads // lanes, 1)
    blocks = math.ceil(iterations / per_block)
    blocks = max(1, min(blocks, sm_count * MAX_BLOCKS_PER_SM))
    return LaunchConfig((blocks, 1, 1), (threads, 1, 1))


def kernel_iterations(kernel) -> tuple[int, int]:
    """The parallel loop's iterations (a vector loop runs ``vector`` of them per thread) and
    lane count of a generated kernel."""
    for stmt in getattr(kernel, "body", ()):
        if getattr(stmt, "parallel", False):
            return -(-stmt.extent // stmt.vector), stmt.lanes
    return 1, 1


def pack_args(params, buffers: dict) -> tuple:
    """Kernel arguments in parameter order: device arrays for buffers, exact NumPy scalar types
    for scalars (RawKernel passes Python ints as 64-bit, so types must be explicit)."""
    out = []
    for p in params:
        value = buffers[p.name]
        if np.isscalar(value) or (isinstance(value, np.ndarray) and value.ndim == 0):
            out.append(np.asarray(value, dtype=p.dtype)[()])
        else:
            out.append(value)
    return tuple(out)


class _CudaMemory:
    """The memory interface ``device_loops`` runs a loop with: views of the loop's scratch
    area, copies and launches queued on the current stream."""

    def __init__(self, exe: CudaExecutable, scratch):
        self.exe, self.cp, self.base = exe, exe.cp, scratch
        self.stream = exe.cp.cuda.get_current_stream()

    def scratch(self, offset: int, aval):
        shape, dtype = aval
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if not n:
            return self.cp.empty(shape, dtype)
        return self.base[offset:offset + n].view(dtype).reshape(shape)

    def copy(self, dst, src, nbytes: int, dst_offset: int = 0, src_offset: int = 0) -> None:
        if nbytes:
            rt = self.cp.cuda.runtime
            rt.memcpyAsync(dst.data.ptr + dst_offset, src.data.ptr + src_offset, nbytes,
                           rt.memcpyDeviceToDevice, self.stream.ptr)

    def read(self, view):
        return view.get()[()]

    def constant(self, value, aval):
        shape, dtype = aval
        return self.cp.asarray(np.asarray(value, dtype).reshape(shape))

    def launch(self, name: str, kernel, views: list) -> None:
        fn, cfg = self.exe.loop_kernels[name]
        bufs = {p.name: v for p, v in zip(kernel.params, views)}
        fn(cfg.grid, cfg.block, pack_args(kernel.params, bufs), shared_mem=cfg.shared_mem)


class _CudaState:
    """What one call writes on the device: the arena of temporaries (its views by variable),
    and the event recorded on the stream of the last call that used it. A call on another
    stream waits for that event before its kernels touch the arena, so handing the state on
    never needs a host synchronization."""

    __slots__ = ("arena", "views", "ready", "cp", "streams")

    def __init__(self, exe: CudaExecutable):
        self.cp, self.streams = exe.cp, []
        self.arena = exe.cp.empty(max(exe.arena_bytes, 1), dtype=exe.cp.uint8)
        self.views = dict(exe.const_views)
        for t in exe.temps:
            view = self.arena[t.offset:t.offset + t.aval.nbytes].view(t.aval.dtype)
            self.views[t.var] = view.reshape(t.aval.shape)
        self.ready = None

    def side_stream(self, j: int):
        """The state's ``j``-th stream for concurrent steps (made on first use)."""
        while len(self.streams) <= j:
            self.streams.append(self.cp.cuda.Stream(non_blocking=True))
        return self.streams[j]


class CudaExecutable(Executable):
    """A compiled program on the GPU. Immutable once built: each call checks a
    :class:`_CudaState` out of a pool and launches on the calling thread's current stream, so
    one executable can be called from many threads (and streams) at once."""

    def __init__(self, low, cp=None):
        cp = cp if cp is not None else cupy_module()
        if cp is None:
            raise RuntimeError(
                "fx: backend 'cuda' needs CuPy and an NVIDIA GPU; install fx[cuda] or use "
                "backend='cpu'"
            )
        self.cp = cp
        super().__init__(low)

    def device_constant(self, host: np.ndarray):
        return self.cp.asarray(host)

    def load(self, low) -> None:
        cp = self.cp
        self.module = cp.RawModule(code=low.source, options=NVRTC_OPTIONS) if low.source else None
        sm = cp.cuda.Device().attributes.get("MultiProcessorCount", 132)
        self.groups = []  # per schedule call, what it runs (a segment: its launches)
        self.loop_kernels = {}  # device loops' kernels: name -> (function, launch config)
        for call in low.schedule.calls:
            group = []
            self.groups.append(group)
            if call.device:
                group.append(("loop", call, None, None, None))
                for k in call.kernels:
                    self.loop_kernels[k.name] = (self.module.get_function(k.name),
                                                 launch_config(*kernel_iterations(k),
                                                               sm_count=sm))
                continue
            if not call.native:
                group.append(("py", call.run, None, None, None))
                continue
            for launch in call.ops:  # a segment: its launches in order
                k = launch.kernel
                if k.launch is not None:  # a whole-source kernel with its own shape
                    cfg = LaunchConfig(*k.launch)
                else:
                    cfg = launch_config(*kernel_iterations(k), sm_count=sm)
                names = [p.name for p in k.params]
                variables = [b.var for b in launch.args]
                group.append(("kernel", self.module.get_function(launch.callee), cfg,
                              list(zip(names, variables)), k.params))
        self.calls = [c for group in self.groups for c in group]
        # Kernels and scans (which never read back) can be captured: the graph then holds
        # the whole loop, every iteration's copies and launches.
        self.use_graph = os.environ.get("FX_CUDA_GRAPHS") == "1" and all(
            c[0] == "kernel" or (c[0] == "loop" and device_loops.capturable(c[1]))
            for c in self.calls)
        self._graph = None  # (graph, stream, static buffers, views), captured on first use
        self._graph_lock = threading.Lock()

    def new_state(self) -> _CudaState:
        return _CudaState(self)

    # Independent large steps run on several streams (see _launch_waves).
    concurrent = True

    def _launch(self, views, calls=None) -> None:
        for kind, fn, cfg, binding, params in self.calls if calls is None else calls:
            if kind == "kernel":
                bufs = {name: views[v] for name, v in binding}
                fn(cfg.grid, cfg.block, pack_args(params, bufs), shared_mem=cfg.shared_mem)
            elif kind == "loop":  # fn: the device loop's operation
                device_loops.run(fn, _CudaMemory(self, views[fn.scratch.var]), views)
            else:
                fn(views)

    def _launch_waves(self, views, state: _CudaState) -> None:
        """The dependency schedule on streams: in each wave the calls handed off run on the
        state's side streams, each waiting for an event recorded on the calling stream where
        the wave starts; the calling stream runs the rest, then waits for the side streams'
        events, so the next wave sees everything."""
        main = self.cp.cuda.get_current_stream()
        for here, there in self.waves:
            joins = []
            if there:
                fork = main.record()
                for j, i in enumerate(there):
                    side = state.side_stream(j)
                    side.wait_event(fork)
                    with side:
                        self._launch(views, self.groups[i])
                    joins.append(side.record())
            for i in here:
                self._launch(views, self.groups[i])
            for event in joins:
                main.wait_event(event)

    def _arguments(self, args: list) -> dict:
        cp = self.cp
        views = {}
        for a_slot in self.inputs:
            a, dtype = args[a_slot.position], a_slot.aval.dtype
            if not isinstance(a, cp.ndarray):
                a = cp.asarray(np.asarray(a))  # explicit: jit's inserted host-to-device copy
            if a.dtype != dtype or not a.flags.c_contiguous:
                a = cp.ascontiguousarray(a, dtype=dtype)
            views[a_slot.var] = a
        return views

    def __call__(self, args: list) -> list:
        if self.use_graph:
            return self._replay(self._arguments(args))
        return super().__call__(args)

    def run(self, state: _CudaState, args: list) -> list:
        cp = self.cp
        stream = cp.cuda.get_current_stream()
        try:
            if state.ready is not None:
                stream.wait_event(state.ready)  # the arena's previous user, maybe another stream
            views = dict(state.views)
            views.update(self._arguments(args))
            for o in self.outputs:
                views[o.var] = cp.empty(o.aval.shape, o.aval.dtype)
            if self.waves:
                self._launch_waves(views, state)
            else:
                self._launch(views)
        finally:
            state.ready = stream.record()  # also after a failed launch: some may be queued
        return self._results(views)

    def _results(self, views) -> list:
        cp = self.cp
        return [cp.asarray(src) if kind == "literal" else views[src]
                for kind, src in self.out_sources]

    def _replay(self, args: dict) -> list:
        """Run the kernel list as one CUDA graph over fixed argument/output buffers (captured
        on first use): arguments are copied in, outputs copied out. The graph's buffers are
        one set, so replays are serialized (each ends synchronized)."""
        cp = self.cp
        with self._graph_lock:
            if self._graph is None:
                static = {a.var: cp.empty(a.aval.shape, a.aval.dtype) for a in self.inputs}
                static.update({o.var: cp.empty(o.aval.shape, o.aval.dtype)
                               for o in self.outputs})
                stream = cp.cuda.Stream(non_blocking=True)
                views = dict(_CudaState(self).views, **static)
                with stream:
                    stream.begin_capture()
                    self._launch(views)
                    graph = stream.end_capture()
                self._graph = (graph, stream, static, views)
            graph, stream, static, views = self._graph
            cp.cuda.get_current_stream().synchronize()  # the arguments are ready
            for a in self.inputs:
                cp.copyto(static[a.var], args[a.var])
            with stream:
                graph.launch(stream)
            stream.synchronize()
            return [r.copy() for r in self._results(views)]
