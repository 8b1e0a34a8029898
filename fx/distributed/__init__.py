"""Running one program over several processes (``mpiexec -n N python train.py``).

``initialize()`` joins this process to the run's process group, ``process_index()`` /
``process_count()`` say where it stands, ``fx.devices()`` then lists every process's devices
and ``fx.pmap`` maps a function over them, with the named-axis collectives of ``fx.lax``
(``psum``, ``pmean``, ``all_gather``, ...) running between the processes as steps of the
compiled program. Collectives run on MPI (mpi4py over Open MPI: ``pip install
fx[distributed]``) for CPU processes and on NCCL (``fx.distributed.nccl``) for GPUs.

Failure is bounded: every collective has a deadline (``timeout``, default 120 s, or
``FX_COLLECTIVE_TIMEOUT``), after which the job is aborted with a message naming the rank;
an exception that escapes any process aborts every process (instead of leaving the others
waiting in their next collective); processes that disagree on a collective's shape or dtype
all raise :class:`CollectiveMismatchError` before it runs.

Meshes: ``fx.distributed.mesh.bind(mesh)`` binds the axes of a mesh whose devices are one
per process (``fx.make_mesh((2, 2), ("data", "model"))`` under ``mpiexec -n 4``), each subset
of axes an MPI sub-communicator, so collectives over any of them run between the processes
of that subset (the transport under a multi-process ``fx.shard_map``);
``fx.experimental.multihost_utils`` gathers, broadcasts and synchronizes host values.

Example (``mpiexec -n 2 python this.py``)::

    import fx, fx.numpy as jnp
    fx.distributed.initialize()
    total = fx.pmap(lambda x: fx.lax.psum(x, "i"), axis_name="i")(
        jnp.ones((1, 3)) * fx.process_index())
    # every process holds [[1., 1., 1.]] (0 + 1)
"""

from __future__ import annotations

import os
import sys

from fx import api, spmd
from fx.distributed import shard_map as _shard_map
from fx.distributed import state
from fx.distributed.transport import (
    CollectiveError,
    CollectiveMismatchError,
    MpiTransport,
    ReduceOp,
    SelfTransport,
    Transport,
)

# A shard_map whose mesh spans processes runs here (fx.spmd checks it, this library has the
# communicators).
spmd.register_process_runner(_shard_map.run)

__all__ = ["CollectiveError", "CollectiveMismatchError", "ReduceOp", "Transport",
           "initialize", "is_initialized", "launched_by_mpi", "process_count", "process_index",
           "shutdown"]

# Environment variables an MPI launcher sets in every process it starts.
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS")


def launched_by_mpi() -> bool:
    return any(v in os.environ for v in _LAUNCHER_VARS)


def process_index() -> int:
    """This process's index in the run (0 when fx is not initialized)."""
    return state.group().process_index


def process_count() -> int:
    """How many processes take part in the run (1 when fx is not initialized)."""
    return state.group().process_count


