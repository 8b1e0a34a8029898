"""Shardings: where each piece of an array lives, as ``jax.sharding`` spells them.

A :class:`Sharding` maps an array's global shape to, per device, the index (a tuple of slices)
of the shard that device holds. :class:`SingleDeviceSharding` puts the whole array on one
device; :class:`NamedSharding` splits it over a :class:`~fx.sharding.Mesh` as a
:class:`~fx.sharding.PartitionSpec` says: a dimension split by mesh axes ``(a, b)`` is cut into
``size(a) * size(b)`` equal blocks, the device at mesh coordinates ``(i, j)`` holding block
``i * size(b) + j`` (the first axis the major one), and every mesh axis the spec does not name
replicates the array (``replica_id`` counts those copies, over the unnamed axes in the mesh's
order). Shardings are immutable values, equal when they place every shard alike.

Errors are jax's types: a spec naming an axis twice or one the mesh lacks is refused when the
sharding is made; a dimension its mesh axes do not divide, or a spec longer than the array's
rank, when it is applied to a shape (``shard_shape``, ``devices_indices_map``, placing).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from fx import processes
from fx.devices import Device
from fx.sharding.mesh import Mesh, PartitionSpec

__all__ = ["NamedSharding", "Sharding", "SingleDeviceSharding"]

Index = tuple[slice, ...]


class Sharding:
    """The base of fx's shardings: a map from an array's global shape to each device's index.

    Subclasses define :attr:`device_set`, :meth:`devices_indices_map` and
    :attr:`_device_assignment` (the devices in a fixed order); the rest derives from them.
    """

    @property
    def device_set(self) -> set[Device]:
        raise NotImplementedError

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        raise NotImplementedError

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Index]:
        raise NotImplementedError

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def memory_kind(self) -> str:
        return "device"

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set[Device]:
        """The devices of this process among the sharding's."""
        me = processes.layout().process_index
        return {d for d in self.device_set if d.process_index == me}

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every device of the sharding (jax's "is local")."""
        me = processes.layout().process_index
        return all(d.process_index == me for d in self._device_assignment)

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""
        raise NotImplementedError

    def addressable_devices_indices_map(self, global_shape) -> dict[Device, Index]:
        """:meth:`devices_indices_map` restricted to this process's devices."""
        me = processes.layout().process_index
        return {d: i for d, i in self.devices_indices_map(global_shape).items()
                if d.process_index == me}

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether the two place every shard of a rank-``ndim`` array on the same devices."""
        if not isinstance(other, Sharding) or self._device_assignment != \
                other._device_assignment:
            return False
        shape = (self.num_devices * 2,) * ndim  # divisible by every split
        try:
            return self.devices_indices_map(shape) == other.devices_indices_map(shape)
        except ValueError:
            return False


class SingleDeviceSharding(Sharding):
    """The whole array on one device (what every array made by an ordinary operation has).

    >>> s = fx.sharding.SingleDeviceSharding(fx.devices("cpu")[0])
    >>> s
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    >>> s.devices_indices_map((2, 3))
    {CpuDevice(id=0): (slice(None, None, None), slice(None, None, None))}
    """

    def __init__(self, device: Device, *, memory_kind: str | None = None):
        if not isinstance(device, Device):
            raise TypeError(f"SingleDeviceSharding: expected an fx Device (from fx.devices()), "
                            f"got {device!r}")
        _check_memory_kind(memory_kind, "SingleDeviceSharding")
        self._device = device

    @property
    def device_set(self) -> set[Device]:
        return {self._device}

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return (self._device,)

    def devices_indices_map(self, global_shape) -> dict[Device, Index]:
        return {self._device: (slice(None),) * len(global_shape)}

    def shard_shape(self, global_shape) -> tuple[int, ...]:
        return tuple(global_shape)

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self) -> int:
        return hash(("SingleDeviceSharding", self._device))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"


class NamedSharding(Sharding):
    """An array split over ``mesh`` as ``spec`` says (as ``jax.sharding.NamedSharding``).

    >>> mesh = fx.make_mesh((1, 1), ("data", "model"))
    >>> s = fx.sharding.NamedSharding(mesh, fx.sharding.PartitionSpec("data", None))
    >>> s.shard_shape((4, 3))
    (4, 3)
    >>> s.is_fully_replicated, s.num_devices
    (True, 1)

    With 8 devices (``FX_NUM_CPU_DEVICES=8``) a ``(2, 4)`` mesh and ``P(("model", "data"))``
    cut dimension 0 into 8 blocks: the device at mesh coordinates ``(i, j)`` holds block
    ``j * 2 + i``.
    """

    def __init__(self, mesh: Mesh, spec: PartitionSpec | None = None, *,
                 memory_kind: str | None = None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: mesh must be an fx.sharding.Mesh, got "
                            f"{type(mesh).__name__}")
        spec = PartitionSpec() if spec is None else spec
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {spec!r}")
        _check_memory_kind(memory_kind, "NamedSharding")
        named = spec.all_axes()
        for name in named:
            if name not in mesh.axis_names:
                raise ValueError(f"NamedSharding: {spec} names axis {name!r}, which is not an "
                                 f"axis of the mesh {mesh} (its axes: {mesh.axis_names})")
        twice = sorted({n for n in named if named.count(n) > 1})
        if twice:
            raise ValueError(f"NamedSharding: {spec} names mesh axis "
                             f"{', '.join(repr(n) for n in twice)} more than once; a mesh "
                             "axis may split at most one dimension")
        self.mesh = mesh
        self.spec = spec

    @property
    def device_set(self) -> set[Device]:
        return set(self.mesh.devices.flat)

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return tuple(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[n] == 1 for n in self.spec.all_axes())

    def check_shape(self, global_shape, what: str = "NamedSharding") -> None:
        """ValueError unless ``global_shape`` can be split as this sharding says."""
        global_shape = tuple(global_shape)
        if len(self.spec) > len(global_shape):
            raise ValueError(
                f"{what}: {self.spec} has {len(self.spec)} entries, so it is only valid for "
                f"values of rank at least {len(self.spec)}, but was applied to a value of "
                f"shape {global_shape} (rank {len(global_shape)})")
        for dim, size in enumerate(global_shape):
            axes = self.spec.axes(dim)
            parts = math.prod(self.mesh.shape[n] for n in axes)
            if size % parts:
                sizes = " * ".join(f"{n}={self.mesh.shape[n]}" for n in axes)
                raise ValueError(
                    f"{what}: dimension {dim} of shape {global_shape} has size {size}, which "
                    f"mesh axes {axes} ({sizes} = {parts}) do not divide evenly ({self.spec}); "
                    f"use a size that is a multiple of {parts}, or split that dimension by "
                    "other axes")

    def shard_shape(self, global_shape) -> tuple[int, ...]:
        """The shape of each device's shard of an array of ``global_shape``."""
        self.check_shape(global_shape)
        return tuple(size // math.prod(self.mesh.shape[n] for n in self.spec.axes(dim))
                     for dim, size in enumerate(global_shape))

    def devices_indices_map(self, global_shape) -> dict[Device, Index]:
        """Each device's index into an array of ``global_shape``: a tuple of slices, one per
        dimension (``slice(None)`` where the dimension is not split)."""
        self.check_shape(global_shape)
        return dict(zip(self._device_assignment,
                        _indices(self.mesh.shape_tuple, self.spec, tuple(global_shape))))

    def replica_ids(self) -> dict[Device, int]:
        """Per device, which copy of its shard it holds (0 when the array is not replicated):
        its coordinates along the mesh axes the spec does not name, counted in mesh order."""
        return dict(zip(self._device_assignment, _replica_ids(self.mesh.shape_tuple,
                                                              self.spec)))

    def with_spec(self, spec: PartitionSpec) -> NamedSharding:
        return NamedSharding(self.mesh, spec)

    def _key(self):
        return (self.mesh, tuple(self.spec))

    def __eq__(self, other) -> bool:
        return isinstance(other, NamedSharding) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(("NamedSharding", self._key()))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r}, memory_kind=device)"


