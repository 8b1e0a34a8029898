"""Iterating a Dataset: scheduling chunks, restoring their order, batching, checkpoints.

The iterator cuts each epoch into chunks of consecutive positions (one batch each when the
dataset is batched and unfiltered, else 64 positions), hands them to the executor (inline,
threads or processes; ``fx.data.workers``) up to a bounded number ahead, and takes the results
back in chunk order. Its state is the first position whose record is not yet part of a
delivered item: ``{"version", "epoch", "position", "seed", "shard"}``, small and JSON-ready.
Restoring it recomputes everything from that position, which gives exactly the items an
uninterrupted run would have given, because every record is a function of (seed, epoch,
index).

With ``prefetch(n)`` a thread runs the iterator ahead; the state it reports is that of the last
item the consumer took, not of the items waiting in the queue.
"""

from __future__ import annotations

import collections
import itertools
import queue
import threading
from typing import Any

import numpy as np

from fx.data.chunks import Chunk, RecordError, run_chunk, stack_records
from fx.data.device import DeviceCopier
from fx.data.workers import ThreadExecutor, WorkerDied, WorkerPool, pickle_plan

__all__ = ["DatasetIterator", "make_iterator"]

STATE_VERSION = 1
_RECORD_CHUNK = 64
_EPOCH_END = object()
# Task ids are unique across iterators: a shared pool names its segments by them.
_TASK_IDS = itertools.count()


class _Halted(Exception):
    """The prefetch thread was asked to stop while waiting for a chunk."""


def _remaining(ds, epoch: int, pos: int) -> int:
    per = ds.items_per_epoch()
    if per is None or ds.epochs is None:
        raise TypeError("fx.data: the length of a filtered or endless dataset is unknown")
    done = pos // ds.batch_size if ds.batch_size else pos
    return max(0, per * (ds.epochs - epoch) - done)


