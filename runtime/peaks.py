"""The machine's measured peaks: float32 FMA throughput and memory stream bandwidth.

A roofline needs two numbers per machine: the FLOP/s the cores reach when every cycle issues
fused multiply-adds, and the bytes/s the cores stream through memory. Both are measured by
small C loops (``peaks.c``, compiled for the same ``-march`` as fx's kernels and run on all of
the same OpenMP threads), each run taking about a tenth of a second, and cached per machine
and compiler target in ``$FX_CACHE_DIR`` so a machine is calibrated once. ``measure(refresh=
True)`` measures again.

The FMA loop keeps 12 independent accumulator vectors per thread (more than two ports times
a 4-cycle latency). The stream reads one buffer and writes another, ``STREAM_BYTES`` in all
(far past any core's L2: the working set of a large step), with ordinary stores as the
generated kernels make, after a first pass has touched every page; its bytes are those read
plus those written, as ``Lowered.cost_analysis`` counts a step's. Each rate is total work
over the CPU time of the thread that ran longest, so other processes taking turns on the
cores during the calibration do not lower it (see ``peaks.c``).

>>> from fx.runtime import peaks
>>> p = peaks.measure()            # doctest: +SKIP
>>> p.flops > 1e9 and p.bytes_per_s > 1e8   # doctest: +SKIP
True
"""

from __future__ import annotations

import ctypes
import json
import threading
from dataclasses import asdict, dataclass
from importlib import resources

import numpy as np

from fx.runtime import cc


@dataclass(frozen=True)
class Peaks:
    flops: float  # float32 FLOP/s over every thread (an FMA counts 2)
    bytes_per_s: float  # memory stream: bytes read plus bytes written per second
    threads: int  # the OpenMP threads both were measured on
    march: str  # the compiler target the FMA loop was built for

    @property
    def balance(self) -> float:
        """FLOPs per byte at which a step stops being memory-bound (the roofline's ridge)."""
        return self.flops / self.bytes_per_s


# The version of what is measured, part of the cache file's name: a file written by another
# calibration (version 1: wall-clock rates, memcpy over 128 MiB buffers) is not reused.
VERSION = 2
STREAM_BYTES = 64 << 20  # both buffers of the stream together

_lock = threading.Lock()  # guards _cached
_cached: Peaks | None = None


def _library() -> ctypes.CDLL:
    source = resources.files("fx.runtime").joinpath("peaks.c").read_text()
    lib = cc.build(source)
    lib.fx_fma_per_iter.restype = ctypes.c_int
    lib.fx_fma_peak.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.POINTER(ctypes.c_float)]
    lib.fx_fma_peak.restype = ctypes.c_double
    lib.fx_stream.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long,
                              ctypes.c_long]
    lib.fx_stream.restype = ctypes.c_double
    lib.fx_threads.restype = ctypes.c_int
    return lib


def _best_rate(run, work: float, tries: int = 5) -> float:
    """The highest work/second over ``tries`` runs of ``run``, which returns its seconds."""
    return max(work / max(run(), 1e-9) for _ in range(tries))


def fma_rate(lib: ctypes.CDLL, threads: int, seconds: float = 0.1) -> float:
    """float32 FLOP/s of the FMA loop on ``threads`` threads (an FMA counts 2)."""
    sink = ctypes.c_float(0)
    per_iter = lib.fx_fma_per_iter()
    lib.fx_fma_peak(threads, 1 << 10, ctypes.byref(sink))  # starts the threads
    # Iterations for about ``seconds`` per run, from a first timed run.
    first = lib.fx_fma_peak(threads, 1 << 20, ctypes.byref(sink))
    iters = max(1 << 16, int((1 << 20) * seconds / max(first, 1e-6)))
    return _best_rate(lambda: lib.fx_fma_peak(threads, iters, ctypes.byref(sink)),
                      2.0 * per_iter * iters * threads)


def stream_rate(lib: ctypes.CDLL, threads: int, nbytes: int = STREAM_BYTES,
                seconds: float = 0.1) -> float:
    """Bytes/s read plus written by the stream over two buffers of ``nbytes`` in all, on
    ``threads`` threads."""
    n = nbytes // 8
    src = np.ones(n, np.float32)
    dst = np.zeros(n, np.float32)
    run = lambda reps: lib.fx_stream(threads, dst.ctypes.data, src.ctypes.data, n, reps)  # noqa: E731
    first = run(1)  # touches every page of dst (and starts the threads)
    reps = max(1, int(seconds / max(first, 1e-6)))
    return _best_rate(lambda: run(reps), 8.0 * n * reps)


def _measure(lib: ctypes.CDLL) -> Peaks:
    threads = lib.fx_threads()
    return Peaks(fma_rate(lib, threads), stream_rate(lib, threads), threads, cc.MARCH)


def _cache_path():
    return cc.cache_dir() / f"peaks-v{VERSION}-{cc.cache_key('peaks')[:16]}.json"


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
