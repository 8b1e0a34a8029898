"""Compile targets: one :class:`Backend` record per target, registered here and nowhere else.

A backend is everything lowering and the runtime need to know about a target: where its
buffers live (its memory platform), the dialect its kernels are rendered in, the alignment
of its arena, how a program's kernels become one compilable source, whether loop bodies of
``while``/``scan``/``fori`` compile into the generated code, which executor runs the program,
and its operator library (the implementations ``op_info`` registered for it). Code elsewhere
asks the record; it never compares backend or platform names (a test reads the sources).

Adding a target means a dialect (``dialects.Dialect``), an executor (``fx.runtime``) and one
record below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fx.lowering.kernels.cpu.conv_in_place import convs_in_place
from fx.lowering.kernels.cuda import conv_in_place as cuda_conv_in_place
from fx.lowering.kernels.int8.int8_conv import pack_int8_convs
from fx.lowering.kernels.int8.pack_int8_weights import pack_int8_weights
from fx.lowering.passes.assign_layouts import constant_operands_in_gemm_order
from fx.lowering.render import c_program, renderer
from fx.lowering.render.opencl_dialect import OPENCL as OPENCL_DIALECT
from fx.lowering.render.renderer import Dialect, render_module
from fx.lowering.select import op_impl
from fx.runtime import cc, platforms
from fx.runtime.cpu import CpuExecutable
from fx.runtime.cuda import CudaExecutable
from fx.runtime.opencl import OpenCLExecutable
from fx.runtime.platforms import Platform


@dataclass(frozen=True)
class Backend:
    name: str
    platform: Platform
    dialect: Dialect
    alignment: int  # of every buffer in the arena, in bytes
    # (translation units of the program IR (``operations.Unit``), every kernel) -> (what the
    # executor loads, how many translation units it holds).
    source: Callable[[list, list], tuple[object, int]]
    # Control-flow bodies whose steps are all kernels compile into loops in the generated
    # code (on CPU: one C function per loop); elsewhere the loop runs on the host.
    native_loops: bool
    executor: Callable[[object], object]  # the lowered program -> a callable executable

    @property
    def operators(self) -> list:
        """The implementations operator selection chooses from (see ``op_info``)."""
        return [i for i in op_impl.registry if i.backend in (self.name, "any")]

    # Control flow whose bodies are all kernels runs as launch sequences the executor makes
    # on the device (``fx.runtime.device_loops``) instead of host loops over body programs.
    device_loops: bool = False
    # The estimated cost (operator selection's, about ns of one CPU core) from which a step
    # independent of others runs apart from them (CPU: on a worker thread, whose hand-off
    # costs ~10-20 us; CUDA: on a side stream, an event pair of a few us).
    concurrent_cost: float = 200_000.0
    apart: str = "on worker threads"  # where such a step runs, for as_text()
    # Whether generated kernels can be compiled here (CPU: a C compiler is installed; device
    # targets compile with their runtime).
    compiler_available: Callable[[], bool] = lambda: True
    # Passes that specialize the optimized program on its constants' values for this
    # target's operators: ``(jaxpr, consts, hoisted) -> (jaxpr, consts)``, where the leading
    # inputs are the constants (``consts``, then a jit's ``hoisted`` closed-over arrays) and a
    # pass may append constants (CPU: int8 weights packed for the VNNI microkernel).
    constant_passes: tuple[Callable, ...] = ()

    @property
    def host_steps_need_copies(self) -> bool:
        """NumPy-only steps run on the host with explicit copies around them."""
        return not self.platform.host_memory

    @property
    def numpy_steps_copy(self) -> bool:
        """Every NumPy step (library and host calls, host loops) copies its operands to the
        host and its results back: NumPy cannot read the platform's arrays."""
        return not self.platform.numpy_arrays

    def __str__(self) -> str:
        return self.name


def _c_source(units: list, kernels: list) -> tuple[cc.Source, int]:
    """The C translation units (``operations.Unit``: kernels, loop functions, entry points),
    sharing the prelude every one of them starts with."""
    prelude = render_module([], renderer.C)[:-1]
    bodies = []
    for unit in units:
        text = render_module(list(unit.kernels), renderer.C, c_program.unit_code(unit))
        assert text.startswith(prelude)
        bodies.append(text[len(prelude):])
    return cc.Source(prelude, bodies), len(bodies)


def _cuda_source(units: list, kernels: list) -> tuple[str, int]:
    """One CUDA module holding every kernel (NVRTC compiles it once per program)."""
    return render_module(kernels, renderer.CUDA), 1


def _opencl_source(units: list, kernels: list) -> tuple[str, int]:
    """One OpenCL C program holding every kernel (built once per program)."""
    return render_module(kernels, OPENCL_DIALECT), 1


CPU = Backend("cpu", platforms.CPU, renderer.C, alignment=64, source=_c_source,
              native_loops=True, executor=CpuExecutable,
              compiler_available=lambda: cc.compiler() is not None,
              constant_passes=(pack_int8_weights, pack_int8_convs, convs_in_place,
                               constant_operands_in_gemm_order))
CUDA = Backend("cuda", platforms.CUDA, renderer.CUDA, alignment=256, source=_cuda_source,
               native_loops=False, executor=CudaExecutable, device_loops=True,
               concurrent_cost=20_000.0, apart="on side streams",
               constant_passes=(cuda_conv_in_place.convs_in_place,))

# OpenCL devices (PoCL's CPU runtime here; AMD and Intel GPUs): device memory as on CUDA, the
# alignment PoCL and most GPU drivers report as CL_DEVICE_MEM_BASE_ADDR_ALIGN (sub-buffers of
# the arena start at planned offsets; the executor checks the device's).
OPENCL = Backend("opencl", platforms.OPENCL, OPENCL_DIALECT, alignment=128,
                 source=_opencl_source, native_loops=False, executor=OpenCLExecutable,
                 device_loops=True, concurrent_cost=float("inf"))  # one in-order queue

BACKENDS: dict[str, Backend] = {b.name: b for b in (CPU, CUDA, OPENCL)}


def get(backend: str | Backend) -> Backend:
    """The record for ``backend`` (a record passes through); a ValueError naming the known
    backends otherwise."""
    if isinstance(backend, Backend):
        return backend
    try:
        return BACKENDS[backend]
    except KeyError:
        raise ValueError(f"fx: unknown backend {backend!r}; expected one of "
                         f"{', '.join(repr(n) for n in BACKENDS)}") from None
