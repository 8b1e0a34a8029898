"""Mesh axes across processes: each subset of a mesh's axes as an MPI sub-communicator, and
the binding under which the collectives of ``fx.lax`` run on them.

A mesh (``fx.sharding.Mesh``) whose devices are one per process, every process of the run in
it once (``mpiexec -n 4`` and ``fx.make_mesh((2, 2), ("data", "model"))``), puts each process
at coordinates along the mesh's axes. A collective over a subset ``S`` of the axes combines
the processes that differ only along ``S``: for every subset, :class:`MeshAxes` holds the
communicator of this process's group, ``Comm.Split`` of the run's communicator with the
coordinates along the other axes as the colour and the row-major index along ``S`` (mesh
order) as the key, so a group's rank is its position along ``S``.

Entry point (what ``fx.shard_map`` calls for a mesh that spans processes)::

    from fx.distributed import mesh as dmesh
    with dmesh.bind(mesh) as axes:                   # every process, the same mesh
        body = axes.jit(f)                           # fx.jit(f), cached per mesh
        out = body(local_shard)                      # psum(x, "model"), all_gather(x,
                                                     # ("data", "model")), ... run between
                                                     # the processes of those axes

:func:`bind` pushes one :class:`~fx.distributed.collectives.ProcessAxis` per mesh axis (its
size, this process's coordinate, the axis's communicator) onto the named-axis environment;
a collective over a tuple of names resolves to the communicator of that subset
(:meth:`MeshAxes.axis`). ``jit`` wraps ``f`` anew per mesh because ``fx.jit``'s cache is
keyed by argument types, not by the bound axes, and a program is lowered for the
communicators bound when it is traced.

Deadlocks: ``Comm.Split`` is a collective of the run's communicator, so every process must
create the same communicators in the same order. They are created eagerly, all of them
(2**k - 1 for k axes), in one fixed order (subsets by bitmask), on the first :func:`bind` of
a mesh — a call every process makes for the same mesh at the same point of the program
(SPMD) — and cached per mesh; before creating them the processes ``agree`` on the mesh (its
axes, shape and process grid), so one binding another mesh raises
:class:`~fx.distributed.CollectiveMismatchError` everywhere instead of splitting mismatched
groups. Each split runs under the transport's deadline like any collective. Collectives
bound later run on different communicators but in program order on every process, and a
process runs the collectives of one communicator in the same order as its peers (the
programs are the same), which is what MPI requires.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from fx.distributed import state
from fx.distributed.collectives import ProcessAxis
from fx.distributed.transport import Transport
from fx.interpreters import batching
from fx.jit_function import jit


def _row_major(coords: Sequence[int], sizes: Sequence[int]) -> int:
    index = 0
    for c, n in zip(coords, sizes):
        index = index * n + c
    return index


class MeshAxes:
    """A mesh over the run's processes, from this process's point of view: its coordinates
    along each axis and the communicator of every subset of axes."""

    def __init__(self, mesh, transport: Transport):
        self.mesh, self.transport = mesh, transport
        self.names: tuple[str, ...] = tuple(mesh.axis_names)
        self.sizes: tuple[int, ...] = tuple(mesh.devices.shape)
        grid = np.vectorize(lambda d: d.process_index, otypes=[np.int64])(mesh.devices)
        if sorted(grid.reshape(-1).tolist()) != list(range(transport.size)):
            raise NotImplementedError(
                f"fx.distributed.mesh: {mesh} places processes {grid.tolist()}; across "
                f"processes a mesh bound here must hold one device of each of the run's "
                f"{transport.size} processes (fx.shard_map takes meshes with several devices "
                "per process)")
        self.grid = grid
        where = np.argwhere(grid == transport.rank)
        self.coords: tuple[int, ...] = tuple(int(c) for c in where[0])
        self._axes: dict[tuple, ProcessAxis] = {}
        self._jitted: dict = {}
        self._lock = threading.Lock()
        if transport.size > 1:
            transport.agree(f"mesh {self.names} {self.sizes} {grid.reshape(-1).tolist()}",
                            f"fx.distributed.mesh.bind({mesh})")
        self.comms = self._split_all()

    def _split_all(self) -> dict[tuple[str, ...], Transport]:
        """The communicator of every non-empty subset of the axes (mesh order), created in
        one fixed order on every process."""
        comms = {}
        k = len(self.names)
        for mask in range(1, 2 ** k):
            inside = [i for i in range(k) if mask >> i & 1]
            outside = [i for i in range(k) if not mask >> i & 1]
            subset = tuple(self.names[i] for i in inside)
            color = _row_major([self.coords[i] for i in outside],
                               [self.sizes[i] for i in outside])
            key = _row_major([self.coords[i] for i in inside], [self.sizes[i] for i in inside])
            where = (f"rank {self.transport.rank} of {self.transport.size}; rank {key} of "
                     f"{math.prod(self.sizes[i] for i in inside)} along mesh axes {subset}")
            comms[subset] = self.transport.split(color, key, where)
        return comms

    def axis(self, names: tuple[str, ...]) -> ProcessAxis:
        """The process axis of mesh axes ``names`` (in the order given: lanes are numbered
        row-major over them, the first the major one)."""
        hit = self._axes.get(names)
        if hit is not None:
            return hit
        for n in names:
            if n not in self.names:
                raise NameError(f"fx.distributed.mesh: axis {n!r} is not an axis of {self.mesh}"
                                f" (its axes are {self.names})")
        if len(set(names)) != len(names):
            raise ValueError(f"fx.distributed.mesh: axis names {names} name an axis twice")
        pos = [self.names.index(n) for n in names]
        in_mesh_order = tuple(sorted(pos))
        comm = self.comms[tuple(self.names[i] for i in in_mesh_order)]
        sizes = [self.sizes[i] for i in pos]
        # The communicator ranks its processes row-major in mesh order; ``lanes[j]`` is the
        # rank of the process at lane j of ``names``' order.
        lanes = None
        if list(pos) != list(in_mesh_order):
            mesh_sizes = [self.sizes[i] for i in in_mesh_order]
            lanes = []
            for lane in range(math.prod(sizes)):
                coords = dict(zip(pos, np.unravel_index(lane, sizes)))
                lanes.append(_row_major([int(coords[i]) for i in in_mesh_order], mesh_sizes))
            lanes = tuple(lanes)
        axis = ProcessAxis(math.prod(sizes), names if len(names) > 1 else names[0], comm,
                           _row_major([self.coords[i] for i in pos], sizes), self, lanes)
        self._axes[names] = axis
        return axis

    def jit(self, fun: Callable, **options) -> Callable:
        """``fx.jit(fun, **options)`` for this mesh: its programs lowered, and cached, for
        this mesh's communicators (call it under :func:`bind`)."""
        key = (fun, tuple(sorted(options.items())))
        with self._lock:
            hit = self._jitted.get(key)
            if hit is None:
                @functools.wraps(fun)
                def on_mesh(*args, **kwargs):
                    return fun(*args, **kwargs)

                hit = self._jitted[key] = jit(on_mesh, **options)
        return hit

    def __repr__(self) -> str:
        return f"MeshAxes({self.mesh}, coordinates {self.coords})"


