"""``shard_map`` as ``jax.experimental.shard_map`` spells it: the mesh and the specs may be
given positionally and replication is checked under the name ``check_rep``. Same semantics as
``fx.shard_map``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fx import spmd
from fx.sharding import Mesh

__all__ = ["shard_map"]


def shard_map(f: Callable, mesh: Mesh | None = None, in_specs: Any = None,
              out_specs: Any = None, check_rep: bool = True, auto: Any = frozenset()
              ) -> Callable:
    """``fx.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
    check_vma=check_rep)``; ``auto`` names mesh axes left unmapped (the others are mapped).

    Example::

        >>> import numpy as np, fx.numpy as fnp
        >>> from fx.experimental.shard_map import shard_map
        >>> mesh = fx.sharding.Mesh(np.array(fx.devices()[:1]), ("i",))
        >>> P = fx.sharding.PartitionSpec
        >>> shard_map(lambda v: 2 * v, mesh, P("i"), P("i"))(fnp.arange(3.0))
        Array([0., 2., 4.], dtype=float32)
    """
    if out_specs is None:
        raise TypeError("shard_map: out_specs is required")
    names = frozenset()
    if auto:
        if mesh is None:
            raise ValueError("shard_map: auto= needs an explicit mesh")
        names = frozenset(n for n in mesh.axis_names if n not in set(auto))
    return spmd.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                          axis_names=names, check_vma=check_rep)
