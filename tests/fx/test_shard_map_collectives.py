"""Every collective over every ordered subset of the axes of 1-D, 2-D and 3-D meshes of 8
devices inside ``fx.shard_map``, against its NumPy meaning (``shard_map_cases``; integers
bitwise), against ``jax.shard_map`` (run with 8 CPU devices in a subprocess, since this
session's jax has one), and compiled against eager, bitwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import shard_map_cases as cases

import fx
import fx.lax as flax
import fx.numpy as fnp
from fx.sharding import Mesh
from fx.sharding import PartitionSpec as P

HERE = os.path.dirname(os.path.dirname(__file__))  # tests/, where the cases live


def mesh_of(kind: str) -> Mesh:
    shape, names = cases.MESHES[kind]
    devs = np.array([fx.Device("cpu", i) for i in range(8)], dtype=object)
    return Mesh(devs.reshape(shape), names)


def run(case: str, mesh: Mesh, names: tuple, x, jit: bool = False):
    n = int(np.prod([mesh.shape[a] for a in names]))
    body = cases.CASES[case](flax, names, n)
    every = P(tuple(mesh.axis_names))
    f = fx.shard_map(lambda v: body(v)[None], mesh=mesh, in_specs=every, out_specs=every)
    return np.asarray((fx.jit(f) if jit else f)(x))


ROWS = [(kind, names, case) for kind in cases.MESHES
        for names in cases.subsets(cases.MESHES[kind][1]) for case in cases.CASES]


@pytest.mark.parametrize("kind,names,case", ROWS,
                         ids=[f"{k}-{'_'.join(n)}-{c}" for k, n, c in ROWS])
def test_collective_matches_numpy(kind, names, case):
    shape, axis_names = cases.MESHES[kind]
    for dtype in (np.int32, np.float64):
        if case == "pmean" and dtype == np.int32:
            continue
        x = cases.global_input(dtype)
        got = run(case, mesh_of(kind), names, x)
        want = cases.reference(case, cases.shards_of(x), shape, axis_names, names)
        assert got.shape == want.shape, (got.shape, want.shape)
        if dtype == np.int32 or case not in ("psum", "pmean", "psum_scatter",
                                             "psum_scatter_tiled"):
            np.testing.assert_array_equal(got, want)  # moved or selected, or integer sums
        else:
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


# Compiling every row would take minutes: one axis subset of each size per collective.
JIT_ROWS = [("3d", names, case) for names in (("y",), ("z", "x"), ("x", "y", "z"))
            for case in cases.CASES]


@pytest.mark.parametrize("kind,names,case", JIT_ROWS,
                         ids=[f"{k}-{'_'.join(n)}-{c}" for k, n, c in JIT_ROWS])
def test_collective_jit_equals_eager(kind, names, case):
    x = cases.global_input(np.float64)
    eager = run(case, mesh_of(kind), names, x)
    compiled = run(case, mesh_of(kind), names, x, jit=True)
    np.testing.assert_array_equal(compiled, eager)


def _run_grad_inside(case, mesh, names, x):
    n = int(np.prod([mesh.shape[a] for a in names]))
    body = cases.grad_inside(flax, fnp, fx.grad, names, n, case)
    every = P(tuple(mesh.axis_names))
    f = fx.shard_map(lambda v: body(v)[None], mesh=mesh, in_specs=every, out_specs=every,
                     check_vma=False)
    return np.asarray(f(x))


# One axis subset of each size (the forward rows cover every subset).
GRAD_ROWS = [("3d", names, case) for names in (("y",), ("z", "x"), ("x", "y", "z"))
             for case in cases.GRAD_CASES]


def _against_jax(rows):
    """Each ``(kind, names, case, grad inside?)`` row run by fx and by jax.shard_map (in one
    subprocess: jax needs 8 CPU devices before its backend starts)."""
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "shard_map_jax_oracle.py")],
        input=json.dumps(rows), capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = np.load(proc.stdout.strip().splitlines()[-1])
    x = cases.global_input(np.float64)
    for i, (kind, names, case, inside) in enumerate(rows):
        mesh, names = mesh_of(kind), tuple(names)
        got = (_run_grad_inside if inside else run)(case, mesh, names, x)
        w = want[f"r{i}"]
        what = f"{kind} {names} {case}{' grad inside' if inside else ''}"
        assert got.shape == w.shape, (what, got.shape, w.shape)
        np.testing.assert_allclose(got, w, rtol=1e-13, atol=1e-13, err_msg=what)


def test_collectives_match_jax_shard_map():
    """Every row against jax.shard_map."""
    _against_jax([(k, n, c, False) for k, n, c in ROWS])


def test_grad_inside_unchecked_shard_map_matches_jax():
    """The gradient of each collective taken inside an unchecked shard_map against jax's:
    psum transposes to psum, all_gather to psum_scatter and back, ppermute to the inverse
    permutation, a tiled all_to_all to the reverse all_to_all."""
    _against_jax([(k, n, c, True) for k, n, c in GRAD_ROWS])
