"""Running generated CUDA source on the CPU, for kernels that need no warp intrinsics.

The source is compiled as C++20 with a small shim: ``__shared__`` becomes a function-static
(shared by the emulated threads of a block), ``__syncthreads`` a ``std::barrier``, and every
thread of a block a ``std::thread``. Blocks run one after another. Slow, but exact enough to
check indexing, tiling, bounds and epilogues of kernels like the tiled GEMM without a GPU.
"""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
from pathlib import Path

import numpy as np

SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
struct dim3 { unsigned x, y, z; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static std::barrier<>* fx_emu_barrier;
#define __syncthreads() fx_emu_barrier->arrive_and_wait()
#define __shared__ static
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __align__(n) alignas(n)
#define __restrict__
static inline float __uint_as_float(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static inline uint32_t __float_as_uint(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static inline double __longlong_as_double(long long b) { double f; memcpy(&f, &b, 8); return f; }
static inline long long __double_as_longlong(double f) { long long b; memcpy(&b, &f, 8); return b; }
static inline float __int_as_float(int b) { float f; memcpy(&f, &b, 4); return f; }
"""

DRIVER = r"""
extern "C" void fx_emu_launch(void (*kernel)(void**), void** args, unsigned gx, unsigned gy,
                              unsigned threads) {
  gridDim = {gx, gy, 1};
  blockDim = {threads, 1, 1};
  for (unsigned by = 0; by < gy; by++)
    for (unsigned bx = 0; bx < gx; bx++) {
      std::barrier<> bar(threads);
      fx_emu_barrier = &bar;
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; t++)
        pool.emplace_back([=] {
          threadIdx = {t, 0, 0};
          blockIdx = {bx, by, 0};
          kernel(args);
        });
      for (auto& th : pool) th.join();
    }
}
"""


def build(source: str, kernel_name: str) -> ctypes.CDLL:
    """Compile CUDA-dialect ``source`` for the CPU with an entry point that calls
    ``kernel_name`` with its parameters taken from an array of pointers."""
    body = source.replace('extern "C" __global__', 'extern "C"')
    src = SHIM + body + TRAMPOLINE.replace("KERNEL", kernel_name) + DRIVER
    tmp = Path(tempfile.mkdtemp())
    (tmp / "k.cpp").write_text(src)
    proc = subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "-fPIC", "-shared", "-w",
                           str(tmp / "k.cpp"), "-o", str(tmp / "k.so")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-4000:])
    return ctypes.CDLL(str(tmp / "k.so"))


TRAMPOLINE = r"""
#include <utility>
template <typename R, typename... P, size_t... I>
static void fx_emu_apply_impl(R (*f)(P...), void** a, std::index_sequence<I...>) {
  f(((P)a[I])...);
}
template <typename R, typename... P>
static void fx_emu_apply(R (*f)(P...), void** a) {
  fx_emu_apply_impl(f, a, std::index_sequence_for<P...>{});
}
extern "C" void fx_emu_entry(void** a) { fx_emu_apply(KERNEL, a); }
"""


def run(lib: ctypes.CDLL, arrays: list[np.ndarray], grid: tuple[int, int], threads: int):
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    entry = ctypes.cast(lib.fx_emu_entry, ctypes.c_void_p)
    lib.fx_emu_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
                                  ctypes.c_uint, ctypes.c_uint]
    lib.fx_emu_launch(entry, ptrs, grid[0], grid[1], threads)
