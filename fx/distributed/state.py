"""The process group this process belongs to (set by ``fx.distributed.initialize``).

The core (``fx.devices``, ``fx.api``) does not import it: :func:`set_group` also sets the
process layout the core reads (:mod:`fx.processes`: this process's index, the process count,
the local device counts). Before ``initialize`` (and after ``shutdown``) the group is this
process alone.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fx import processes
from fx.distributed.transport import SelfTransport, Transport


@dataclass(frozen=True)
class ProcessGroup:
    """The processes of the run: the transport their collectives run on and each process's
    local device count (gathered once at initialize)."""

    transport: Transport
    local_device_counts: tuple[int, ...] = (1,)
    coordinator: str | None = None

    @property
    def process_index(self) -> int:
        return self.transport.rank

    @property
    def process_count(self) -> int:
        return self.transport.size


_LONE = ProcessGroup(SelfTransport())
lock = threading.Lock()
current: ProcessGroup = _LONE
initialized = False


def group() -> ProcessGroup:
    return current


def set_group(g: ProcessGroup | None) -> None:
    global current, initialized
    current = _LONE if g is None else g
    initialized = g is not None
    processes.set_layout(None if g is None else processes.ProcessLayout(
        g.process_index, g.process_count, tuple(g.local_device_counts)))