class DatasetIterator:
    """Iterates a Dataset; ``get_state``/``set_state`` checkpoint it, ``close`` stops its
    workers (garbage collection and Ctrl-C do too)."""

    def __init__(self, ds, pool: WorkerPool | None = None):
        self._ds = ds
        self._plan = ds.plan()
        self._direct = self._plan.batch_size is not None
        self._chunk = ds.batch_size if self._direct else _RECORD_CHUNK
        self._m = ds.epoch_length()
        if ds.epochs is None and self._m == 0:
            raise ValueError("fx.data: a dataset repeated forever has no records in an epoch")
        self._order_cache: tuple[int, np.ndarray] | None = None
        self._owned = pool is None
        self._executor: Any = None
        self._plan_id = None
        if ds.num_workers and ds.workers == "threads":
            self._executor = ThreadExecutor(self._plan, ds.num_workers)
        elif ds.num_workers or (pool is not None and pool.num_workers):
            data = pickle_plan(self._plan)  # before any process starts
            self._executor = pool if pool is not None else WorkerPool(ds.num_workers)
            self._plan_id = self._executor.bind(data)
        self._copier = DeviceCopier(ds.device) if ds.device is not None else None
        self._closed = False
        self._halt_requested = False
        self._epoch, self._pos = 0, 0
        self._reset()

    # --- state ------------------------------------------------------------------------------

    def _reset(self) -> None:
        self._task_epoch, self._task_start = self._epoch, self._pos
        self._order: collections.deque = collections.deque()  # task ids in flight, in order
        self._tasks: dict[int, tuple] = {}
        self._results: dict[int, Any] = {}
        self._buffer: collections.deque = collections.deque()

    def get_state(self) -> dict:
        """Where the next item starts: restore it with :meth:`set_state` (in any process)."""
        return {"version": STATE_VERSION, "epoch": self._epoch, "position": self._pos,
                "seed": self._ds.seed, "shard": [self._ds.shard_index, self._ds.shard_count]}

    def set_state(self, state: dict) -> None:
        """Continue from ``state`` (from :meth:`get_state` of an iterator of the same
        dataset): the next item is the one that came after it."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise ValueError(f"fx.data: set_state expects a state of version {STATE_VERSION} "
                             f"from get_state(), got {state!r}")
        mine = self.get_state()
        if state["seed"] != mine["seed"] or list(state["shard"]) != mine["shard"]:
            raise ValueError(f"fx.data: the state is of a dataset with seed {state['seed']} and "
                             f"shard {state['shard']}, this one has seed {mine['seed']} and "
                             f"shard {mine['shard']}")
        if self._closed:
            raise RuntimeError("fx.data: set_state on a closed iterator; make a new one")
        self._discard()
        self._epoch, self._pos = int(state["epoch"]), int(state["position"])
        self._reset()

    def __len__(self) -> int:
        return _remaining(self._ds, self._epoch, self._pos)

    # --- chunks -----------------------------------------------------------------------------

    def _limit(self) -> int:
        if self._direct and self._ds.drop_remainder:
            return self._m - self._m % self._ds.batch_size
        return self._m

    def _indices(self, epoch: int) -> np.ndarray:
        if self._order_cache is None or self._order_cache[0] != epoch:
            self._order_cache = (epoch, self._ds.epoch_indices(epoch))
        return self._order_cache[1]

    def _next_task(self):
        epochs, limit = self._ds.epochs, self._limit()
        while epochs is None or self._task_epoch < epochs:
            if self._task_start < limit:
                e, start = self._task_epoch, self._task_start
                end = min(start + self._chunk, limit)
                self._task_start = end
                return e, start, end, self._indices(e)[start:end]
            self._task_epoch, self._task_start = self._task_epoch + 1, 0
            if limit == 0:
                return None
        return None

    def _capacity(self) -> int:
        return 1 if self._executor is None else max(1, self._executor.capacity)

    def _next_chunk(self) -> Chunk | None:
        while True:
            while len(self._order) < self._capacity():
                task = self._next_task()
                if task is None:
                    break
                tid = next(_TASK_IDS)
                self._order.append(tid)
                self._tasks[tid] = task
                if isinstance(self._executor, WorkerPool):
                    self._executor.submit(self._plan_id, tid, *task)
                elif self._executor is not None:
                    self._executor.submit(tid, *task)
            if not self._order:
                return None
            tid = self._order[0]
            if tid in self._results:
                self._order.popleft()
                self._tasks.pop(tid)
                result = self._results.pop(tid)
                if isinstance(result, BaseException):
                    self.close()
                    raise result
                return result
            if self._executor is None:
                try:
                    self._results[tid] = run_chunk(self._plan, *self._tasks[tid])
                except RecordError as e:
                    self._results[tid] = e
                continue
            try:
                for done, result in self._executor.poll(0.25):
                    if done in self._tasks:  # not a task discarded by set_state
                        self._results[done] = result
                # A task the pool no longer holds and whose result never reached this
                # iterator (an interrupt landing between the pool's bookkeeping and ours):
                # its chunk is computed again rather than waited for forever.
                if isinstance(self._executor, WorkerPool) and tid not in self._results \
                        and not self._executor.holds(tid):
                    self._executor.submit(self._plan_id, tid, *self._tasks[tid])
            except WorkerDied:
                self.close()
                raise
            if self._closed:
                raise StopIteration
            if self._halt_requested:
                raise _Halted

    # --- items ------------------------------------------------------------------------------

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            raise StopIteration
        try:
            item = self._next_direct() if self._direct else self._next_from_records()
        except (KeyboardInterrupt, SystemExit):
            self.close()
            raise
        return self._copier(item) if self._copier is not None else item

    def _advance(self, epoch: int, pos: int) -> None:
        if pos >= self._limit():
            epoch, pos = epoch + 1, 0
        self._epoch, self._pos = epoch, pos

    def _next_direct(self):
        chunk = self._next_chunk()
        if chunk is None:
            raise StopIteration
        self._advance(chunk.epoch, chunk.end)
        return chunk.stacked

    def _next_from_records(self):
        n = self._ds.batch_size
        buf = self._buffer
        while True:
            if n is None:
                while buf:
                    epoch, pos, record = buf.popleft()
                    if record is _EPOCH_END:
                        self._epoch, self._pos = epoch + 1, 0
                        continue
                    self._advance(epoch, pos + 1)
                    return record
            else:
                item = self._take_batch(n)
                if item is not None:
                    return item
            chunk = self._next_chunk()
            if chunk is None:
                raise StopIteration
            buf.extend(zip([chunk.epoch] * len(chunk.positions), chunk.positions.tolist(),
                           chunk.unstack(), strict=True))
            if chunk.end >= self._m:
                buf.append((chunk.epoch, -1, _EPOCH_END))

    def _take_batch(self, n: int):
        buf = self._buffer
        while True:
            count = 0
            for entry in buf:
                if entry[2] is _EPOCH_END or count == n:
                    break
                count += 1
            ended = count < n and count < len(buf)  # an epoch's end follows the records
            if count < n and not ended:
                return None
            entries = [buf.popleft() for _ in range(count)]
            if ended:
                self._epoch, self._pos = buf.popleft()[0] + 1, 0
                if not entries or self._ds.drop_remainder:
                    continue
            else:
                self._advance(entries[-1][0], entries[-1][1] + 1)
            batch = stack_records([r for _, _, r in entries])
            for op in self._ds.batch_ops:
                batch = op.fn(batch)
            return batch

    # --- shutdown ---------------------------------------------------------------------------

    def _discard(self) -> None:
        if self._executor is not None:
            if isinstance(self._executor, WorkerPool):
                self._executor.discard(wait=5.0)
            else:
                self._executor.discard()

    def close(self) -> None:
        """Stop the workers (or return a shared pool, drained); later ``next`` calls raise
        StopIteration."""
        if self._closed:
            return
        self._closed = True
        ex = self._executor
        if ex is None:
            return
        if self._owned or (isinstance(ex, WorkerPool) and ex.broken):
            ex.close()
        elif isinstance(ex, WorkerPool):  # a shared pool: only this iterator's tasks
            ex.discard(wait=5.0, tasks=list(self._tasks))
        else:
            ex.discard(wait=5.0)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001  (nothing to report to during collection)
            pass


class PrefetchIterator:
    """Runs a DatasetIterator ``size`` items ahead in a thread (see the module docstring)."""

    def __init__(self, inner: DatasetIterator, size: int):
        self._inner, self._size = inner, size
        self._state = inner.get_state()
        self._start()

    def _start(self) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=self._size)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=_produce, args=(self._inner, self._queue,
                                                               self._stop),
                                        name="fx.data.prefetch", daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        while True:
            try:
                kind, item, state = self._queue.get(timeout=0.25)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    self._done = True
                    raise StopIteration from None
            except (KeyboardInterrupt, SystemExit):
                self.close()
                raise
        if kind == "end":
            self._done = True
            raise StopIteration
        if kind == "error":
            self.close()
            raise item
        self._state = state
        return item

    def __len__(self) -> int:
        return _remaining(self._inner._ds, self._state["epoch"], self._state["position"])

    def get_state(self) -> dict:
        return dict(self._state)

    def set_state(self, state: dict) -> None:
        self._halt()
        self._inner.set_state(state)
        self._state = self._inner.get_state()
        self._start()

    def _halt(self) -> None:
        self._stop.set()
        self._inner._halt_requested = True
        self._thread.join(timeout=10.0)
        self._inner._halt_requested = False

    def close(self) -> None:
        self._done = True
        self._halt()
        self._inner.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


def _produce(inner: DatasetIterator, q: queue.Queue, stop: threading.Event) -> None:
    def put(entry) -> bool:
        while not stop.is_set():
            try:
                q.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    try:
        while not stop.is_set():
            try:
                item = next(inner)
            except StopIteration:
                put(("end", None, None))
                return
            except _Halted:
                return
            if not put(("item", item, inner.get_state())):
                return
    except BaseException as e:  # noqa: BLE001  (everything goes to the consumer)
        put(("error", e, None))


def make_iterator(ds, pool=None):
    inner = DatasetIterator(ds, pool)
    return PrefetchIterator(inner, ds.prefetch_size) if ds.prefetch_size else inner
