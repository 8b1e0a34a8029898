"""C kernels for batches of small real matrices: LU with partial pivoting, Cholesky and
triangular solves of ``n <= MAX_N`` matrices, one matrix per loop iteration (OpenMP over the
batch), compiled once with fx's C compiler flags and cached on disk like every fx kernel.

Each function takes C-contiguous float32/float64 NumPy arrays ``[..., n, n]`` (and
right-hand sides) and returns what :mod:`fx.lax.small_linalg` returns, computed by the same
scalar algorithm in the same order (fx compiles with ``-ffp-contract=off``: no fused
multiply-adds), or ``None`` when no C compiler is available or the build fails; the caller
then uses the NumPy closed forms. A 3x3 LU is ~30 flops: 100,000 of them take well under a
millisecond here, where NumPy spends ~40 vectorized passes over the batch.
"""

from __future__ import annotations

import ctypes
import functools
import warnings

import numpy as np

MAX_N = 4

_SOURCE = r"""
#include <math.h>
#include <stdint.h>

#define PAR _Pragma("omp parallel for schedule(static) if(nb >= 16384)")

#define DEFINE(T, S)                                                                          \
void fx_small_lu_##S(const T* restrict x, T* restrict out, int32_t* restrict piv,             \
                     int32_t* restrict perm, long nb, int n) {                                \
  PAR                                                                                         \
  for (long b = 0; b < nb; b++) {                                                             \
    T a[16];                                                                                  \
    int32_t pm[4];                                                                            \
    const T* xb = x + b * n * n;                                                              \
    for (int i = 0; i < n * n; i++) a[i] = xb[i];                                             \
    for (int i = 0; i < n; i++) pm[i] = i;                                                    \
    for (int j = 0; j < n; j++) {                                                             \
      int p = j;                                                                              \
      T best = fabs(a[j * n + j]);                                                            \
      for (int r = j + 1; r < n; r++) {                                                       \
        T m = fabs(a[r * n + j]);                                                             \
        if (m > best) { best = m; p = r; }                                                    \
      }                                                                                       \
      piv[b * n + j] = p;                                                                     \
      if (p != j) {                                                                           \
        for (int c = 0; c < n; c++) {                                                         \
          T t = a[j * n + c]; a[j * n + c] = a[p * n + c]; a[p * n + c] = t;                  \
        }                                                                                     \
        int32_t t = pm[j]; pm[j] = pm[p]; pm[p] = t;                                          \
      }                                                                                       \
      T d = a[j * n + j];                                                                     \
      if (d != 0)                                                                             \
        for (int r = j + 1; r < n; r++) a[r * n + j] = a[r * n + j] / d;                      \
      for (int r = j + 1; r < n; r++)                                                         \
        for (int c = j + 1; c < n; c++) a[r * n + c] = a[r * n + c] - a[r * n + j] * a[j * n + c]; \
    }                                                                                         \
    for (int i = 0; i < n * n; i++) out[b * n * n + i] = a[i];                                \
    for (int i = 0; i < n; i++) perm[b * n + i] = pm[i];                                      \
  }                                                                                           \
}                                                                                             \
                                                                                              \
void fx_small_cholesky_##S(const T* restrict x, T* restrict out, long nb, int n) {           \
  PAR                                                                                         \
  for (long b = 0; b < nb; b++) {                                                             \
    const T* a = x + b * n * n;                                                               \
    T L[16] = {0};                                                                            \
    int bad = 0;                                                                              \
    for (int j = 0; j < n; j++) {                                                             \
      T s = a[j * n + j];                                                                     \
      for (int k = 0; k < j; k++) s = s - L[j * n + k] * L[j * n + k];                        \
      if (!(s > 0)) { bad = 1; s = 1; }                                                       \
      T d = sqrt(s);                                                                          \
      L[j * n + j] = d;                                                                       \
      for (int i = j + 1; i < n; i++) {                                                       \
        T v = a[i * n + j];                                                                   \
        for (int k = 0; k < j; k++) v = v - L[i * n + k] * L[j * n + k];                      \
        L[i * n + j] = v / d;                                                                 \
      }                                                                                       \
    }                                                                                         \
    for (int i = 0; i < n; i++)                                                               \
      for (int j = 0; j < n; j++)                                                             \
        out[b * n * n + i * n + j] = bad && j <= i ? (T)NAN : L[i * n + j];                   \
  }                                                                                           \
}                                                                                             \
                                                                                              \
/* op(a) x = b (left) or x op(a) = b (right) for each matrix; k right-hand sides. The         \
   effective triangle: element (i, j) of the system matrix is a[i][j], or a[j][i] when         \
   transposed (trans xor right side); it is lower when lower xor transposed. */               \
void fx_small_trsm_##S(const T* restrict a, const T* restrict rhs, T* restrict out, long nb,  \
                       int m, int k, int left, int lower, int trans, int unit) {              \
  int tr = trans != !left;                                                                    \
  int lo = lower != tr;                                                                       \
  long si = left ? k : 1, sc = left ? 1 : m;                                                  \
  PAR                                                                                         \
  for (long b = 0; b < nb; b++) {                                                             \
    const T* t = a + b * m * m;                                                               \
    const T* y = rhs + b * m * k;                                                             \
    T* x = out + b * m * k;                                                                   \
    for (int c = 0; c < k; c++) {                                                             \
      for (int s = 0; s < m; s++) {                                                           \
        int i = lo ? s : m - 1 - s;                                                           \
        int j0 = lo ? 0 : i + 1, j1 = lo ? i : m;                                             \
        T acc = y[i * si + c * sc];                                                           \
        if (j0 < j1) {                                                                        \
          T dot = 0;                                                                          \
          for (int j = j0; j < j1; j++) {                                                     \
            T e = tr ? t[j * m + i] : t[i * m + j];                                           \
            dot = j == j0 ? e * x[j * si + c * sc] : dot + e * x[j * si + c * sc];            \
          }                                                                                   \
          acc = acc - dot;                                                                    \
        }                                                                                     \
        x[i * si + c * sc] = unit ? acc : acc / t[i * m + i];                                 \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
}

DEFINE(float, f32)
DEFINE(double, f64)
"""

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_P = ctypes.c_void_p
_L, _I = ctypes.c_long, ctypes.c_int


