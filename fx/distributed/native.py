"""Collectives called from the generated C code: all-reduce and all-gather steps with no
Python in them.

A compiled collective step (``collectives``) is a Python call: ``mpi4py``'s ``Allreduce``
parses two buffers and a datatype per call, and with the transport's bookkeeping a 1 KB
all-reduce between two processes took 3.3 us, of which MPI itself (the shared-memory
exchange) is about 0.9. On the CPU backend, a ``psum`` (``pmax``/``pmin`` of integers) over an
MPI process axis is instead a kernel of the program: one line of generated C calling
``fx_mpi_allreduce`` (an ``all_gather``: ``fx_mpi_allgather``), in a small runtime library
(``native.c``) compiled once per machine and loaded with global symbols, which holds this
process's ``MPI_Allreduce`` and ``MPI_Allgather`` (looked up in the MPI library mpi4py
loaded), datatype and operation handles and a table of communicators. The kernel sits in
a segment between the other kernels (and in native ``scan``/``while`` bodies), so a jitted
training step runs kernels and all-reduces in one C call.

What the Python step did around the collective stays:

- the deadline: the library notes the start time (``CLOCK_MONOTONIC``, which is Python's
  ``time.monotonic``) and the collective's name where the transport's watchdog thread reads
  them, and clears them after;
- the agreement on the collective's signature with every other process: a check the
  executable runs once, before its first call (``OpImpl.first_run``), in program order;
- an MPI error: the library prints which collective failed on which rank, and aborts the job
  (the other processes would wait for this one until their deadline).

The handles are pointers (Open MPI) or ints (MPICH); the library passes them as the integer
type of their size, which both calling conventions (x86-64, AArch64) take alike. Each
communicator a program runs collectives on (the process group's for ``pmap``, a mesh axes'
sub-communicator, ``fx.distributed.mesh``) gets a slot of the table when the first program
using it is lowered (:func:`bind`); a kernel names its slot.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from fx.distributed import collectives
from fx.distributed.transport import MpiTransport, ReduceOp
from fx.jaxpr import Var
from fx.lax import parallel, parallel_moves
from fx.lowering import resources
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.c_kernel import CKernel
from fx.lowering.fusion.groups import GroupKind
from fx.lowering.render.renderer import storage_type
from fx.lowering.select import op_info
from fx.runtime import cc

# The dtypes MPI reduces natively, in the order of the library's handle table.
DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float32, np.float64)
_CODE = {np.dtype(d): i for i, d in enumerate(DTYPES)}
_OPS = (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN)
_PRIMS = {parallel.psum_p: ReduceOp.SUM, parallel.pmax_p: ReduceOp.MAX,
          parallel.pmin_p: ReduceOp.MIN}
MAX_COUNT = 2**31 - 1  # MPI counts are C ints

# The runtime library (a template of the MPI handle type and the handle tables' sizes) and the
# kernels calling it, CKernel templates (native.c documents their placeholders).
_LIBRARY = resources.template(__package__, "native.c", "library")
_KERNEL = resources.sections(__package__, "native.c")["kernel"]
_SECTIONS = resources.sections(__package__, "native.c")
_TEMPLATES = {parallel.all_gather_p: _SECTIONS["gather"],
              parallel_moves.psum_scatter_p: _SECTIONS["reduce_scatter"],
              parallel_moves.all_to_all_p: _SECTIONS["alltoall"],
              parallel_moves.ppermute_p: _SECTIONS["permute"]}
_CALLS = {parallel.all_gather_p: "MPI_Allgather",
          parallel_moves.psum_scatter_p: "MPI_Reduce_scatter_block",
          parallel_moves.all_to_all_p: "MPI_Alltoall", parallel_moves.ppermute_p: "MPI_Sendrecv"}


class _Library:
    """The loaded runtime library and the communicators bound in its table (by slot)."""

    def __init__(self, lib, group):
        self.lib, self.group = lib, group
        self.slots: dict = {}  # transport -> its communicator's slot in the table
        self.started = ctypes.c_int64.in_dll(lib, "fx_mpi_started_ns")
        self.what = ctypes.c_char_p.in_dll(lib, "fx_mpi_what")

    def running(self) -> tuple[float, str] | None:
        """(start as ``time.monotonic()``, name) of the collective running in C, or None."""
        started = self.started.value
        if not started:
            return None
        return started / 1e9, (self.what.value or b"?").decode(errors="replace")


_lock = threading.Lock()
_library: _Library | None = None
_unavailable: dict = {}  # transport -> why the native path is not taken (for describe)
MAX_COMMUNICATORS = 64  # the library's table: the group's and its mesh axes' communicators


def _handle_type(mpi):
    size = mpi._sizeof(mpi.Comm)
    if {mpi._sizeof(mpi.Datatype), mpi._sizeof(mpi.Op)} != {size} or size not in (4, 8):
        return None
    return (ctypes.c_int32, "int32_t") if size == 4 else (ctypes.c_void_p, "void*")


def library_source(handle: str) -> str:
    """The runtime library's C for MPI handles of C type ``handle`` (``void*``, ``int32_t``)."""
    return _LIBRARY.substitute(handle=handle, n_types=len(DTYPES), n_ops=len(_OPS),
                               n_comms=MAX_COMMUNICATORS, byte_type=_CODE[np.dtype(np.uint8)])


