"""The data-parallel training step the batch partitioner is checked on, in one process
(tests/fx/test_spmd_partition.py) and across processes (tests/distributed/mesh_checks.py): a
two-layer MLP whose cross-entropy loss gathers each row's label (``take_along_axis``, a
``gather`` the partitioner runs whole) and an SGD update."""

from __future__ import annotations

import numpy as np

import fx
import fx.numpy as fnp


def mlp(seed: int = 0, d: int = 12, h: int = 16, k: int = 5, b: int = 32):
    """Parameters and a batch ``(params, x, y)``, the same for the same seed."""
    rng = np.random.default_rng(seed)
    params = {"w1": rng.standard_normal((d, h)).astype(np.float32) / 3,
              "b1": rng.standard_normal(h).astype(np.float32) / 10,
              "w2": rng.standard_normal((h, k)).astype(np.float32) / 3}
    x = rng.standard_normal((b, d)).astype(np.float32)
    y = rng.integers(0, k, b).astype(np.int32)
    return params, x, y


def loss(p, x, y):
    h = fx.nn.relu(x @ p["w1"] + p["b1"])
    logp = fx.nn.log_softmax(h @ p["w2"])
    return -fnp.mean(fnp.take_along_axis(logp, y[:, None], axis=1))


def sgd(p, x, y):
    value, g = fx.value_and_grad(loss)(p, x, y)
    return fx.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), value