_meshes: dict = {}  # (mesh, transport) -> MeshAxes
_lock = threading.Lock()


def axes_of(mesh) -> MeshAxes:
    """The :class:`MeshAxes` of ``mesh`` in the current process group (created on first
    use: a collective every process must reach)."""
    t = state.group().transport
    with _lock:
        hit = _meshes.get((mesh, t))
        if hit is None:
            hit = _meshes[mesh, t] = MeshAxes(mesh, t)
    return hit


@contextlib.contextmanager
def bind(mesh) -> Iterator[MeshAxes]:
    """Bind ``mesh``'s axes, across the run's processes, as named axes of collectives.

    Every process enters it with the same mesh. Inside, ``fx.lax.psum(x, "model")`` (and
    ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``, ``ppermute``,
    ``all_to_all``, ``axis_index``, ``axis_size``, over a name or a tuple of names) combines
    this process's value with those of the processes that differ from it only along those
    axes; under ``fx.jit`` (:meth:`MeshAxes.jit`) they are steps of the compiled program.

    >>> from fx.distributed import mesh as dmesh
    >>> mesh = fx.make_mesh((2, 2), ("data", "model"))    # mpiexec -n 4
    >>> with dmesh.bind(mesh) as axes:
    ...     rows = axes.jit(lambda x: fx.lax.psum(x, "model"))(x)
    """
    axes = axes_of(mesh)
    with contextlib.ExitStack() as stack:
        for name in axes.names:
            stack.enter_context(batching.extend_axis_env(axes.axis((name,))))
        yield axes
