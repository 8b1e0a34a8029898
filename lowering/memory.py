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

from dataclasses import dataclass


@dataclass(eq=False)
class BufferSpec:
    name: str
    nbytes: int
    first: int
    last: int
    inplace_with: BufferSpec | None = None  # share this buffer's storage (set by the planner)


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
    the output may reuse the input's storage (same size, input dead after that step)."""
    by_name = {b.name: b for b in buffers}
    inplace: dict[str, str] = {}
    root_of: dict[str, str] = {b.name: b.name for b in buffers}
    for out, inp in inplace_pairs:
        if out not in by_name or inp not in by_name:
            continue
        o, i = by_name[root_of[out]], by_name[root_of[inp]]
        if o is i or _align(o.nbytes, alignment) != _align(i.nbytes, alignment):
            continue
        if i.last != o.first:  # the input must die exactly where the output is born
            continue
        inplace[out] = inp
        i.last = max(i.last, o.last)
        root_of[out] = i.name
        for k, v in root_of.items():
            if v == o.name:
                root_of[k] = i.name
    roots = [b for b in buffers if root_of[b.name] == b.name]
    horizon = max((b.last for b in roots), default=0) + 1

    def long_lived(b):
        return (b.last - b.first + 1) * 2 >= horizon and horizon > 4

    placed: list[tuple[int, int, BufferSpec]] = []  # (offset, size, buffer)
    offsets: dict[str, int] = {}
    for b in sorted(roots, key=lambda b: (not long_lived(b), -b.nbytes, b.first)):
        size = _align(max(b.nbytes, 1), alignment)
        busy = sorted((o, s) for o, s, other in placed
                      if not (other.last < b.first or b.last < other.first))
        best, best_gap, cursor = None, None, 0
        for o, s in busy:
            gap = o - cursor
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, o + s)
        offset = best if best is not None else cursor
        placed.append((offset, size, b))
        offsets[b.name] = offset
    for name, root in root_of.items():
        offsets[name] = offsets[root]
    arena = max((o + s for o, s, _ in placed), default=0)
    live = [0] * horizon
    for b in roots:
        for t in range(b.first, b.last + 1):
            live[t] += _align(max(b.nbytes, 1), alignment)
    return MemoryPlan(
        offsets=offsets,
        arena_bytes=arena,
        lower_bound=max(live, default=0),
        naive_bytes=sum(_align(max(b.nbytes, 1), alignment) for b in buffers),
        inplace=inplace,
    )
