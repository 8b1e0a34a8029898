"""The collective cases of the shard_map tests, written once for fx and for jax (``lib`` is
``fx.lax`` or ``jax.lax``), with their NumPy meaning.

Every case runs on a mesh of 8 devices with its input split over every mesh axis along
dimension 0, so each device holds a distinct ``(8, 3)`` shard, and returns its result with a
leading dimension of 1 (so the outputs of all devices are concatenated along it, in the
mesh's row-major order). ``names`` is the tuple of mesh axes the collective runs over.
:func:`reference` computes the same from the per-device shards with NumPy. This module
imports neither fx nor jax: ``shard_map_jax_oracle.py`` runs it under jax in a subprocess.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

MESHES = {"1d": ((8,), ("x",)), "2d": ((2, 4), ("x", "y")), "3d": ((2, 2, 2), ("x", "y", "z"))}
SHARD = (8, 3)


def subsets(axis_names) -> list[tuple[str, ...]]:
    """Every non-empty ordered subset of the mesh axes (so both majors of a pair)."""
    return [p for k in range(1, len(axis_names) + 1)
            for p in itertools.permutations(axis_names, k)]


def _shift(n):
    return [(i, (i + 1) % n) for i in range(n)]


# name -> (lib, names, n) -> per-shard function; n is the group size (product of the axes).
CASES = {
    "psum": lambda lib, names, n: lambda v: lib.psum(v, names),
    "pmean": lambda lib, names, n: lambda v: lib.pmean(v, names),
    "pmax": lambda lib, names, n: lambda v: lib.pmax(v, names),
    "pmin": lambda lib, names, n: lambda v: lib.pmin(v, names),
    "all_gather": lambda lib, names, n: lambda v: lib.all_gather(v, names),
    "all_gather_axis1": lambda lib, names, n: lambda v: lib.all_gather(v, names, axis=1),
    "all_gather_tiled": lambda lib, names, n: lambda v: lib.all_gather(v, names, tiled=True),
    "all_gather_tiled_axis1": lambda lib, names, n: lambda v: lib.all_gather(
        v, names, axis=1, tiled=True),
    "psum_scatter": lambda lib, names, n: lambda v: lib.psum_scatter(v[:n], names),
    "psum_scatter_tiled": lambda lib, names, n: lambda v: lib.psum_scatter(
        v, names, scatter_dimension=0, tiled=True),
    "ppermute_shift": lambda lib, names, n: lambda v: lib.ppermute(v, names, _shift(n)),
    "ppermute_partial": lambda lib, names, n: lambda v: lib.ppermute(v, names, [(0, n - 1)]),
    "all_to_all": lambda lib, names, n: lambda v: lib.all_to_all(v[:n], names, 0, 1),
    "all_to_all_tiled": lambda lib, names, n: lambda v: lib.all_to_all(v, names, 0, 1,
                                                                       tiled=True),
    "axis_index": lambda lib, names, n: lambda v: lib.axis_index(names),
}


def _groups(shape, axis_names, names):
    """Per device (flat, row-major), its group index over ``names`` and the flat indices of
    its group's devices in group order."""
    coords = list(itertools.product(*[range(s) for s in shape]))
    pos = {n: i for i, n in enumerate(axis_names)}
    flat = {c: i for i, c in enumerate(coords)}
    out = []
    for c in coords:
        index = 0
        for nm in names:
            index = index * shape[pos[nm]] + c[pos[nm]]
        members = []
        for sub in itertools.product(*[range(shape[pos[nm]]) for nm in names]):
            cc = list(c)
            for nm, k in zip(names, sub):
                cc[pos[nm]] = k
            members.append(flat[tuple(cc)])
        out.append((index, members))
    return out


def reference(case: str, shards: list[np.ndarray], shape, axis_names, names) -> np.ndarray:
    """The stacked per-device results of ``case`` by NumPy."""
    n = math.prod(shape[axis_names.index(nm)] for nm in names)
    if case.startswith("ppermute"):
        # ppermute numbers a device over several axes in the mesh's order (jax's rule).
        names = tuple(sorted(names, key=axis_names.index))
    results = []
    for index, members in _groups(shape, axis_names, names):
        group = [shards[m] for m in members]
        me = shards[members[index]]
        if case == "psum":
            r = np.sum(group, axis=0, dtype=me.dtype)
        elif case == "pmean":
            r = np.mean(np.asarray(group, np.float64), axis=0)
        elif case in ("pmax", "pmin"):
            r = (np.max if case == "pmax" else np.min)(group, axis=0)
        elif case == "all_gather":
            r = np.stack(group)
        elif case == "all_gather_axis1":
            r = np.stack(group, axis=1)
        elif case == "all_gather_tiled":
            r = np.concatenate(group, axis=0)
        elif case == "all_gather_tiled_axis1":
            r = np.concatenate(group, axis=1)
        elif case == "psum_scatter":
            r = np.sum([g[:n] for g in group], axis=0, dtype=me.dtype)[index]
        elif case == "psum_scatter_tiled":
            total = np.sum(group, axis=0, dtype=me.dtype)
            step = total.shape[0] // n
            r = total[index * step:(index + 1) * step]
        elif case in ("ppermute_shift", "ppermute_partial"):
            perm = _shift(n) if case == "ppermute_shift" else [(0, n - 1)]
            src = {d: s for s, d in perm}
            r = group[src[index]] if index in src else np.zeros_like(me)
        elif case == "all_to_all":
            r = np.stack([g[:n][index] for g in group], axis=1)
        elif case == "all_to_all_tiled":
            step = me.shape[0] // n
            r = np.concatenate([g[index * step:(index + 1) * step] for g in group], axis=1)
        elif case == "axis_index":
            r = np.asarray(index, np.int32)
        else:
            raise KeyError(case)
        results.append(np.asarray(r)[None])
    return np.concatenate(results)


def shards_of(x: np.ndarray) -> list[np.ndarray]:
    """The 8 devices' shards of ``x`` split along dimension 0 over every mesh axis."""
    return list(np.split(x, 8))


def global_input(dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, (8 * SHARD[0], SHARD[1])).astype(dtype)
    # Values with ties, so pmax/pmin meet equal lanes.
    return np.round(rng.standard_normal((8 * SHARD[0], SHARD[1])), 1).astype(dtype)


# Cases whose gradient both libraries compute inside shard_map: jax differentiates neither
# pmax nor pmin, axis_index is an integer, and jax 0.10 fails to transpose an untiled
# all_to_all ("Expected cotangent type f64[2,3,1] but got f64[2,1,3]"; fx's gradient of it is
# checked against finite differences instead).
GRAD_CASES = [c for c in CASES if c not in ("pmax", "pmin", "axis_index", "all_to_all")]


def grad_inside(lib, np_mod, grad, names, n, case):
    """Per shard: the gradient, taken inside the mapped function, of ``sum(w * case(u))`` with
    fixed weights ``w`` (the same on every device), at the shard."""
    body = CASES[case](lib, names, n)

    def loss(u):
        out = body(u)
        w = np_mod.cos(np_mod.arange(out.size, dtype=u.dtype)).reshape(out.shape)
        return np_mod.sum(w * out)

    return lambda v: grad(loss)(v)
