"""The CPU executor: runs a lowered program over one arena of temporaries.

Constructed once per compiled function: the arena is allocated, every temporary becomes a
view at its planned offset, and a pointer table holds every buffer's address (temporaries and
constants filled once). A call fills in the argument and output pointers, then runs the steps:
each C entry point executes consecutive generated kernels; library steps call NumPy on views.
"""

from __future__ import annotations

import ctypes

import numpy as np

from fx.runtime import cc


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class CpuExecutable:
    def __init__(self, low):
        self.name = low.name
        self.lib = cc.build(low.source) if low.source else None
        buffers = sorted(low.buffers.values(), key=lambda b: b.slot)
        self.table = (ctypes.c_void_p * max(len(buffers), 1))()
        self.arena = _aligned_empty(low.plan.arena_bytes, 64)
        self.views: dict = {}
        n_consts = len(low.consts)
        self.inputs: list[tuple[int, object, np.dtype]] = []  # (slot, var, dtype)
        self.outputs: list[tuple[int, object, int]] = []  # (slot, var, donor arg or -1)
        self._keep = []
        for b in buffers:
            if b.kind == "temp":
                view = self.arena[b.offset:b.offset + b.aval.nbytes].view(b.aval.dtype)
                view = view.reshape(b.aval.shape)
                self.views[b.var] = view
                self.table[b.slot] = _address(view) if view.size else None
            elif b.kind == "const":
                arr = np.ascontiguousarray(np.asarray(low.consts[b.position]), b.aval.dtype)
                self._keep.append(arr)
                self.views[b.var] = arr
                self.table[b.slot] = _address(arr)
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
        self.table_ptr = ctypes.cast(self.table, ctypes.c_void_p)

    def __call__(self, args: list) -> list[np.ndarray]:
        table = self.table
        views = dict(self.views) if self.needs_views else None
        for slot, var, dtype, pos in self.inputs:
            a = args[pos]
            if type(a) is not np.ndarray or a.dtype != dtype or not a.flags.c_contiguous:
                a = np.asarray(a, dtype=dtype, order="C")  # (keeps 0-d arrays 0-d)
                args[pos] = a
            table[slot] = a.__array_interface__["data"][0]
            if views is not None:
                views[var] = a
        produced = {}
        for slot, var, donor in self.outputs:
            out = _reusable(args[donor]) if donor >= 0 else None
            if out is None:
                out = np.empty(var.aval.shape, var.aval.dtype)
            table[slot] = out.__array_interface__["data"][0]
            produced[var] = out
            if views is not None:
                views[var] = out
        for is_c, fn in self.calls:
            if is_c:
                fn(self.table_ptr)
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
        return self.views[var]


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
