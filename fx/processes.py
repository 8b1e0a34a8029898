"""Where this process stands in the run: its index, the number of processes and each one's
local device count, the part of ``fx.distributed``'s process group the core reads
(``fx.devices``, ``fx.api``).

:mod:`fx.distributed.state` owns the process group (its transport included) and sets the
layout here each time the group changes (``initialize``, ``shutdown``); this module imports
nothing of fx, so the core can read it without importing the distributed library above it.
Before ``initialize``, and after ``shutdown``, the run is this process alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessLayout:
    """This process's index, the process count and every process's local device count."""

    process_index: int = 0
    process_count: int = 1
    local_device_counts: tuple[int, ...] = (1,)


_current = ProcessLayout()


def layout() -> ProcessLayout:
    """The layout of the run now."""
    return _current


def set_layout(new: ProcessLayout | None) -> None:
    """Set the run's layout (None: this process alone); ``fx.distributed.state`` calls it."""
    global _current
    _current = ProcessLayout() if new is None else new
