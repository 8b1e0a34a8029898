"""fx.data worker processes: the same batches as inline for 1, 2 (and, with -m slow, 4)
workers under random per-record timing; a worker's exception, a worker's death (os._exit),
Ctrl-C and garbage collection, each with bounded timeouts, leaving no worker process and no
/dev/shm segment behind.

Spawned workers take seconds to start (each imports NumPy and fx), so the tests share one
two-worker pool where they can and start at most four other workers in the default run."""

from __future__ import annotations

import _thread
import gc
import glob
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import fx.data
from fx.data import Dataset, WorkerPool

sys.path.insert(0, str(Path(__file__).parent))
import fx_data_fns as fns  # noqa: E402


def _src(n=40):
    return {"x": np.arange(n * 2, dtype=np.float32).reshape(n, 2), "y": np.arange(n)}


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b, strict=True):
        lu, tu = fx.tree_util.tree_flatten(u)
        lv, tv = fx.tree_util.tree_flatten(v)
        assert tu == tv
        for p, q in zip(lu, lv, strict=True):
            assert p.dtype == q.dtype and p.shape == q.shape and p.tobytes() == q.tobytes()


def _segments(tag=None):
    """This process's fx.data segments (of one pool with ``tag``)."""
    return glob.glob(f"/dev/shm/{tag}_*" if tag else f"/dev/shm/fxdata_{os.getpid()}_*")


def _only_the_pools_slots(pool):
    """A live pool keeps a few reusable segments per worker (released at close), no more."""
    return len(_segments(pool.tag)) <= 3 * pool.num_workers


def _gone(pids, timeout=10.0):
    deadline = time.monotonic() + timeout
    alive = {p.pid for p in mp.active_children()}
    while time.monotonic() < deadline and set(pids) & alive:
        time.sleep(0.05)
        alive = {p.pid for p in mp.active_children()}
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # A zombie would still answer: every worker must have been joined (reaped).
        pytest.fail(f"worker process {pid} is still there")
    return True


@pytest.fixture(scope="module")
def pool2():
    pool = WorkerPool(2)
    yield pool
    pids = pool.pids
    pool.close()
    assert _gone(pids) and not _segments()