def is_initialized() -> bool:
    return state.initialized


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *, timeout: float | None = None,
               local_device_count: int | None = None, transport: str = "mpi") -> None:
    """Join this process to the run's process group (call once, before any collective).

    Without arguments the group comes from the MPI launcher (``mpiexec -n N``); outside one,
    this process alone. With ``num_processes`` and ``process_id`` each process states its
    place, which is checked: a second call, an id out of range, or one that disagrees with
    the launcher's, is refused with an error. (The processes must still be started by one
    launcher: Open MPI cannot join singletons without its runtime, so ``coordinator_address``
    is accepted for jax's signature and recorded, not dialled.) ``timeout`` bounds every
    collective (seconds; default ``FX_COLLECTIVE_TIMEOUT`` or 120). ``transport="nccl"`` runs
    the collectives on NCCL between GPUs (one per process: the launcher's local rank picks
    it), MPI only bootstrapping it. ``local_device_count`` (default: every device of this
    process, e.g. ``FX_NUM_CPU_DEVICES``) is what this process reports to the others.

    >>> fx.distributed.initialize()           # under mpiexec -n 2
    >>> fx.process_index(), fx.process_count()
    (0, 2)                                    # (1, 2) in the other process
    """
    with state.lock:
        if state.initialized:
            g = state.group()
            raise RuntimeError(
                f"fx.distributed.initialize: already initialized (process {g.process_index} of "
                f"{g.process_count}); it may be called once per process "
                "(fx.distributed.shutdown() ends the group)")
        explicit = num_processes is not None or process_id is not None
        if explicit:
            _check_place(num_processes, process_id)
        if launched_by_mpi():
            from mpi4py import MPI

            mpi: Transport = MpiTransport(MPI.COMM_WORLD, timeout)
            if explicit and (mpi.size, mpi.rank) != (num_processes, process_id):
                raise ValueError(
                    f"fx.distributed.initialize: process_id={process_id}, num_processes="
                    f"{num_processes} disagree with the MPI launcher, which started this "
                    f"process as rank {mpi.rank} of {mpi.size}")
            transport = _on(transport, mpi, timeout)
        elif explicit and num_processes > 1:
            # Open MPI singletons cannot Connect/Accept without a PMIx server (tried: MPI_ERR_
            # INTERN), so processes not started together by a launcher cannot form a group.
            raise RuntimeError(
                f"fx.distributed.initialize: process {process_id} of {num_processes} was not "
                "started by an MPI launcher; start every process with one command, e.g. "
                f"`mpiexec -n {num_processes} python train.py` (coordinator_address="
                f"{coordinator_address!r} is not used by the MPI transport)")
        else:
            transport = SelfTransport()
        if local_device_count is None:  # every device this process has (FX_NUM_CPU_DEVICES)
            local_device_count = api.local_device_count()
        counts = (local_device_count,) * transport.size
        if transport.size > 1:
            import numpy as np

            host = getattr(transport, "bootstrap", transport)  # NCCL's takes device arrays
            gathered = host.allgather(np.array([local_device_count], np.int64),
                                      "fx.distributed.initialize")
            counts = tuple(int(c) for c in gathered.reshape(-1))
        state.set_group(state.ProcessGroup(transport, counts, coordinator_address))
        if transport.size > 1:
            _abort_on_uncaught(transport)


def _on(kind: str, mpi: Transport, timeout) -> Transport:
    """The transport the collectives run on: MPI itself, or NCCL bootstrapped by it."""
    if kind == "mpi":
        return mpi
    if kind == "nccl":
        from fx.distributed.nccl import NcclTransport

        local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK",
                                   os.environ.get("MPI_LOCALRANKID", mpi.rank)))
        return NcclTransport(mpi, local, timeout)
    raise ValueError(f"fx.distributed.initialize: transport={kind!r} is not 'mpi' or 'nccl'")


def _check_place(num_processes, process_id) -> None:
    if not isinstance(num_processes, int) or not isinstance(process_id, int):
        raise ValueError(
            "fx.distributed.initialize: give both num_processes and process_id as integers "
            f"(got num_processes={num_processes!r}, process_id={process_id!r})")
    if num_processes < 1 or not 0 <= process_id < num_processes:
        raise ValueError(
            f"fx.distributed.initialize: process_id={process_id} is not a process of a run "
            f"of num_processes={num_processes} (ids are 0 .. {num_processes - 1})")


def shutdown() -> None:
    """Leave the process group (after a barrier, so no process leaves while others still run
    collectives); fx is then one process again and ``initialize`` may be called anew."""
    with state.lock:
        g = state.group()
        if state.initialized and g.process_count > 1:
            g.transport.barrier("fx.distributed.shutdown")
        state.set_group(None)
        sys.excepthook = _previous_hook.pop() if _previous_hook else sys.excepthook


_previous_hook: list = []


def _abort_on_uncaught(transport: Transport) -> None:
    """An exception escaping this process ends every process of the run: the others would
    otherwise wait in their next collective until its deadline."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        transport.abort(f"fx.distributed: rank {transport.rank} of {transport.size} raised "
                        f"{kind.__name__}: {value}; aborting every process")

    _previous_hook.append(previous)
    sys.excepthook = hook
