"""Host kernels of the Cholesky, triangular-solve and LU primitives (the impls of
:mod:`fx.lax.linalg.solvers`, which the jit runs as library steps).

Each function takes NumPy arrays with the batch dimensions leading (``[..., m, n]``) and
returns new arrays; the operands are never written. Three strategies, picked per call from the
matrix size and the batch:

- **LAPACK, one matrix at a time** (``potrf``, ``getrf``, BLAS ``trsm`` through
  ``scipy.linalg.lapack``/``blas``): the routines XLA's CPU backend calls (jaxlib takes them
  from ``scipy.linalg.cython_lapack``), on the C-order buffers without transposed copies where
  the math allows (a C-order matrix is the Fortran-order transpose). Without SciPy: NumPy.
- **Small matrices, many of them** (size at most ``SMALL_N``, at least ``SMALL_BATCH``): a C
  kernel looping over the batch (:mod:`fx.lax.small_linalg_kernels`, float32/float64), else
  the closed forms vectorized over the batch (:mod:`fx.lax.small_linalg`: each matrix entry
  one vector over the batch), not 100,000 LAPACK calls of ~1 us each.
- **NumPy loops over rows or columns, batched** (the reference: substitution, partial-pivoting
  LU), for middle sizes with large batches and for dtypes SciPy lacks.

Failures are values: a factor of a matrix that is not positive definite is all NaN, a
singular triangular solve gives inf/NaN (BLAS ``trsm`` does not test the diagonal).
"""

from __future__ import annotations

import numpy as np

from fx.lax import small_linalg, small_linalg_kernels

SMALL_N = small_linalg.MAX_N
SMALL_BATCH = 8  # below this many matrices the closed forms' fixed Python cost does not pay


def _scipy(kind: str):
    try:
        if kind == "lapack":
            from scipy.linalg import lapack
            return lapack
        from scipy.linalg import blas
        return blas
    except ImportError:  # SciPy is optional: NumPy does everything, more slowly
        return None


def _routine(kind: str, name: str, dtype):
    mod = _scipy(kind)
    prefix = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
    p = prefix.get(np.dtype(dtype).type)
    return None if mod is None or p is None else getattr(mod, p + name)


def _batch(x: np.ndarray) -> int:
    return int(np.prod(x.shape[:-2], dtype=np.int64))


def _use_small(x: np.ndarray) -> bool:
    return _small_shape(x.shape)


def _small_shape(shape: tuple[int, ...]) -> bool:
    n = shape[-1]
    return (shape[-2] == n and 0 < n <= SMALL_N
            and int(np.prod(shape[:-2], dtype=np.int64)) >= SMALL_BATCH)


def _use_loop(steps: int, batch: int, flops: float) -> bool:
    """Whether a batched NumPy loop (``steps`` NumPy steps over the whole batch) is cheaper
    than one LAPACK call per matrix of ``flops`` each: ~20 us a NumPy step plus ~2 ns a flop,
    against ~4 us a LAPACK call plus ~0.1 ns a flop."""
    loop = steps * 20e-6 + 2e-9 * batch * flops
    lapack = batch * (4e-6 + 0.1e-9 * flops)
    return loop < lapack


def _nan_factor(n: int, dtype) -> np.ndarray:
    return np.tril(np.full((n, n), np.nan, dtype))


# --- cholesky ---------------------------------------------------------------------------------


