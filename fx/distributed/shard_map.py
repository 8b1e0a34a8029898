"""``fx.shard_map`` over a mesh that spans processes: each process runs ``f`` once, compiled,
on its own device's shards, and the collectives over mesh axes run between processes.

``fx.spmd`` checks the specs and the replication of the outputs (as in one process) and hands
the call here. With one device per process (``mpiexec -n 4`` and a 2x2 mesh over
``fx.devices()``) every mapped axis is an axis of processes. With several (``FX_NUM_CPU_DEVICES``
per process), each process's devices must be a block of the mesh: along each axis a process
holds one coordinate (a process axis, an MPI communicator) or all of them (a local axis), and
the process runs a ``shard_map`` over its own devices on its block of each argument, under
the binding of the process axes (:func:`_several_devices`). An argument enters as this
process's shard: an array spanning processes gives its addressable shard (it must be placed as
the spec says: no resharding between processes), a value this process holds whole is sliced
at this device's index. ``f`` runs under :func:`fx.distributed.mesh.bind` as
``MeshAxes.jit(f)``, so its collectives are steps of one compiled program per process,
calling MPI on the communicator of the axes they name. Each output leaves as an array
spanning the mesh's processes (``NamedSharding(mesh, out_spec)``), this process's result its
one shard; an output replicated over every axis is readable on every process.
"""

from __future__ import annotations

import numpy as np

from fx import tree_util
from fx.array import Array, device_put
from fx.core import Tracer
from fx.distributed import mesh as dmesh
from fx.sharded_arrays import make_array_from_single_device_arrays
from fx.sharding import Mesh, NamedSharding, PartitionSpec
from fx.spmd import TracedAcrossProcesses, shard_map


def _spans_as_specified(x, spec: PartitionSpec, mesh: Mesh, where: str) -> bool:
    """Whether argument ``x`` is an array spanning processes (placed as ``spec`` says);
    TracedAcrossProcesses for a traced value, NotImplementedError for another placement."""
    if isinstance(x, Tracer):
        raise TracedAcrossProcesses(
            f"shard_map over the mesh {mesh}, which spans processes, got a traced value for "
            f"{where}: across processes shard_map runs on concrete arrays and compiles its "
            "function itself (call it outside jit, vmap and grad; transformations go inside)")
    if not isinstance(x, Array) or x.is_fully_addressable:
        return False
    if not x.sharding.is_equivalent_to(NamedSharding(mesh, spec), x.ndim):
        raise NotImplementedError(
            f"shard_map: {where} is placed as {x.sharding} but in_specs says {spec}; "
            "moving shards between processes is not supported: place it with "
            f"NamedSharding(mesh, {spec}) (fx.make_array_from_callback / "
            "make_array_from_process_local_data)")
    return True


def _local_shard(x, spec: PartitionSpec, mesh: Mesh, device, where: str):
    if _spans_as_specified(x, spec, mesh, where):
        return x.addressable_shards[0].data
    target = NamedSharding(mesh, spec)
    index = target.devices_indices_map(np.shape(x))[device]
    return x[index] if isinstance(x, Array) else Array(np.asarray(x)[index])


def run(f, mesh: Mesh, axes: tuple, args: tuple, leaves: list, in_specs: list,
        out_specs: list) -> list:
    """The outputs' leaves of ``shard_map(f)`` on ``args`` (their ``leaves`` and specs
    checked by ``fx.spmd``), this process computing its device's shards."""
    if tuple(axes) != tuple(mesh.axis_names):
        raise NotImplementedError(
            f"shard_map over the mesh {mesh}, which spans processes, maps every axis of it; "
            f"axis_names={axes} leaves some axes automatic, which is not supported there")
    mine = mesh.local_devices
    if len(mine) != 1:
        return _several_devices(f, mesh, args, leaves, in_specs, out_specs, mine)
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(args)[0]]
    local = [_local_shard(x, s, mesh, mine[0], f"args{p}")
             for x, s, p in zip(leaves, in_specs, paths)]
    in_tree = tree_util.tree_structure(args)
    with dmesh.bind(mesh) as bound:
        outs = bound.jit(f)(*tree_util.tree_unflatten(in_tree, local))
    results = []
    for y, spec in zip(tree_util.tree_leaves(outs), out_specs):
        y = device_put(y, mine[0])
        shape = tuple(n * (mesh.axis_size(spec.axes(d)) if spec.axes(d) else 1)
                      for d, n in enumerate(np.shape(y)))
        results.append(make_array_from_single_device_arrays(
            shape, NamedSharding(mesh, spec), [y]))
    return results


# --- several devices per process ---------------------------------------------------------------

def _process_and_local_axes(mesh: Mesh, mine: list) -> tuple[list, list, dict]:
    """The mesh axes along which this process holds one coordinate (process axes), those it
    holds whole (local axes), and its coordinate on each process axis; NotImplementedError
    when its devices are not such a block of the mesh."""
    here = {id(d) for d in mine}
    at = np.argwhere(np.vectorize(lambda d: id(d) in here, otypes=[bool])(mesh.devices))
    proc, local, coord = [], [], {}
    for a, name in enumerate(mesh.axis_names):
        seen = sorted(set(int(c) for c in at[:, a]))
        if len(seen) == mesh.shape[name]:
            local.append(name)
        elif len(seen) == 1:
            proc.append(name)
            coord[name] = seen[0]
        else:
            local = None
            break
    if local is None or len(mine) != int(np.prod([mesh.shape[n] for n in local], dtype=int)):
        raise NotImplementedError(
            f"shard_map over the mesh {mesh}: this process's {len(mine)} devices are not a "
            "block of it (every axis either held whole by each process or split one "
            "coordinate per process); build the mesh with fx.make_mesh over fx.devices(), "
            "its leading axes over the processes")
    return proc, local, coord


