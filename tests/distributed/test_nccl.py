"""The NCCL transport without a GPU: a stand-in for CuPy (arrays are NumPy arrays with a
device pointer, streams and events record what waits on what) and for ``cupy.cuda.nccl``
(communicators of two ranks, run in two threads, that reduce what both ranks hand in). What
is checked: the calls NCCL gets (types, counts, operations, the transport's stream), the
types NCCL lacks (bool, complex, bfloat16, int16) reduced through ones it has, the stream
ordering around each collective, and the deadline (the communicator is aborted and the
job aborted with a message naming the rank). Real NCCL runs in bench/gpu_check.sh."""

from __future__ import annotations

import ctypes
import threading
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from fx.distributed.nccl import NcclTransport
from fx.distributed.transport import ReduceOp, Transport


class _DevArray(np.ndarray):
    @property
    def data(self):  # CuPy's MemoryPointer: only .ptr is read
        return SimpleNamespace(ptr=self.ctypes.data)


class _Event:
    def __init__(self, log, stream, done=True):
        self.stream, self.done = stream, done
        log.append(("record", stream.name))


class _Stream:
    def __init__(self, cuda, name):
        self.cuda, self.name, self.ptr = cuda, name, id(self)

    def record(self):
        return _Event(self.cuda.log, self, self.cuda.events_done)

    def wait_event(self, event):
        self.cuda.log.append(("wait", self.name, event.stream.name))


class _World:
    """What the ranks' communicators share: each collective waits for every contribution.
    Communicators made from one unique id share a world of their own (``group``)."""

    def __init__(self, size):
        self.size, self.barrier, self.parts = size, threading.Barrier(size, timeout=10), {}
        self.lock, self.groups, self.ids, self.mail = threading.Lock(), {}, 0, {}

    def new_id(self) -> tuple:
        with self.lock:
            self.ids += 1
            return (self.ids,) + (0,) * 127

    def group(self, uid, size) -> _World:
        with self.lock:
            return self.groups.setdefault((tuple(uid), size), _World(size))


class _Comm:
    def __init__(self, world, cupy, rank):
        self.world, self.cp, self.rank, self.calls, self.aborted = world, cupy, rank, [], False

    def _collective(self, send, recv, combine):
        w = self.world
        w.parts[self.rank] = self.cp.registry[send].copy()
        w.barrier.wait()
        out = combine([w.parts[r] for r in range(w.size)])
        w.barrier.wait()
        dst = self.cp.registry[recv].reshape(-1).view(np.uint8)
        dst[:] = np.ascontiguousarray(out).reshape(-1).view(np.uint8)  # NCCL writes bytes

    def allReduce(self, send, recv, count, dtype, op, stream):  # noqa: N802  (NCCL's name)
        self.calls.append(("allReduce", count, dtype, op, stream))
        f = {"sum": np.sum, "max": np.max, "min": np.min}[op]
        self._collective(send, recv, lambda xs: f(np.stack([x.view(dtype) for x in xs]), 0
                                                  ).astype(dtype))

    def allGather(self, send, recv, count, dtype, stream):  # noqa: N802
        self.calls.append(("allGather", count, dtype, stream))
        self._collective(send, recv, lambda xs: np.stack([x.reshape(-1).view(np.uint8)
                                                          for x in xs]))

    def reduceScatter(self, send, recv, count, dtype, op, stream):  # noqa: N802
        self.calls.append(("reduceScatter", count, dtype, op, stream))
        rank = self.rank
        self._collective(send, recv, lambda xs: np.sum(
            np.stack([x.view(dtype).reshape(-1, count) for x in xs]), 0)[rank].astype(dtype))

    # Point to point: sends are posted to the world's mailbox, receives wait for groupEnd.
    def send(self, ptr, nbytes, dtype, peer, stream):
        self.calls.append(("send", nbytes, dtype, peer, stream))
        data = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr)).copy()
        with self.world.lock:
            self.world.mail.setdefault((self.rank, peer), []).append(data)
        self.cp.pending.append(self)

    def recv(self, ptr, nbytes, dtype, peer, stream):
        self.calls.append(("recv", nbytes, dtype, peer, stream))
        self.cp.receives.append((self, ptr, nbytes, peer))
        self.cp.pending.append(self)

    def abort(self):
        self.aborted = True


