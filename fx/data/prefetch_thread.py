"""A background thread that runs an iterator ahead of its consumer.

:func:`prefetch` keeps up to ``size`` items of any iterator ready, in the producer's order, and
re-raises the producer's exceptions in the consumer at the position where they happened. The
thread holds no reference to the prefetcher, so dropping the prefetcher stops the thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator

__all__ = ["prefetch"]


class _Raised:
    """An exception from the producer, carried through the queue to the consumer."""

    def __init__(self, error: BaseException):
        self.error = error


_END = object()


def prefetch(iterator: Iterable, size: int = 2) -> Iterator:
    """Iterate over ``iterator`` in a background thread, keeping up to ``size`` items ready.

    Items come out in the producer's order. An exception raised by the producer is re-raised
    by the consumer at the position where it happened (after the items before it). Calling
    ``close()`` on the result (or dropping it) stops the thread at its next item.

    >>> list(fx.data.prefetch(iter(range(5)), size=2))
    [0, 1, 2, 3, 4]
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"fx.data.prefetch: size must be a positive integer, got {size!r}")
    return _Prefetcher(iter(iterator), size)


class _Prefetcher:
    def __init__(self, iterator: Iterator, size: int):
        self._queue: queue.Queue = queue.Queue(maxsize=size)
        self._stop = threading.Event()
        self._done = False
        # The thread sees only the queue, the event and the iterator (not self), so dropping
        # the prefetcher lets __del__ stop it.
        self._thread = threading.Thread(target=_produce, args=(iterator, self._queue, self._stop),
                                        name="fx.data.prefetch", daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        item = self._queue.get()
        if item is _END:
            self.close()
            raise StopIteration
        if isinstance(item, _Raised):
            self.close()
            raise item.error
        return item

    def close(self) -> None:
        """Stop the producer thread; later ``next`` calls raise StopIteration."""
        self._done = True
        self._stop.set()

    def __del__(self):
        self._stop.set()


def _produce(iterator: Iterator, q: queue.Queue, stop: threading.Event) -> None:
    def put(item) -> bool:
        # Poll so the producer notices a consumer that went away instead of blocking forever.
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    try:
        for item in iterator:
            if not put(item):
                return
    except BaseException as e:  # noqa: BLE001  (everything goes to the consumer)
        put(_Raised(e))
        return
    put(_END)
