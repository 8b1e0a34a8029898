"""Moving batches to a device: ``Dataset.to_device``.

On the host a batch's leaves become fx arrays (one copy, as ``fx.device_put``). On CUDA each
leaf is first copied into a page-locked (pinned) host buffer, then to the GPU on a copy stream of
its own, which is what makes the host-to-device copy asynchronous: a copy from pageable memory
is staged by the driver and blocks. The copier waits for its stream before handing the batch
out, so a batch is complete when the consumer sees it; the overlap with compute comes from
running the copier in the prefetch thread (``.to_device(d).prefetch(n)`` or
``.prefetch(n).to_device(d)``: transfers always run on the prefetch side when there is one),
while the training step runs on the main thread's stream. Pinned buffers are reused from batch
to batch (growing when a batch is larger), one per leaf.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fx import devices as fx_devices
from fx.array import Array, device_put
from fx.tree_util import tree_flatten, tree_unflatten

__all__ = ["DeviceCopier", "resolve_device"]


def resolve_device(device) -> fx_devices.Device:
    if device is None:
        return fx_devices.default_device()
    if isinstance(device, str):
        return fx_devices.devices(device)[0]
    if isinstance(device, fx_devices.Device):
        return device
    raise TypeError(f"fx.data.to_device: expected an fx device or 'cpu'/'cuda', got {device!r}")


class DeviceCopier:
    """Copies batches (pytrees of NumPy arrays) to one device; ``cupy`` is the CuPy module
    (found with ``fx.devices.cupy_module`` when the device is a GPU; tests pass a stand-in)."""

    def __init__(self, device, cupy=None):
        self.device = resolve_device(device)
        self._cp = None if self.device.on_host else (cupy or fx_devices.cupy_module())
        if not self.device.on_host and self._cp is None:
            raise RuntimeError(f"fx.data.to_device: {self.device} needs CuPy, which is missing")
        self._stream = None
        self._pinned: list = []

    def __call__(self, batch: Any, wrap=Array) -> Any:
        leaves, treedef = tree_flatten(batch)
        if self._cp is None:
            return tree_unflatten(treedef, [device_put(x, self.device) for x in leaves])
        return tree_unflatten(treedef, [wrap(b) for b in self._to_gpu(leaves)])

    def _to_gpu(self, leaves: list) -> list:
        cp = self._cp
        with cp.cuda.Device(self.device.id):
            if self._stream is None:
                self._stream = cp.cuda.Stream(non_blocking=True)
            out = []
            for k, leaf in enumerate(leaves):
                host = np.ascontiguousarray(leaf)
                staged = self._staging(k, host)
                staged[...] = host
                buf = cp.empty(host.shape, host.dtype)
                buf.set(staged, stream=self._stream)
                out.append(buf)
            # The pinned buffers are reused by the next batch, and the consumer may use this
            # batch on any stream: wait for the copies here (in the prefetch thread).
            self._stream.synchronize()
        return out

    def _staging(self, k: int, host: np.ndarray) -> np.ndarray:
        while len(self._pinned) <= k:
            self._pinned.append((0, None))
        size, mem = self._pinned[k]
        if size < host.nbytes:
            size = max(host.nbytes, 1)
            mem = self._cp.cuda.alloc_pinned_memory(size)
            self._pinned[k] = (size, mem)
        return np.frombuffer(mem, np.uint8, host.nbytes).view(host.dtype).reshape(host.shape)
