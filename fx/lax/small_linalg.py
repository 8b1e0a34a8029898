"""Closed-form Cholesky, LU and triangular substitution for many small matrices at once.

Takes ``[batch, n, n]``-shaped NumPy arrays (any leading dimensions; ``n <= MAX_N``) and
returns what :mod:`fx.lax.linalg.host`'s general paths return, computed by the unrolled
textbook algorithm: every matrix entry becomes one contiguous vector over the batch (the
operands are transposed batch-last once), and each scalar operation of the algorithm is one
NumPy operation over the whole batch. For n = 3 that is ~40 operations over 100,000-element
vectors instead of 100,000 LAPACK calls or a loop of strided batched slices.

The arithmetic is the general paths', operation for operation (the same products, sums and
divisions in the same order), so that on finite input the LU factors match the NumPy loop's
bit for bit; the pivot on a tie is the first largest magnitude, as LAPACK's ``i?amax``.
Failures are values: a matrix that is not positive definite gets a Cholesky factor that is
NaN on and below the diagonal.
"""

from __future__ import annotations

import numpy as np

MAX_N = 4


def _entries(x: np.ndarray) -> list[list[np.ndarray]]:
    """``x[..., i, j]`` as contiguous vectors over the flattened batch."""
    m, n = x.shape[-2:]
    t = np.ascontiguousarray(np.moveaxis(x.reshape((-1, m * n)), 0, -1))
    return [[t[i * n + j] for j in range(n)] for i in range(m)]


def _assemble(rows: list[list[np.ndarray]], shape, dtype) -> np.ndarray:
    m, n = len(rows), len(rows[0])
    flat = np.stack([v for r in rows for v in r], axis=-1).astype(dtype, copy=False)
    return flat.reshape(shape[:-2] + (m, n))


def _magnitude(v: np.ndarray) -> np.ndarray:
    return np.abs(v.real) + np.abs(v.imag) if np.iscomplexobj(v) else np.abs(v)


def cholesky(x: np.ndarray) -> np.ndarray:
    """Lower Cholesky factors (zeros above) of the lower triangles of ``x``; NaN on and below
    the diagonal where a pivot is not positive (or is NaN), as LAPACK's ``potrf`` failing."""
    n = x.shape[-1]
    a = _entries(x)
    zero = np.zeros_like(a[0][0])
    L = [[zero] * n for _ in range(n)]
    bad = np.zeros(a[0][0].shape, bool)
    complex_ = np.iscomplexobj(x)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j in range(n):
            s = a[j][j].real if complex_ else a[j][j]
            for k in range(j):
                s = s - ((L[j][k] * np.conj(L[j][k])).real if complex_ else L[j][k] * L[j][k])
            ok = s > 0
            bad |= ~ok
            d = np.sqrt(np.where(ok, s, 1))
            L[j][j] = d.astype(x.dtype) if complex_ else d
            for i in range(j + 1, n):
                v = a[i][j]
                for k in range(j):
                    v = v - L[i][k] * (np.conj(L[j][k]) if complex_ else L[j][k])
                L[i][j] = v / d
    out = _assemble(L, x.shape, x.dtype)
    rows, cols = np.tril_indices(n)
    failed = out[bad.reshape(x.shape[:-2])]
    failed[..., rows, cols] = np.nan  # NaN where the factor lives, zeros above, as potrf
    out[bad.reshape(x.shape[:-2])] = failed
    return out


def lu(x: np.ndarray) -> list[np.ndarray]:
    """``[lu, pivots, permutation]`` of partial-pivoting LU of square matrices."""
    n = x.shape[-1]
    a = _entries(x)
    size = a[0][0].shape
    perm = [np.full(size, r, np.int32) for r in range(n)]
    pivots = []
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j in range(n):
            best, p = _magnitude(a[j][j]), np.full(size, j, np.int32)
            for r in range(j + 1, n):
                mag = _magnitude(a[r][j])
                take = mag > best  # strictly: the first largest wins, as i?amax
                best, p = np.where(take, mag, best), np.where(take, np.int32(r), p)
            pivots.append(p)
            for r in range(j + 1, n):
                s = p == r
                if not s.any():
                    continue
                for c in range(n):
                    a[j][c], a[r][c] = np.where(s, a[r][c], a[j][c]), np.where(s, a[j][c],
                                                                               a[r][c])
                perm[j], perm[r] = np.where(s, perm[r], perm[j]), np.where(s, perm[j], perm[r])
            piv = a[j][j]
            nonzero = piv != 0
            scale = np.where(nonzero, piv, 1)
            for r in range(j + 1, n):
                a[r][j] = np.where(nonzero, a[r][j] / scale, a[r][j])
                for c in range(j + 1, n):
                    a[r][c] = a[r][c] - a[r][j] * a[j][c]
    batch = x.shape[:-2]
    return [_assemble(a, x.shape, x.dtype), np.stack(pivots, -1).reshape((*batch, n)),
            np.stack(perm, -1).reshape((*batch, n))]


def substitute(t: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Solve ``t x = b`` (``t`` triangular ``[..., m, m]``, ``b`` ``[..., m, k]``) by forward
    or back substitution, each entry of ``t`` one vector over the batch."""
    m, k = b.shape[-2:]
    T = _entries(t)
    B = np.ascontiguousarray(np.moveaxis(b.reshape((-1, m, k)), 0, -1))  # [m, k, batch]
    X: list = [None] * m
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(m) if lower else range(m - 1, -1, -1):
            done = range(0, i) if lower else range(i + 1, m)
            dot = None  # summed in the order of the general path's matmul over ``done``
            for j in done:
                dot = T[i][j] * X[j] if dot is None else dot + T[i][j] * X[j]
            X[i] = (B[i] if dot is None else B[i] - dot) / T[i][i]
    out = np.stack(X, 0).astype(b.dtype, copy=False)  # [m, k, batch]
    return np.moveaxis(out, -1, 0).reshape(b.shape)
