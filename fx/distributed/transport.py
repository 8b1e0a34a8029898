"""Transports: the engines that run collectives between processes.

A :class:`Transport` is one group of processes (a communicator) and the collectives fx needs
on it: ``allreduce`` (sum, max, min), ``allgather``, ``reduce_scatter``, ``alltoall``,
``permute`` (send to one process, receive from one), ``broadcast``, ``agree`` (every process
checks that all of them are about to run the same collective on the same type) and ``split``
(the sub-communicators of a mesh's axes, ``fx.distributed.mesh``). fx does not move bytes
itself: :class:`MpiTransport` runs on mpi4py (Open MPI from pip), ``fx.distributed.nccl``'s
``NcclTransport`` on CuPy's NCCL, and :class:`SelfTransport` is the group of one process.

Reliability is the transport's job, because MPI collectives block: every collective runs
under a deadline (``timeout`` seconds) kept by a watchdog thread. A collective that misses
its deadline means another process died, raised, or is running a different program; the
transport then aborts the whole job with a message naming this rank and the collective
(``MPI_Abort``: every process exits, none hangs). The other failure, processes that disagree
on a collective's shape or dtype, is caught before the collective by ``agree`` (a small
allgather of a fixed-size signature) and raised on every process at once.

Collectives of one transport are serialized by a lock: MPI requires every process to call
collectives on a communicator in the same order, which two threads of one process issuing
them at once would break.
"""

from __future__ import annotations

import enum
import os
import sys
import threading
import time

import numpy as np

# A collective that waits longer than this (seconds) aborts the job (FX_COLLECTIVE_TIMEOUT).
DEFAULT_TIMEOUT = 120.0
_SIGNATURE_BYTES = 192  # the fixed width of an ``agree`` signature (longer ones are cut)


class ReduceOp(enum.Enum):
    SUM = "sum"
    MAX = "max"
    MIN = "min"


class CollectiveError(RuntimeError):
    """A collective failed: the processes disagree on it, or one of them did not join."""


class CollectiveMismatchError(CollectiveError, ValueError):
    """Processes called the same collective step with different shapes or dtypes."""


def default_timeout() -> float:
    return float(os.environ.get("FX_COLLECTIVE_TIMEOUT", DEFAULT_TIMEOUT))


class Transport:
    """One group of processes and its collectives. ``rank`` is this process's position,
    ``size`` the number of processes; arrays are NumPy (or, for a device transport, the
    device's arrays)."""

    name = "transport"
    rank = 0
    size = 1
    device_buffers = False  # whether collectives take device arrays (NCCL) or host ones

    def allreduce(self, x, op: ReduceOp, what: str, out=None):
        """The reduction of every process's ``x``, into ``out`` where given (an array of
        ``x``'s type) or a new array."""
        raise NotImplementedError

    def allgather(self, x, what: str):
        """Every process's ``x`` stacked on a new leading axis of length ``size``."""
        raise NotImplementedError

    def reduce_scatter(self, x, what: str):
        """Every process's ``x`` (leading axis of length ``size``) summed; this process gets
        row ``rank`` of the sum."""
        raise NotImplementedError

    def alltoall(self, x, what: str):
        """Row ``j`` of this process's ``x`` (leading axis ``size``) goes to process ``j``;
        row ``j`` of the result came from process ``j``."""
        raise NotImplementedError

    def permute(self, x, dest: int | None, source: int | None, what: str):
        """Send ``x`` to process ``dest`` and return what process ``source`` sent (zeros
        like ``x`` when ``source`` is None; nothing is sent when ``dest`` is None)."""
        raise NotImplementedError

    def broadcast(self, x, root: int, what: str):
        """Process ``root``'s ``x`` (every process passes an array of the same shape and
        dtype)."""
        return self.allgather(x, what)[root]

    def split(self, color: int, key: int, where: str) -> Transport:
        """The transport of the processes passing the same ``color``, ranked by ``key`` (a
        collective: every process of this one calls it, in the same order). ``where``
        names this process in the new group's errors."""
        raise NotImplementedError(f"fx.distributed: the {self.name} transport has no "
                                  "sub-communicators (mesh axes across processes need MPI)")

    def agree(self, signature: str, what: str) -> None:
        """Raise :class:`CollectiveMismatchError` on every process unless all of them pass
        the same ``signature`` (a short text: the collective, its shape and dtype)."""
        raw = signature.encode()[:_SIGNATURE_BYTES].ljust(_SIGNATURE_BYTES, b"\0")
        table = self.allgather(np.frombuffer(raw, np.uint8).copy(), f"{what} (signature check)")
        sigs = [bytes(np.asarray(row)).rstrip(b"\0").decode(errors="replace") for row in table]
        if len(set(sigs)) > 1:
            listing = "; ".join(f"rank {r}: {s}" for r, s in enumerate(sigs))
            raise CollectiveMismatchError(
                f"fx.distributed: {what}: the processes disagree on the collective ({listing}). "
                "Every process must call the same collectives in the same order on values of "
                "the same shape and dtype (give each process an equal shard).")

    def barrier(self, what: str = "barrier") -> None:
        self.allreduce(np.zeros(1, np.int32), ReduceOp.SUM, what)

    def abort(self, message: str, code: int = 1) -> None:
        """End every process of the group (after printing ``message``)."""
        print(message, file=sys.stderr, flush=True)
        os._exit(code)

    def describe(self) -> str:
        return f"{self.name}, {self.size} process{'es' if self.size != 1 else ''}"


