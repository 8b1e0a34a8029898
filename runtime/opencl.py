"""The OpenCL executor: a lowered program run with pyopencl (tested on Debian's PoCL CPU runtime;
nothing in it is specific to PoCL, so AMD's and Intel's GPU drivers would run it too).

Every generated kernel of one program lives in one ``pyopencl.Program``, built once per source
and context in this process (pyopencl and PoCL also cache the binaries on disk). Memory is the
device's, as on a GPU: each call checks a state out of the base class's pool — its command
queue, one arena ``cl.Buffer`` holding every temporary as a sub-buffer at its planned offset
(offsets are multiples of the device's base-address alignment), and its own ``cl.Kernel``
objects (setting a kernel's arguments is not thread-safe, so kernels are never shared between
states). Arguments are host arrays copied to the device; results are copied back and returned
as NumPy arrays, so jit's results are ordinary host fx arrays (fx arrays do not live on OpenCL
devices: that would need a device-resident array type in ``fx.devices``).

Kernels are grid-stride loops (see ``lowering.render.opencl_dialect``): any global size is correct,
and :func:`global_size` picks a fixed work-group size (PoCL compiles one work-group function per
local size; capped at the device's maximum) and enough groups to fill the device. NumPy steps
(library calls, op-by-op groups, loops over compiled bodies) run on the host: their inputs are
copied to host memory and their outputs back (the program IR's ``copies``), as on a GPU target.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from fx.runtime import device_loops, platforms
from fx.runtime.executor import Executable

# No -cl-mad-enable / -cl-fast-relaxed-math: results must not depend on the compiler (the
# dialect also turns FP_CONTRACT off); division and sqrt correctly rounded, as in C and NumPy.
BUILD_OPTIONS = ("-cl-std=CL1.2", "-cl-fp32-correctly-rounded-divide-sqrt")
LOCAL_SIZE = 64
GROUPS_PER_UNIT = 16  # work-groups per compute unit at most (grid-stride loops do the rest)


def global_size(iterations: int, compute_units: int, local: int = LOCAL_SIZE) -> int:
    """The global size of a kernel whose parallel loop has ``iterations`` iterations: whole
    work-groups of ``local`` items, enough for one iteration each, capped at a few groups per
    compute unit (each item then runs several iterations)."""
    groups = -(-max(iterations, 1) // local)
    return local * max(1, min(groups, compute_units * GROUPS_PER_UNIT))


def parallel_extent(kernel) -> int:
    """Iterations of a generated kernel's parallel loop (1 for a kernel without one)."""
    return next((s.extent for s in getattr(kernel, "body", ()) if getattr(s, "parallel", False)),
                1)


def _pyopencl():
    if not platforms.OPENCL.available():
        raise RuntimeError(f"fx: backend 'opencl' needs pyopencl and an OpenCL device; "
                           f"{platforms.OPENCL.missing}")
    import pyopencl

    return pyopencl


_lock = threading.Lock()
_contexts: dict = {}  # device -> its context (shared by every executable on it)
# (context, source) -> the built program, the most recently used last (a bounded cache: jit
# keeps its executables, this only spares rebuilding a source lowered again).
_programs: OrderedDict = OrderedDict()
PROGRAM_CACHE_SIZE = 256


def _context(cl, device):
    with _lock:
        if device not in _contexts:
            _contexts[device] = cl.Context([device])
        return _contexts[device]


def _program(cl, context, source: str):
    """The built program for ``source``, once per process and context; a build error shows
    the compiler's log."""
    key = (context.int_ptr, source)
    with _lock:
        prg = _programs.get(key)
        if prg is not None:
            _programs.move_to_end(key)
            return prg
    prg = cl.Program(context, source).build(options=list(BUILD_OPTIONS))  # (outside the lock)
    with _lock:
        prg = _programs.setdefault(key, prg)
        while len(_programs) > PROGRAM_CACHE_SIZE:
            _programs.popitem(last=False)
    return prg


