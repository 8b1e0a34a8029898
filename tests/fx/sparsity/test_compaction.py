"""Compaction: the channel-pruned stax CNN and MLP with the pruned channels removed compute
what the masked networks compute, with fewer parameters."""

from __future__ import annotations

import numpy as np
import pytest

import fx
from fx import sparsity
from fx.example_libraries import stax

CNN = [stax.Conv(8, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
       stax.Conv(12, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
       stax.Flatten, stax.Dense(16), stax.Relu, stax.Dense(10), stax.LogSoftmax]
MLP = [stax.Dense(24), stax.Relu, stax.Dense(20), stax.Relu, stax.Dense(10)]


@pytest.mark.parametrize("layers, in_shape, last, s", [(CNN, (4, 8, 8, 1), "[9][0]", 0.5),
                                                       (MLP, (4, 64), "[4][0]", 0.25)])
def test_compacted_network_computes_the_masked_function(layers, in_shape, last, s):
    init, apply = stax.serial(*layers)
    _, params = init(fx.random.key(0), in_shape)
    pruner = sparsity.MagnitudePruning(sparsity=s, structure=sparsity.Channels(-1),
                                       filter=lambda name, w: name != last)
    masks = pruner.update_masks(params, pruner.init_masks(params), 0)
    masked = sparsity.apply_masks(params, masks)
    small = sparsity.compact(params, masks, layers)
    x = np.random.default_rng(1).standard_normal(in_shape).astype(np.float32)
    np.testing.assert_allclose(np.asarray(apply(small, x)), np.asarray(apply(masked, x)),
                               rtol=1e-5, atol=1e-5)
    sizes = [np.shape(e[0])[-1] for e in small if e and np.ndim(e[0]) >= 2]
    full = [np.shape(e[0])[-1] for e in params if e and np.ndim(e[0]) >= 2]
    assert sizes[:-1] == [c - round(s * c) for c in full[:-1]] and sizes[-1] == full[-1]
    n = sum(np.size(a) for a in fx.tree_util.tree_leaves(small))
    assert n < sum(np.size(a) for a in fx.tree_util.tree_leaves(params))


def test_compact_refuses_a_layer_that_maps_zero_elsewhere_and_bad_lengths():
    layers = [stax.Dense(8), stax.BatchNorm(axis=(0,)), stax.Relu, stax.Dense(3)]
    init, _ = stax.serial(*layers)
    _, params = init(fx.random.key(0), (2, 5))
    pruner = sparsity.MagnitudePruning(sparsity=0.5, structure=sparsity.Channels(-1))
    masks = pruner.update_masks(params, pruner.init_masks(params), 0)
    with pytest.raises(ValueError, match="not a Conv or Dense"):
        sparsity.compact(params, masks, layers)
    with pytest.raises(ValueError, match="one per entry"):
        sparsity.compact(params, masks, layers[:2])