def _load(transport: MpiTransport) -> _Library:
    """The runtime library, compiled (once per machine), loaded and its MPI API filled in."""
    mpi = transport._mpi
    handle = _handle_type(mpi)
    if handle is None:
        raise OSError("MPI handles of an unknown size")
    if cc.compiler() is None:
        raise OSError("no C compiler")
    api = ctypes.CDLL(mpi.__file__)  # its dependencies include the MPI library
    functions = [ctypes.cast(getattr(api, f), ctypes.c_void_p).value
                 for f in ("MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter_block",
                           "MPI_Alltoall", "MPI_Sendrecv", "MPI_Abort", "MPI_Error_string")]
    lib = cc.build_global(library_source(handle[1]))
    h = handle[0]

    class Group(ctypes.Structure):
        _fields_ = [("allreduce", ctypes.c_void_p), ("allgather", ctypes.c_void_p),
                    ("reduce_scatter", ctypes.c_void_p), ("alltoall", ctypes.c_void_p),
                    ("sendrecv", ctypes.c_void_p), ("abort", ctypes.c_void_p),
                    ("error_string", ctypes.c_void_p), ("types", h * len(DTYPES)),
                    ("ops", h * len(_OPS)), ("in_place", ctypes.c_void_p),
                    ("proc_null", ctypes.c_int), ("world_rank", ctypes.c_int),
                    ("world_size", ctypes.c_int), ("comms", h * MAX_COMMUNICATORS),
                    ("ranks", ctypes.c_int * MAX_COMMUNICATORS),
                    ("sizes", ctypes.c_int * MAX_COMMUNICATORS)]

    g = Group.in_dll(lib, "fx_mpi_group")
    (g.allreduce, g.allgather, g.reduce_scatter, g.alltoall, g.sendrecv, g.abort,
     g.error_string) = functions
    for i, d in enumerate(DTYPES):
        g.types[i] = mpi._handleof(mpi._typedict[np.dtype(d).char])
    for i, op in enumerate(_OPS):
        g.ops[i] = mpi._handleof(transport._ops[op])
    g.in_place = int(mpi.IN_PLACE)
    g.proc_null = int(mpi.PROC_NULL)
    world = mpi.COMM_WORLD
    g.world_rank, g.world_size = world.Get_rank(), world.Get_size()
    return _Library(lib, g)


def bind(transport: MpiTransport) -> int | None:
    """The slot of ``transport``'s communicator in the runtime library's table (the library
    compiled and loaded on first use); None where it cannot be bound (no C compiler, handles
    of an unknown size, an MPI library without the symbols, a full table)."""
    global _library
    with _lock:
        if _library is not None and transport in _library.slots:
            return _library.slots[transport]
        if transport in _unavailable:
            return None
        try:
            if _library is None:
                _library = _load(transport)
            if len(_library.slots) == MAX_COMMUNICATORS:
                raise OSError(f"more than {MAX_COMMUNICATORS} communicators")
        except (OSError, AttributeError, cc.CompileError) as e:
            _unavailable[transport] = str(e)
            return None
        slot = len(_library.slots)
        g = _library.group
        g.comms[slot] = transport._mpi._handleof(transport.comm)
        g.ranks[slot], g.sizes[slot] = transport.rank, transport.size
        _library.slots[transport] = slot
        transport.watch_native(_library.running)
        return slot


def _leading(shape, d) -> int:
    return int(np.prod(shape[:d], dtype=np.int64))


