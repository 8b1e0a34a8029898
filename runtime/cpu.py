"""The CPU executor: runs a lowered program over one arena of temporaries.

Constructed once per compiled function. Each call checks out a state (an arena in which
every temporary is a view at its planned offset, and a pointer table holding every buffer's
address, temporaries and constants filled once per state), fills in the argument and output
pointers, then runs the steps: each C entry point executes consecutive generated kernels;
library steps call NumPy on views. States are pooled, so concurrent calls never share one.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np

from fx.runtime import cc
from fx.runtime.executor import Executable


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _fast_address_reader():
    """``a -> its data pointer`` at a tenth of the cost of ``__array_interface__`` (which
    builds a dictionary: 3-4 us per array, most of a small call's dispatch). NumPy's array
    struct starts with the object header and then the data pointer (``PyArray_DATA`` reads
    it there); the layout is checked here once, on arrays that are views with offsets, and
    ``__array_interface__`` is used wherever the check does not hold."""
    offset = object.__basicsize__
    read = ctypes.c_void_p.from_address
    base = np.arange(16, dtype=np.float64)
    try:
        ok = all(read(id(a) + offset).value == _address(a)
                 for a in (base, base[3:], base[::2], base.view(np.uint8)[5:]))
    except (ValueError, OSError):
        ok = False
    if not ok:
        return _address
    return lambda a: read(id(a) + offset).value


address = _fast_address_reader()


class _CallState:
    """What one call writes: the arena of temporaries, the pointer table the C entry points
    read, and the arrays library steps see (temporaries and constants)."""

    __slots__ = ("arena", "table", "table_ptr", "views")

    def __init__(self, exe: CpuExecutable):
        self.arena = _aligned_empty(exe.arena_bytes, 64)
        self.table = (ctypes.c_void_p * exe.n_slots)()
        self.table_ptr = ctypes.cast(self.table, ctypes.c_void_p)
        self.views = dict(exe.const_views)
        for t in exe.temps:
            view = self.arena[t.offset:t.offset + t.aval.nbytes].view(t.aval.dtype)
            view = view.reshape(t.aval.shape)
            self.views[t.var] = view
            self.table[t.slot] = _address(view) if view.size else None
        for slot, arr in exe.const_slots:
            self.table[slot] = _address(arr)


class CpuExecutable(Executable):
    """A compiled program. Immutable once built: every call checks a :class:`_CallState` out
    of a pool, so one executable can be called from many threads at once. The C entry points
    are called through ``ctypes.CDLL``, which releases the GIL while they run, so independent
    large steps run on worker threads at the same time (``run_waves``)."""

    concurrent = True
    timed_calls = True
    threaded_libraries = True  # BLAS and OpenMP kernels: see pool.concurrency_enabled

    def load(self, low) -> None:
        self.lib = cc.build(low.source) if low.source else None
        self.calls = []
        for call in low.schedule.calls:
            if call.native:  # a segment: one C entry point over the pointer table
                fn = getattr(self.lib, call.name)
                fn.argtypes = [ctypes.c_void_p]
                fn.restype = None
                self.calls.append((True, fn))
            else:
                self.calls.append((False, call.run))
        self.needs_views = any(not is_c for is_c, _ in self.calls)
        # Plain tuples for the per-call loops (attribute reads cost a small call's dispatch).
        self._args = [(a.slot, a.var, a.aval.dtype, a.position) for a in self.inputs]
        self._outs = [(o.slot, o.var, o.position) for o in self.outputs]

    def new_state(self) -> _CallState:
        return _CallState(self)

    def run(self, state: _CallState, args: list, times: list | None = None
            ) -> list[np.ndarray]:
        """One call. With ``times`` (a list of floats, one per call of the schedule) the
        calls run one after the other and each one's seconds are added to its entry."""
        table = state.table
        views = dict(state.views) if self.needs_views else None
        for slot, var, dtype, pos in self._args:
            a = args[pos]
            if type(a) is not np.ndarray or a.dtype != dtype or not a.flags.c_contiguous:
                a = np.asarray(a, dtype=dtype, order="C")  # (keeps 0-d arrays 0-d)
                args[pos] = a
            table[slot] = address(a)
            if views is not None:
                views[var] = a
        produced = {}
        for slot, var, donor in self._outs:
            out = _reusable(args[donor]) if donor >= 0 else None
            if out is None:
                out = np.empty(var.aval.shape, var.aval.dtype)
            table[slot] = address(out)
            produced[var] = out
            if views is not None:
                views[var] = out
        if times is not None:
            clock = time.perf_counter
            for i, (is_c, fn) in enumerate(self.calls):
                start = clock()
                fn(state.table_ptr) if is_c else fn(views)
                times[i] += clock() - start
        elif self.waves:
            calls = self.calls

            def call(i):
                is_c, fn = calls[i]
                fn(state.table_ptr) if is_c else fn(views)

            self.run_waves(call)
        else:
            for is_c, fn in self.calls:
                if is_c:
                    fn(state.table_ptr)
                else:
                    fn(views)
        results = []
        for kind, src in self.out_sources:
            if kind == "literal":
                results.append(np.array(src))
            elif src in produced:
                results.append(produced[src])
            else:  # an argument or constant returned unchanged
                results.append(np.array(views[src] if views is not None and src in views
                                        else self._input_value(src, args)))
        return results

    def _input_value(self, var, args):
        for a_slot in self.inputs:
            if a_slot.var is var:
                return args[a_slot.position]
        return self.const_views[var]


def _reusable(a: np.ndarray) -> np.ndarray | None:
    """A donated argument's buffer, if fx owns it (not a view of someone else's memory)."""
    if a.base is not None or not a.flags.c_contiguous:
        return None
    try:
        a.flags.writeable = True
    except ValueError:
        return None
    return a


def _aligned_empty(nbytes: int, alignment: int) -> np.ndarray:
    raw = np.empty(nbytes + alignment, np.uint8)
    start = (-_address(raw)) % alignment
    return raw[start:start + nbytes]
