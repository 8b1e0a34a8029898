"""fx.experimental.multihost_utils in one process (each helper's one-process meaning) and
against a scripted second process (a transport whose peer answers from a table), for the
checks every process makes together. Across real processes: mesh_checks.py (test_mpi.py)."""

from __future__ import annotations

import numpy as np
import pytest

import fx
from fx.distributed import state
from fx.distributed.transport import Transport
from fx.experimental import multihost_utils as mhu


def test_one_process_meanings():
    tree = {"a": np.arange(6, dtype=np.int32).reshape(2, 3), "b": np.float32(2.5)}
    got = mhu.process_allgather(tree)
    assert got["a"].shape == (1, 2, 3) and got["a"].tobytes() == tree["a"].tobytes()
    assert got["b"].shape == (1,) and got["b"].dtype == np.float32
    tiled = mhu.process_allgather(tree["a"], tiled=True)
    assert isinstance(tiled, np.ndarray) and tiled.shape == (2, 3)
    with pytest.raises(ValueError, match="tiled=True .* scalar"):
        mhu.process_allgather(tree, tiled=True)
    out = mhu.broadcast_one_to_all(tree)
    assert isinstance(out["a"], fx.Array) and np.asarray(out["a"]).tobytes() == \
        tree["a"].tobytes()
    mhu.sync_global_devices("one process")


class _Twin(Transport):
    """Rank 0 of two processes; the other's value of every all-gather comes from ``peer``."""

    name, rank, size = "twin", 0, 2

    def __init__(self, peer):
        self.peer = peer

    def allgather(self, x, what):
        return np.stack([x, np.asarray(self.peer(x), x.dtype).reshape(x.shape)])


@pytest.fixture
def twin():
    def use(peer):
        state.set_group(state.ProcessGroup(_Twin(peer), (1, 1)))

    yield use
    state.set_group(None)


def test_two_processes_gather_and_broadcast(twin):
    twin(lambda x: x if x.dtype == np.uint8 else x + 1)  # (uint8: the signature check)
    got = mhu.process_allgather(np.array([1, 2], np.int64), tiled=True)
    assert got.tolist() == [1, 2, 2, 3]
    # The peer says it is not the source (its one-byte flag is 0); rank 0 is (the default).
    twin(lambda x: (np.zeros_like(x) if x.size == 1 else x) if x.dtype == np.uint8 else x * 7)
    got = mhu.broadcast_one_to_all(np.array([1.0, 2.0], np.float32))
    assert np.asarray(got).tolist() == [1.0, 2.0]


def test_two_processes_disagreeing_raise(twin):
    twin(lambda x: np.ones_like(x))  # the peer also claims to be the source
    with pytest.raises(ValueError, match=r"exactly one process .* processes \[0, 1\] did"):
        mhu.broadcast_one_to_all(np.zeros(2, np.float32))
    # The peer passes another name (its signature bytes differ).
    twin(lambda x: np.frombuffer(b"sync_global_devices other".ljust(x.size, b"\0"), np.uint8))
    with pytest.raises(AssertionError, match="sync_global_devices name mismatch .'step 3'."):
        mhu.sync_global_devices("step 3")
