"""Building a sharded array from its pieces, as jax does: from a callback giving each device's
shard (``make_array_from_callback``), from the data of this process's devices
(``make_array_from_process_local_data``) or from one single-device array per device of this
process (``make_array_from_single_device_arrays``).

In one process they build the global array (one buffer: see :mod:`fx.array`). Across
processes each process passes only its own shards and the array holds them: its value is not
readable in any one process, its ``addressable_shards`` are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from fx import dtypes, processes
from fx.array import Array, assemble
from fx.avals import ShapedArray
from fx.devices import put_buffer
from fx.sharding.shardings import NamedSharding, Sharding

__all__ = ["make_array_from_callback", "make_array_from_process_local_data",
           "make_array_from_single_device_arrays"]


def _local_devices(sharding: Sharding) -> list:
    me = processes.layout().process_index
    return [d for d in sharding._device_assignment if d.process_index == me]


def _check(sharding, shape, what: str) -> tuple[int, ...]:
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{what}: expected an fx.sharding.Sharding, got {sharding!r}")
    shape = tuple(int(d) for d in shape)
    if isinstance(sharding, NamedSharding):
        sharding.check_shape(shape, what)
    return shape


def _piece(data, device, shard_shape, what: str, dtype=None) -> tuple:
    """One shard's data as (its buffer on ``device``, its dtype): an fx Array's own (an
    extended dtype keeps its stored data), other data as NumPy in the mode's dtypes."""
    if isinstance(data, Array):
        buf, dt, shape = data._buf, data.dtype, data.shape
    else:
        buf = np.asarray(data)
        buf = buf.astype(dtypes.canonicalize(buf.dtype), copy=False)
        dt, shape = buf.dtype, buf.shape
    if dtype is not None and dt != dtype:
        if not isinstance(dt, np.dtype):
            raise TypeError(f"{what}: cannot convert {dt} data to {dtype}")
        buf, dt = buf.astype(dtype), np.dtype(dtype)
    if tuple(shape) != tuple(shard_shape):
        raise ValueError(f"{what}: the data for {device} has shape {tuple(shape)}, but its "
                         f"shard has shape {tuple(shard_shape)}")
    return put_buffer(buf, device), dt


def _build(shape, sharding, pieces: dict, weak_type: bool, what: str) -> Array:
    found = {dt for _, dt in pieces.values()}
    if len(found) > 1:
        raise ValueError(f"{what}: the shards have different dtypes {sorted(map(str, found))}")
    buffers = {d: buf for d, (buf, _) in pieces.items()}
    return assemble(ShapedArray(shape, found.pop(), weak_type), sharding, buffers)


def make_array_from_callback(shape: Sequence[int], sharding: Sharding,
                             data_callback: Callable, dtype=None) -> Array:
    """The array of ``shape`` placed by ``sharding`` whose shard on each of this process's
    devices is ``data_callback(index)`` (``index`` a tuple of slices into the global array),
    as ``jax.make_array_from_callback``.

    >>> mesh = fx.make_mesh((1,), ("x",))
    >>> s = fx.sharding.NamedSharding(mesh, fx.sharding.PartitionSpec("x"))
    >>> data = np.arange(6.0).reshape(3, 2)
    >>> fx.make_array_from_callback((3, 2), s, lambda index: data[index]).shape
    (3, 2)
    """
    what = "fx.make_array_from_callback"
    shape = _check(sharding, shape, what)
    indices = sharding.devices_indices_map(shape)
    shard_shape = sharding.shard_shape(shape)
    pieces = {d: _piece(data_callback(indices[d]), d, shard_shape, what, dtype)
              for d in _local_devices(sharding)}
    return _build(shape, sharding, pieces, False, what)


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Sharding,
                                         arrays: Sequence[Array], *, dtype=None) -> Array:
    """The array of ``shape`` placed by ``sharding`` made of ``arrays``, one array per device
    of this process, each on its device with its shard's shape (``fx.device_put(piece,
    device)`` places one), as ``jax.make_array_from_single_device_arrays``.

    >>> mesh = fx.make_mesh((1,), ("x",))
    >>> s = fx.sharding.NamedSharding(mesh, fx.sharding.PartitionSpec("x"))
    >>> piece = fx.device_put(np.arange(4.0), mesh.devices.flat[0])
    >>> fx.make_array_from_single_device_arrays((4,), s, [piece]).sharding == s
    True
    """
    what = "fx.make_array_from_single_device_arrays"
    shape = _check(sharding, shape, what)
    here = _local_devices(sharding)
    arrays = list(arrays)
    if len(arrays) != len(here):
        raise ValueError(f"{what}: {len(arrays)} arrays given, but {sharding} has {len(here)} "
                         f"devices in this process ({here}); give one array per device")
    on = {}
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"{what}: expected fx Arrays, got {type(a).__name__}")
        d = a.device
        if d not in here or d in on:
            raise ValueError(
                f"{what}: an array on {d} does not match the devices {here} of {sharding} "
                "(each array must be on a distinct one of them: fx.device_put(piece, device))")
        on[d] = a
    shard_shape = sharding.shard_shape(shape)
    pieces = {d: _piece(a, d, shard_shape, what, dtype) for d, a in on.items()}
    return _build(shape, sharding, pieces, all(a.weak_type for a in arrays), what)