class _FakeCupy:
    def __init__(self, world, rank, events_done=True):
        self.registry, self.log, self.events_done = {}, [], events_done
        nccl = SimpleNamespace(NCCL_SUM="sum", NCCL_MAX="max", NCCL_MIN="min",
                               get_unique_id=world.new_id)
        for name in ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
                     "float32", "float64"]:
            setattr(nccl, f"NCCL_{name.upper()}", name)
        nccl.NcclCommunicator = lambda size, uid, r: _Comm(world.group(uid, size), self, r)
        self.pending, self.receives = [], []

        def group_end():  # every rank has posted its sends: deliver this rank's receives
            worlds = {id(c.world): c.world for c in self.pending}
            for w in worlds.values():
                w.barrier.wait()
            for comm, ptr, nbytes, peer in self.receives:
                with comm.world.lock:
                    data = comm.world.mail[(peer, comm.rank)].pop(0)
                dst = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))
                dst[:] = data
            for w in worlds.values():
                w.barrier.wait()
            self.pending, self.receives = [], []

        nccl.groupStart, nccl.groupEnd = (lambda: None), group_end
        main = _Stream(self, "main")
        self.cuda = SimpleNamespace(nccl=nccl, Device=lambda i: _Null(),
                                    Stream=lambda non_blocking: _Stream(self, "nccl"),
                                    get_current_stream=lambda: main)

    def _dev(self, a):
        a = np.ascontiguousarray(a).view(_DevArray)
        self.registry[a.ctypes.data] = a
        return a

    def ascontiguousarray(self, a):
        return self._dev(np.array(a))

    def empty_like(self, a):
        return self._dev(np.empty_like(np.asarray(a)))

    def empty(self, shape, dtype):
        return self._dev(np.empty(shape, dtype))

    def zeros_like(self, a):
        return self._dev(np.zeros_like(np.asarray(a)))


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class _Bootstrap(Transport):
    """The MPI side: the unique id's allgather between the two threads, and the abort."""

    name = "fake-mpi"

    def __init__(self, world, rank):
        self.world, self.rank, self.size = world, rank, world.size

    def allgather(self, x, what):
        self.world.parts[("boot", self.rank)] = np.array(x)
        self.world.barrier.wait()
        out = np.stack([self.world.parts[("boot", r)] for r in range(self.size)])
        self.world.barrier.wait()
        return out

    def split(self, color, key, where):
        """The processes of the same color, ranked by key (every rank calls it)."""
        self.world.parts[("split", self.rank)] = (color, key)
        self.world.barrier.wait()
        mine = sorted((self.world.parts[("split", r)][1], r) for r in range(self.size)
                      if self.world.parts[("split", r)][0] == color)
        self.world.barrier.wait()
        self.splits = getattr(self, "splits", 0) + 1  # every rank splits in the same order
        with self.world.lock:
            sub = self.world.groups.setdefault(("boot", self.splits, color), _World(len(mine)))
        return _Bootstrap(sub, [r for _, r in mine].index(self.rank))

    def abort(self, message, code=1):
        raise RuntimeError(message)


def _both(work, events_done=True):
    """work(transport, rank) on two ranks at once; their results."""
    world, results, errors = _World(2), [None, None], []

    def run(rank):
        try:
            cp = _FakeCupy(world, rank, events_done)
            results[rank] = work(NcclTransport(_Bootstrap(world, rank), rank, 5.0, cupy=cp),
                                 rank)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)
            world.barrier.abort()

    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    return results, errors


X = [np.array([1.5, -2.0, 3.0], np.float32), np.array([0.5, 4.0, -1.0], np.float32)]


def test_allreduce_calls_nccl_on_its_stream_between_the_callers_work():
    def work(t, r):
        out = t.allreduce(X[r], ReduceOp.SUM, "psum")
        return np.asarray(out), t.comm.calls, t.cp.log

    (res0, res1), errors = _both(work)
    assert not errors, errors
    for out, calls, log in (res0, res1):
        np.testing.assert_array_equal(out, X[0] + X[1])
        (name, count, dtype, op, stream), = calls
        assert (name, count, dtype, op) == ("allReduce", 3, "float32", "sum")
        # The NCCL stream waits for the caller's queued work; the caller waits for NCCL.
        assert log == [("record", "main"), ("wait", "nccl", "main"), ("record", "nccl"),
                       ("wait", "main", "nccl")], log


@pytest.mark.parametrize("dtype,op,via", [
    (np.bool_, ReduceOp.SUM, "uint8"), (np.complex64, ReduceOp.SUM, "float32"),
    (ml_dtypes.bfloat16, ReduceOp.SUM, "float32"), (np.int16, ReduceOp.SUM, "int32"),
    (np.int32, ReduceOp.MAX, "int32"), (np.float64, ReduceOp.MIN, "float64")])
def test_types_nccl_lacks_go_through_ones_it_has(dtype, op, via):
    rng = np.random.default_rng(1)
    xs = [(rng.standard_normal(4) * 100).astype(dtype) if dtype != np.bool_
          else rng.random(4) > 0.5 for _ in range(2)]
    if dtype == np.complex64:
        xs = [(x + 1j * x[::-1]).astype(dtype) for x in xs]
    if dtype == np.int16:
        xs = [np.array([32000, -32000, 7, 1], np.int16)] * 2  # the sums wrap
    (a, b), errors = _both(lambda t, r: (np.asarray(t.allreduce(xs[r], op, "c")),
                                         t.comm.calls[0][2]))
    assert not errors, errors
    f = {ReduceOp.SUM: np.add, ReduceOp.MAX: np.maximum, ReduceOp.MIN: np.minimum}[op]
    want = (xs[0] | xs[1]) if dtype == np.bool_ else f(xs[0], xs[1]).astype(dtype)
    for out, code in (a, b):
        assert out.dtype == np.dtype(dtype) and code == via
        assert out.tobytes() == want.tobytes(), (out, want)


