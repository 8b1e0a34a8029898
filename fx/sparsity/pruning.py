"""Magnitude pruning as an optimizer wrapper (optax-style, as jaxpruner).

Layers: the *prunable* leaves of a params pytree are its arrays with at least two axes longer
than 1 (dense weight matrices, convolution kernels), named by their key path
(``fx.tree_util.keystr``: ``"[0][0]"`` for the kernel of a stax model's first layer,
``"['dense']['w']"`` in a dict); biases (stax's conv bias is ``(1, 1, 1, C)``), normalization
scales and every other leaf with at most one such axis stay dense. ``filter(name, leaf) ->
bool`` narrows the prunable set further (e.g. to keep a classifier's last layer whole). Under
:class:`~fx.sparsity.Channels` a weight's *bias* is each leaf in the same container (the
``(W, b)`` tuple of a stax layer, the dict holding ``"w"``) with one element per channel along
at most one axis: it is masked with them.

Masks are a pytree like the params: a bool array per prunable leaf, a scalar ``True`` for the
others. :meth:`MagnitudePruning.wrap` gives an ``fx.optim`` transformation whose state holds the
masks; each update recomputes them when the schedule says so (from the updated weights'
magnitudes) and rewrites the updates so that every pruned weight is exactly zero after
``apply_updates`` (its update is ``-w``), step after step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

import fx.numpy as fnp
from fx.optim.transform import GradientTransformation
from fx.sparsity.schedules import OneShot, Periodic, Polynomial
from fx.sparsity.structures import Channels, NByM, Unstructured
from fx.tree_util import keystr, tree_flatten_with_path, tree_leaves, tree_unflatten

__all__ = ["MagnitudePruning", "PruningState", "apply_masks", "summary"]

DISTRIBUTIONS = ("uniform", "erk")


class PruningState(NamedTuple):
    masks: Any  # a pytree like the params (see the module docstring)
    count: Any  # int32 scalar: updates made so far (the schedule's step)
    inner_state: Any  # the wrapped transformation's state


def _prunable(leaf) -> bool:
    return sum(d > 1 for d in np.shape(leaf)) >= 2


def _is_bias(leaf, channels: int) -> bool:
    shape = np.shape(leaf)
    return math.prod(shape) == channels and sum(d > 1 for d in shape) <= 1


def _layer_items(params, filter_fn=None) -> list[tuple[str, Any]]:
    return [(keystr(path), leaf) for path, leaf in tree_flatten_with_path(params)[0]
            if _prunable(leaf) and (filter_fn is None or filter_fn(keystr(path), leaf))]


def erk_sparsities(shapes: dict[str, tuple[int, ...]], sparsity: float) -> dict[str, float]:
    """Erdős–Rényi-Kernel (Evci et al., 2020): layer densities proportional to
    ``sum(shape) / prod(shape)``, scaled so the layers hold ``(1 - sparsity)`` of their weights
    in all; a layer whose density would exceed 1 stays dense and the rest are rescaled."""
    dense: set[str] = set()
    while True:
        budget = (1 - sparsity) * sum(math.prod(s) for s in shapes.values()) - sum(
            math.prod(shapes[k]) for k in dense)
        raw = {k: sum(s) / math.prod(s) for k, s in shapes.items() if k not in dense}
        scale = budget / max(sum(raw[k] * math.prod(shapes[k]) for k in raw), 1e-30)
        over = {k for k in raw if scale * raw[k] > 1}
        if not over:
            break
        dense |= over
    return {k: 0.0 if k in dense else 1.0 - scale * raw[k] for k in shapes}


@dataclass(frozen=True)
class MagnitudePruning:
    """Prune the smallest-magnitude weights of each layer (see the module docstring).

    >>> import fx, fx.numpy as fnp
    >>> pruner = MagnitudePruning(sparsity=0.5, schedule=OneShot(0))
    >>> tx = pruner.wrap(fx.optim.sgd(0.1))
    >>> params = {"w": fnp.array([[1.0, -4.0], [0.5, 3.0]]), "b": fnp.ones(2)}
    >>> state = tx.init(params)
    >>> updates, state = tx.update(fx.tree_util.tree_map(fnp.zeros_like, params), state, params)
    >>> fx.optim.apply_updates(params, updates)["w"]
    Array([[ 0., -4.],
           [ 0.,  3.]], dtype=float32)
    """

    sparsity: float | None = None  # the target; None only with NByM (which fixes it)
    distribution: str = "uniform"
    structure: Unstructured | NByM | Channels = field(default_factory=Unstructured)
    schedule: OneShot | Periodic | Polynomial = field(default_factory=OneShot)
    filter: Callable[[str, Any], bool] | None = None

    def __post_init__(self):
        if not isinstance(self.structure, (Unstructured, NByM, Channels)):
            raise TypeError(f"fx.sparsity.MagnitudePruning: structure must be Unstructured(), "
                            f"NByM(n, m) or Channels(axis), got {self.structure!r}")
        if not isinstance(self.schedule, (OneShot, Periodic, Polynomial)):
            raise TypeError(f"fx.sparsity.MagnitudePruning: schedule must be OneShot, Periodic "
                            f"or Polynomial, got {self.schedule!r}")
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"fx.sparsity.MagnitudePruning: distribution must be one of "
                             f"{DISTRIBUTIONS}, got {self.distribution!r}")
        s = self.sparsity
        if isinstance(self.structure, NByM):
            if s is not None and not math.isclose(s, self.structure.sparsity):
                raise ValueError(f"fx.sparsity.MagnitudePruning: {self.structure} fixes the "
                                 f"sparsity at {self.structure.sparsity}; got sparsity={s} "
                                 "(leave it out)")
            if self.distribution != "uniform":
                raise ValueError("fx.sparsity.MagnitudePruning: NByM needs "
                                 "distribution='uniform' (every group keeps n of m)")
            return
        if s is None or isinstance(s, bool) or not isinstance(s, (int, float)) \
                or not 0.0 <= s < 1.0:
            raise ValueError(f"fx.sparsity.MagnitudePruning: sparsity must be a number in "
                             f"[0, 1) (the fraction of each layer's weights removed), got {s!r}")

    # -- layers and their targets -------------------------------------------------------------
    def layers(self, params) -> dict[str, tuple[int, ...]]:
        """The prunable leaves' names and shapes."""
        return {name: tuple(leaf.shape) for name, leaf in _layer_items(params, self.filter)}

    def layer_sparsities(self, params) -> dict[str, float]:
        """Each prunable layer's target sparsity under the distribution."""
        shapes = self.layers(params)
        for name, shape in shapes.items():
            self.structure.check(name, shape)
        target = self.structure.sparsity if isinstance(self.structure, NByM) else self.sparsity
        if self.distribution == "erk":
            return erk_sparsities(shapes, target)
        return dict.fromkeys(shapes, float(target))

    # -- masks ---------------------------------------------------------------------------------
    def init_masks(self, params):
        """All-True masks (nothing pruned yet), checking the layers against the structure."""
        targets = self.layer_sparsities(params)
        items, tree = tree_flatten_with_path(params)
        masks = [fnp.ones(np.shape(leaf), bool) if keystr(path) in targets
                 else fnp.asarray(True) for path, leaf in items]
        return tree_unflatten(tree, masks)

    def update_masks(self, params, masks, step):
        """The masks after ``step``: recomputed from ``params``' magnitudes where the schedule
        updates at ``step`` (a Python int or a traced int32), the old ones elsewhere."""
        targets = self.layer_sparsities(params)
        items, tree = tree_flatten_with_path(params)
        old = tree_leaves(masks)
        if len(old) != len(items):
            raise ValueError(f"fx.sparsity: masks have {len(old)} leaves, params {len(items)}; "
                             "masks must come from init_masks(params) of the same params")
        now = self.schedule.updates(step)
        new = list(old)
        names = [keystr(p) for p, _ in items]
        for i, (name, (_, w)) in enumerate(zip(names, items)):
            if name not in targets:
                continue
            w = fnp.asarray(w)
            s = self.schedule(step, targets[name])
            if isinstance(self.structure, Channels):
                ch = self.structure.channel_mask(w, s, old[i])
                ch = fnp.where(now, ch, _channels_of(self.structure, old[i]))
                new[i] = self.structure.expand(ch, w.shape)
                for j in _biases(items, i, w.shape[self.structure.axis]):
                    new[j] = ch.reshape(np.shape(items[j][1]))
            else:
                new[i] = fnp.where(now, self.structure.mask(w, s, old[i]), old[i])
        return tree_unflatten(tree, new)

    def apply_masks(self, params, state):
        """``params`` with the pruned weights set to zero (``state``: a PruningState or
        masks)."""
        return apply_masks(params, state)

    # -- the optimizer wrapper -----------------------------------------------------------------
    def wrap(self, tx: GradientTransformation) -> GradientTransformation:
        """``tx`` followed by pruning: the state is a :class:`PruningState`; after each update
        the pruned weights are exactly zero (their updates are ``-params``)."""

        def init(params):
            return PruningState(self.init_masks(params), fnp.zeros((), fnp.int32),
                                tx.init(params))

        def update(updates, state, params=None):
            if params is None:
                raise ValueError("fx.sparsity: the pruning wrapper's update needs params "
                                 "(call update(grads, state, params)): masks are chosen from "
                                 "the weights' magnitudes")
            updates, inner = tx.update(updates, state.inner_state, params)
            flat_p, tree = tree_flatten_with_path(params)
            flat_u = tree_leaves(updates)
            moved = tree_unflatten(tree, [p + u for (_, p), u in zip(flat_p, flat_u)])
            masks = self.update_masks(moved, state.masks, state.count)
            flat_m = tree_leaves(masks)
            updates = tree_unflatten(tree, [fnp.where(m, u, -p) for (_, p), u, m in
                                            zip(flat_p, flat_u, flat_m)])
            return updates, PruningState(masks, state.count + 1, inner)

        return GradientTransformation(init, update)


