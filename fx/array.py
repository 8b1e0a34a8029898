"""``fx.Array``: an immutable array, its sharding and its shards.

An Array wraps a NumPy buffer (CPU) or a CuPy buffer (GPU) of a supported dtype, plus the
``weak_type`` bit of its abstract value. Buffers are never mutated: the NumPy buffer is marked
read-only, so ``np.asarray(x)`` gives a read-only view. Arithmetic, indexing and the numpy-style
methods are installed by ``fx.numpy`` (they are shared with tracers).

Where an array lives is its sharding (``x.sharding``). Unless it was placed, that is the
:class:`~fx.sharding.SingleDeviceSharding` of the device its buffer is on (every array an
ordinary operation makes). ``device_put`` (and ``fx.make_array_from_callback`` and friends)
set it. The representation:

- An array whose devices are all this process's (``is_fully_addressable``) keeps one buffer
  holding the whole value. All CPU devices of a process (``FX_NUM_CPU_DEVICES``) share host
  memory, so its shards (``x.addressable_shards``) are read-only views of that buffer, and
  every operation on it is the operation on the unsharded value (its result lives where an
  ordinary operation's does). Only host devices hold sharded arrays in this way: a sharding
  over several GPUs of one process is refused.
- An array spanning processes (a mesh over ``fx.distributed``'s processes) holds only this
  process's shards, one buffer per device of this process. Its value is not here: reading it
  (``np.asarray``, printing, an eager operation, a jitted call) raises ``RuntimeError``;
  ``x.addressable_shards`` gives the local shards (what ``fx.shard_map`` computes on), and
  ``fx.make_array_from_single_device_arrays`` builds one from them. Where this process's
  shards make up the whole value (a replicated array), it keeps the whole value instead.
"""

from __future__ import annotations

import numpy as np

from fx import devices, dlpack_capsules, dtypes, processes, tree_util
from fx.avals import ShapedArray
from fx.sharding.shardings import NamedSharding, Sharding, SingleDeviceSharding


