"""A roofline profile of a compiled program: each call's measured time beside its work.

``fx.jit(f).lower(*args).compile().profile(*args)`` runs the program with every generated
kernel called on its own (the same kernels, one entry point each) and times each call of the
schedule: kernels, library steps (BLAS, LAPACK, NumPy) and control flow. Beside each time it
puts the step's floating-point operations and the bytes it reads and writes (the estimates of
``Lowered.cost_analysis``), the FLOP/s and bytes/s achieved, its arithmetic intensity (FLOPs
per byte), and where that puts it on the machine's roofline: a step whose intensity is above
the machine's balance (peak FLOP/s over stream bandwidth, measured once per machine by
``fx.runtime.peaks``) is compute-bound, and its ``% peak`` is its FLOP/s over the FMA peak;
below, it is memory-bound, and its ``% peak`` is its bytes/s over the stream bandwidth.

The peak is float32's (fused multiply-adds on every lane of the widest vectors the kernels'
``-march`` has): a float64 step's compute ceiling is half of it. Times are medians over
``repeat`` runs after one warm-up run, each call timed on its own, so a program whose calls
normally overlap (independent steps on worker threads) runs longer in a profile than it does.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from fx.lowering.program import operations
from fx.lowering.select.cost import group_bytes, group_flops
from fx.runtime.peaks import Peaks


@dataclass(frozen=True)
class CallProfile:
    """One call of the schedule: which steps of ``as_text()`` it runs, what it is, its median
    seconds, and the FLOPs and bytes of those steps."""

    steps: tuple[int, ...]
    what: str
    seconds: float
    flops: float
    bytes: float

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved (0 for a call that moves nothing)."""
        return self.flops / self.bytes if self.bytes else 0.0

    def bound(self, peaks: Peaks) -> str:
        """``"compute"`` or ``"memory"``: which roof of ``peaks`` limits this call."""
        return "compute" if self.intensity >= peaks.balance else "memory"

    def fraction_of_peak(self, peaks: Peaks) -> float:
        """Achieved FLOP/s over the peak for a compute-bound call, bytes/s over the stream
        bandwidth for a memory-bound one (0 for a call that took no measurable time)."""
        if self.seconds <= 0:
            return 0.0
        if self.bound(peaks) == "compute":
            return self.flops / self.seconds / peaks.flops
        return self.bytes / self.seconds / peaks.bytes_per_s


@dataclass(frozen=True)
class Profile:
    """The calls of one compiled program, in schedule order, with the machine's peaks.
    ``str(profile)`` is the table; ``calls`` the rows."""

    name: str
    calls: tuple[CallProfile, ...]
    peaks: Peaks
    repeat: int

    @property
    def seconds(self) -> float:
        """The sum of the calls' median times."""
        return sum(c.seconds for c in self.calls)

    @property
    def flops(self) -> float:
        return sum(c.flops for c in self.calls)

    def __str__(self) -> str:
        p = self.peaks
        total = self.seconds
        lines = [
            f"profile of {self.name}: {len(self.calls)} calls, {total * 1e3:.3f} ms "
            f"(sum of medians over {self.repeat} runs), {self.flops / 1e9:.3f} GFLOP, "
            f"{self.flops / total / 1e9 if total else 0.0:.1f} GFLOP/s",
            f"machine: {p.flops / 1e9:.1f} GFLOP/s float32 FMA peak, {p.bytes_per_s / 1e9:.1f} "
            f"GB/s stream, balance {p.balance:.1f} FLOP/byte ({p.threads} threads, "
            f"-march={p.march})",
            f"{'steps':>9}  {'us':>10} {'%time':>6} {'MFLOP':>10} {'MB':>9} {'GFLOP/s':>8} "
            f"{'GB/s':>7} {'FLOP/B':>7} {'bound':>7} {'%peak':>6}  what",
        ]
        for c in self.calls:
            steps = ",".join(str(s) for s in c.steps) if len(c.steps) <= 3 else \
                f"{c.steps[0]}-{c.steps[-1]}"
            rate = c.flops / c.seconds / 1e9 if c.seconds else 0.0
            bw = c.bytes / c.seconds / 1e9 if c.seconds else 0.0
            share = 100 * c.seconds / total if total else 0.0
            lines.append(
                f"{steps:>9}  {c.seconds * 1e6:10.1f} {share:6.1f}"
                f" {c.flops / 1e6:10.3f} {c.bytes / 1e6:9.3f} {rate:8.2f} {bw:7.2f} "
                f"{c.intensity:7.2f} {c.bound(p):>7} {100 * c.fraction_of_peak(p):6.1f}  "
                f"{c.what}")
        return "\n".join(lines)


def _describe(program, op) -> str:
    step = program.steps[op.step]
    return f"{op.label}: {step.group.label()} [{step.choice.impl.name}]"


def profile(program, executable, buffers: list, peaks: Peaks, repeat: int) -> Profile:
    """Run ``executable`` (built from ``program``, a ``Compilation`` scheduled one call per
    operation) ``repeat + 1`` times on ``buffers`` and return its :class:`Profile`."""
    calls = program.schedule.calls
    samples = [[0.0] * len(calls) for _ in range(repeat)]
    executable.timed(list(buffers), [0.0] * len(calls))  # warm-up: caches, first-run checks
    for times in samples:
        executable.timed(list(buffers), times)
    rows = []
    for i, call in enumerate(calls):
        ops = call.ops if isinstance(call, operations.Segment) else (call,)
        groups = [program.steps[op.step].group for op in ops]
        rows.append(CallProfile(
            steps=tuple(op.step for op in ops),
            what="; ".join(_describe(program, op) for op in ops),
            seconds=statistics.median(t[i] for t in samples),
            flops=float(sum(group_flops(g) for g in groups)),
            bytes=float(sum(group_bytes(g) for g in groups)),
        ))
    return Profile(program.name, tuple(rows), peaks, repeat)
