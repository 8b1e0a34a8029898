"""Sparsity structures: which weights a magnitude mask removes together, and how many.

A structure is a frozen dataclass with ``check(name, shape)`` (raises for a weight it cannot
prune) and ``mask(w, sparsity, keep)``: the boolean mask (True = kept) of the weight ``w`` at
``sparsity``, given the mask ``keep`` it had so far. Weights pruned before score below every
kept weight, so masks only shrink while a schedule raises the sparsity (gradual pruning never
regrows a weight; a tie between equal magnitudes goes to the lower flat index, as a stable
sort orders them). ``sparsity`` may be traced (a jitted step), the counts are exact:

- :class:`Unstructured`: ``round(sparsity * w.size)`` weights with the smallest ``|w|``;
- :class:`NByM`: in every group of ``m`` consecutive weights along ``axis`` the ``m - n``
  smallest (the structure fixes the sparsity at ``1 - n/m``; it applies once the schedule's
  sparsity is above zero);
- :class:`Channels`: ``round(sparsity * C)`` of the ``C`` slices along ``axis`` (output channels
  or filters with ``axis=-1`` for stax's HWIO kernels and ``(in, out)`` dense weights), those
  with the smallest L1 norm. The weight's bias (see ``fx.sparsity.pruning``) is masked with
  its channel, so a pruned channel outputs exactly zero and can be removed by
  :func:`fx.sparsity.compact`.
"""

from __future__ import annotations

from dataclasses import dataclass

import fx.numpy as fnp

__all__ = ["Channels", "NByM", "Unstructured"]


def _prune_smallest(scores, count):
    """True where a score is not among the ``count`` smallest of the last axis (ties: by
    position), for a traced ``count``."""
    ranks = fnp.argsort(fnp.argsort(scores, axis=-1, stable=True), axis=-1, stable=True)
    return ranks >= count


def _count(sparsity, n: int):
    return fnp.round(fnp.asarray(sparsity, fnp.float32) * n).astype(fnp.int32)


@dataclass(frozen=True)
class Unstructured:
    """Any weight may go: the ``round(sparsity * size)`` smallest magnitudes of each layer."""

    def check(self, name: str, shape: tuple[int, ...]) -> None:
        return None

    def mask(self, w, sparsity, keep):
        scores = fnp.where(keep, fnp.abs(w), -1.0).reshape(-1)
        return _prune_smallest(scores, _count(sparsity, w.size)).reshape(w.shape)


@dataclass(frozen=True)
class NByM:
    """At most ``n`` nonzeros in every ``m`` consecutive weights along ``axis`` (default: the
    input-feature axis, -2: rows of a dense ``(in, out)`` weight, ``I`` of an HWIO kernel),
    e.g. ``NByM(2, 4)``, the pattern sparse tensor cores run."""

    n: int
    m: int
    axis: int = -2

    def __post_init__(self):
        if not (isinstance(self.n, int) and isinstance(self.m, int) and 0 < self.n <= self.m):
            raise ValueError(f"fx.sparsity.NByM: needs integers 0 < n <= m, got n={self.n!r}, "
                             f"m={self.m!r} (n is how many weights of each group of m stay)")

    @property
    def sparsity(self) -> float:
        return 1.0 - self.n / self.m

    def check(self, name: str, shape: tuple[int, ...]) -> None:
        axis = _axis("NByM", name, shape, self.axis)
        if shape[axis] % self.m:
            raise ValueError(f"fx.sparsity.NByM({self.n}, {self.m}): {name} of shape {shape} "
                             f"has {shape[axis]} weights along axis {self.axis}, not a multiple "
                             f"of {self.m}; exclude it with filter= or choose another axis")

    def mask(self, w, sparsity, keep):
        axis = _axis("NByM", "weight", w.shape, self.axis)
        scores = fnp.moveaxis(fnp.where(keep, fnp.abs(w), -1.0), axis, -1)
        moved = scores.shape
        groups = scores.reshape(moved[:-1] + (moved[-1] // self.m, self.m))
        kept = _prune_smallest(groups, self.m - self.n).reshape(moved)
        kept = fnp.moveaxis(kept, -1, axis) & keep
        return fnp.where(fnp.asarray(sparsity) > 0, kept, keep)


@dataclass(frozen=True)
class Channels:
    """Whole slices along ``axis`` (default -1: output channels/filters of HWIO kernels and
    output features of ``(in, out)`` dense weights), by their L1 norm."""

    axis: int = -1

    def check(self, name: str, shape: tuple[int, ...]) -> None:
        _axis("Channels", name, shape, self.axis)

    def channel_mask(self, w, sparsity, keep):
        """The kept channels, a bool vector along ``axis``."""
        axis = _axis("Channels", "weight", w.shape, self.axis)
        others = tuple(i for i in range(w.ndim) if i != axis)
        alive = fnp.all(keep, axis=others)
        scores = fnp.where(alive, fnp.sum(fnp.abs(w) * keep, axis=others), -1.0)
        return _prune_smallest(scores, _count(sparsity, w.shape[axis]))

    def expand(self, channels, shape: tuple[int, ...]):
        axis = _axis("Channels", "weight", shape, self.axis)
        view = [1] * len(shape)
        view[axis] = shape[axis]
        return fnp.broadcast_to(channels.reshape(view), shape)

    def mask(self, w, sparsity, keep):
        return self.expand(self.channel_mask(w, sparsity, keep), w.shape)


def _axis(structure: str, name: str, shape: tuple[int, ...], axis: int) -> int:
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"fx.sparsity.{structure}: axis {axis} is out of range for {name} of "
                         f"shape {shape} (rank {len(shape)})")
    return axis % len(shape)
