"""Collectives between GPU processes on NCCL, through CuPy's ``cupy.cuda.nccl``.

The same :class:`~fx.distributed.transport.Transport` interface as MPI, on device arrays
(``device_buffers``: a collective step of a CUDA program hands its CuPy buffers over without
copies). MPI stays the bootstrap: it carries NCCL's unique id from rank 0 to the others at
startup and the small ``agree`` signature checks, and it aborts the job.

Each collective is enqueued on the transport's own stream, after the work already queued on
the caller's stream (an event), and the caller's stream then waits for it — so kernels and
collectives keep their program order without a host synchronization. The deadline is kept by
polling an event recorded after the collective: a collective that misses it aborts the NCCL
communicator (which unblocks the GPU) and then the job, naming the rank.
"""

from __future__ import annotations

import time

import numpy as np

from fx.distributed.transport import ReduceOp, Transport, default_timeout


def _codes(nccl) -> dict:
    return {np.dtype(k): getattr(nccl, v) for k, v in [
        ("int8", "NCCL_INT8"), ("uint8", "NCCL_UINT8"), ("int32", "NCCL_INT32"),
        ("uint32", "NCCL_UINT32"), ("int64", "NCCL_INT64"), ("uint64", "NCCL_UINT64"),
        ("float16", "NCCL_FLOAT16"), ("float32", "NCCL_FLOAT32"),
        ("float64", "NCCL_FLOAT64")] if hasattr(nccl, v)}


# Types NCCL lacks, reduced as one it has: complex as its real pairs (sums only), 16-bit
# integers widened (a wrapped sum is the same modulo 2**16), bfloat16 in float32.
_WIDEN = {"int16": np.int32, "uint16": np.uint32, "bfloat16": np.float32}


def _id_bytes(uid) -> np.ndarray:
    """NCCL's unique id as 128 int8 (CuPy gives a tuple of ints, or bytes in newer versions)."""
    if isinstance(uid, (bytes, bytearray)):
        return np.frombuffer(bytes(uid), np.int8)
    return np.asarray(uid, np.int64).astype(np.int8)


def _communicator(nccl, size: int, uid: np.ndarray, rank: int):
    try:
        return nccl.NcclCommunicator(size, tuple(int(v) for v in uid), rank)
    except TypeError:  # a CuPy that takes the id as bytes
        return nccl.NcclCommunicator(size, uid.astype(np.int8).tobytes(), rank)