def _check_memory_kind(kind, what: str) -> None:
    if kind not in (None, "device"):
        raise ValueError(f"{what}: memory_kind={kind!r}: fx arrays live in device memory only "
                         "(memory_kind None or 'device')")


@functools.lru_cache(maxsize=256)
def _indices(mesh_shape: tuple, spec: PartitionSpec, global_shape: tuple) -> list[Index]:
    """Each mesh position's index (the mesh's devices in row-major order)."""
    sizes = dict(mesh_shape)
    names = [n for n, _ in mesh_shape]
    out = []
    for coords in np.ndindex(*[s for _, s in mesh_shape]):
        at = dict(zip(names, coords))
        index = []
        for dim, size in enumerate(global_shape):
            axes = spec.axes(dim)
            parts = math.prod(sizes[n] for n in axes)
            if parts == 1:  # not split (jax's index for it too)
                index.append(slice(None))
                continue
            block = 0
            for n in axes:  # the first axis the major one
                block = block * sizes[n] + at[n]
            step = size // parts
            index.append(slice(block * step, (block + 1) * step))
        out.append(tuple(index))
    return out


def _replica_ids(mesh_shape: tuple, spec: PartitionSpec) -> list[int]:
    used = set(spec.all_axes())
    free = [(i, s) for i, (n, s) in enumerate(mesh_shape) if n not in used]
    out = []
    for coords in np.ndindex(*[s for _, s in mesh_shape]):
        rid = 0
        for i, s in free:
            rid = rid * s + coords[i]
        out.append(rid)
    return out