class Array:
    # _sharding: None where the buffer's device says where the array lives, else the sharding
    # it was placed with.
    __slots__ = ("_buf", "aval", "_sharding", "__weakref__")
    __array_priority__ = 100

    def __init__(self, buf, weak_type: bool = False):
        if isinstance(buf, np.ndarray) and buf.flags.writeable:
            buf = buf.view()  # the caller may still write its array: freeze our view only
            buf.flags.writeable = False
        self._buf = buf
        self.aval = ShapedArray(buf.shape, buf.dtype, weak_type)
        self._sharding = None

    @classmethod
    def _wrap(cls, buf, aval: ShapedArray, sharding: Sharding | None = None) -> Array:
        """An Array taking ownership of a freshly produced buffer (frozen in place)."""
        if isinstance(buf, np.ndarray):
            buf.flags.writeable = False
        out = cls.__new__(cls)
        out._buf = buf
        out.aval = aval
        out._sharding = sharding
        return out

    # -- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def nbytes(self) -> int:
        return self.aval.nbytes

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def sharding(self) -> Sharding:
        """Where the array lives: a :class:`~fx.sharding.SingleDeviceSharding` unless it was
        placed with another (``fx.device_put(x, NamedSharding(mesh, spec))``)."""
        s = self._sharding
        if s is None:
            self._check_live()
            return SingleDeviceSharding(devices.device_of_buffer(self._buf))
        return s

    @property
    def device(self) -> devices.Device | Sharding:
        """The device holding the array; for an array on several devices, its sharding (as
        jax's ``Array.device``)."""
        s = self._sharding
        if s is None:
            return devices.device_of_buffer(self._buf)
        assigned = s._device_assignment
        return assigned[0] if len(assigned) == 1 else s

    def devices(self) -> set[devices.Device]:
        """Every device holding a shard of the array."""
        return self.sharding.device_set

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every shard (false for arrays spanning processes)."""
        return self.sharding.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole value."""
        return self.sharding.is_fully_replicated

    @property
    def addressable_shards(self) -> list[Shard]:
        """This process's shards, in the order of the sharding's devices: each shard's
        device, index into the global array, replica id and data (an Array on that device;
        a read-only view of this array's buffer where it holds the whole value).

        >>> x = fx.numpy.arange(3.0)
        >>> [(s.device, s.index, s.replica_id) for s in x.addressable_shards]
        [(CpuDevice(id=0), (slice(None, None, None),), 0)]
        """
        self._check_live()
        s = self.sharding
        indices = s.addressable_devices_indices_map(self.shape)
        replicas = s.replica_ids() if isinstance(s, NamedSharding) else {}
        shard_aval = ShapedArray(s.shard_shape(self.shape), self.dtype, self.weak_type)
        buf = self._buf
        out = []
        for d in s._device_assignment:
            if d not in indices:
                continue
            data = buf.shards[d] if isinstance(buf, _ProcessShards) else buf[indices[d] or ...]
            out.append(Shard(d, indices[d], replicas.get(d, 0),
                             Array._wrap(data, shard_aval, SingleDeviceSharding(d))))
        return out

    def addressable_data(self, index: int) -> Array:
        """The data of this process's ``index``-th shard (``addressable_shards[index].data``)."""
        return self.addressable_shards[index].data

    @property
    def global_shards(self) -> list[Shard]:
        """Every shard, on every process's devices; those of other processes have ``data``
        None (as jax's)."""
        mine = {sh.device: sh for sh in self.addressable_shards}
        s = self.sharding
        if len(mine) == len(s._device_assignment):
            return list(mine.values())
        indices = s.devices_indices_map(self.shape)
        replicas = s.replica_ids() if isinstance(s, NamedSharding) else {}
        return [mine.get(d) or Shard(d, indices[d], replicas.get(d, 0), None)
                for d in s._device_assignment]

    def _check_live(self) -> None:
        if self._buf is _DELETED:
            _DELETED._fail()

    # -- host interop -------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        if not isinstance(self.aval.dtype, np.dtype):
            raise TypeError(
                f"an fx array of dtype {self.dtype} (a PRNG key array) cannot be converted to "
                "a NumPy array; use fx.random.key_data(k) for its raw uint32 data")
        host = devices.to_host(self._buf)
        if copy:
            host = host.copy()
        return host if dtype is None else host.astype(dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array, so ``np.from_dlpack(x)`` (and CuPy's, jax's, torch's
        ``from_dlpack``) read it without copying; see :mod:`fx.dlpack`. DLPack 1.0 consumers
        get a read-only view; older ones, which cannot mark memory read-only, get a copy."""
        return dlpack_capsules.export(self._buf, stream=stream, max_version=max_version,
                             dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack_capsules.export_device(self._buf)

    def delete(self) -> None:
        """Free the buffer; later use raises (what donation to a jitted call does)."""
        self._buf = _DELETED

    def is_deleted(self) -> bool:
        return self._buf is _DELETED

    def block_until_ready(self) -> Array:
        # An array spanning processes waits for this process's shards (the others' are theirs).
        bufs = (self._buf.shards.values() if isinstance(self._buf, _ProcessShards)
                else (self._buf,))
        if any(not isinstance(b, np.ndarray) for b in bufs):
            devices.cupy_module().cuda.get_current_stream().synchronize()
        return self

    def item(self):
        return np.asarray(self).item()

    def tolist(self):
        return np.asarray(self).tolist()

    def copy(self) -> Array:
        return Array._wrap(self._buf.copy(), self.aval, self._sharding)

    def __bool__(self) -> bool:
        return bool(np.asarray(self))

    def __int__(self) -> int:
        return int(np.asarray(self))

    def __float__(self) -> float:
        return float(np.asarray(self))

    def __index__(self) -> int:
        if not dtypes.is_int(self.dtype):
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return int(np.asarray(self))

    def __complex__(self) -> complex:
        return complex(np.asarray(self))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d fx.Array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d fx.Array")
        return (self[i] for i in range(self.shape[0]))

    def __reversed__(self):
        return (self[i] for i in reversed(range(len(self))))

    __hash__ = None  # type: ignore[assignment]  # arrays are unhashable, like numpy's

    def __setitem__(self, idx, value):
        raise TypeError(
            "fx arrays are immutable: 'x[idx] = y' is not supported. "
            "Use the functional update 'x = x.at[idx].set(y)' instead."
        )

    def __format__(self, spec: str) -> str:
        if not self.shape and isinstance(self.aval.dtype, np.dtype):
            return format(np.asarray(self).item(), spec)
        return format(str(self), spec)

    def __str__(self) -> str:
        if not isinstance(self.aval.dtype, np.dtype):
            return self._overlay_repr()
        return str(np.asarray(self))

    def __repr__(self) -> str:
        if isinstance(self._buf, _ProcessShards):  # its value is not here (as jax prints it)
            return f"Array(shape={self.shape}, dtype={self.dtype})"
        if not isinstance(self.aval.dtype, np.dtype):
            return self._overlay_repr()
        host = np.asarray(self)
        prefix = "Array("
        body = np.array2string(host, separator=", ", prefix=prefix)
        extra = f", dtype={self.dtype.name}"
        if self.weak_type:
            extra += ", weak_type=True"
        return f"{prefix}{body}{extra})"

    def _overlay_repr(self) -> str:
        # An extended dtype (PRNG keys) shows its stored data, as jax prints key arrays.
        data = devices.to_host(self._buf)
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{data}"

    def __reduce__(self):
        if not isinstance(self.aval.dtype, np.dtype):
            return (Array._wrap, (np.array(devices.to_host(self._buf)), self.aval))
        return (_rebuild, (np.asarray(self), self.weak_type))


class _Deleted:
    """Stands in for the buffer of a deleted (donated) array: any use is an error."""

    def _fail(self, *args, **kwargs):
        raise RuntimeError(
            "this fx.Array was deleted: it was donated to a jitted function "
            "(donate_argnums), which may have reused its memory; use the function's outputs"
        )

    __array__ = _fail
    __getattr__ = _fail


_DELETED = _Deleted()


def _rebuild(host, weak_type):
    return Array(host, weak_type)


class Shard:
    """One shard of an Array (as ``jax.Shard``): the ``device`` holding it, its ``index``
    into the global array (a tuple of slices), its ``replica_id`` (which copy, 0 when not
    replicated) and its ``data`` (an Array on that device)."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device: devices.Device, index: tuple, replica_id: int,
                 data: Array | None):
        self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

    def __repr__(self) -> str:
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


