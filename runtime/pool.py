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