def make_array_from_process_local_data(sharding: Sharding, local_data,
                                       global_shape: Sequence[int] | None = None) -> Array:
    """The global array whose part on this process's devices is ``local_data`` (as
    ``jax.make_array_from_process_local_data``): the block of the global array this
    process's shards make up, e.g. its rows of a batch split along ``"data"``. ``global_shape``
    (default: inferred from how many blocks of each dimension the process holds) fixes the
    global shape; data of the global shape itself is sliced as it is.

    >>> mesh = fx.make_mesh((1,), ("data",))
    >>> s = fx.sharding.NamedSharding(mesh, fx.sharding.PartitionSpec("data"))
    >>> fx.make_array_from_process_local_data(s, np.ones((4, 2))).shape
    (4, 2)
    """
    what = "fx.make_array_from_process_local_data"
    if isinstance(local_data, Array):
        data, local_shape = local_data._buf, local_data.shape

        def take(index):  # a view of the Array's data, its dtype kept (extended ones too)
            view = data[index]
            aval = ShapedArray(view.shape[:len(local_shape)], local_data.dtype,
                               local_data.weak_type)
            return Array._wrap(view, aval)
    else:
        data = np.asarray(local_data)
        local_shape = tuple(data.shape)

        def take(index):
            return data[index]
    if global_shape is not None and tuple(global_shape) == local_shape:
        return make_array_from_callback(local_shape, sharding, take)
    here = _local_devices(sharding)
    if not here:
        raise ValueError(f"{what}: no device of {sharding} belongs to this process")
    # Each dimension's blocks: a shape with one element per block gives their numbers.
    parts = _parts(sharding, len(local_shape))
    blocks = sharding.devices_indices_map(parts)
    held = [sorted({blocks[d][dim].start or 0 for d in here}) for dim in range(len(parts))]
    for dim, nums in enumerate(held):
        if nums != list(range(nums[0], nums[0] + len(nums))):
            raise ValueError(f"{what}: this process's shards are not one block of the global "
                             f"array along dimension {dim}; build it with "
                             "make_array_from_callback")
        if local_shape[dim] % len(nums):
            raise ValueError(f"{what}: local data of shape {local_shape} holds {len(nums)} "
                             f"blocks of dimension {dim}, which do not divide its size")
    inferred = tuple(local_shape[dim] // len(nums) * parts[dim] for dim, nums in
                     enumerate(held))
    shape = inferred if global_shape is None else _check(sharding, global_shape, what)
    if shape != inferred:
        raise ValueError(f"{what}: local data of shape {local_shape} is this process's part of "
                         f"a global array of shape {inferred}, not {tuple(global_shape)}")
    block = [shape[dim] // parts[dim] for dim in range(len(parts))]

    def local_part(d):
        index = tuple(slice(((blocks[d][dim].start or 0) - held[dim][0]) * block[dim],
                            ((blocks[d][dim].start or 0) - held[dim][0] + 1) * block[dim])
                      if parts[dim] > 1 else slice(None) for dim in range(len(parts)))
        return take(index)

    shard_shape = sharding.shard_shape(shape)
    pieces = {d: _piece(local_part(d), d, shard_shape, what) for d in here}
    weak = isinstance(local_data, Array) and local_data.weak_type
    return _build(shape, sharding, pieces, weak, what)


def _parts(sharding: Sharding, ndim: int) -> tuple[int, ...]:
    """How many blocks each dimension of a rank-``ndim`` array is cut into."""
    if not isinstance(sharding, NamedSharding):
        return (1,) * ndim
    if len(sharding.spec) > ndim:
        sharding.check_shape((1,) * ndim, "fx.make_array_from_process_local_data")
    return tuple(math.prod(sharding.mesh.shape[n] for n in sharding.spec.axes(dim))
                 for dim in range(ndim))
