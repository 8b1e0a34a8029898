"""Memory planning: every temporary buffer gets an offset in one arena.

Input: buffers with a size and a lifetime ``[first, last]`` (step indices, inclusive), and
optional in-place hints (a kernel's output may take over an input buffer that dies at that
kernel). Output: an offset per buffer, the arena size, the lower bound (the most bytes live at
any one step) and the naive size (the sum of all buffers).

Placement is greedy by size with best fit: buffers are placed largest first, each at the
offset of the smallest gap (among buffers whose lifetimes overlap its own) that fits it, or on
top. Long-lived buffers (alive for at least half the program) are placed first, so they
settle at the bottom of the arena and the short-lived temporaries pack above them — the
"double cursor" layout. In-place pairs share one buffer whose lifetime is the union.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BufferSpec:
    name: str
    nbytes: int
    first: int
    last: int


@dataclass
class MemoryPlan:
    offsets: dict[str, int]
    arena_bytes: int
    lower_bound: int
    naive_bytes: int
    inplace: dict[str, str]  # buffer -> the buffer whose storage it reuses


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def plan_memory(buffers: list[BufferSpec], alignment: int, inplace_pairs=()) -> MemoryPlan:
    """Assign arena offsets. ``inplace_pairs`` lists ``(output, input)`` buffer names where
    the output may reuse the input's storage (same size, input dead after that step). Pure:
    the specs are not changed (a shared buffer's lifetime is the planner's own record).

    Placing a buffer looks at every placed buffer alive with it, in arrays (a deep network
    keeps hundreds of activations alive at once, and a loop over them per placement in Python
    dominated compile time)."""
    by_name = {b.name: b for b in buffers}
    inplace: dict[str, str] = {}
    parent: dict[str, str] = {}  # in-place pairs share one root buffer (union-find)
    last_of = {b.name: b.last for b in buffers}  # a root's lifetime grows with its sharers

    def root(name: str) -> str:
        while name in parent:
            name = parent[name]
        return name

    for out, inp in inplace_pairs:
        if out not in by_name or inp not in by_name:
            continue
        o, i = by_name[root(out)], by_name[root(inp)]
        if o is i or _align(o.nbytes, alignment) != _align(i.nbytes, alignment):
            continue
        if last_of[i.name] != o.first:  # the input must die exactly where the output is born
            continue
        inplace[out] = inp
        last_of[i.name] = max(last_of[i.name], last_of[o.name])
        parent[o.name] = i.name
    roots = [dataclasses.replace(b, last=last_of[b.name]) for b in buffers
             if b.name not in parent]
    horizon = max((b.last for b in roots), default=0) + 1

    def long_lived(b):
        return (b.last - b.first + 1) * 2 >= horizon and horizon > 4

    order = sorted(roots, key=lambda b: (not long_lived(b), -b.nbytes, b.first))
    n = len(order)
    first = np.array([b.first for b in order], np.int64)
    last = np.array([b.last for b in order], np.int64)
    size = np.array([_align(max(b.nbytes, 1), alignment) for b in order], np.int64)
    offset = np.zeros(n, np.int64)
    offsets: dict[str, int] = {}
    for k, b in enumerate(order):
        # The placed buffers alive with this one, by offset (then size): the smallest gap
        # between them that fits it, else the top of the ones below.
        alive = np.flatnonzero((last[:k] >= b.first) & (first[:k] <= b.last))
        at = 0
        if alive.size:
            o, s = offset[alive], size[alive]
            by = np.lexsort((s, o))
            o, s = o[by], s[by]
            below = np.maximum.accumulate(np.concatenate(([0], o + s)))
            gaps = o - below[:-1]
            fits = np.flatnonzero(gaps >= size[k])
            at = int(below[fits[np.argmin(gaps[fits])]]) if fits.size else int(below[-1])
        offset[k] = at
        offsets[b.name] = at
    for name in by_name:
        offsets[name] = offsets[root(name)]
    arena = int((offset + size).max()) if n else 0
    live = np.zeros(horizon + 1, np.int64)  # bytes live at each step, by differences
    np.add.at(live, first, size)
    np.add.at(live, last + 1, -size)
    return MemoryPlan(
        offsets=offsets,
        arena_bytes=arena,
        lower_bound=int(np.cumsum(live)[:horizon].max()) if n else 0,
        naive_bytes=sum(_align(max(b.nbytes, 1), alignment) for b in buffers),
        inplace=inplace,
    )
