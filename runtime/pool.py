"""Per-call state for executables: one is checked out for each call, so concurrent calls of
one compiled program never share an arena, a pointer table or a loop's carry buffers.

An executable is immutable after construction; everything a call writes (the temporaries'
arena, the pointer table the C entry points read, the scratch of compiled loops) lives in a
state object made by the executable's factory. A call takes a free state or makes a new one,
and gives it back when it returns (also when it raises: a state holds scratch only, nothing
a later call reads before writing). At most ``keep`` idle states are kept, so a burst of many
threads does not pin that many arenas for the program's lifetime.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class StatePool(Generic[T]):
    def __init__(self, make: Callable[[], T], keep: int = 8):
        self._make = make
        self._keep = keep
        self._free: list[T] = []
        self._lock = threading.Lock()
        self.created = 0  # how many states were ever made (tests and as_text read it)

    def acquire(self) -> T:
        # list.pop and list.append are atomic (one bytecode under the GIL, and locked per
        # list in free-threaded builds): the hot path takes no lock of its own.
        try:
            return self._free.pop()
        except IndexError:
            pass
        with self._lock:
            self.created += 1
        return self._make()

    def release(self, state: T) -> None:
        if len(self._free) < self._keep:  # (a race may keep one more: harmless)
            self._free.append(state)

    @property
    def idle(self) -> int:
        return len(self._free)


# --- worker threads for concurrent steps -----------------------------------------------------

_workers = None
_workers_lock = threading.Lock()
_local = threading.local()


def workers():
    """The process's small pool of threads that run independent steps of a program at the
    same time (C entry points and BLAS/LAPACK calls release the GIL): at most four, at most
    the machine's cores. Made on first use."""
    global _workers
    if _workers is None:
        with _workers_lock:
            if _workers is None:
                from concurrent.futures import ThreadPoolExecutor

                _workers = ThreadPoolExecutor(
                    max_workers=max(1, min(4, os.cpu_count() or 1)),
                    thread_name_prefix="fx-step", initializer=_mark_worker)
    return _workers


def _mark_worker() -> None:
    _local.worker = True


def in_worker() -> bool:
    """True on a worker thread: a program called from a step that runs there (a loop body)
    runs its own steps in order, so no worker ever waits for a busy pool."""
    return getattr(_local, "worker", False)


def concurrency_enabled(threaded_libraries: bool = False) -> bool:
    """Whether independent steps run at the same time: ``FX_CONCURRENT=1`` or ``0`` says so;
    unset, yes — but for a target whose steps are themselves multithreaded
    (``threaded_libraries``: the CPU's BLAS and OpenMP kernels), only where they run on one
    thread each (``OPENBLAS_NUM_THREADS=1`` and ``OMP_NUM_THREADS=1``): otherwise one large
    GEMM already uses every core, and two at once oversubscribe them (the MLP training step
    on 2 cores measured ~17% slower with default BLAS threads)."""
    setting = os.environ.get("FX_CONCURRENT")
    if setting is not None:
        return setting != "0"
    if not threaded_libraries:
        return True
    return all(os.environ.get(k) == "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"))
