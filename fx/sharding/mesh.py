"""Meshes and partition specs, as ``jax.sharding`` spells them (``fx.sharding`` re-exports them).

A :class:`Mesh` is an n-dimensional array of devices whose axes have names (``"data"``,
``"model"``); a :class:`PartitionSpec` says, per dimension of an array, which mesh axes split
it (``None``: not split; a name; a tuple of names: split by their product, major first). They
are plain immutable values: placing arrays (``NamedSharding``, ``fx.device_put``) and running
code per shard (``fx.shard_map``) read them.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence

import numpy as np

from fx.devices import Device
from fx.devices import devices as run_devices

__all__ = ["Mesh", "PartitionSpec", "current_mesh", "make_mesh"]


class PartitionSpec(tuple):
    """Per dimension of an array, the mesh axes splitting it: ``None`` (replicated along it),
    an axis name, or a tuple of names (split by their product, the first the major one).
    Dimensions past the spec's length are not split.

    >>> P = fx.sharding.PartitionSpec
    >>> P("data", None)
    PartitionSpec('data', None)
    >>> P(("data", "model"),)[0]
    ('data', 'model')
    """

    def __new__(cls, *parts):
        for part in parts:
            names = part if isinstance(part, tuple) else (part,)
            if part is not None and not all(isinstance(n, str) for n in names):
                raise TypeError(f"PartitionSpec: each entry is None, an axis name or a tuple "
                                f"of axis names; got {part!r}")
        return super().__new__(cls, parts)

    def __repr__(self) -> str:
        return f"PartitionSpec{tuple.__repr__(self)}" if len(self) != 1 else \
            f"PartitionSpec({self[0]!r})"

    def axes(self, dim: int) -> tuple[str, ...]:
        """The mesh axes splitting dimension ``dim`` (major first; empty: not split)."""
        if dim >= len(self) or self[dim] is None:
            return ()
        part = self[dim]
        return part if isinstance(part, tuple) else (part,)

    def all_axes(self) -> tuple[str, ...]:
        """Every mesh axis the spec names, in order."""
        return tuple(n for d in range(len(self)) for n in self.axes(d))

    def __reduce__(self):
        return (PartitionSpec, tuple(self))


class Mesh:
    """An array of devices with named axes.

    >>> mesh = fx.sharding.Mesh(np.array(fx.devices()[:1]).reshape(1, 1), ("data", "model"))
    >>> mesh.shape
    OrderedDict([('data', 1), ('model', 1)])

    Used as a context manager (``with mesh:``) it is the mesh that ``PartitionSpec``s given
    without one refer to.
    """

    def __init__(self, devices: np.ndarray | Sequence, axis_names: str | Sequence[str],
                 axis_types=None):
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        grid = np.asarray(devices, dtype=object) if not isinstance(devices, np.ndarray) \
            else devices
        if grid.ndim != len(names):
            raise ValueError(f"Mesh: devices has {grid.ndim} dimensions {grid.shape} but "
                             f"{len(names)} axis names {names} were given; give one name per "
                             "dimension")
        if len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"Mesh: axis names must be distinct strings, got {names}")
        flat = list(grid.flat)
        if not all(isinstance(d, Device) for d in flat):
            raise TypeError("Mesh: every entry of devices must be an fx Device "
                            "(from fx.devices())")
        if len({(d.platform, d.id, d.process_index) for d in flat}) != len(flat):
            raise ValueError("Mesh: a device appears more than once")
        self.devices = grid
        self.devices.flags.writeable = False
        self.axis_names = names
        self.axis_types = axis_types

    @property
    def shape(self) -> collections.OrderedDict:
        """Axis name → its size, in the mesh's order."""
        return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(self.shape.items())

    @property
    def size(self) -> int:
        return math.prod(self.devices.shape)

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list:
        """This process's devices in the mesh, in the mesh's order."""
        from fx import processes
        me = processes.layout().process_index
        return [d for d in self.devices.flat if d.process_index == me]

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

    def axis_size(self, names: str | Sequence[str]) -> int:
        names = (names,) if isinstance(names, str) else tuple(names)
        for n in names:
            if n not in self.axis_names:
                raise NameError(f"axis name {n!r} is not an axis of the mesh {self}; its "
                                f"axes are {self.axis_names}")
        return math.prod(self.shape[n] for n in names)

    def _key(self):
        return (self.axis_names, self.devices.shape,
                tuple((d.platform, d.id, d.process_index) for d in self.devices.flat))

    def __eq__(self, other) -> bool:
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({axes})"

    def __enter__(self) -> Mesh:
        _mesh_stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _mesh_stack.pop()


_mesh_stack: list[Mesh] = []


def current_mesh() -> Mesh | None:
    """The innermost mesh entered with ``with mesh:`` (None outside any)."""
    return _mesh_stack[-1] if _mesh_stack else None


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], *, devices=None,
              axis_types=None) -> Mesh:
    """A mesh of ``axis_shapes`` over ``devices`` (default: every device of the run, process
    by process), as ``jax.make_mesh``.

    >>> fx.make_mesh((1,), ("data",))
    Mesh('data': 1)
    """
    axis_shapes, axis_names = tuple(axis_shapes), tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"make_mesh: {len(axis_shapes)} axis shapes {axis_shapes} but "
                         f"{len(axis_names)} axis names {axis_names}")
    devs = list(run_devices() if devices is None else devices)
    need = math.prod(axis_shapes)
    if need != len(devs):
        raise ValueError(f"make_mesh: axis shapes {axis_shapes} need {need} devices but "
                         f"{len(devs)} are given; set FX_NUM_CPU_DEVICES={need} (or pass "
                         "devices=) to have that many")
    grid = np.empty(len(devs), dtype=object)
    grid[:] = devs
    return Mesh(grid.reshape(axis_shapes), axis_names, axis_types)
