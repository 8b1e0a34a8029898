"""The machine's measured peaks: float32 FMA throughput and memory copy bandwidth.

A roofline needs two numbers per machine: the FLOP/s the cores reach when every cycle issues
fused multiply-adds, and the bytes/s a parallel copy moves through memory. Both are measured
by small C loops (``peaks.c``, compiled for the same ``-march`` as fx's kernels and run on the
same OpenMP threads), each taking about a tenth of a second, and cached per machine and
compiler target in ``$FX_CACHE_DIR`` so a machine is calibrated once. ``measure(refresh=True)``
measures again (for example after the machine's load changed).

>>> from fx.runtime import peaks
>>> p = peaks.measure()            # doctest: +SKIP
>>> p.flops > 1e9 and p.bytes_per_s > 1e8   # doctest: +SKIP
True
"""

from __future__ import annotations

import ctypes
import json
import threading
import time
from dataclasses import asdict, dataclass
from importlib import resources

import numpy as np

from fx.runtime import cc


@dataclass(frozen=True)
class Peaks:
    flops: float  # float32 FLOP/s over every thread (an FMA counts 2)
    bytes_per_s: float  # memory copy: bytes read plus bytes written per second
    threads: int  # the OpenMP threads both were measured on
    march: str  # the compiler target the FMA loop was built for

    @property
    def balance(self) -> float:
        """FLOPs per byte at which a step stops being memory-bound (the roofline's ridge)."""
        return self.flops / self.bytes_per_s


_lock = threading.Lock()  # guards _cached
_cached: Peaks | None = None


def _library() -> ctypes.CDLL:
    source = resources.files("fx.runtime").joinpath("peaks.c").read_text()
    lib = cc.build(source)
    lib.fx_fma_peak.argtypes = [ctypes.c_long, ctypes.POINTER(ctypes.c_float)]
    lib.fx_fma_peak.restype = ctypes.c_int
    lib.fx_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    lib.fx_copy.restype = None
    lib.fx_threads.restype = ctypes.c_int
    return lib


def _best_rate(run, work: float, seconds: float = 0.1, tries: int = 5) -> float:
    """The highest work/second over ``tries`` runs of ``run`` (the least disturbed one)."""
    best = 0.0
    for _ in range(tries):
        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        best = max(best, work / elapsed)
    return best


def _measure(lib: ctypes.CDLL) -> Peaks:
    threads = lib.fx_threads()
    sink = ctypes.c_float(0)
    per_iter = lib.fx_fma_peak(1, ctypes.byref(sink))  # lanes x chains; also warms up
    start = time.perf_counter()
    lib.fx_fma_peak(1 << 20, ctypes.byref(sink))
    # Iterations for about 0.1 s per run, from a first timed run.
    iters = max(1 << 16, int((1 << 20) * 0.1 / max(time.perf_counter() - start, 1e-6)))
    flops = _best_rate(lambda: lib.fx_fma_peak(iters, ctypes.byref(sink)),
                       2.0 * per_iter * iters * threads)
    n = 1 << 25  # 128 MiB per buffer: far past every cache
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    copy = lambda: lib.fx_copy(dst.ctypes.data, src.ctypes.data, n)
    copy()
    bandwidth = _best_rate(copy, 2.0 * 4 * n)
    return Peaks(flops, bandwidth, threads, cc.MARCH)


def _cache_path():
    return cc.cache_dir() / f"peaks-{cc.cache_key('peaks')[:16]}.json"


def measure(refresh: bool = False) -> Peaks:
    """This machine's :class:`Peaks`: from the cache when it has them, else measured now.

    Raises ``fx.runtime.cc.CompileError`` (or ``RuntimeError`` naming what to install) when
    no C compiler is available: there is nothing to measure the generated code's peak with."""
    global _cached
    with _lock:
        if _cached is not None and not refresh:
            return _cached
        path = _cache_path()
        if not refresh and path.exists():
            try:
                _cached = Peaks(**json.loads(path.read_text()))
                return _cached
            except (ValueError, TypeError):
                pass  # a damaged or older cache file: measure again
        if cc.compiler() is None:
            raise RuntimeError("fx.runtime.peaks: measuring the machine's peaks needs a C "
                               "compiler (install gcc, or set $CC)")
        _cached = _measure(_library())
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(_cached)))
        tmp.replace(path)
        return _cached
