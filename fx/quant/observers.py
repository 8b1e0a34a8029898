"""Observers: the statistics of one activation tensor over the calibration batches, and the
clipping threshold each calibration method reads from them.

An :class:`Observer` sees every batch's values of one tensor (``observe``) and keeps the
running minimum and maximum and a sample of ``|x|`` (all of it up to ``max_samples`` values,
then every 2nd, 4th, ... value of every batch, at most ``max_samples`` in all).
``threshold(method)`` is the symmetric clipping range ``T``: values are quantized as
``round(x * 127 / T)`` in [-127, 127].

- ``minmax``: ``T = max |x|`` (nothing clipped).
- ``percentile``: ``T`` = the given percentile of ``|x|`` (99.99 by default).
- ``entropy``: TensorRT's calibrator: a 2048-bin histogram of ``|x|`` over [0, max |x|]; for
  each candidate threshold bin ``i`` (128..2048) the clipped distribution ``P`` (the outliers
  added to its last bin) is compared with ``Q``, ``P`` quantized to 128 levels and expanded
  back over the nonzero bins; ``T`` is the edge of the bin with the least ``KL(P || Q)``.
"""

from __future__ import annotations

import enum

import numpy as np

LEVELS = 128  # quantized magnitudes 0..127 of symmetric int8
BINS = 2048


class Method(enum.Enum):
    MINMAX = "minmax"
    PERCENTILE = "percentile"
    ENTROPY = "entropy"


class Observer:
    """Running statistics of one tensor: min, max, and a sample of its magnitudes."""

    def __init__(self, max_samples: int = 1 << 22):
        self.min = np.inf
        self.max = -np.inf
        self.count = 0
        self.max_samples = max_samples
        self._chunks: list[np.ndarray] = []
        self._kept = 0
        self._stride = 1

    def observe(self, x) -> None:
        x = np.asarray(x, dtype=np.float32).ravel()
        if x.size == 0:
            return
        self.min = min(self.min, float(x.min()))
        self.max = max(self.max, float(x.max()))
        self.count += x.size
        # Every ``stride``-th value of each batch; when the sample outgrows ``max_samples``
        # every other kept value goes and the stride doubles, so each batch stays equally
        # represented.
        self._chunks.append(np.abs(x[::self._stride]))
        self._kept += len(self._chunks[-1])
        while self._kept > self.max_samples:
            self._stride *= 2
            self._chunks = [c[::2] for c in self._chunks]
            self._kept = sum(len(c) for c in self._chunks)

    @property
    def magnitudes(self) -> np.ndarray:
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        return self._chunks[0] if self._chunks else np.zeros(0, np.float32)

    @property
    def amax(self) -> float:
        return max(abs(self.min), abs(self.max)) if self.count else 0.0

    def threshold(self, method: Method, percentile: float = 99.99) -> float:
        if not self.count or self.amax == 0.0:
            return 0.0
        if method is Method.MINMAX:
            return self.amax
        if method is Method.PERCENTILE:
            return float(np.percentile(self.magnitudes, percentile))
        hist, edges = np.histogram(self.magnitudes, bins=BINS, range=(0.0, self.amax))
        return float(edges[entropy_bin(hist)])


def entropy_bin(hist: np.ndarray, levels: int = LEVELS) -> int:
    """The histogram bin count ``i`` (``levels <= i <= len(hist)``) whose clipped distribution
    loses the least information (KL divergence) when quantized to ``levels`` levels; the
    threshold is the upper edge of bin ``i - 1``."""
    hist = np.asarray(hist, dtype=np.float64)
    best, best_kl = len(hist), np.inf
    for i in range(levels, len(hist) + 1):
        p = hist[:i].copy()
        p[-1] += hist[i:].sum()
        kl = _kl_divergence(p, _quantized(hist[:i], levels))
        if kl < best_kl:
            best, best_kl = i, kl
    return best


def _quantized(ref: np.ndarray, levels: int) -> np.ndarray:
    """``ref`` merged into ``levels`` groups of bins, each group's mass spread evenly back over
    its nonzero bins (zero bins stay zero, as in TensorRT)."""
    i = len(ref)
    group = (np.arange(i) * levels) // i
    nonzero = ref > 0
    mass = np.bincount(group, weights=ref, minlength=levels)
    support = np.bincount(group, weights=nonzero, minlength=levels)
    share = np.divide(mass, support, out=np.zeros(levels), where=support > 0)
    return np.where(nonzero, share[group], 0.0)


def _kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    p_sum, q_sum = p.sum(), q.sum()
    if p_sum == 0 or q_sum == 0:
        return np.inf
    p, q = p / p_sum, q / q_sum
    mask = p > 0
    if np.any(q[mask] == 0):  # P's mass where Q has none: a bin lost entirely
        return np.inf
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))
