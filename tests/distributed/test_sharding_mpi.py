"""Arrays spanning processes under ``mpiexec -n 2`` with two CPU devices per process: every
process sees all four devices, holds its own shards and cannot read the whole value
(``sharding_checks.py``); one launch."""

import importlib.util
import os
from pathlib import Path

# test_mpi's launcher (tests import by path: --import-mode=importlib).
_spec = importlib.util.spec_from_file_location("_mpi_launch", Path(__file__).with_name(
    "test_mpi.py"))
_mpi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mpi)
launch = _mpi.launch

CHECKS = ["devices", "shards", "ready", "unreadable", "pmap refused", "replicated",
          "shard_map two devices per process", "grad two devices per process",
          "jit two devices per process"]


def test_arrays_spanning_two_processes_of_two_cpu_devices(monkeypatch):
    monkeypatch.setenv("FX_NUM_CPU_DEVICES", "2")
    monkeypatch.setenv("FX_PLATFORM", "cpu")
    rc, out, _ = launch(2, "sharding_checks.py")
    assert rc == 0, out
    for name in CHECKS:
        for r in range(2):
            assert f"PASS {name} rank {r} " in out, f"{name} on rank {r}:\n{out}"
    assert os.environ["FX_NUM_CPU_DEVICES"] == "2"
