"""The named-axis collectives of ``fx.lax`` across processes: what ``psum``, ``pmax``,
``pmin``, ``all_gather`` and ``axis_index`` mean when their axis is a :class:`ProcessAxis`
(one lane per process: bound by ``fx.pmap`` for all the run's processes, or by
``fx.distributed.mesh.bind`` for each axis of a mesh, on that axis's sub-communicator), and
their lowering to a step of the compiled program. A collective over a tuple of mesh axes
runs on the communicator of that subset (:func:`process_axis` resolves it).

The primitives are the ones ``vmap`` batches (``fx.lax.parallel``); under ``pmap`` no vmap
owns the axis, so they reach the jaxpr, and operator selection picks the ``collective``
implementation registered here for their group. It resolves the axis to its transport
*when the program is lowered* (the transport is part of the step, not looked up per call),
and the pipeline makes the step a ``operations.Collective`` — one call of the compiled schedule,
so a jitted training step runs kernels and all-reduces with no Python tracing in between.
Collectives are effectful: a program holding one runs its steps serially, in order, which is
what keeps every process issuing its collectives in the same order.

On its first run a compiled collective step checks with every other process that they are
running the same collective on the same type (``Transport.agree``); later runs of the same
executable skip the check (its shape cannot change).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from fx import dtypes
from fx.distributed.transport import ReduceOp, Transport
from fx.interpreters import batching
from fx.jaxpr import Literal, effectful_primitives
from fx.lax import parallel, parallel_moves
from fx.lowering.fusion.groups import GroupKind
from fx.lowering.select import op_info


@dataclass(frozen=True)
class ProcessAxis(batching.BatchAxis):
    """A named axis whose lanes are processes (``size`` of them); collectives over it run on
    ``transport``. ``index`` is this process's lane (None: its rank in ``transport``);
    ``mesh`` the ``fx.distributed.mesh.MeshAxes`` the axis belongs to (None for pmap's);
    ``lanes[j]``, where given, the transport rank of lane ``j`` (a tuple of mesh axes in
    another order than the mesh's)."""

    transport: Transport | None = None
    index: int | None = None
    joins_tuples = True
    mesh: object = None
    lanes: tuple[int, ...] | None = None

    @property
    def lane(self) -> int:
        return self.transport.rank if self.index is None else self.index


def _innermost(name):
    for axis in reversed(batching._axis_env.get()):
        if axis.name == name:
            return axis
    return None


def process_axis(name) -> ProcessAxis | None:
    """The innermost axis named ``name`` if it is a process axis (an inner vmap of the same
    name shadows it); for a tuple of names, all axes of one bound mesh, the axis of that
    subset (its communicator, lanes numbered row-major over the names in the order given)."""
    if not isinstance(name, tuple):
        axis = _innermost(name)
        return axis if isinstance(axis, ProcessAxis) else None
    axes = [_innermost(n) for n in name]
    if not axes or not all(isinstance(a, ProcessAxis) for a in axes):
        return None
    meshes = {id(a.mesh) for a in axes}
    if len(axes) == 1 and axes[0].mesh is None:
        return axes[0]
    if len(meshes) != 1 or axes[0].mesh is None:
        raise NotImplementedError(
            f"fx.lax collective over axes {name}: across processes a tuple of axis names must "
            "name axes of one mesh (fx.distributed.mesh.bind)")
    return axes[0].mesh.axis(tuple(name))


def _unbound(prim, axis_name) -> NameError:
    return NameError(
        f"{prim.name}: unbound axis name {axis_name!r}: collectives need an enclosing "
        f"fx.vmap(..., axis_name={axis_name!r}) or fx.pmap(..., axis_name={axis_name!r})")


def signature(prim, x, axis_name) -> str:
    what = "" if x is None else f" of {dtypes.short_name(x.dtype)}{list(x.shape)}"
    return f"{prim.name} over {axis_name!r}{what}"


def _to_host(x):
    return x if isinstance(x, np.ndarray) else (x.get() if hasattr(x, "get") else np.asarray(x))


def execute(prim, x, axis: ProcessAxis, params: dict, check: bool = True, out=None,
            what: str | None = None):
    """``prim`` over the processes of ``axis`` on this process's value ``x`` (an array of the
    transport's memory, or a host array it is moved from). ``what`` names it in errors (a
    compiled step passes the one it made once)."""
    t = axis.transport
    if what is None:
        what = f"fx.lax.{signature(prim, x, axis.name)}"
    if prim is parallel.axis_index_p:
        return np.asarray(axis.lane, np.int32)
    if not t.device_buffers:
        x = _to_host(x)
    if check and t.size > 1:
        t.agree(what.removeprefix("fx.lax."), what)
    if prim is parallel.psum_p:
        return t.allreduce(x, ReduceOp.SUM, what, out)
    if prim is parallel.all_gather_p:
        if params["axis_size"] != t.size:
            raise ValueError(f"{what}: axis_size {params['axis_size']} is not the axis's "
                             f"{t.size} processes")
        stack = t.allgather(x, what)
        return stack if axis.lanes is None else stack[list(axis.lanes)]
    if prim in parallel_moves.move_prims:
        return _move(prim, x, axis, params, what)
    op = ReduceOp.MAX if prim is parallel.pmax_p else ReduceOp.MIN
    if dtypes.is_float(x.dtype) or dtypes.is_complex(x.dtype):
        # A NaN wins as in vmap's reduce_max/min (MPI's MAX on floats does not promise it):
        # gather and reduce locally; the result is the same on every process.
        stack = t.allgather(x, what)
        return (stack.max if op is ReduceOp.MAX else stack.min)(axis=0)
    return t.allreduce(x, op, what)


def _by_rank(rows, axis: ProcessAxis):
    """Rows in lane order put in the transport's rank order."""
    if axis.lanes is None:
        return rows
    out = np.empty_like(rows)
    out[list(axis.lanes)] = rows
    return out


def _move(prim, x, axis: ProcessAxis, params: dict, what: str):
    """A reduce-scatter, permutation or all-to-all of ``x`` over the processes of ``axis``
    (the primitives' meanings: ``fx.lax.parallel_moves``), the rows each process sends laid
    out contiguously for the transport."""
    t, n = axis.transport, axis.size
    if prim is parallel_moves.ppermute_p:
        lane = axis.lane
        dest = next((d for s, d in params["perm"] if s == lane), None)
        source = next((s for s, d in params["perm"] if d == lane), None)
        rank = (lambda j: j) if axis.lanes is None else (lambda j: axis.lanes[j])
        return t.permute(x, None if dest is None else rank(dest),
                         None if source is None else rank(source), what)
    if prim is parallel_moves.psum_scatter_p:
        d, shape = params["scatter_dimension"], x.shape
        if params["tiled"]:
            x = x.reshape(shape[:d] + (n, shape[d] // n) + shape[d + 1:])
        return t.reduce_scatter(_by_rank(np.moveaxis(x, d, 0), axis), what)
    s, c, shape = params["split_axis"], params["concat_axis"], x.shape
    chunks = np.moveaxis(x.reshape(shape[:s] + (n, shape[s] // n) + shape[s + 1:]), s, 0)
    received = t.alltoall(_by_rank(chunks, axis), what)
    if axis.lanes is not None:
        received = received[list(axis.lanes)]
    return np.concatenate(list(received), axis=c)


def _impl(prim):
    def impl(*args, axis_name, **params):
        axis = process_axis(axis_name)
        if axis is None:
            raise _unbound(prim, axis_name)
        return execute(prim, args[0] if args else None, axis, params)

    return impl


# Every collective a process axis gives a meaning to.
PRIMS = parallel.collective_prims | parallel_moves.move_prims
for _prim in PRIMS:
    _prim.def_impl(_impl(_prim))
    if _prim is not parallel.axis_index_p:
        effectful_primitives.add(_prim)


# --- lowering -------------------------------------------------------------------------------


def _is_collective(g) -> bool:
    return len(g.eqns) == 1 and g.eqns[0].primitive in PRIMS


def _axis_of(eqn) -> ProcessAxis:
    axis = process_axis(eqn.params["axis_name"])
    if axis is None:
        raise _unbound(eqn.primitive, eqn.params["axis_name"])
    return axis


def _describe(g) -> str:
    eqn = g.eqns[0]
    axis = _axis_of(eqn)
    return f"{eqn.primitive.name} over {axis.name!r} ({axis.transport.describe()})"


class _FirstRun:
    """A latch: true once, for the first caller (the step's cross-process signature check)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._done = False

    def __call__(self) -> bool:
        with self._lock:
            first, self._done = not self._done, True
        return first


def _library(step):
    """``run(views)`` for a collective step: the operand from its buffer, the transport's
    collective, the result into the output buffer."""
    eqn = step.group.eqns[0]
    axis = _axis_of(eqn)
    params = {k: v for k, v in eqn.params.items() if k != "axis_name"}
    src = eqn.invars[0] if eqn.invars else None
    out = eqn.outvars[0]
    first = _FirstRun()
    what = f"fx.lax.{signature(eqn.primitive, None if src is None else src.aval, axis.name)}"
    direct = (eqn.primitive is parallel.psum_p and src is not None
              and not isinstance(src, Literal) and src.aval.dtype == out.aval.dtype
              and src.aval.shape == out.aval.shape and not axis.transport.device_buffers
              and np.dtype(out.aval.dtype).kind in "iuf" and out.aval.dtype.itemsize >= 4)

    def run(views):
        x = None if src is None else (src.value if isinstance(src, Literal) else views[src])
        if isinstance(src, Literal):
            x = np.asarray(x, src.aval.dtype)
        if out not in step.outputs:  # kept for its effect (every process runs it), unread
            execute(eqn.primitive, x, axis, params, check=first(), what=what)
            return
        dst = views[out]
        if direct and type(dst) is np.ndarray and dst.flags.c_contiguous and \
                type(x) is np.ndarray:
            # A sum of the step's dtype lands in the output buffer itself (no extra copy).
            y = execute(eqn.primitive, x, axis, params, check=first(), out=dst, what=what)
        else:
            y = execute(eqn.primitive, x, axis, params, check=first(), what=what)
        if y is dst:
            return
        if isinstance(dst, np.ndarray):
            np.copyto(dst, _to_host(y).reshape(out.aval.shape), casting="unsafe")
        elif isinstance(y, np.ndarray):  # a host transport's result into a device buffer
            dst.set(np.ascontiguousarray(y.reshape(out.aval.shape), out.aval.dtype))
        else:
            dst[...] = y.reshape(out.aval.shape)

    return run


op_info.register(op_info.OpImpl(
    "collective", "any", GroupKind.OPAQUE, op_info.ANY, {}, False, lambda g: 1000.0,
    "a collective over a pmap axis, run by the process group's transport (MPI or NCCL)",
    applies=_is_collective, library=_library, describe=_describe))