@functools.cache
def _library():
    """The compiled kernels, or None (no compiler, or the build failed)."""
    from fx.runtime import cc

    if cc.compiler() is None:
        return None
    try:
        lib = cc.build(_SOURCE)
    except (cc.CompileError, OSError) as e:  # the NumPy closed forms do the work
        warnings.warn(f"fx: the small linear-algebra kernels did not build ({e}); fx uses "
                      "NumPy's closed forms instead", RuntimeWarning, stacklevel=2)
        return None
    for s in _SUFFIX.values():
        getattr(lib, f"fx_small_lu_{s}").argtypes = [_P, _P, _P, _P, _L, _I]
        getattr(lib, f"fx_small_cholesky_{s}").argtypes = [_P, _P, _L, _I]
        getattr(lib, f"fx_small_trsm_{s}").argtypes = [_P, _P, _P, _L, _I, _I, _I, _I, _I, _I]
    return lib


def available(*arrays: np.ndarray) -> bool:
    return all(a.dtype in _SUFFIX for a in arrays) and _library() is not None


def _c(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x)


def lu(x: np.ndarray) -> list[np.ndarray]:
    x = _c(x)
    n = x.shape[-1]
    nb = x.size // (n * n)
    out = np.empty(x.shape, x.dtype)
    piv = np.empty((*x.shape[:-2], n), np.int32)
    perm = np.empty((*x.shape[:-2], n), np.int32)
    getattr(_library(), f"fx_small_lu_{_SUFFIX[x.dtype]}")(
        x.ctypes.data, out.ctypes.data, piv.ctypes.data, perm.ctypes.data, nb, n)
    return [out, piv, perm]


def cholesky(x: np.ndarray) -> np.ndarray:
    x = _c(x)
    n = x.shape[-1]
    out = np.empty(x.shape, x.dtype)
    getattr(_library(), f"fx_small_cholesky_{_SUFFIX[x.dtype]}")(
        x.ctypes.data, out.ctypes.data, x.size // (n * n), n)
    return out


def triangular_solve(a: np.ndarray, b: np.ndarray, *, left_side: bool, lower: bool,
                     transpose_a: bool, unit_diagonal: bool) -> np.ndarray:
    """Real matrices only (conjugation is the identity there)."""
    a, b = _c(a), _c(b)
    m = a.shape[-1]
    k = b.shape[-1] if left_side else b.shape[-2]
    out = np.empty(b.shape, b.dtype)
    getattr(_library(), f"fx_small_trsm_{_SUFFIX[a.dtype]}")(
        a.ctypes.data, b.ctypes.data, out.ctypes.data, a.size // (m * m), m, k,
        int(left_side), int(lower), int(transpose_a), int(unit_diagonal))
    return out