class NcclTransport(Transport):
    """NCCL collectives over the processes of ``bootstrap`` (an MPI transport), one GPU each
    (``device_id``: this process's GPU)."""

    name = "nccl"
    device_buffers = True

    def __init__(self, bootstrap: Transport, device_id: int = 0, timeout: float | None = None,
                 cupy=None):
        if cupy is None:
            from fx.devices import cupy_module

            cupy = cupy_module()
        self.cp, self.nccl = cupy, cupy.cuda.nccl
        self.bootstrap = bootstrap
        self.rank, self.size = bootstrap.rank, bootstrap.size
        self.timeout = default_timeout() if timeout is None else float(timeout)
        uid = np.zeros(128, np.int8)
        if self.rank == 0:
            uid[:] = _id_bytes(self.nccl.get_unique_id())
        uid = bootstrap.allgather(uid, "fx.distributed: NCCL unique id")[0]
        self.device_id = device_id
        with cupy.cuda.Device(device_id):
            self.comm = _communicator(self.nccl, self.size, uid, self.rank)
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self._dtypes = _codes(self.nccl)
        self._ops = {ReduceOp.SUM: self.nccl.NCCL_SUM, ReduceOp.MAX: self.nccl.NCCL_MAX,
                     ReduceOp.MIN: self.nccl.NCCL_MIN}

    def _enqueue(self, call, what: str) -> None:
        """Run ``call(stream_ptr)`` on the transport's stream between the caller's queued
        work and what the caller queues next, waiting (bounded) for it to finish."""
        caller = self.cp.cuda.get_current_stream()
        self.stream.wait_event(caller.record())
        call(self.stream.ptr)
        done = self.stream.record()
        caller.wait_event(done)
        deadline = time.monotonic() + self.timeout
        while not done.done:
            if time.monotonic() > deadline:
                self.comm.abort()  # unblocks the GPU's pending NCCL kernels
                self.abort(f"fx.distributed: {what} (NCCL) timed out after {self.timeout:.1f} s "
                           f"on rank {self.rank} of {self.size}: another process did not join "
                           "it; aborting every process")
            time.sleep(20e-6)

    def allreduce(self, x, op: ReduceOp, what: str, out=None):
        cp = self.cp
        x = cp.ascontiguousarray(x)
        dt = x.dtype
        if dt.kind == "c":
            if op is not ReduceOp.SUM:
                raise TypeError(f"{what}: NCCL reduces complex values by sum only")
            return self.allreduce(x.view(x.real.dtype), op, what).view(dt)
        if dt == np.bool_:
            out = self.allreduce(x.view(np.uint8), ReduceOp.MAX if op is ReduceOp.SUM else op,
                                 what)
            return out.view(np.bool_)
        wide = _WIDEN.get(dt.name)
        if wide is not None:
            return self.allreduce(x.astype(wide), op, what).astype(dt)
        code = self._dtypes.get(np.dtype(dt))
        if code is None:
            raise TypeError(f"{what}: NCCL has no reduction for {dt}")
        out = cp.empty_like(x) if out is None else out
        self._enqueue(lambda s: self.comm.allReduce(x.data.ptr, out.data.ptr, x.size, code,
                                                    self._ops[op], s), what)
        return out

    def allgather(self, x, what: str):
        cp = self.cp
        x = cp.ascontiguousarray(x)
        out = cp.empty((self.size,) + x.shape, x.dtype)
        nbytes = x.size * x.dtype.itemsize
        self._enqueue(lambda s: self.comm.allGather(x.data.ptr, out.data.ptr, nbytes,
                                                    self.nccl.NCCL_UINT8, s), what)
        return out

    def reduce_scatter(self, x, what: str):
        cp = self.cp
        x = cp.ascontiguousarray(x)
        dt = x.dtype
        if dt.kind == "c":  # real pairs, summed
            return self.reduce_scatter(x.view(x.real.dtype), what).view(dt)
        if dt == np.bool_:  # a sum of booleans is their or
            parts = self.reduce_scatter(x.view(np.uint8).astype(np.int32), what)
            return parts > 0
        wide = _WIDEN.get(dt.name)
        if wide is not None:
            return self.reduce_scatter(x.astype(wide), what).astype(dt)
        code = self._dtypes.get(np.dtype(dt))
        if code is None:
            raise TypeError(f"{what}: NCCL has no reduction for {dt}")
        out = cp.empty(x.shape[1:], dt)
        self._enqueue(lambda s: self.comm.reduceScatter(
            x.data.ptr, out.data.ptr, out.size, code, self._ops[ReduceOp.SUM], s), what)
        return out

    def permute(self, x, dest, source, what: str):
        cp = self.cp
        x = cp.ascontiguousarray(x)
        out = cp.zeros_like(x)
        nbytes = x.size * x.dtype.itemsize

        def call(s):
            self.nccl.groupStart()  # the send and the receive together: no ordering deadlock
            if dest is not None:
                self.comm.send(x.data.ptr, nbytes, self.nccl.NCCL_UINT8, dest, s)
            if source is not None:
                self.comm.recv(out.data.ptr, nbytes, self.nccl.NCCL_UINT8, source, s)
            self.nccl.groupEnd()

        if nbytes:
            self._enqueue(call, what)
        return out

    def alltoall(self, x, what: str):
        cp = self.cp
        x = cp.ascontiguousarray(x)
        out = cp.empty_like(x)
        chunk = (x.size // self.size) * x.dtype.itemsize

        def call(s):
            self.nccl.groupStart()
            for j in range(self.size):  # row j to process j, row j of the result from it
                self.comm.send(x.data.ptr + j * chunk, chunk, self.nccl.NCCL_UINT8, j, s)
                self.comm.recv(out.data.ptr + j * chunk, chunk, self.nccl.NCCL_UINT8, j, s)
            self.nccl.groupEnd()

        if chunk:
            self._enqueue(call, what)
        return out

    def split(self, color: int, key: int, where: str) -> NcclTransport:
        """A NCCL communicator of the processes passing the same ``color`` (a mesh axis's
        group), ranked by ``key``: the bootstrap's sub-communicator, over which the group's
        first rank sends a new unique id (a collective of this transport's processes)."""
        return NcclTransport(self.bootstrap.split(color, key, where), self.device_id,
                             self.timeout, cupy=self.cp)

    def agree(self, signature: str, what: str) -> None:
        self.bootstrap.agree(signature, what)

    def abort(self, message: str, code: int = 1) -> None:
        self.bootstrap.abort(message, code)

    def describe(self) -> str:
        return f"nccl, {self.size} processes"
