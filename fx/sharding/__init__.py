"""Meshes, partition specs and shardings, as ``jax.sharding`` spells them.

- :mod:`fx.sharding.mesh`: :class:`Mesh` (a named grid of devices), :func:`make_mesh` and
  :class:`PartitionSpec` (``P``: which mesh axes split each dimension).
- :mod:`fx.sharding.shardings`: :class:`Sharding`, :class:`SingleDeviceSharding` and
  :class:`NamedSharding` (a mesh and a spec): each device's index into an array.

Arrays carry a sharding (``fx.Array.sharding``); ``fx.device_put(x, sharding)``,
``fx.make_array_from_callback`` and friends place them (:mod:`fx.array`,
:mod:`fx.sharded_arrays`).

    >>> P = fx.sharding.PartitionSpec
    >>> mesh = fx.make_mesh((1,), ("data",))
    >>> x = fx.device_put(fx.numpy.arange(4.0), fx.sharding.NamedSharding(mesh, P("data")))
    >>> x.sharding.spec, [s.index for s in x.addressable_shards]
    (PartitionSpec('data'), [(slice(None, None, None),)])
"""

from fx.sharding.mesh import Mesh, PartitionSpec, current_mesh, make_mesh
from fx.sharding.shardings import NamedSharding, Sharding, SingleDeviceSharding

P = PartitionSpec

__all__ = ["Mesh", "NamedSharding", "P", "PartitionSpec", "Sharding", "SingleDeviceSharding",
           "current_mesh", "make_mesh"]
