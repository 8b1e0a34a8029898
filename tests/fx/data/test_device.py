"""fx.data.to_device's CUDA path without a GPU: a stand-in for CuPy records pinned-memory
allocations and copies, so the test can check that every leaf is staged through a reused pinned
buffer and copied on the copier's own non-blocking stream, which is synchronized before the
batch is handed out. (That the copies land on a real GPU is for a CUDA machine.)"""

from __future__ import annotations

import numpy as np
import pytest

from fx.data import Dataset, DeviceCopier
from fx.devices import Device


class _Stream:
    def __init__(self, log, non_blocking):
        self.log, self.non_blocking = log, non_blocking

    def synchronize(self):
        self.log.append(("sync", self))


class _DeviceArray:
    def __init__(self, log, shape, dtype):
        self.log, self.shape, self.dtype, self.data = log, shape, dtype, None

    def set(self, host, stream=None):
        self.log.append(("copy", stream, host.ctypes.data))
        self.data = np.array(host)


class _FakeCupy:
    def __init__(self):
        self.log: list = []
        cupy = self

        class cuda:  # noqa: N801  (CuPy's module name)
            class Device:
                def __init__(self, i):
                    cupy.log.append(("device", i))

                def __enter__(self):
                    return self

                def __exit__(self, *exc):
                    pass

            @staticmethod
            def Stream(non_blocking=False):  # noqa: N802  (CuPy's name)
                return _Stream(cupy.log, non_blocking)

            @staticmethod
            def alloc_pinned_memory(n):
                cupy.log.append(("pinned", n))
                return bytearray(n)

        self.cuda = cuda

    def empty(self, shape, dtype):
        return _DeviceArray(self.log, shape, dtype)


def test_cuda_copies_go_through_pinned_buffers_on_a_copy_stream():
    cp = _FakeCupy()
    assert DeviceCopier("cpu", cupy=cp)._cp is None  # on the host no CuPy is involved
    copier = DeviceCopier(Device("cuda", 0), cupy=cp)
    batches = [{"x": np.full((4, 3), i, np.float32), "y": np.arange(4) + i} for i in range(3)]
    outs = [copier(b, wrap=lambda buf: buf) for b in batches]
    for b, out in zip(batches, outs, strict=True):
        np.testing.assert_array_equal(out["x"].data, b["x"])
        np.testing.assert_array_equal(out["y"].data, b["y"])
    pinned = [e for e in cp.log if e[0] == "pinned"]
    assert pinned == [("pinned", 48), ("pinned", 32)]  # one per leaf, reused afterwards
    copies = [e for e in cp.log if e[0] == "copy"]
    streams = {id(e[1]) for e in copies}
    assert len(copies) == 6 and len(streams) == 1 and copies[0][1].non_blocking
    assert copies[0][2] == copies[2][2]  # the same pinned buffer, batch after batch
    # Each batch's copies are waited for before it is handed out.
    kinds = [e[0] for e in cp.log if e[0] in ("copy", "sync")]
    assert kinds == ["copy", "copy", "sync"] * 3
    bigger = copier({"x": np.zeros((8, 3), np.float32), "y": np.arange(4)}, wrap=lambda b: b)
    assert bigger["x"].data.shape == (8, 3) and ("pinned", 96) in cp.log


def test_to_device_rejects_unknown_devices():
    with pytest.raises(TypeError, match="expected an fx device or 'cpu'/'cuda', got 3"):
        Dataset.from_source(np.arange(3)).to_device(3)