PIPELINES = {
    "batched": lambda: Dataset.from_source(_src()).shuffle(1).map(fns.jitter_square)
    .random_map(fns.noisy, seed=2).batch(6).map(fns.add_batch_sum).repeat(2),
    "filtered": lambda: Dataset.from_source(_src()).shuffle(1).filter(fns.keep_even_y)
    .map(fns.jitter_square).batch(4),
    "records": lambda: Dataset.from_source(_src(30)).random_map(fns.noisy, seed=5)
    .map(fns.jitter_square),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_two_workers_give_the_inline_items(pool2, name):
    ds = PIPELINES[name]()
    _same(list(ds.iterator(pool=pool2)), list(ds))
    assert _only_the_pools_slots(pool2)


def test_resume_across_iterators_and_exceptions_keep_the_pool(pool2):
    ds = PIPELINES["batched"]()
    full = list(ds)
    it = ds.iterator(pool=pool2)
    for _ in range(5):
        next(it)
    state = it.get_state()
    it.close()
    again = ds.iterator(pool=pool2)
    again.set_state(state)
    _same(list(again), full[5:])
    bad = Dataset.from_source(_src()).map(fns.fail_on_13).batch(4)
    with pytest.raises(fx.data.RecordError, match="record 13 raised ValueError") as info:
        list(bad.iterator(pool=pool2))
    assert info.value.index == 13 and "fail_on_13" in info.value.worker_traceback
    assert "raise ValueError" in str(info.value)
    _same(list(ds.iterator(pool=pool2)), full)  # the pool still serves
    assert _only_the_pools_slots(pool2)


def test_one_worker_and_garbage_collection_stop_the_worker():
    ds = PIPELINES["batched"]().map(fns.jitter_square, num_workers=1)
    it = iter(ds)
    assert len(it) == 14
    got = list(it)
    pids, tag = it._executor.pids, it._executor.tag
    _same(got, list(PIPELINES["batched"]().map(fns.jitter_square)))
    del it
    gc.collect()
    assert _gone(pids) and not _segments(tag)


def test_ragged_records_travel_pickled(pool2):
    ds = Dataset.from_source([np.arange(n, dtype=np.int16) for n in range(70)]).map(fns.double)
    got = list(ds.iterator(pool=pool2))
    assert [r.tolist() for r in got] == [list(range(0, 2 * n, 2)) for n in range(70)]
    assert all(r.dtype == np.int16 for r in got)


def test_unpicklable_pipelines_get_a_clear_error(pool2):
    with pytest.raises(TypeError, match="define the map/filter functions at module level"):
        Dataset.from_source(_src()).map(lambda r: r).iterator(pool=pool2)


def _interrupt_soon(delay=0.3):
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def _sigint_reaches_python() -> str | None:
    """Make a real SIGINT reach Python's handler in this process again, and say what had
    stopped it (None: nothing). A test process shares itself with every test before this
    one; two CI runs of this stop saw a real SIGINT not raise here while the same test
    passed alone and after the MPI, NCCL and example tests, so the state is reported."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def c_handler() -> int:
        buf = ctypes.create_string_buffer(256)  # struct sigaction: its handler comes first
        libc.sigaction(signal.SIGINT, None, buf)
        return int.from_bytes(buf.raw[:8], "little")

    found = []
    if signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []):
        found.append("SIGINT was blocked in the main thread")
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    before = c_handler()
    python = signal.getsignal(signal.SIGINT)
    if python is not signal.default_int_handler:
        found.append(f"Python's SIGINT handler was {python!r}, not default_int_handler")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if c_handler() != before:
        found.append(f"the C handler of SIGINT was not Python's ({before:#x})")
    return "; ".join(found) or None


def test_ctrl_c_stops_the_iteration_and_drains_a_shared_pool(pool2):
    problem = _sigint_reaches_python()
    if problem:
        warnings.warn(f"test_ctrl_c: {problem} (restored for this test)", stacklevel=1)
    # 400 records of 50 ms on two workers: about 10 s of work, so the interrupt 0.3 s in lands
    # during the iteration however late a loaded machine runs the timer (with 40 records
    # the epoch could end first: the iteration then finished and the test saw no interrupt).
    ds = Dataset.from_source(_src(400)).map(fns.slow).batch(2)
    it = ds.iterator(pool=pool2)
    next(it)
    timer = _interrupt_soon()
    with pytest.raises(KeyboardInterrupt):
        for _ in it:
            pass
    timer.join()
    with pytest.raises(StopIteration):
        next(it)
    assert not pool2.closed and _only_the_pools_slots(pool2)
    again, inline = ds.iterator(pool=pool2), iter(ds)
    _same([next(again) for _ in range(3)], [next(inline) for _ in range(3)])  # still serves
    again.close()


def test_interrupts_anywhere_leave_a_shared_pool_consistent(pool2):
    # Ctrl-C at 40 points spread over a fast pipeline's bookkeeping (a task sent but not yet
    # recorded, a result received but its slot not yet released): every time the pool drains
    # and serves the next iterator the inline batches. Without the deferred SIGINT about one
    # interrupt in ten left a result for a task the pool did not know (KeyError) or a slot
    # never released (the pool shut down on drain).
    ds = Dataset.from_source(np.arange(8000, dtype=np.float32).reshape(4000, 2))
    ds = ds.map(fns.double).batch(2)
    want = [next(iter(ds))]
    delays = np.random.default_rng(0).uniform(0.0, 0.03, 40)
    for delay in delays:
        it = ds.iterator(pool=pool2)
        next(it)
        timer = threading.Timer(delay, _thread.interrupt_main)
        try:
            timer.start()
            for _ in it:
                pass
            timer.join()  # the interrupt lands here when the epoch ended first
        except KeyboardInterrupt:
            pass
        timer.join()
        again = ds.iterator(pool=pool2)
        _same([next(again)], want)
        again.close()
        assert not pool2.closed
    assert _only_the_pools_slots(pool2)


def test_a_task_lost_from_the_books_is_computed_again(pool2):
    # The pool forgets a task while its worker still computes it (the state an interrupt
    # between the pool's and the iterator's bookkeeping could leave): the iterator submits
    # it again instead of waiting for ever; the stale result is dropped, the data the same.
    ds = Dataset.from_source(_src()).map(fns.jitter_square).batch(2)
    it = ds.iterator(pool=pool2)
    first = next(it)
    lost = next(t for t in it._order if t not in it._results and pool2.holds(t))
    w, _ = pool2._inflight.pop(lost)
    pool2._load[w] -= 1
    got = [first, *it]
    _same(got, list(ds))
    assert not pool2.holds(lost) and _only_the_pools_slots(pool2)


def test_closing_one_iterator_keeps_anothers_results(pool2):
    # An iterator closed while another iterates on the same pool (the garbage collector
    # closes a dropped one at any time, e.g. one held in a cycle by an interrupt's traceback)
    # drains only its own tasks: the other's results wait for it. Before, the drain dropped
    # them, and the other iterator waited for ever.
    ds = Dataset.from_source(_src()).map(fns.slow).batch(2)
    a = ds.iterator(pool=pool2)
    next(a)
    b = ds.iterator(pool=pool2)
    first = next(b)
    outstanding = [t for t in b._order if t not in b._results]
    assert outstanding
    a.close()
    assert all(pool2.holds(t) for t in outstanding)
    _same([first, *b], list(ds))
    assert not pool2.closed and _only_the_pools_slots(pool2)


def test_a_dead_worker_is_reported_not_waited_on(pool2):
    # Last of the pool's users: the death breaks the pool, which is then shut down.
    ds = Dataset.from_source(_src()).map(fns.die_on_13).batch(4)
    pids = pool2.pids
    t = time.monotonic()
    # (It dies holding its task, or, on a loaded machine, before another task sent to it.)
    with pytest.raises(fx.data.WorkerDied, match=r"worker process \d \(pid \d+\) (died with "
                       r"exit code 7 while holding tasks|is gone \(exit code 7\))"):
        list(ds.iterator(pool=pool2))
    assert time.monotonic() - t < 60
    assert pool2.closed and _gone(pids) and not _segments(pool2.tag)


@pytest.mark.slow
def test_ctrl_c_shuts_down_the_iterators_own_workers():
    ds = Dataset.from_source(_src()).map(fns.slow, num_workers=2).batch(2)
    it = iter(ds)
    pids, tag = it._executor.pids, it._executor.tag
    next(it)
    timer = _interrupt_soon()
    with pytest.raises(KeyboardInterrupt):
        for _ in it:
            pass
    timer.join()
    assert _gone(pids) and not _segments(tag)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [("processes", 4), ("threads", 4), ("processes", 2)])
def test_more_workers_and_prefetch(workers):
    kind, k = workers
    for make in PIPELINES.values():
        ds = make()
        want = [fns.jitter_square(w) for w in ds]  # the extra map below, on records or batches
        it = iter(ds.map(fns.jitter_square, num_workers=k, workers=kind).prefetch(3))
        _same(list(it), want)
        pool = it._inner._executor
        it.close()
        if kind == "processes":
            assert _gone(pool.pids) and not _segments(pool.tag)
