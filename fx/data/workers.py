"""Executors for chunks: worker threads, or a pool of spawned worker processes.

Both run :func:`fx.data.chunks.run_chunk` and hand back ``(task_id, result)`` pairs in whatever
order the work finishes; the iterator puts them back in task order, so timing never changes the
output.

**Processes** (:class:`WorkerPool`) are started with the ``spawn`` method (safe with threads and
CUDA, and the same on every OS); each imports NumPy and fx, which takes a second or two, so a
pool can be shared by several iterators (``Dataset.iterator(pool=...)``). A pool receives each
plan once, pickled; a task is a few integers and the chunk's source indices. A worker writes the
chunk's arrays into a new shared-memory segment named after the pool and the task (so the
consumer knows every name that may exist and can unlink them even if the worker dies); the
consumer copies the arrays out and unlinks the segment at once. Only records that cannot be
stacked (ragged shapes, non-array leaves) travel pickled.

Workers ignore SIGINT: on Ctrl-C the consumer's ``KeyboardInterrupt`` closes the pool, which
asks the workers to stop, then terminates and finally kills them. A worker that dies (a crash,
``os._exit``, the OOM killer) is noticed through its process sentinel and reported with its exit
code and the records it held.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import multiprocessing as mp
import os
import pickle
import signal
import time
import traceback
import weakref
from multiprocessing import connection, shared_memory
from typing import Any

import numpy as np

from fx.data.chunks import Chunk, Plan, RecordError, run_chunk
from fx.tree_util import tree_flatten, tree_unflatten

__all__ = ["ThreadExecutor", "WorkerDied", "WorkerPool"]

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


def _segment_name(pool_tag: str, task_id: int) -> str:
    return f"{pool_tag}_{task_id}"


def _to_shared(name: str, chunk: Chunk):
    """Move the chunk's arrays into a new segment; returns the leaf table (or None when the
    chunk cannot be stacked, and it travels pickled)."""
    tree = chunk.stacked
    if tree is None:
        try:
            from fx.data.chunks import stack_records

            tree = stack_records(chunk.records) if chunk.records else None
        except (ValueError, TypeError):
            return None
        if tree is None:
            return None
    leaves, treedef = tree_flatten(tree)
    leaves = [np.ascontiguousarray(x) for x in leaves]
    if any(x.dtype == object for x in leaves):
        return None
    table, at = [], 0
    for x in leaves:
        table.append((x.dtype.str, x.shape, at))
        at += x.nbytes + (-x.nbytes % 64)
    shm = shared_memory.SharedMemory(name=name, create=True, size=max(at, 1))
    try:
        for x, (_, _, off) in zip(leaves, table, strict=True):
            np.ndarray(x.shape, x.dtype, shm.buf, off)[...] = x
    finally:
        shm.close()
    return treedef, table, chunk.stacked is None


def _from_shared(name: str, treedef, table) -> Any:
    shm = shared_memory.SharedMemory(name=name)
    try:
        leaves = [np.array(np.ndarray(shape, np.dtype(dt), shm.buf, off))
                  for dt, shape, off in table]
    finally:
        shm.close()
        shm.unlink()
    return tree_unflatten(treedef, leaves)


def _worker_main(conn, pool_tag: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    plans: dict[int, Plan] = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        if msg[0] == "plan":
            plans = {msg[1]: pickle.loads(msg[2])}
            continue
        _, plan_id, task_id, epoch, start, end, indices = msg
        try:
            chunk = run_chunk(plans[plan_id], epoch, start, end, indices)
            name = _segment_name(pool_tag, task_id)
            shared = _to_shared(name, chunk)
            if shared is None:
                conn.send(("pickled", task_id, chunk))
            else:
                treedef, table, unstack = shared
                meta = Chunk(chunk.epoch, chunk.start, chunk.end, chunk.positions)
                conn.send(("shared", task_id, meta, treedef, table, unstack))
        except RecordError as e:
            conn.send(("error", task_id, e))
        except BaseException as e:  # noqa: BLE001  (anything else still reaches the consumer)
            tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
            conn.send(("error", task_id, RecordError(
                f"fx.data: worker failed on positions {start}..{end - 1} of epoch {epoch}: "
                f"{type(e).__name__}: {e}\n{tb}", None, epoch, start, tb)))


def _shutdown(procs: list, conns: list, names: set) -> None:
    """Stop the workers (politely, then by force) and unlink every segment they may have
    left. Runs from close(), from garbage collection and at interpreter exit."""
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
    for name in names:
        try:
            shared_memory.SharedMemory(name=name).unlink()
        except FileNotFoundError:
            pass
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
        self._load = [0] * num_workers
        self._names: set[str] = set()
        self._plan_of: list[int | None] = [None] * num_workers
        self._plan_ids = itertools.count()
        self.capacity = 2 * num_workers
        self.broken: str | None = None
        for _ in range(num_workers):
            parent, child = ctx.Pipe(duplex=True)
            p = ctx.Process(target=_worker_main, args=(child, self.tag), daemon=True,
                            name="fx.data.worker")
            p.start()
            child.close()
            self._procs.append(p)
            self._conns.append(parent)
        self._finalizer = weakref.finalize(self, _shutdown, self._procs, self._conns,
                                           self._names)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def bind(self, plan: Plan) -> int:
        """Register ``plan``; later tasks name it. Checks that the plan pickles."""
        try:
            data = pickle.dumps(plan)
        except Exception as e:  # noqa: BLE001
            raise TypeError(
                f"fx.data: worker processes receive the pipeline by pickling, and it does not "
                f"pickle ({type(e).__name__}: {e}); define the map/filter functions at module "
                "level (not lambdas or closures), or use workers='threads'") from e
        plan_id = next(self._plan_ids)
        self._plan_data = (plan_id, data)
        return plan_id

    def submit(self, plan_id: int, task_id: int, epoch: int, start: int, end: int,
               indices) -> None:
        w = min(range(self.num_workers), key=self._load.__getitem__)
        self._names.add(_segment_name(self.tag, task_id))
        try:
            if self._plan_of[w] != plan_id:
                self._conns[w].send(("plan", plan_id, self._plan_data[1]))
                self._plan_of[w] = plan_id
            self._conns[w].send(("task", plan_id, task_id, epoch, start, end, indices))
        except OSError:
            p = self._procs[w]
            p.join(timeout=1.0)
            self.broken = (f"fx.data: worker process {w} (pid {p.pid}) is gone (exit code "
                           f"{p.exitcode}); it could not take positions {start}..{end - 1} "
                           f"of epoch {epoch}")
            raise WorkerDied(self.broken) from None
        self._inflight[task_id] = (w, plan_id)
        self._load[w] += 1

    def poll(self, timeout: float | None) -> list[tuple[int, Any]]:
        """Results that arrived within ``timeout`` seconds; raises :class:`WorkerDied` when a
        worker holding tasks exited."""
        live = [c for c, n in zip(self._conns, self._load, strict=True) if n]
        sentinels = {p.sentinel: i for i, p in enumerate(self._procs)}
        ready = connection.wait(live + list(sentinels), timeout)
        out = []
        for r in ready:
            if r in sentinels:
                continue
            try:
                msg = r.recv()
            except (EOFError, OSError):
                continue
            task_id = msg[1]
            w, _ = self._inflight.pop(task_id)
            self._load[w] -= 1
            name = _segment_name(self.tag, task_id)
            if msg[0] == "shared":
                _, _, meta, treedef, table, unstack = msg
                tree = _from_shared(name, treedef, table)
                if unstack:
                    meta.stacked = tree
                    meta.records = meta.unstack()
                    meta.stacked = None
                else:
                    meta.stacked = tree
                out.append((task_id, meta))
            else:
                out.append((task_id, msg[2]))
            self._names.discard(name)
        for i, p in enumerate(self._procs):
            if self._load[i] and not p.is_alive():
                held = sorted(t for t, (w, _) in self._inflight.items() if w == i)
                self.broken = (f"fx.data: worker process {i} (pid {p.pid}) died with exit code "
                               f"{p.exitcode} while holding tasks {held}")
                raise WorkerDied(self.broken)
        return out

    def discard(self, wait: float = 5.0) -> None:
        """Drop the results of every task in flight (waiting up to ``wait`` seconds for them, so
        the pool can serve another iterator); a pool that does not drain is shut down."""
        deadline = time.monotonic() + wait
        try:
            while self._inflight and time.monotonic() < deadline:
                self.poll(max(0.0, min(deadline - time.monotonic(), 0.5)))
        except WorkerDied:
            pass
        if self._inflight:
            self.close()

    def close(self) -> None:
        self._inflight.clear()
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