class SelfTransport(Transport):
    """The group of this process alone (fx not initialized for several processes): each
    collective is its one-process meaning."""

    name = "self"

    def allreduce(self, x, op: ReduceOp, what: str, out=None):
        if out is None:
            return x.copy()
        np.copyto(out, x)
        return out

    def allgather(self, x, what: str):
        return x[None].copy()

    def reduce_scatter(self, x, what: str):
        return x[0].copy()

    def alltoall(self, x, what: str):
        return x.copy()

    def permute(self, x, dest, source, what: str):
        return x.copy() if source is not None else np.zeros_like(x)

    def split(self, color: int, key: int, where: str) -> Transport:
        return self


# MPI has no 16-bit floats: they are reduced in float32 (and rounded back once).
_WIDEN = {"float16": np.float32, "bfloat16": np.float32}


class MpiTransport(Transport):
    """Collectives on an mpi4py communicator, each bounded by a deadline.

    The collectives are MPI's blocking ones (Open MPI's tuned algorithms: its non-blocking
    ``Iallreduce`` runs a slower schedule, and polling it from Python costs microseconds per
    test), watched by a daemon thread: the calling thread notes when it entered which
    collective, and the watchdog, waking every ``timeout / 10`` (at most 1 s), aborts the job
    from its own thread (MPI_THREAD_MULTIPLE) once one has run past its deadline. A blocked
    process thus costs nothing while it waits and a normal collective costs one attribute
    store before and after."""

    name = "mpi"

    def __init__(self, comm, timeout: float | None = None, where: str | None = None):
        from mpi4py import MPI  # an optional dependency: pip install fx[distributed]

        self._mpi = MPI
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        # This process in errors: its rank, and for a sub-communicator its world rank too.
        self.where = where or f"rank {self.rank} of {self.size}"
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self._ops = {ReduceOp.SUM: MPI.SUM, ReduceOp.MAX: MPI.MAX, ReduceOp.MIN: MPI.MIN}
        self._lock = threading.Lock()
        self._running: tuple[float, str] | None = None  # (when it started, what)
        self._how: dict = {}  # dtype -> "native", "bool" or the dtype it is reduced in
        self._watchdog: threading.Thread | None = None
        # () -> (start, what) of a collective running in generated code (fx.distributed.native)
        self._native_running = None

    def watch_native(self, running) -> None:
        """Also watch the collectives generated code runs: ``running()`` gives the one
        running, as ``(time.monotonic() at its start, what)``, or None."""
        self._native_running = running
        with self._lock:
            self._start_watchdog()

    def _start_watchdog(self) -> None:
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, daemon=True,
                                              name="fx-collective-watchdog")
            self._watchdog.start()

    def _watch(self) -> None:
        interval = min(1.0, self.timeout / 10)
        while True:
            time.sleep(interval)
            running = self._running
            if running is None and self._native_running is not None:
                running = self._native_running()
            if running is not None and time.monotonic() - running[0] > self.timeout:
                started, what = running
                self.abort(
                    f"fx.distributed: {what} timed out after {time.monotonic() - started:.1f} s "
                    f"on {self.where}: another process did not join it (it "
                    "died, raised, or runs a different program); aborting every process. "
                    "(FX_COLLECTIVE_TIMEOUT sets the limit.)")

    def _run(self, collective, what: str) -> None:
        with self._lock:
            self._start_watchdog()
            self._running = (time.monotonic(), what)
            try:
                collective()
            finally:
                self._running = None

    def allreduce(self, x, op: ReduceOp, what: str, out=None):
        if type(x) is not np.ndarray or not x.flags.c_contiguous:
            x = np.asarray(x, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
        how = self._how.get(x.dtype)
        if how is None:  # first use of this dtype (dtype tests cost a microsecond each)
            how = self._how[x.dtype] = "bool" if x.dtype == np.bool_ else _WIDEN.get(
                x.dtype.name, "native")
        if how == "native" and self._watchdog is not None:
            # The fast path: raw mpi4py plus the watchdog's two stores, inline (a small
            # all-reduce is ~1 us: the lock, a closure and a call cost as much again).
            if out is None:
                out = np.empty_like(x)
            mpi_op = self._ops[op]
            self._running = (time.monotonic(), what)
            try:
                self.comm.Allreduce(x, out, op=mpi_op)
            finally:
                self._running = None
            return out
        if how == "native":
            out = np.empty_like(x) if out is None else out
            self._run(lambda: self.comm.Allreduce(x, out, op=self._ops[op]), what)
            return out
        if how == "bool":  # any/all: bytes reduced by max/min, sum is "any"
            return self.allreduce(x.view(np.uint8), ReduceOp.MAX if op is ReduceOp.SUM else op,
                                  what).view(np.bool_)
        return self.allreduce(x.astype(how), op, what).astype(x.dtype)

    def allgather(self, x, what: str):
        x = np.asarray(x, order="C")
        src = x.reshape(-1).view(np.uint8) if x.size else np.zeros(0, np.uint8)
        out = np.empty((self.size, src.size), np.uint8)
        self._run(lambda: self.comm.Allgather(src, out), what)
        return out.view(x.dtype).reshape((self.size,) + x.shape)

    def reduce_scatter(self, x, what: str):
        x = np.asarray(x, order="C")
        how = _WIDEN.get(x.dtype.name, "bool" if x.dtype == np.bool_ else "native")
        if how == "bool":  # a sum of booleans is "any": bytes reduced by max
            src, op = x.view(np.uint8), self._mpi.MAX
        else:
            src, op = (x if how == "native" else x.astype(how)), self._mpi.SUM
        out = np.empty(src.shape[1:], src.dtype)
        self._run(lambda: self.comm.Reduce_scatter_block(src, out, op=op), what)
        return out.view(np.bool_) if how == "bool" else out.astype(x.dtype, copy=False)

    def alltoall(self, x, what: str):
        x = np.asarray(x, order="C")
        src = x.reshape(self.size, -1).view(np.uint8)
        out = np.empty_like(src)
        self._run(lambda: self.comm.Alltoall(src, out), what)
        return out.view(x.dtype).reshape(x.shape)

    def permute(self, x, dest, source, what: str):
        x = np.asarray(x, order="C")
        out = np.zeros_like(x)
        null = self._mpi.PROC_NULL
        send, recv = x.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8)
        self._run(lambda: self.comm.Sendrecv(
            send, null if dest is None else dest, 0,
            recv, null if source is None else source, 0), what)
        return out

    def broadcast(self, x, root: int, what: str):
        out = np.array(x, order="C")  # a copy: the root's own value is not written
        if out.size:
            self._run(lambda: self.comm.Bcast(out.reshape(-1).view(np.uint8), root), what)
        return out

    def split(self, color: int, key: int, where: str) -> MpiTransport:
        box = []
        self._run(lambda: box.append(self.comm.Split(color, key)),
                  f"fx.distributed: creating a sub-communicator ({where})")
        return MpiTransport(box[0], self.timeout, where)

    def abort(self, message: str, code: int = 1) -> None:
        print(message, file=sys.stderr, flush=True)
        self.comm.Abort(code)