class _ProcessShards:
    """The buffer of an array spanning processes whose value this process does not hold: its
    local shards, one buffer per device of this process. Any use as a buffer (reading the
    value, an operation) raises, naming what to do instead."""

    __slots__ = ("shards", "shape", "sharding")

    def __init__(self, shards: dict, shape: tuple, sharding: Sharding):
        self.shards, self.shape, self.sharding = shards, shape, sharding

    def _fail(self, *args, **kwargs):
        me = processes.layout().process_index
        owners = sorted({d.process_index for d in self.sharding.device_set})
        raise RuntimeError(
            f"fx.Array of shape {self.shape} spans non-addressable devices: its sharding "
            f"{self.sharding} places shards on processes {owners} and this is process {me}, "
            "so its value is not here. Use fx.experimental.multihost_utils.process_allgather(x) "
            "to gather it, x.addressable_shards to read this process's shards, or shard_map "
            "to compute on them")

    __array__ = _fail

    def __getattr__(self, name):
        self._fail()


def assemble(aval: ShapedArray, sharding: Sharding, local: dict) -> Array:
    """The Array of type ``aval`` placed by ``sharding`` whose shards on this process's
    devices are the buffers ``local`` (device -> buffer of the shard's shape; extended dtypes:
    their stored data). Where they make up the whole value it is assembled into one buffer,
    else the array holds them as they are (see the module docstring)."""
    indices = sharding.devices_indices_map(aval.shape)
    missing = [d for d in indices if d.process_index == processes.layout().process_index
               and d not in local]
    if missing:
        raise ValueError(f"fx: no data for devices {missing} of {sharding}")
    first = next(iter(local.values()))
    tail = tuple(first.shape[len(aval.shape):])  # an extended dtype's stored dimensions
    blocks = {tuple((i.start, i.stop) for i in indices[d]) for d in local}
    block_size = int(np.prod(sharding.shard_shape(aval.shape), dtype=np.int64))
    if len(blocks) * block_size < int(np.prod(aval.shape, dtype=np.int64)):
        frozen = {}
        for d, b in local.items():
            if isinstance(b, np.ndarray):
                b = b.view()
                b.flags.writeable = False
            frozen[d] = b
        buf = _ProcessShards(frozen, aval.shape, sharding)
    else:
        xp = np if isinstance(first, np.ndarray) else devices.cupy_module()
        buf = xp.empty(aval.shape + tail, dtype=first.dtype)
        for d, b in local.items():
            buf[indices[d]] = b
    return Array._wrap(buf, aval, sharding)


