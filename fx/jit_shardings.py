"""``fx.jit``'s ``in_shardings`` and ``out_shardings`` in one process.

Each is a pytree prefix of the positional (non-static) arguments, or of the outputs, whose
leaves are shardings (``None``: leave that part where it is). A call places its concrete
arguments as ``in_shardings`` says (``fx.device_put``: checked for rank and divisibility, no
copy between CPU devices) and gives its outputs ``out_shardings``. The program is the
unsharded one: every CPU device of a process shares host memory, so the values are exactly
those of the unsharded call. Over a mesh spanning processes the program is partitioned by
its batch (:mod:`fx.spmd_partition`, registered here by the layer above): each process runs
its shard's program, with collectives between processes. Under a transformation (a traced
call) the shardings change nothing.
"""

from __future__ import annotations

from fx import tree_util
from fx.array import device_put
from fx.sharding.shardings import NamedSharding, Sharding


def _is_spec_leaf(x) -> bool:
    return x is None or isinstance(x, Sharding)


def check(shardings, what: str, name: str) -> None:
    """TypeError unless every leaf of ``shardings`` is a Sharding or None; NotImplementedError
    for a mesh spanning processes."""
    for s in tree_util.tree_leaves(shardings, is_leaf=_is_spec_leaf):
        if s is None:
            continue
        if not isinstance(s, Sharding):
            raise TypeError(f"jit({name}): {what} leaves must be shardings (NamedSharding, "
                            f"SingleDeviceSharding) or None, got {s!r}")
        if isinstance(s, NamedSharding) and s.mesh.is_multi_process and not _partitioner:
            raise NotImplementedError(
                f"jit({name}): {what} {s} is over a mesh spanning processes; fx.jit partitions "
                "programs within one process only. Write the program per shard with "
                "fx.shard_map, which runs across processes")


def spanning_mesh(in_shardings, out_shardings, name: str):
    """The mesh spanning processes that the shardings name (None: none does); ValueError for
    two different meshes, NotImplementedError for out_shardings over such a mesh without
    in_shardings."""
    meshes = set()
    for tree in (in_shardings, out_shardings):
        for s in tree_util.tree_leaves(tree, is_leaf=_is_spec_leaf):
            if isinstance(s, NamedSharding) and s.mesh.is_multi_process:
                meshes.add(s.mesh)
    if not meshes:
        return None
    if len(meshes) > 1:
        raise ValueError(f"jit({name}): in_shardings and out_shardings name different meshes "
                         f"spanning processes: {sorted(map(str, meshes))}")
    if in_shardings is None:
        raise NotImplementedError(
            f"jit({name}): out_shardings over a mesh spanning processes needs in_shardings on "
            "that mesh (the partitioned program takes its split from the inputs)")
    return meshes.pop()


_partitioner: list = []


def register_partitioner(make, spanning_call) -> None:
    """``make(fun, mesh, in_shardings, out_shardings, name)`` gives a callable running ``fun``
    partitioned over ``mesh``; ``spanning_call(fun, args, name, cache)`` runs ``fun`` on
    arguments spanning processes partitioned as they are placed, or returns None where it
    does not apply (fx.spmd_partition registers both)."""
    _partitioner[:] = [make, spanning_call]


def spanning_call(fun, args: tuple, name: str, cache: dict):
    return _partitioner[1](fun, args, name, cache) if _partitioner else None


def partitioned(fun, mesh, in_shardings, out_shardings, name: str):
    return _partitioner[0](fun, mesh, in_shardings, out_shardings, name)


def apply(shardings, tree, what: str, name: str):
    """``tree`` with each concrete array placed as the prefix ``shardings`` says."""
    try:
        tree_util.tree_map(lambda s, part: None, shardings, tree, is_leaf=_is_spec_leaf)
    except (ValueError, TypeError) as e:
        raise ValueError(f"jit({name}): {what} must be a pytree prefix of the "
                         f"{'outputs' if what == 'out_shardings' else 'positional arguments'}"
                         f" ({tree_util.tree_structure(tree)}): {e}") from None
    try:
        return tree_util.tree_map(
            lambda s, part: part if s is None else tree_util.tree_map(
                lambda leaf: _place(leaf, s), part),
            shardings, tree, is_leaf=_is_spec_leaf)
    except ValueError as e:
        raise ValueError(f"jit({name}): {what}: {e}") from None


def _place(leaf, s: Sharding):
    if hasattr(leaf, "_trace"):
        return leaf
    return device_put(leaf, s)


def args_tree(dyn_args: tuple, kwargs: dict, name: str) -> tuple:
    if kwargs:
        raise ValueError(f"jit({name}): with in_shardings the function takes its dynamic "
                         f"arguments by position; got keyword arguments {sorted(kwargs)}")
    return dyn_args