class DeviceArray:
    """One value's storage on the device: a ``cl.Buffer`` (None when empty), its shape and
    dtype, and the queue that orders its use. ``get``/``set`` are the blocking copies
    ``lowering.kernels.cpu.library.host_step`` makes around a host step."""

    __slots__ = ("buffer", "shape", "dtype", "queue")

    def __init__(self, buffer, shape, dtype, queue):
        self.buffer, self.shape, self.dtype, self.queue = buffer, tuple(shape), dtype, queue

    def get(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        if out.nbytes:  # bytes, not elements: the buffer protocol has no bfloat16
            _cl().enqueue_copy(self.queue, out.reshape(-1).view(np.uint8), self.buffer)
        return out

    def set(self, host) -> None:
        host = np.asarray(host, self.dtype, order="C").reshape(self.shape)
        if host.nbytes:
            _cl().enqueue_copy(self.queue, self.buffer, host.reshape(-1).view(np.uint8))


def _cl():
    import pyopencl

    return pyopencl


def _upload(cl, context, queue, host: np.ndarray) -> DeviceArray:
    buf = None
    if host.nbytes:
        buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, host.nbytes)
        cl.enqueue_copy(queue, buf, host.reshape(-1).view(np.uint8))
    return DeviceArray(buf, host.shape, host.dtype, queue)


@dataclass(frozen=True)
class _Launch:
    kernel: str
    global_size: tuple[int]
    variables: tuple  # bound to the kernel's parameters, in order


def _operations(low) -> list:
    """The program's schedule (``lowering.program.operations``) in order: ``(kernel, the values
    bound to its parameters)`` per launch of a segment, the ``run(views)`` of every other operation
    (library and host calls, loops over compiled bodies: none is native on this backend;
    the pipeline wraps each in its copies to the host and back, as the program IR shows)."""
    ops = []
    for call in low.schedule.calls:
        if call.device:
            ops.append(_Loop(call))
        elif call.native:
            ops += [(op.kernel, [b.var for b in op.args]) for op in call.ops]
        else:
            assert call.copies, call  # NumPy cannot read this platform's buffers
            ops.append(call.run)
    return ops


@dataclass(frozen=True)
class _Loop:
    op: object  # a operations.ControlFlow the executor runs on the device (device_loops)


class _OpenCLMemory:
    """The memory interface ``device_loops`` runs a loop with: sub-buffers of the state's
    arena at the loop's scratch offsets (planned at the device's base-address alignment),
    copies and launches on the state's in-order queue."""

    def __init__(self, exe: OpenCLExecutable, state: _OpenCLState, op):
        self.exe, self.state, self.base = exe, state, op.scratch.offset

    def scratch(self, offset: int, aval) -> DeviceArray:
        shape, dtype = aval
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        buf = self.state.arena.get_sub_region(self.base + offset, n) if n else None
        return DeviceArray(buf, shape, np.dtype(dtype), self.state.queue)

    def copy(self, dst, src, nbytes: int, dst_offset: int = 0, src_offset: int = 0) -> None:
        if nbytes:
            self.exe.cl.enqueue_copy(self.state.queue, dst.buffer, src.buffer,
                                     byte_count=nbytes, src_offset=src_offset,
                                     dst_offset=dst_offset)

    def read(self, view: DeviceArray):
        return view.get()[()]

    def constant(self, value, aval) -> DeviceArray:
        shape, dtype = aval
        host = np.asarray(value, dtype).reshape(shape)
        return _upload(self.exe.cl, self.exe.context, self.state.queue, host)

    def launch(self, name: str, kernel, views: list) -> None:
        k = self.state.kernels[name]
        k.set_args(*[v.buffer for v in views])
        self.exe.cl.enqueue_nd_range_kernel(self.state.queue, k, self.exe.loop_sizes[name],
                                            self.exe.local_size)