def _local_spec(spec: PartitionSpec, proc: list, where: str) -> PartitionSpec:
    """``spec`` without its process axes (which split the data between processes)."""
    out = []
    for d in range(len(spec)):
        names = spec.axes(d)
        kept = [n for n in names if n not in proc]
        if [n for n in names if n in proc] != list(names[:len(names) - len(kept)]):
            raise NotImplementedError(
                f"shard_map: {where} is split as {spec}, a local mesh axis before a process "
                "axis in one dimension; with several devices per process, name the process "
                "axes first")
        out.append(None if not kept else kept[0] if len(kept) == 1 else tuple(kept))
    return PartitionSpec(*out)


def _block(spec: PartitionSpec, shape: tuple, mesh: Mesh, proc: list, coord: dict) -> tuple:
    """This process's block of a value of ``shape`` split as ``spec``: slices per dimension."""
    index = []
    for d, size in enumerate(shape):
        names = [n for n in spec.axes(d) if n in proc]
        parts = int(np.prod([mesh.shape[n] for n in names], dtype=int))
        k = 0
        for n in names:  # the process's position along these axes, the first the major one
            k = k * mesh.shape[n] + coord[n]
        step = size // parts
        index.append(slice(k * step, (k + 1) * step))
    return tuple(index)


def _process_block(x, spec, mesh, proc, coord, where: str):
    """This process's block of argument ``x``, as a NumPy array."""
    spans = _spans_as_specified(x, spec, mesh, where)
    shape = tuple(np.shape(x))
    block = _block(spec, shape, mesh, proc, coord)
    if spans:
        out = np.empty(tuple(b.stop - b.start for b in block), x.dtype)
        for sh in x.addressable_shards:
            at = tuple(slice(i.start or 0, (i.start or 0) + n) for i, n in
                       zip(_full(sh.index, shape), np.shape(sh.data)))
            rel = tuple(slice(a.start - b.start, a.stop - b.start) for a, b in zip(at, block))
            out[rel] = np.asarray(sh.data)
        return out
    return np.asarray(x)[block]


def _full(index: tuple, shape: tuple) -> tuple:
    return tuple(index) + (slice(None),) * (len(shape) - len(index))


_inner: dict = {}  # (f, mesh, specs) -> the per-process program over the local devices


def _several_devices(f, mesh: Mesh, args: tuple, leaves: list, in_specs: list,
                     out_specs: list, mine: list) -> list:
    """``shard_map(f)`` with several of the mesh's devices in this process: the process axes
    are MPI communicators (:func:`fx.distributed.mesh.bind` over a mesh of one device per
    process), the local ones a ``shard_map`` over this process's devices, in one program."""
    proc, local, coord = _process_and_local_axes(mesh, mine)
    paths = [f"args{tree_util.keystr(p)}" for p, _ in tree_util.tree_flatten_with_path(args)[0]]
    l_in = [_local_spec(s, proc, p) for s, p in zip(in_specs, paths)]
    l_out = [_local_spec(s, proc, f"output {i}") for i, s in enumerate(out_specs)]
    blocks = [_process_block(x, s, mesh, proc, coord, p)
              for x, s, p in zip(leaves, in_specs, paths)]
    pick = tuple(coord[n] if n in proc else slice(None) for n in mesh.axis_names)
    local_mesh = Mesh(mesh.devices[pick], tuple(local))
    first = tuple(slice(None) if n in proc else 0 for n in mesh.axis_names)
    proc_mesh = Mesh(mesh.devices[first], tuple(proc))
    in_tree = tree_util.tree_structure(args)
    key = (f, mesh, in_tree, tuple(in_specs), tuple(out_specs))
    inner = _inner.get(key)
    if inner is None:
        def flat(*xs):
            return tuple(tree_util.tree_leaves(f(*tree_util.tree_unflatten(in_tree, xs))))

        inner = _inner[key] = shard_map(flat, mesh=local_mesh, in_specs=tuple(l_in),
                                        out_specs=tuple(l_out), check_vma=False)
    with dmesh.bind(proc_mesh) as bound:
        outs = bound.jit(inner)(*blocks)
    results = []
    for y, spec in zip(outs, out_specs):
        y = np.asarray(y)
        shape = tuple(n * int(np.prod([mesh.shape[a] for a in spec.axes(d) if a in proc],
                                      dtype=int)) for d, n in enumerate(y.shape))
        sharding = NamedSharding(mesh, spec)
        block = _block(spec, shape, mesh, proc, coord)
        where = sharding.devices_indices_map(shape)
        pieces = []
        for dev in mine:
            idx = _full(where[dev], shape)
            rel = tuple(slice((i.start or 0) - b.start,
                              (i.stop if i.stop is not None else n) - b.start)
                        for i, b, n in zip(idx, block, shape))
            pieces.append(device_put(y[rel], dev))
        results.append(make_array_from_single_device_arrays(shape, sharding, pieces))
    return results
