"""The CPU executor: runs a lowered program over one arena of temporaries.

Constructed once per compiled function. Each call checks out a state (an arena in which
every temporary is a view at its planned offset, and a pointer table holding every buffer's
address, temporaries and constants filled once per state), fills in the argument and output
pointers, then runs the steps: each C entry point executes consecutive generated kernels;
library steps call NumPy on views. States are pooled, so concurrent calls never share one.
"""

from __future__ import annotations

import ctypes

import numpy as np

from fx.runtime import cc
from fx.runtime.pool import StatePool


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
        for slot, var, offset in exe.temps:
            view = self.arena[offset:offset + var.aval.nbytes].view(var.aval.dtype)
            view = view.reshape(var.aval.shape)
            self.views[var] = view
            self.table[slot] = _address(view) if view.size else None
        for slot, address in exe.const_slots:
            self.table[slot] = address


class CpuExecutable:
    """A compiled program. Immutable once built: every call checks a :class:`_CallState` out
    of a pool, so one executable can be called from many threads at once. The C entry points
    are called through ``ctypes.CDLL``, which releases the GIL while they run."""

    def __init__(self, low):
        self.name = low.name
        self.lib = cc.build(low.source) if low.source else None
        buffers = sorted(low.buffers.values(), key=lambda b: b.slot)
        self.n_slots = max(len(buffers), 1)
        self.arena_bytes = low.plan.arena_bytes
        n_consts = len(low.consts)
        self.temps: list[tuple[int, object, int]] = []  # (slot, var, arena offset)
        self.const_views: dict = {}
        self.const_slots: list[tuple[int, int]] = []  # (slot, address)
        self.inputs: list[tuple[int, object, np.dtype, int]] = []  # (slot, var, dtype, arg)
        self.outputs: list[tuple[int, object, int]] = []  # (slot, var, donor arg or -1)
        for b in buffers:
            if b.kind == "temp":
                self.temps.append((b.slot, b.var, b.offset))
            elif b.kind == "const":
                arr = np.ascontiguousarray(np.asarray(low.consts[b.position]), b.aval.dtype)
                self.const_views[b.var] = arr
                self.const_slots.append((b.slot, _address(arr)))
            elif b.kind == "input":
                self.inputs.append((b.slot, b.var, b.aval.dtype, b.position - n_consts))
            else:
                donor = b.donor.position - n_consts if b.donor is not None else -1
                self.outputs.append((b.slot, b.var, donor))
        self.out_sources = [
            ("literal", src[1]) if src[0] == "literal" else ("buffer", src[1].var)
            for src in low.out_sources
        ]
        self.calls = []
        for rs in low.run_steps:
            if rs.kind == "c":
                fn = getattr(self.lib, rs.name)
                fn.argtypes = [ctypes.c_void_p]
                fn.restype = None
                self.calls.append((True, fn))
            else:
                self.calls.append((False, rs.fn))
        self.needs_views = any(not is_c for is_c, _ in self.calls)
        self.states: StatePool[_CallState] = StatePool(lambda: _CallState(self))

    def __call__(self, args: list) -> list[np.ndarray]:
        state = self.states.acquire()
        try:
            return self._run(state, args)
        finally:
            self.states.release(state)

    def _run(self, state: _CallState, args: list) -> list[np.ndarray]:
        table = state.table
        views = dict(state.views) if self.needs_views else None
        for slot, var, dtype, pos in self.inputs:
            a = args[pos]
            if type(a) is not np.ndarray or a.dtype != dtype or not a.flags.c_contiguous:
                a = np.asarray(a, dtype=dtype, order="C")  # (keeps 0-d arrays 0-d)
                args[pos] = a
            table[slot] = address(a)
            if views is not None:
                views[var] = a
        produced = {}
        for slot, var, donor in self.outputs:
            out = _reusable(args[donor]) if donor >= 0 else None
            if out is None:
                out = np.empty(var.aval.shape, var.aval.dtype)
            table[slot] = address(out)
            produced[var] = out
            if views is not None:
                views[var] = out
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
        for _, v, _, pos in self.inputs:
            if v is var:
                return args[pos]
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