def test_allgather_stacks_every_rank_bytes():
    (a, b), errors = _both(lambda t, r: np.asarray(t.allgather(X[r], "all_gather")))
    assert not errors, errors
    for out in (a, b):
        assert out.dtype == np.float32 and out.tobytes() == np.stack(X).tobytes()


def test_missed_deadline_aborts_the_communicator_and_names_the_rank():
    def work(t, r):
        t.timeout = 0.05
        try:
            t.allreduce(X[r], ReduceOp.SUM, "fx.lax.psum over 'i'")
        except RuntimeError as e:
            return str(e), t.comm.aborted
        return None, t.comm.aborted

    (a, b), errors = _both(work, events_done=False)
    assert not errors, errors
    for r, (message, aborted) in enumerate((a, b)):
        assert aborted and message is not None
        assert f"timed out after 0.1 s on rank {r} of 2" in message, message


def test_split_builds_a_communicator_per_group_from_a_new_unique_id():
    # A mesh axis's group (fx.distributed.mesh splits the run's transport per axis subset): the
    # same color, both ranks; then each rank alone (its own color).
    def work(t, r):
        both = t.split(0, 1 - r, "both")  # ranked in reverse
        alone = t.split(r, 0, "alone")
        return (both.rank, both.size, np.asarray(both.allreduce(X[r], ReduceOp.SUM, "psum")),
                np.asarray(both.allgather(X[r], "all_gather")), alone.rank, alone.size,
                np.asarray(alone.allreduce(X[r], ReduceOp.MAX, "pmax")),
                both.comm.world is not t.comm.world)

    results, errors = _both(work)
    assert not errors, errors
    for r, (rank, size, total, gathered, arank, asize, alone, fresh) in enumerate(results):
        assert (rank, size, arank, asize, fresh) == (1 - r, 2, 0, 1, True)
        np.testing.assert_array_equal(total, X[0] + X[1])
        assert gathered.tobytes() == np.stack([X[1], X[0]]).tobytes()  # in the new ranks
        np.testing.assert_array_equal(alone, X[r])


def test_reduce_scatter_permute_and_all_to_all():
    rows = [np.arange(6, dtype=np.float32).reshape(2, 3) * (r + 1) for r in range(2)]
    ints = [np.array([[1, 2], [3, 4]], np.int16) * (r + 1) for r in range(2)]

    def work(t, r):
        return (np.asarray(t.reduce_scatter(rows[r], "psum_scatter")),
                np.asarray(t.reduce_scatter(ints[r], "psum_scatter int16")),
                np.asarray(t.permute(X[r], 1 - r, 1 - r, "ppermute swap")),
                np.asarray(t.permute(X[r], 1 if r == 0 else None, 0 if r == 1 else None,
                                     "ppermute 0 -> 1")),
                np.asarray(t.alltoall(rows[r], "all_to_all")),
                [c[0] for c in t.comm.calls])

    results, errors = _both(work)
    assert not errors, errors
    for r, (scattered, small, swapped, one_way, moved, calls) in enumerate(results):
        np.testing.assert_array_equal(scattered, (rows[0] + rows[1])[r])
        assert small.dtype == np.int16 and small.tolist() == (ints[0] + ints[1])[r].tolist()
        np.testing.assert_array_equal(swapped, X[1 - r])
        np.testing.assert_array_equal(one_way, X[0] if r == 1 else np.zeros(3, np.float32))
        np.testing.assert_array_equal(moved, np.stack([rows[0][r], rows[1][r]]))
        assert calls[:2] == ["reduceScatter", "reduceScatter"] and "send" in calls


def test_unique_ids_as_tuples_or_bytes():
    # CuPy's get_unique_id gives a tuple of ints (bytes in newer versions) and its
    # NcclCommunicator takes the same kind; the id travels as 128 int8 either way.
    from fx.distributed.nccl import _communicator, _id_bytes

    ident = tuple(range(-64, 64))
    raw = np.asarray(ident, np.int8)
    assert _id_bytes(ident).tobytes() == raw.tobytes() == _id_bytes(raw.tobytes()).tobytes()

    def takes_bytes(size, uid, rank):
        if not isinstance(uid, bytes):
            raise TypeError("an argument of type bytes is required")
        return (size, uid, rank)

    assert _communicator(SimpleNamespace(NcclCommunicator=takes_bytes), 2, raw, 1) == (
        2, raw.tobytes(), 1)
    assert _communicator(SimpleNamespace(NcclCommunicator=lambda *a: a), 2, raw, 0) == (
        2, ident, 0)