def _eligible(g) -> bool:
    if not collectives._is_collective(g):
        return False
    eqn = g.eqns[0]
    prim = eqn.primitive
    op = _PRIMS.get(prim)
    if (op is None and prim not in _TEMPLATES) or not eqn.invars or \
            not isinstance(eqn.invars[0], Var):
        return False
    src, out = eqn.invars[0].aval, eqn.outvars[0].aval
    dt = np.dtype(out.dtype)
    count = int(np.prod(src.shape, dtype=np.int64))
    axis = collectives.process_axis(eqn.params["axis_name"])
    if axis is None or type(axis.transport) is not MpiTransport or src.dtype != out.dtype:
        return False
    n = axis.transport.size
    nbytes = count * dt.itemsize
    if prim is parallel.all_gather_p:  # bytes in rank order: any dtype
        return axis.lanes is None and 0 < nbytes <= MAX_COUNT and \
            out.shape == (n,) + src.shape
    if prim is parallel_moves.ppermute_p:
        return axis.lanes is None and 0 < nbytes <= MAX_COUNT
    if prim is parallel_moves.all_to_all_p:
        # Each process's chunks, and what it receives, already rows in rank order.
        p = eqn.params
        return axis.lanes is None and 0 < nbytes // n <= MAX_COUNT and \
            _leading(src.shape, p["split_axis"]) == 1 and \
            _leading(out.shape, p["concat_axis"]) == 1
    if prim is parallel_moves.psum_scatter_p:
        return axis.lanes is None and dt in _CODE and 0 < count // n <= MAX_COUNT and \
            _leading(src.shape, eqn.params["scatter_dimension"]) == 1
    if src.shape != out.shape or dt not in _CODE:
        return False
    if op is not ReduceOp.SUM and dt.kind not in "iu":
        return False  # a NaN must win a float max/min: the Python step gathers
    return 0 < count <= MAX_COUNT


def _applies(g) -> bool:
    if not _eligible(g):
        return False
    axis = collectives.process_axis(g.eqns[0].params["axis_name"])
    return bind(axis.transport) is not None


def _c_string(s: str) -> str:
    """``s`` as a C string literal (printable ASCII kept, the rest as octal escapes)."""
    out = []
    for b in s.encode():
        c = chr(b)
        out.append(c if 32 <= b < 127 and c not in '"\\?' else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _what(eqn) -> str:
    sig = collectives.signature(eqn.primitive, eqn.invars[0].aval, eqn.params["axis_name"])
    return f"fx.lax.{sig}"


def _kernel(g, name, inputs, outputs) -> CKernel:
    eqn = g.eqns[0]
    prim = eqn.primitive
    src, out = eqn.invars[0].aval, eqn.outvars[0].aval
    count = int(np.prod(src.shape, dtype=np.int64))
    total = int(np.prod(out.shape, dtype=np.int64))
    params = (ir.Param("x", out.dtype, count, False), ir.Param("y", out.dtype, total, True))
    axis = collectives._axis_of(eqn)
    slot = bind(axis.transport)
    fields = dict(ctype=storage_type(out.dtype), comm=slot, what=_c_string(_what(eqn)))
    itemsize = np.dtype(out.dtype).itemsize
    if prim is parallel.all_gather_p:
        fields.update(nbytes=count * itemsize)
    elif prim is parallel_moves.all_to_all_p:
        fields.update(nbytes=count * itemsize // axis.size)
    elif prim is parallel_moves.ppermute_p:
        dest, source = [-1] * axis.size, [-1] * axis.size
        for s, d in eqn.params["perm"]:
            dest[s], source[d] = d, s
        fields.update(nbytes=count * itemsize, dest=", ".join(map(str, dest)),
                      source=", ".join(map(str, source)))
    else:
        fields.update(count=total if prim is parallel_moves.psum_scatter_p else count,
                      type=_CODE[np.dtype(out.dtype)])
        if prim not in _TEMPLATES:
            fields.update(op=_OPS.index(_PRIMS[prim]))
    template = _TEMPLATES.get(prim, _KERNEL)
    return CKernel(name, params, template, tuple(fields.items()), None, work=max(count, total))


def _first_run(g):
    """The signature check the Python step ran on its first call (every process must reach
    the same collective with the same shape and dtype)."""
    eqn = g.eqns[0]
    t = collectives._axis_of(eqn).transport
    what = _what(eqn)

    def agree() -> None:
        if t.size > 1:
            t.agree(what.removeprefix("fx.lax."), what)

    return agree


def _describe(g) -> str:
    eqn = g.eqns[0]
    axis = collectives._axis_of(eqn)
    call = _CALLS.get(eqn.primitive, "MPI_Allreduce")
    return (f"{eqn.primitive.name} over {axis.name!r} as {call} called from the "
            f"generated code ({axis.transport.describe()})")


op_info.register(op_info.OpImpl(
    "cpu.mpi_collective", "cpu", GroupKind.OPAQUE, None, {}, True, lambda g: 100.0,
    "a psum (integer pmax/pmin), all_gather, psum_scatter, all_to_all or ppermute over an "
    "MPI process axis, called from the generated code",
    applies=_applies, kernel=_kernel, describe=_describe, first_run=_first_run))