def _channels_of(structure: Channels, mask):
    axis = structure.axis % mask.ndim
    return fnp.any(mask, axis=tuple(i for i in range(mask.ndim) if i != axis))


def _biases(items, i: int, channels: int) -> list[int]:
    """Leaves beside weight ``i`` in its container that are its bias (one per channel)."""
    parent = items[i][0][:-1]
    return [j for j, (path, leaf) in enumerate(items) if j != i and path[:-1] == parent
            and not _prunable(leaf) and _is_bias(leaf, channels)]


def _masks_of(state):
    return state.masks if isinstance(state, PruningState) else state


def apply_masks(params, state):
    """``params`` with the weights the masks prune set to zero; ``state`` is the wrapper's
    :class:`PruningState` (or a masks pytree)."""
    items, tree = tree_flatten_with_path(params)
    masks = tree_leaves(_masks_of(state))
    if len(masks) != len(items):
        raise ValueError(f"fx.sparsity.apply_masks: masks have {len(masks)} leaves, params "
                         f"{len(items)}; pass the state of a wrapper initialized on these params")
    return tree_unflatten(tree, [fnp.where(m, p, fnp.zeros_like(p)) for (_, p), m
                                 in zip(items, masks)])


def summary(params) -> dict[str, float]:
    """The fraction of zeros in each prunable leaf (see the module docstring), keyed by its
    path, and under ``"total"`` over all of them.

    >>> summary([(fnp.array([[0.0, 1.0], [0.0, 0.0]]), fnp.ones(2))])
    {'[0][0]': 0.75, 'total': 0.75}
    """
    out, zeros, size = {}, 0, 0
    for name, leaf in _layer_items(params):
        a = np.asarray(leaf)
        z = int(a.size - np.count_nonzero(a))
        out[name] = z / a.size if a.size else 0.0
        zeros, size = zeros + z, size + a.size
    out["total"] = zeros / size if size else 0.0
    return out