class _OpenCLState:
    """What one call writes on the device: its queue, the arena of temporaries (their views by
    variable, constants included) and its own kernel objects."""

    __slots__ = ("queue", "arena", "views", "kernels")

    def __init__(self, exe: OpenCLExecutable):
        cl = exe.cl
        self.queue = cl.CommandQueue(exe.context, exe.device)
        self.arena = cl.Buffer(exe.context, cl.mem_flags.READ_WRITE, max(exe.arena_bytes, 1))
        self.views = {var: DeviceArray(c.buffer, c.shape, c.dtype, self.queue)
                      for var, c in exe.const_views.items()}
        for t in exe.temps:
            n = t.aval.nbytes
            sub = self.arena.get_sub_region(t.offset, n) if n else None
            self.views[t.var] = DeviceArray(sub, t.aval.shape, t.aval.dtype, self.queue)
        self.kernels = {name: cl.Kernel(exe.program, name) for name in exe.kernel_names}


class OpenCLExecutable(Executable):
    """A compiled program on an OpenCL device. Immutable once built: each call checks an
    :class:`_OpenCLState` out of a pool, so one executable can be called from many threads."""

    def __init__(self, low, device=None):
        self.cl = cl = _pyopencl()
        self.device = device if device is not None else platforms.opencl_devices()[0]
        align = self.device.mem_base_addr_align // 8
        if align > low.backend.alignment:
            raise RuntimeError(f"fx: OpenCL device {self.device.name!r} aligns sub-buffers to "
                               f"{align} bytes; the arena plan aligns to "
                               f"{low.backend.alignment}")
        if low.source and "cl_khr_fp64" not in self.device.extensions:
            raise RuntimeError(f"fx: OpenCL device {self.device.name!r} lacks cl_khr_fp64 "
                               f"(float64), which generated kernels need")
        self.context = _context(cl, self.device)
        self.queue = cl.CommandQueue(self.context, self.device)  # for the constants
        super().__init__(low)

    def device_constant(self, host: np.ndarray) -> DeviceArray:
        out = _upload(self.cl, self.context, self.queue, host)
        self.queue.finish()
        return out

    def load(self, low) -> None:
        self.program = _program(self.cl, self.context, low.source) if low.source else None
        units = self.device.max_compute_units
        self.local_size = (min(LOCAL_SIZE, self.device.max_work_group_size),)
        self.calls: list = []
        loop_kernels = []
        for op in _operations(low):
            if isinstance(op, _Loop):
                self.calls.append(op)
                loop_kernels += op.op.kernels
                continue
            if callable(op):
                self.calls.append(op)
                continue
            k, variables = op
            if k.launch is not None:
                raise NotImplementedError(f"{k.name}: a kernel with its own launch shape has "
                                          f"no OpenCL form")
            size = (global_size(parallel_extent(k), units, self.local_size[0]),)
            self.calls.append(_Launch(k.name, size, tuple(variables)))
        self.kernel_names = sorted({c.kernel for c in self.calls if isinstance(c, _Launch)}
                                   | {k.name for k in loop_kernels})
        self.loop_sizes = {k.name: (global_size(parallel_extent(k), units,
                                                self.local_size[0]),) for k in loop_kernels}

    def new_state(self) -> _OpenCLState:
        return _OpenCLState(self)

    def _launch(self, state: _OpenCLState, views: dict) -> None:
        """Run the steps in order on the state's (in-order) queue."""
        enqueue = self.cl.enqueue_nd_range_kernel
        for call in self.calls:
            if isinstance(call, _Launch):
                k = state.kernels[call.kernel]
                k.set_args(*[views[v].buffer for v in call.variables])
                enqueue(state.queue, k, call.global_size, self.local_size)
            elif isinstance(call, _Loop):
                device_loops.run(call.op, _OpenCLMemory(self, state, call.op), views)
            else:
                call(views)

    def run(self, state: _OpenCLState, args: list) -> list[np.ndarray]:
        cl, queue = self.cl, state.queue
        views = dict(state.views)
        for a in self.inputs:
            host = np.asarray(args[a.position], a.aval.dtype, order="C")  # (0-d stays 0-d)
            views[a.var] = _upload(cl, self.context, queue, host)
        for o in self.outputs:
            n = o.aval.nbytes
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, n) if n else None
            views[o.var] = DeviceArray(buf, o.aval.shape, o.aval.dtype, queue)
        try:
            self._launch(state, views)
            return [np.array(src) if kind == "literal" else views[src].get()
                    for kind, src in self.out_sources]
        finally:
            queue.finish()  # the arena is free for the state's next user