def cholesky(x: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor (zeros above the diagonal) of each matrix's lower triangle;
    NaN on and below the diagonal where it is not positive definite."""
    x = np.asarray(x)
    if _use_small(x):
        if small_linalg_kernels.available(x):
            return small_linalg_kernels.cholesky(x)
        return small_linalg.cholesky(x)
    potrf = _routine("lapack", "potrf", x.dtype)
    if potrf is None or 0 in x.shape:
        return cholesky_numpy(x)
    out = np.array(x, order="C")
    for a in out.reshape((-1, *x.shape[-2:])):
        # a.T is the Fortran-order matrix a^T, whose upper triangle is a's lower one: its
        # upper factor U (U^H U = conj(a)) is L^T, written in place as L in C order.
        _, info = potrf(a.T, lower=0, clean=1, overwrite_a=1)
        if info != 0:
            a[...] = _nan_factor(a.shape[-1], a.dtype)
    return out


def cholesky_numpy(x: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        flat = x.reshape((-1, *x.shape[-2:]))
        out = np.tril(np.full(flat.shape, np.nan, x.dtype))
        for i, a in enumerate(flat):
            try:
                out[i] = np.linalg.cholesky(a)
            except np.linalg.LinAlgError:
                pass
        return out.reshape(x.shape)


# --- triangular_solve -------------------------------------------------------------------------


def triangular_solve(a: np.ndarray, b: np.ndarray, *, left_side: bool, lower: bool,
                     transpose_a: bool, conjugate_a: bool, unit_diagonal: bool) -> np.ndarray:
    """``op(a)^-1 b`` (``left_side``) or ``b op(a)^-1``, reading one triangle of ``a``."""
    a, b = np.asarray(a), np.asarray(b)
    m = a.shape[-1]
    batch = _batch(a)
    cols = b.shape[-1] if left_side else b.shape[-2]
    trsm = _routine("blas", "trsm", a.dtype)
    if 0 in b.shape or m == 0:
        return np.zeros(b.shape, b.dtype)
    if _use_small(a) and small_linalg_kernels.available(a, b):
        return small_linalg_kernels.triangular_solve(
            a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
            unit_diagonal=unit_diagonal)
    if _use_small(a) or trsm is None or _use_loop(m, batch, m * m * max(cols, 1)):
        return triangular_solve_numpy(a, b, left_side=left_side, lower=lower,
                                      transpose_a=transpose_a, conjugate_a=conjugate_a,
                                      unit_diagonal=unit_diagonal)
    if conjugate_a and not transpose_a:  # conj(a) alone is no BLAS op: conjugate a copy
        a, conjugate_a = np.conj(a), False
    trans = 2 if conjugate_a else 1 if transpose_a else 0
    out = np.array(b, order="C")
    flat_b = out.reshape((-1, *b.shape[-2:]))
    if left_side and cols == 1:
        _trsv_each(a.reshape((-1, m, m)), flat_b[..., 0], lower=lower, transpose_a=transpose_a,
                   conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
        return out
    for t, y in zip(a.reshape((-1, m, m)), flat_b):
        # With C-order a and b read as the Fortran-order a^T and b^T, op(a) x = b is
        # x^T op(a^T) = b^T (the same op: (a^T)^T = a, (a^H)^T = conj(a) = (a^T)^H): BLAS
        # solves it on the other side, in the other triangle, writing x^T (x in C order).
        trsm(1.0, t.T, y.T, side=int(left_side), lower=int(not lower), trans_a=trans,
             diag=int(unit_diagonal), overwrite_b=1)
    return out


def _trsv_each(a: np.ndarray, b: np.ndarray, *, lower: bool, transpose_a: bool,
               conjugate_a: bool, unit_diagonal: bool) -> None:
    """``b[i] = op(a[i])^-1 b[i]`` in place, one right-hand side each, by BLAS trsv: OpenBLAS's
    trsm takes ~4x as long for one column (two 1024x1024 float64 solves: 2.5 ms against
    0.6 ms). ``conjugate_a`` only with ``transpose_a``."""
    trsv = _routine("blas", "trsv", a.dtype)
    for t, y in zip(a, b):
        # t.T is the Fortran-order t^T = M, in the other triangle: op(t) = M^T without
        # transpose_a, M with it, and conj(M) (no BLAS op: conj(M) x = y is M conj(x) =
        # conj(y)) with the conjugate transpose.
        rhs = np.conj(y) if conjugate_a else y
        x = trsv(t.T, rhs, lower=int(not lower), trans=int(not transpose_a),
                 diag=int(unit_diagonal))
        y[...] = np.conj(x) if conjugate_a else x


def substitute(t: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Solve ``t x = b`` for triangular ``t`` by forward or back substitution, row by row,
    every batch matrix and right-hand side at once."""
    m = t.shape[-1]
    x = np.zeros(b.shape, b.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(m) if lower else range(m - 1, -1, -1):
            done = slice(0, i) if lower else slice(i + 1, m)
            acc = b[..., i, :] - (t[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
            x[..., i, :] = acc / t[..., i, i, None]
    return x


def triangular_solve_numpy(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """The batched NumPy path (closed forms for small matrices, else substitution)."""
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        idx = np.arange(t.shape[-1])
        t[..., idx, idx] = 1
    if conjugate_a:
        t = np.conj(t)
    if transpose_a:
        t = np.swapaxes(t, -1, -2)
    is_lower = lower != transpose_a
    solve = small_linalg.substitute if _use_small(a) else substitute
    if left_side:
        return solve(t, b, is_lower)
    # x op(a) = b  <=>  op(a)^T x^T = b^T
    xt = solve(np.swapaxes(t, -1, -2), np.ascontiguousarray(np.swapaxes(b, -1, -2)),
               not is_lower)
    return np.swapaxes(xt, -1, -2)


# --- lu ---------------------------------------------------------------------------------------


def lu(x: np.ndarray, transposed: bool = False) -> list[np.ndarray]:
    """``[lu, pivots, permutation]`` of partial-pivoting LU, as ``jax.lax.linalg.lu``.

    With ``transposed``, those of each matrix's transpose, with the packed factors transposed
    back to ``x``'s shape (``lu(x^T)[0]^T``; the permutation has ``n`` entries): what getrf
    computes in place on a plain copy of ``x``, whose C-order matrices read in Fortran order
    are the transposes. The plain LU costs getrf a transposed copy in and one out (3-5 ms each
    of a 1024x1024 float64 matrix, against ~1 ms for a plain copy and ~35 ms for getrf)."""
    x = np.asarray(x)
    *batch, m, n = x.shape
    if not _lapack_lu(x.shape, x.dtype):
        if transposed:
            factors, pivots, perm = lu(np.swapaxes(x, -1, -2))
            return [np.ascontiguousarray(np.swapaxes(factors, -1, -2)), pivots, perm]
        if _use_small(x):
            if small_linalg_kernels.available(x):
                return small_linalg_kernels.lu(x)
            return small_linalg.lu(x)
        return lu_numpy(x)
    getrf = _routine("lapack", "getrf", x.dtype)
    k = min(m, n)
    pivots = np.empty((_batch(x), k), np.int32)
    if transposed:
        out = np.array(x, order="C")
        for i, a in enumerate(out.reshape((-1, m, n))):
            # a.T is the Fortran-order a^T, factored in place. A singular U is a result
            # (info > 0), not an error. SciPy's pivots are 0-based already.
            factors, pivots[i], _ = getrf(a.T, overwrite_a=1)
            if not np.shares_memory(factors, a):
                a[...] = factors.T
        return [out, pivots.reshape((*batch, k)),
                pivots_to_permutation(pivots, n).reshape((*batch, n))]
    out = np.empty(x.shape, x.dtype)
    flat_out = out.reshape((-1, m, n))
    for i, a in enumerate(x.reshape((-1, m, n))):
        # getrf factors in Fortran order: one transposed copy in, one out.
        f = np.empty((n, m), x.dtype).T
        _copy(f, a)
        factors, pivots[i], _ = getrf(f, overwrite_a=1)
        _copy(flat_out[i], factors)
    return [out, pivots.reshape((*batch, k)),
            pivots_to_permutation(pivots, m).reshape((*batch, m))]


def _lapack_lu(shape: tuple[int, ...], dtype) -> bool:
    """Whether :func:`lu` runs LAPACK's getrf one matrix at a time for this shape and dtype
    (the other paths: closed forms or C kernels for many small matrices, NumPy loops)."""
    *batch, m, n = shape
    nb = int(np.prod(batch, dtype=np.int64))
    return (not _small_shape(shape) and 0 not in shape
            and _routine("lapack", "getrf", dtype) is not None
            and not _use_loop(min(m, n), nb, m * n * min(m, n)))


def solve_by_transposed_lu(n: int) -> bool:
    """Whether a solve of ``n x n`` systems should use the LU factors of the transposes
    (``lu(x, transposed=True)``): for ``n > SMALL_N``, where getrf factors them without
    transposed copies (a NumPy loop over a large batch pays one transposed copy in and one out,
    little next to its own passes). Small matrices come in large batches, through C kernels
    that read and write C order: there the plain factors cost no copies. A rule on ``n``
    alone, which ``vmap`` does not change."""
    return n > SMALL_N


def _copy(dst: np.ndarray, src: np.ndarray, tile: int = 64) -> None:
    """``dst[...] = src`` for matrices of different memory orders, tile by tile (a transposing
    copy of a 1024x1024 float64 matrix in one NumPy assignment walks memory with a 8 KiB
    stride: 3x slower than 64x64 tiles that stay in cache)."""
    m, n = dst.shape
    if m * n < 128 * 128:
        dst[...] = src
        return
    for i in range(0, m, tile):
        for j in range(0, n, tile):
            dst[i:i + tile, j:j + tile] = src[i:i + tile, j:j + tile]


def magnitude(col: np.ndarray) -> np.ndarray:
    # LAPACK's i?amax: |re| + |im| for complex, as getrf picks its pivots.
    return np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col) else np.abs(col)


def lu_numpy(x: np.ndarray) -> list[np.ndarray]:
    """Partial-pivoting LU by a NumPy loop over columns, batched over the leading dims."""
    *batch, m, n = x.shape
    k = min(m, n)
    # The batch size spelled out: -1 cannot be inferred for empty (0 x n) matrices.
    a = np.array(x.reshape((int(np.prod(batch, dtype=np.int64)), m, n)), copy=True)
    nb = a.shape[0]
    rows = np.arange(nb)
    pivots = np.zeros((nb, k), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (nb, 1))
    for j in range(k):
        p = j + np.argmax(magnitude(a[:, j:, j]), axis=1)
        pivots[:, j] = p
        a[rows, j], a[rows, p] = a[rows, p], a[rows, j].copy()
        perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
        piv = a[:, j, j]
        nonzero = piv != 0
        scale = np.where(nonzero, piv, 1)[:, None]
        a[:, j + 1:, j] = np.where(nonzero[:, None], a[:, j + 1:, j] / scale, a[:, j + 1:, j])
        a[:, j + 1:, j + 1:] -= a[:, j + 1:, j:j + 1] * a[:, j:j + 1, j + 1:]
    return [a.reshape(x.shape), pivots.reshape((*batch, k)), perm.reshape((*batch, m))]


def pivots_to_permutation(pivots: np.ndarray, size: int) -> np.ndarray:
    """The permutations (int32, ``[..., size]``) that the row swaps ``pivots`` apply."""
    flat = pivots.reshape((-1, pivots.shape[-1]))
    if flat.shape[0] <= 8:  # a few long permutations: swaps of Python ints, ~0.1 us each
        perms = []
        for row in flat.tolist():
            perm = list(range(size))
            for j, p in enumerate(row):
                perm[j], perm[p] = perm[p], perm[j]
            perms.append(perm)
        return np.array(perms, np.int32).reshape((*pivots.shape[:-1], size))
    perm = np.tile(np.arange(size, dtype=np.int32), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
    return perm.reshape((*pivots.shape[:-1], size))
