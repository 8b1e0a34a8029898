"""``fx.shard_map`` over a mesh that spans processes: each process runs ``f`` once, compiled,
on its own device's shards, and the collectives over mesh axes run between processes.

``fx.spmd`` checks the specs and the replication of the outputs (as in one process) and hands
the call here. The mesh has one device per process (``mpiexec -n 4`` and a 2x2 mesh over
``fx.devices()``); every mapped axis is an axis of processes. An argument enters as this
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
from fx.spmd import TracedAcrossProcesses


def _local_shard(x, spec: PartitionSpec, mesh: Mesh, device, where: str):
    target = NamedSharding(mesh, spec)
    if isinstance(x, Tracer):
        raise TracedAcrossProcesses(
            f"shard_map over the mesh {mesh}, which spans processes, got a traced value for "
            f"{where}: across processes shard_map runs on concrete arrays and compiles its "
            "function itself (call it outside jit, vmap and grad; transformations go inside)")
    if isinstance(x, Array) and not x.is_fully_addressable:
        if not x.sharding.is_equivalent_to(target, x.ndim):
            raise NotImplementedError(
                f"shard_map: {where} is placed as {x.sharding} but in_specs says {spec}; "
                "moving shards between processes is not supported: place it with "
                f"NamedSharding(mesh, {spec}) (fx.make_array_from_callback / "
                "make_array_from_process_local_data)")
        return x.addressable_shards[0].data
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
        raise NotImplementedError(
            f"shard_map over the mesh {mesh}, which spans processes, runs one device per "
            f"process; this process has {len(mine)} devices in it (use FX_NUM_CPU_DEVICES=1 "
            "per process with mpiexec, or one process with FX_NUM_CPU_DEVICES devices)")
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
