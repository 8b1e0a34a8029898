"""Pruning schedules: when masks are recomputed, and to which sparsity.

A schedule is a frozen dataclass called as ``schedule(step, target_sparsity) -> sparsity`` (the
sparsity the masks have after ``step``) with ``schedule.updates(step) -> bool`` (whether the
masks are recomputed at ``step``). Both take a Python int or an int32 fx array (a traced step
count inside a jitted training step) and return fx arrays, so a pruned optimizer step jits.
"""

from __future__ import annotations

from dataclasses import dataclass

import fx.numpy as fnp

__all__ = ["OneShot", "Periodic", "Polynomial"]


def _check_step(name: str, what: str, value, minimum: int = 0) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"fx.sparsity.{name}: {what} must be an int >= {minimum}, got "
                         f"{value!r}")


@dataclass(frozen=True)
class OneShot:
    """Prune once, at ``step``, to the target sparsity (train → prune → fine-tune).

    >>> s = OneShot(100)
    >>> float(s(99, 0.5)), float(s(100, 0.5)), bool(s.updates(100))
    (0.0, 0.5, True)
    """

    step: int = 0

    def __post_init__(self):
        _check_step("OneShot", "step", self.step)

    def __call__(self, step, target):
        return fnp.where(fnp.asarray(step) >= self.step, fnp.float32(target), fnp.float32(0.0))

    def updates(self, step):
        return fnp.asarray(step) == self.step


@dataclass(frozen=True)
class Periodic:
    """The target sparsity from ``start`` on, the masks recomputed every ``every`` steps from
    ``start`` until ``end`` (inclusive; ``None``: for ever), so pruned weights may be chosen
    again from the current magnitudes while training continues.

    >>> s = Periodic(every=10, start=20, end=40)
    >>> [bool(s.updates(t)) for t in (19, 20, 25, 30, 40, 50)]
    [False, True, False, True, True, False]
    """

    every: int
    start: int = 0
    end: int | None = None

    def __post_init__(self):
        _check_step("Periodic", "every", self.every, 1)
        _check_step("Periodic", "start", self.start)
        if self.end is not None:
            _check_step("Periodic", "end", self.end, self.start)

    def __call__(self, step, target):
        return fnp.where(fnp.asarray(step) >= self.start, fnp.float32(target),
                         fnp.float32(0.0))

    def updates(self, step):
        step = fnp.asarray(step)
        on = (step >= self.start) & ((step - self.start) % self.every == 0)
        return on if self.end is None else on & (step <= self.end)


@dataclass(frozen=True)
class Polynomial:
    """Gradual pruning (Zhu & Gupta, 2017): ``target * (1 - (1 - p) ** power)`` at progress
    ``p = clip((step - start) / (end - start), 0, 1)``, the masks recomputed every ``every``
    steps from ``start`` to ``end``; after ``end`` the sparsity stays at the target.

    >>> s = Polynomial(start=0, end=100)
    >>> round(float(s(50, 0.8)), 4)  # 0.8 * (1 - 0.5 ** 3)
    0.7
    """

    start: int
    end: int
    power: float = 3.0
    every: int = 1

    def __post_init__(self):
        _check_step("Polynomial", "start", self.start)
        _check_step("Polynomial", "end", self.end, self.start + 1)
        _check_step("Polynomial", "every", self.every, 1)
        if not self.power > 0:
            raise ValueError(f"fx.sparsity.Polynomial: power must be > 0, got {self.power!r}")

    def __call__(self, step, target):
        t = fnp.asarray(step).astype(fnp.float32)
        p = fnp.clip((t - self.start) / float(self.end - self.start), 0.0, 1.0)
        return fnp.float32(target) * (1.0 - (1.0 - p) ** fnp.float32(self.power))

    def updates(self, step):
        step = fnp.asarray(step)
        return (step >= self.start) & (step <= self.end) & (
            (step - self.start) % self.every == 0)
