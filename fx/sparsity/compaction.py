"""Compaction: a channel-pruned stax network as a smaller dense one computing the same function.

Takes the params of a ``stax.serial`` model (a list, one entry per layer), the masks of a
:class:`~fx.sparsity.Channels` pruning (``Channels(-1)``: output channels of HWIO kernels and
output features of ``(in, out)`` dense weights) and the layers themselves (the stax layers the
model was built from, as passed to ``stax.serial``); returns the params with every output
channel whose kernel slice the mask removes deleted from its layer (kernel slice and bias),
and the matching input channels deleted from the next layer with parameters (its kernel's
``I`` axis, or for a dense layer after ``stax.Flatten`` of NHWC features the rows of that
channel at every spatial position). stax's ``Conv`` and ``Dense`` read their sizes from their
params, so the model's ``apply_fun`` runs the compacted params unchanged.

The function is the same because a pruned channel is exactly zero before its activation
(weights and bias masked) and the layers between it and the next parametrized layer map zero
to zero channel by channel: this holds for ``Relu``, ``MaxPool``/``AvgPool``/``SumPool``,
``Flatten``, ``Dropout`` and ``Identity``; a parametrized layer of another kind in between (a
BatchNorm's shift makes zero nonzero) is refused. Results agree with the masked network to
rounding (the summation over fewer channels), not bitwise.
"""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.example_libraries import stax
from fx.sparsity.pruning import PruningState, _is_bias


def _kernel(entry):
    """The kernel and bias of a Conv/Dense entry ``(W, b)``, else None."""
    if isinstance(entry, (tuple, list)) and len(entry) == 2 and np.ndim(entry[0]) in (2, 4) \
            and _is_bias(entry[1], np.shape(entry[0])[-1]) \
            and np.shape(entry[1])[-1] == np.shape(entry[0])[-1]:
        return entry
    return None


def _has_params(entry) -> bool:
    return bool(entry) if isinstance(entry, (tuple, list, dict)) else entry is not None


def compact(params, masks, layers):
    """The params with the pruned output channels removed (see the module docstring).

    ``params``: the ``stax.serial`` params list; ``masks``: the pruning state (or its masks) for
    those params; ``layers``: the stax layers, one per params entry. Returns a new list.
    """
    masks = masks.masks if isinstance(masks, PruningState) else masks
    if not isinstance(params, (list, tuple)) or len(params) != len(layers) or len(masks) != len(
            params):
        raise ValueError(f"fx.sparsity.compact: needs stax.serial params (a list), their masks "
                         f"and the layers, one per entry; got {len(params)} params entries, "
                         f"{len(masks)} masks and {len(layers)} layers")
    out = list(params)
    keep = None  # the channels the previous pruned layer kept (indices into its outputs)
    width = None  # that layer's original number of channels
    flattened = False
    for i, (entry, mask, layer) in enumerate(zip(params, masks, layers)):
        wb = _kernel(entry)
        if wb is None:
            if layer is stax.Flatten:
                flattened = True
            elif _has_params(entry) and keep is not None:
                raise ValueError(f"fx.sparsity.compact: layer {i} has parameters but is not a "
                                 "Conv or Dense (W, b); removing channels before it would "
                                 "change the function (a BatchNorm maps zero to its shift)")
            continue
        w, b = (np.asarray(a) for a in wb)
        m = np.broadcast_to(np.asarray(mask[0]), w.shape)
        w = np.where(m, w, 0).astype(w.dtype)
        b = np.where(np.broadcast_to(np.asarray(mask[1]), b.shape), b, 0).astype(b.dtype)
        if keep is not None:  # drop the inputs the previous layer no longer makes
            if w.ndim == 4:
                w = w[:, :, keep, :]
            elif flattened:
                spatial = w.shape[0] // width
                w = w.reshape(spatial, width, w.shape[1])[:, keep, :].reshape(-1, w.shape[1])
            else:
                w = w[keep, :]
        alive = np.flatnonzero(np.any(m.reshape(-1, m.shape[-1]), axis=0))
        keep, width, flattened = (alive, w.shape[-1], False)
        out[i] = type(entry)((fnp.asarray(w[..., alive]), fnp.asarray(b[..., alive])))
    return out
