"""``fx.sparsity``: magnitude pruning for training (as jaxpruner) and compaction of
structurally pruned networks.

    pruner = fx.sparsity.MagnitudePruning(sparsity=0.8, schedule=fx.sparsity.Polynomial(0, 500))
    opt = pruner.wrap(fx.optim.adam(1e-3))       # its state holds the masks
    state = opt.init(params)
    ...                                          # the usual jitted step: pruned weights stay 0
    fx.sparsity.summary(params)                  # {"[0][0]": 0.8, ..., "total": 0.8}

Structures: :class:`Unstructured`, :class:`NByM` (``NByM(2, 4)``), :class:`Channels`
(``Channels(-1)``: whole output channels); distributions ``"uniform"`` and ``"erk"``;
schedules :class:`OneShot`, :class:`Periodic`, :class:`Polynomial`. :func:`compact` removes
pruned channels from a stax network's params, giving a smaller dense network that computes
the same function. A jitted function whose weights are sparse constants (closed over, or
frozen with ``fx.export.freeze``) multiplies them in CSR form
(``fx.lowering.kernels.sparse.sparse_gemm``).
"""

from fx.sparsity.compaction import compact
from fx.sparsity.pruning import (
    MagnitudePruning,
    PruningState,
    apply_masks,
    erk_sparsities,
    summary,
)
from fx.sparsity.schedules import OneShot, Periodic, Polynomial
from fx.sparsity.structures import Channels, NByM, Unstructured

__all__ = ["Channels", "MagnitudePruning", "NByM", "OneShot", "Periodic", "Polynomial",
           "PruningState", "Unstructured", "apply_masks", "compact", "erk_sparsities",
           "summary"]
