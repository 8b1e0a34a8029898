"""Executors for chunks: worker threads, or a pool of spawned worker processes.

Both run :func:`fx.data.chunks.run_chunk` and hand back ``(task_id, result)`` pairs in whatever
order the work finishes; the iterator puts them back in task order, so timing never changes the
output.

**Processes** (:class:`WorkerPool`) are started with the ``spawn`` method (safe with threads and
CUDA, and the same on every OS); each imports NumPy and fx, which takes a second or two, so a
pool can be shared by several iterators (``Dataset.iterator(pool=...)``). A pool receives each
plan once, pickled; a task is a few integers and the chunk's source indices. A worker writes the
chunk's arrays into one of its few reusable shared-memory segments (announced to the consumer
before they exist, named after the pool, so the consumer can unlink them whatever happens to
the worker); the consumer copies the arrays out and releases the segment for the next chunk.
Only records that cannot be stacked (ragged shapes, non-array leaves) travel pickled.

Workers ignore SIGINT: on Ctrl-C the consumer's ``KeyboardInterrupt`` closes the pool, which
asks the workers to stop, then terminates and finally kills them; the consumer holds SIGINT
back while it updates its bookkeeping, so a shared pool drained after Ctrl-C serves the next
iterator. A worker that dies (a crash, ``os._exit``, the OOM killer) is noticed through its
process sentinel and reported with its exit code and the records it held.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import itertools
import multiprocessing as mp
import os
import pickle
import signal
import threading
import time
import traceback
import weakref
from multiprocessing import connection, shared_memory
from typing import Any

import numpy as np

from fx.data.chunks import Chunk, Plan, RecordError, run_chunk, stack_records
from fx.tree_util import tree_flatten, tree_unflatten

__all__ = ["ThreadExecutor", "WorkerDied", "WorkerPool", "pickle_plan"]

_POOL_IDS = itertools.count()


class WorkerDied(RuntimeError):
    """A worker process exited while it held tasks."""


# --- threads -------------------------------------------------------------------------------------


class ThreadExecutor:
    """``num_workers`` threads; for NumPy work that releases the GIL."""

    def __init__(self, plan: Plan, num_workers: int):
        self._plan = plan
        self._pool = cf.ThreadPoolExecutor(num_workers, thread_name_prefix="fx.data.worker")
        self._futures: dict[cf.Future, int] = {}
        self.capacity = 2 * num_workers

    def submit(self, task_id: int, epoch: int, start: int, end: int, indices) -> None:
        fut = self._pool.submit(run_chunk, self._plan, epoch, start, end, indices)
        self._futures[fut] = task_id

    def poll(self, timeout: float | None) -> list[tuple[int, Any]]:
        done, _ = cf.wait(list(self._futures), timeout, return_when=cf.FIRST_COMPLETED)
        out = []
        for fut in done:
            task_id = self._futures.pop(fut)
            err = fut.exception()
            out.append((task_id, err if err is not None else fut.result()))
        return out

    def discard(self) -> None:
        for fut in self._futures:
            fut.cancel()
        self._futures.clear()

    def close(self) -> None:
        self.discard()
        self._pool.shutdown(wait=False, cancel_futures=True)


# --- processes -----------------------------------------------------------------------------------


# Segments per worker: two tasks in flight plus one being filled, so a worker never waits for
# the consumer to release one while the consumer keeps up.
_SLOTS = 3


def _layout(chunk: Chunk):
    """(treedef, leaves, table of (dtype, shape, offset), total bytes, unstack) for a chunk
    that can travel in shared memory, or None (ragged or non-numeric records go pickled)."""
    tree = chunk.stacked
    if tree is None:
        if not chunk.records:
            return None
        try:
            tree = stack_records(chunk.records)
        except (ValueError, TypeError):
            return None
    leaves, treedef = tree_flatten(tree)
    leaves = [np.ascontiguousarray(x) for x in leaves]
    if any(x.dtype == object for x in leaves):
        return None
    table, at = [], 0
    for x in leaves:
        table.append((x.dtype.str, x.shape, at))
        at += x.nbytes + (-x.nbytes % 64)
    return treedef, leaves, table, max(at, 1), chunk.stacked is None


class _WorkerSlots:
    """A worker's reusable segments. Creating a segment per chunk costs a page fault per 4 KiB
    on both sides (milliseconds per batch, as much as the augmentation itself); a slot is
    written by the worker, copied out by the consumer, released and reused. Every segment is
    announced to the consumer before it is created, so the consumer can unlink it whatever
    happens to the worker."""

    def __init__(self, conn, tag: str, worker: int):
        self.conn, self.tag, self.worker = conn, tag, worker
        self.free: dict[str, shared_memory.SharedMemory] = {}
        self.busy: dict[str, shared_memory.SharedMemory] = {}
        self.serial = 0
        self.backlog: list = []  # tasks that arrived while waiting for a release

    def release(self, name: str) -> None:
        shm = self.busy.pop(name, None)
        if shm is not None:
            self.free[name] = shm

    def take(self, size: int, handle) -> shared_memory.SharedMemory:
        while True:
            for name, shm in list(self.free.items()):
                if shm.size >= size:
                    del self.free[name]
                    self.busy[name] = shm
                    return shm
            if self.free:  # too small: retire one and make a bigger one
                name, shm = self.free.popitem()
                self.conn.send(("retire", name))
                shm.close()
                shm.unlink()
            if len(self.busy) < _SLOTS:
                name = f"{self.tag}_{self.worker}_{self.serial}"
                self.serial += 1
                self.conn.send(("segment", name))
                shm = shared_memory.SharedMemory(name=name, create=True, size=size)
                self.busy[name] = shm
                return shm
            handle(self.conn.recv())  # all slots are with the consumer: wait for a release


def pickle_plan(plan: Plan) -> bytes:
    """The plan as the workers receive it, or a TypeError saying what to change."""
    try:
        return pickle.dumps(plan)
    except Exception as e:  # noqa: BLE001
        raise TypeError(
            f"fx.data: worker processes receive the pipeline by pickling, and it does not "
            f"pickle ({type(e).__name__}: {e}); define the map/filter functions at module "
            "level (not lambdas or closures), or use workers='threads'") from e


def _worker_main(conn, pool_tag: str, worker: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    plans: dict[int, Plan] = {}
    slots = _WorkerSlots(conn, pool_tag, worker)
    stop = []

    def handle(msg) -> None:
        if msg is None:
            stop.append(True)
        elif msg[0] == "plan":
            plans.clear()
            plans[msg[1]] = pickle.loads(msg[2])
        elif msg[0] == "release":
            slots.release(msg[1])
        else:
            slots.backlog.append(msg)

    while not stop:
        if slots.backlog:
            msg = slots.backlog.pop(0)
        else:
            try:
                handle(conn.recv())
            except (EOFError, OSError):
                return
            continue
        _, plan_id, task_id, epoch, start, end, indices = msg
        try:
            chunk = run_chunk(plans[plan_id], epoch, start, end, indices)
            layout = _layout(chunk)
            if layout is None:
                conn.send(("pickled", task_id, chunk))
                continue
            treedef, leaves, table, size, unstack = layout
            shm = slots.take(size, handle)
            for x, (_, _, off) in zip(leaves, table, strict=True):
                np.ndarray(x.shape, x.dtype, shm.buf, off)[...] = x
            meta = Chunk(chunk.epoch, chunk.start, chunk.end, chunk.positions)
            conn.send(("shared", task_id, meta, shm.name.lstrip("/"), treedef, table, unstack))
        except RecordError as e:
            conn.send(("error", task_id, e))
        except (EOFError, OSError):
            return
        except BaseException as e:  # noqa: BLE001  (anything else still reaches the consumer)
            tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
            conn.send(("error", task_id, RecordError(
                f"fx.data: worker failed on positions {start}..{end - 1} of epoch {epoch}: "
                f"{type(e).__name__}: {e}\n{tb}", None, epoch, start, tb)))


@contextlib.contextmanager
def _sigint_deferred():
    """Hold back SIGINT (a real Ctrl-C or ``_thread.interrupt_main``) for the duration of the
    block and deliver it after: the pool's bookkeeping is a few dictionary updates and a pipe
    message, and a KeyboardInterrupt halfway through them would leave a task or a slot
    accounted for on one side of the pipe only. Signals reach only the main thread, so
    elsewhere (and where SIGINT is not Python's to handle) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield
        return
    caught = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            previous(signal.SIGINT, caught[0])


def _unlink(name: str) -> None:
    try:
        shared_memory.SharedMemory(name=name).unlink()
    except FileNotFoundError:
        pass


def _shutdown(procs: list, conns: list, names: set, mapped: dict, tag: str) -> None:
    """Stop the workers (politely, then by force) and unlink every segment they may have
    made. Runs from close(), from garbage collection and at interpreter exit."""
    for c in conns:
        try:
            c.send(None)
        except (OSError, ValueError):
            pass
    for p in procs:
        p.join(timeout=1.0)
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(timeout=1.0)
        if p.is_alive():
            p.kill()
            p.join(timeout=1.0)
    for c in conns:
        c.close()
    for shm in mapped.values():
        shm.close()
    mapped.clear()
    # Announced segments, and (where the names are visible) any whose announcement was still
    # in a pipe when the worker died.
    if os.path.isdir("/dev/shm"):
        names |= {f for f in os.listdir("/dev/shm") if f.startswith(tag + "_")}
    for name in names:
        _unlink(name)
    names.clear()


class WorkerPool:
    """``num_workers`` spawned worker processes, reusable across iterators. Close it with
    ``close()`` (or a ``with`` block); garbage collection and interpreter exit close it too.

    >>> import fx.data
    >>> with fx.data.WorkerPool(0) as pool:
    ...     pool.num_workers
    0
    """

    def __init__(self, num_workers: int):
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"fx.data.WorkerPool: num_workers must be a non-negative integer, "
                             f"got {num_workers!r}")
        self.num_workers = num_workers
        self.tag = f"fxdata_{os.getpid()}_{next(_POOL_IDS)}"
        ctx = mp.get_context("spawn")
        self._procs, self._conns = [], []
        self._inflight: dict[int, tuple[int, int]] = {}  # task -> (worker, plan)
        self._early: list[tuple[int, Any]] = []  # results received by another's discard
        self._load = [0] * num_workers
        self._names: set[str] = set()  # every segment a worker announced
        self._mapped: dict[str, shared_memory.SharedMemory] = {}  # the consumer's mappings
        self._plan_of: list[int | None] = [None] * num_workers
        self._plan_ids = itertools.count()
        self.capacity = 2 * num_workers
        self.broken: str | None = None
        for w in range(num_workers):
            parent, child = ctx.Pipe(duplex=True)
            p = ctx.Process(target=_worker_main, args=(child, self.tag, w), daemon=True,
                            name="fx.data.worker")
            p.start()
            child.close()
            self._procs.append(p)
            self._conns.append(parent)
        self._finalizer = weakref.finalize(self, _shutdown, self._procs, self._conns,
                                           self._names, self._mapped, self.tag)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def bind(self, plan: Plan | bytes) -> int:
        """Register ``plan`` (or its :func:`pickle_plan` bytes); later tasks name it."""
        data = plan if isinstance(plan, bytes) else pickle_plan(plan)
        plan_id = next(self._plan_ids)
        self._plan_data = (plan_id, data)
        return plan_id

    def submit(self, plan_id: int, task_id: int, epoch: int, start: int, end: int,
               indices) -> None:
        w = min(range(self.num_workers), key=self._load.__getitem__)
        # The task is in flight from before its message is sent until its result is handled,
        # and Ctrl-C waits for the bookkeeping: a result never arrives for a task the pool
        # does not know, and a slot never stays with the consumer unreleased.
        with _sigint_deferred():
            self._inflight[task_id] = (w, plan_id)
            self._load[w] += 1
            try:
                if self._plan_of[w] != plan_id:
                    self._plan_of[w] = None
                    self._conns[w].send(("plan", plan_id, self._plan_data[1]))
                    self._plan_of[w] = plan_id
                self._conns[w].send(("task", plan_id, task_id, epoch, start, end, indices))
            except OSError:
                del self._inflight[task_id]
                self._load[w] -= 1
                p = self._procs[w]
                p.join(timeout=1.0)
                self.broken = (f"fx.data: worker process {w} (pid {p.pid}) is gone (exit code "
                               f"{p.exitcode}); it could not take positions {start}..{end - 1} "
                               f"of epoch {epoch}")
                raise WorkerDied(self.broken) from None

    def holds(self, task_id: int) -> bool:
        """Whether ``task_id`` is in flight (sent to a worker, its result not yet handled) or
        its result waits for the next :meth:`poll`."""
        return task_id in self._inflight or any(t == task_id for t, _ in self._early)

    def poll(self, timeout: float | None) -> list[tuple[int, Any]]:
        """Results that arrived within ``timeout`` seconds (first those another iterator's
        :meth:`discard` received); raises :class:`WorkerDied` when a worker holding tasks
        exited."""
        if self._early:
            out, self._early = self._early, []
            return out
        return self._poll_wire(timeout)

    def _poll_wire(self, timeout: float | None) -> list[tuple[int, Any]]:
        live = [c for c, n in zip(self._conns, self._load, strict=True) if n]
        sentinels = {p.sentinel: i for i, p in enumerate(self._procs)}
        ready = connection.wait(live + list(sentinels), timeout)
        out = []
        with _sigint_deferred():  # a received message is always handled (see submit)
            for r in ready:
                if r in sentinels:
                    continue
                while r.poll():  # everything this worker sent so far
                    try:
                        msg = r.recv()
                    except (EOFError, OSError):
                        break
                    result = self._receive(r, msg)
                    if result is not None:
                        out.append(result)
        for i, p in enumerate(self._procs):
            if self._load[i] and not p.is_alive():
                held = sorted(t for t, (w, _) in self._inflight.items() if w == i)
                self.broken = (f"fx.data: worker process {i} (pid {p.pid}) died with exit code "
                               f"{p.exitcode} while holding tasks {held}")
                raise WorkerDied(self.broken)
        return out

    def _receive(self, conn, msg):
        kind = msg[0]
        if kind == "segment":
            self._names.add(msg[1])
            return None
        if kind == "retire":
            shm = self._mapped.pop(msg[1], None)
            if shm is not None:
                shm.close()
            self._names.discard(msg[1])
            return None
        task_id = msg[1]
        owner = self._inflight.pop(task_id, None)
        if owner is not None:
            self._load[owner[0]] -= 1
        if kind != "shared":
            return None if owner is None else (task_id, msg[2])
        _, _, meta, name, treedef, table, unstack = msg
        try:
            if owner is None:  # a task close() dropped: only the slot goes back
                return None
            shm = self._mapped.get(name)
            if shm is None:
                shm = self._mapped[name] = shared_memory.SharedMemory(name=name)
            # Copy out, then hand the slot back: the batch must outlive the slot's next use.
            leaves = [np.array(np.ndarray(shape, np.dtype(dt), shm.buf, off))
                      for dt, shape, off in table]
        finally:
            try:
                conn.send(("release", name))
            except OSError:
                pass  # a dead worker is reported by the caller
        tree = tree_unflatten(treedef, leaves)
        if unstack:
            meta.stacked = tree
            meta.records, meta.stacked = meta.unstack(), None
        else:
            meta.stacked = tree
        return task_id, meta

    def discard(self, wait: float = 5.0, tasks=None) -> None:
        """Drop the results of ``tasks`` (default: every task in flight), waiting up to
        ``wait`` seconds for them, so the pool can serve another iterator; results of other
        tasks that arrive meanwhile are kept for their iterator's next :meth:`poll` (an
        iterator closed by the garbage collector while another iterates must not swallow the
        other's results). A pool that does not drain is shut down."""
        mine = set(self._inflight) if tasks is None else set(tasks)
        self._early = [(t, r) for t, r in self._early if t not in mine]
        deadline = time.monotonic() + wait
        try:
            while mine & self._inflight.keys() and time.monotonic() < deadline:
                for t, r in self._poll_wire(max(0.0, min(deadline - time.monotonic(), 0.5))):
                    if t not in mine:
                        self._early.append((t, r))
        except WorkerDied:
            pass
        if mine & self._inflight.keys():
            self.close()

    def close(self) -> None:
        self._inflight.clear()
        self._early.clear()
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