def device_put(x, device=None):
    """``x`` (a pytree of arrays) placed on ``device``: a :class:`~fx.Device`, a platform name,
    a :class:`~fx.sharding.SingleDeviceSharding` or a :class:`~fx.sharding.NamedSharding`
    (default: the default device), as ``jax.device_put``; a pytree of those (a prefix of
    ``x``'s) places each part. Data moves between host and GPU only when it lives elsewhere;
    placing on a CPU device or a sharding over CPU devices copies nothing (they share host
    memory: see the module docstring). Traced values pass through unchanged.

    >>> mesh = fx.make_mesh((1,), ("data",))
    >>> s = fx.sharding.NamedSharding(mesh, fx.sharding.PartitionSpec("data"))
    >>> fx.device_put(np.arange(4.0), s).sharding == s
    True
    """
    if _is_target(device):
        if isinstance(x, (Array, np.ndarray, np.generic, int, float, complex)):
            return _put(x, device)  # one leaf: the common call, without a tree walk
        return tree_util.tree_map(lambda leaf: _put(leaf, device), x)
    return tree_util.tree_map(
        lambda target, part: tree_util.tree_map(lambda leaf: _put(leaf, target), part),
        device, x, is_leaf=_is_target)


def _is_target(t) -> bool:
    return t is None or isinstance(t, (devices.Device, Sharding, str))


def _put(x, target):
    if hasattr(x, "_trace"):
        return x
    if target is None:
        target = devices.default_device()
    elif isinstance(target, str):  # that platform's first device of this process
        target = devices.devices_of_process(processes.layout().process_index, target)[0]
    if isinstance(target, SingleDeviceSharding):
        target = target._device
    if isinstance(target, devices.Device):
        return _put_on_device(x, target)
    if isinstance(target, NamedSharding):
        return _put_named(x, target)
    raise TypeError(f"fx.device_put: cannot place on {target!r}; give a Device, a platform "
                    "name, a SingleDeviceSharding or a NamedSharding")


def _put_on_device(x, device: devices.Device) -> Array:
    if device.process_index != processes.layout().process_index:
        raise ValueError(f"fx.device_put: {device} belongs to process {device.process_index}; "
                         f"this is process {processes.layout().process_index}")
    if isinstance(x, Array):
        if x._sharding is None and devices.device_of_buffer(x._buf) == device or \
                x._sharding == SingleDeviceSharding(device):
            return x
        out = Array._wrap(devices.put_buffer(x._buf, device), x.aval)
    elif isinstance(x, (bool, int, float, complex)):
        dt, weak = dtypes.dtype_and_weak(x)
        out = Array(devices.put_buffer(np.array(x, dtype=dt), device), weak)
    else:
        host = np.asarray(x)
        host = np.array(host, dtype=dtypes.canonicalize(host.dtype), copy=True)
        out = Array(devices.put_buffer(host, device))
    if devices.device_of_buffer(out._buf) != device:
        out._sharding = SingleDeviceSharding(device)
    return out


def _put_named(x, s: NamedSharding) -> Array:
    shape = x.shape if isinstance(x, Array) else np.shape(x)
    s.check_shape(shape, "fx.device_put")
    if isinstance(x, Array) and x._sharding == s:
        return x
    here = sorted(s.addressable_devices, key=s._device_assignment.index)
    if not here:
        raise ValueError(f"fx.device_put: no device of {s} belongs to this process")
    if len(here) > 1 and not all(d.on_host for d in here):
        raise NotImplementedError(
            f"fx.device_put: {s} puts shards on several {here[0].platform} devices of this "
            "process; fx places sharded arrays on CPU devices (FX_NUM_CPU_DEVICES) or one "
            "device per process")
    whole = _put_on_device(x, here[0])
    if s.is_fully_addressable:
        return Array._wrap(whole._buf, whole.aval, s)
    # Across processes every process passes the same global value and keeps its shards.
    indices = s.addressable_devices_indices_map(shape)
    return assemble(whole.aval, s, {d: whole._buf[indices[d] or ...] for d in here})
