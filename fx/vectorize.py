"""``vmap``: vectorizing a function over a batch axis of its inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fx import tree_util
from fx.core import current_trace, get_aval, to_value
from fx.interpreters.batching import BatchAxis, batch_flat, not_mapped


def _fun_name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: int | None = None, spmd_axis_name: Any = None,
         sum_match: bool = False) -> Callable:
    """Vectorize ``fun`` over an axis of its inputs, as ``jax.vmap`` (same signature).

    ``in_axes`` is an int, None, or a pytree prefix of the positional arguments giving, per
    leaf, the batched axis (None: not batched); ``out_axes`` likewise for the outputs. All
    batched inputs must share one axis size (``axis_size`` gives it when nothing is batched).
    Keyword arguments are batched along axis 0, as in jax.
    ``axis_name`` names the axis for collectives (``fx.lax.psum`` and friends).
    ``spmd_axis_name`` names mesh axes to shard over; fx runs on one device, so it is accepted
    and has no effect.

    An output whose ``out_axes`` is None must not vary along the batch: that is an error,
    unless ``sum_match=True``, which (as jax's) sums such an output over the batch axis
    instead. Outputs that do not vary are returned as they are either way, not multiplied by
    the axis size. This is the transpose of broadcasting an unbatched input, which is what a
    vmapped backward pass needs for inputs with ``in_axes`` None.

    Example::

        >>> fx.vmap(lambda x, y: x @ y, in_axes=(0, None))(fnp.ones((5, 3)), fnp.ones(3)).shape
        (5,)
        >>> fx.vmap(lambda x: 2 * x, out_axes=None, sum_match=True)(fnp.arange(4.0))
        Array(12., dtype=float32)
    """
    del spmd_axis_name  # one device: nothing to shard over
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap: in_axes has {len(in_axes)} entries but {_fun_name(fun)} was called with "
                f"{len(args)} positional arguments"
            )
        # Keyword arguments are batched along axis 0, every leaf (jax's rule: in_axes covers
        # the positional arguments only).
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        try:
            axes = tree_util.broadcast_prefix(
                in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args), args
            ) + [0] * len(tree_util.tree_leaves(kwargs))
        except ValueError as e:
            raise ValueError(f"vmap: in_axes does not match the arguments: {e}") from None
        paths = [p for part in (args, kwargs)
                 for p, _ in tree_util.tree_flatten_with_path(part)[0]]
        leaves = [to_value(x, "vmap") for x in leaves]
        dims, size = [], axis_size
        sized_from = None
        for leaf, ax, path in zip(leaves, axes, paths):
            if ax is None:
                dims.append(None)
                continue
            if not isinstance(ax, int):
                raise TypeError(f"vmap: in_axes entries must be int or None, got {ax!r}")
            nd = get_aval(leaf).ndim
            if not -nd <= ax < nd:
                raise ValueError(
                    f"vmap: in_axes {ax} is out of range for argument{tree_util.keystr(path)} "
                    f"of rank {nd} (shape {get_aval(leaf).shape})"
                )
            ax %= nd
            n = get_aval(leaf).shape[ax]
            if size is None:
                size, sized_from = n, path
            elif n != size:
                first = f"argument{tree_util.keystr(sized_from)}" if sized_from else "axis_size"
                raise ValueError(
                    f"vmap got inconsistent sizes for the mapped axis: {first} has size {size}, "
                    f"argument{tree_util.keystr(path)} has size {n} along axis {ax}"
                )
            dims.append(ax)
        if size is None:
            raise ValueError(
                "vmap: no argument is batched (all in_axes are None); pass axis_size= to say "
                "how many times to map"
            )
        store: dict[str, Any] = {}
        summed: set[int] = set()  # outputs that vary, with out_axes None, under sum_match

        def flat_f(*xs):
            a, kw = tree_util.tree_unflatten(in_tree, xs)
            out = fun(*a, **kw)
            out_leaves, store["tree"] = tree_util.tree_flatten(out)
            outs = [to_value(o, "vmap") for o in out_leaves]
            if sum_match:
                batch_trace = current_trace()
                summed.update(i for i, o in enumerate(outs)
                              if out_dim(i) is None and batch_trace.lift(o)[1] is not not_mapped)
            return outs

        def out_dim(i):
            if "axes" not in store:
                try:
                    store["axes"] = tree_util.broadcast_prefix(out_axes, _skeleton(store["tree"]))
                except ValueError as e:
                    raise ValueError(f"vmap: out_axes does not match the outputs: {e}") from None
            return store["axes"][i]

        # A summed output comes back with its batch axis in front and is reduced over it.
        outs = batch_flat(flat_f, leaves, dims, BatchAxis(size, axis_name),
                          lambda i: 0 if i in summed else out_dim(i))
        if summed:
            from fx.numpy.reductions import sum as array_sum  # noqa: PLC0415  (fx.numpy uses vmap)

            outs = [array_sum(o, axis=0) if i in summed else o for i, o in enumerate(outs)]
        return tree_util.tree_unflatten(store["tree"], outs)

    vmapped.__name__ = f"vmap({_fun_name(fun)})"
    vmapped.__wrapped__ = fun
    return vmapped


def _skeleton(treedef):
    return tree_util.tree_unflatten(treedef, [0] * treedef.num_leaves)
