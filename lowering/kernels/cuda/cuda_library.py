"""GPU library calls: the linear-algebra and FFT primitives on the CUDA backend, run by
cuSOLVER, cuBLAS and cuFFT through CuPy, as jax's GPU backend calls them.

Takes a group holding one such primitive (the groups ``library_calls`` runs through LAPACK
on CPU); ``cuda_step(step)`` returns the step's ``run(views)``, which reads the operands'
device arrays from ``views`` and writes every result into its planned buffer in place.
``as_text()`` shows ``cuda.library`` with the routine (``cuSOLVER potrf through
cupy.linalg.cholesky``), on the device: no copies to the host.

Each routine below is written against an array module ``xp`` (``cupy``) and ``xsl``
(``cupyx.scipy.linalg``), looked up when the program runs, so tests run them without a GPU
with NumPy and SciPy standing in (``cuda_step(step, xp=numpy, xsl=scipy.linalg)``). The
semantics are the primitives' (``fx.lax.linalg.solvers``, ``fx.lax.linalg.spectral``, ``fft``):
the same params, output dtypes and failure values (a Cholesky factor of a matrix that is not
positive definite is NaN on and below the diagonal; CuPy does not raise, NumPy does).

What stays on the host, with copies (``op_impl.host_only_prims``): primitives CuPy has no
routine for (``eig``: ``cupy.linalg.eig`` needs CuPy 14 with CUDA 12.6's geev, and gives no
left eigenvectors; ``schur``, ``hessenberg``, ``tridiagonal``, ``householder_product``,
``ormqr``), QR with column pivoting (cuSOLVER has no geqp3), and large batches of matrices
that CuPy factors one call at a time (``PER_MATRIX_BATCH``): there the host's batched C
kernels and NumPy loops beat thousands of launches, copies included.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fx.core import Primitive
from fx.jaxpr import JaxprEqn, Literal, Var
from fx.lax.fft import FftType, empty_transform, fft_p
from fx.lax.linalg import host as linalg_host
from fx.lax.linalg import householder as linalg_householder
from fx.lax.linalg import solvers as linalg_solvers
from fx.lax.linalg import spectral as linalg_spectral
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.select import op_info as _op_info  # noqa: F401  (its implementations register first)
from fx.lowering.select.op_impl import OpImpl, register

# Batches above this many matrices stay on the host where CuPy calls the routine once per
# matrix (getrf through cupyx.scipy.linalg.lu_factor, which also reads its info back each
# time; geqrf/orgqr; syevd/gesvd above the batched Jacobi routines' 32x32).
PER_MATRIX_BATCH = 64
JACOBI_BATCHED_N = 32  # cuSOLVER's syevjBatched/gesvdjBatched take matrices up to 32x32


@dataclass(frozen=True)
class GpuRoutine:
    """What runs one primitive on the GPU: ``run(xp, xsl, *operands, **params)`` returns the
    primitive's results (arrays of ``xp``); ``applies(eqn)`` says where it is the right
    call (else the host path runs it)."""

    routine: str  # for as_text(): the cuSOLVER/cuBLAS/cuFFT routine and the CuPy function
    run: Callable
    applies: Callable[[JaxprEqn], bool] = lambda eqn: True


ROUTINES: dict[Primitive, GpuRoutine] = {}


def _batch(eqn: JaxprEqn) -> int:
    return math.prod(eqn.invars[0].aval.shape[:-2])


def _few_matrices(eqn: JaxprEqn) -> bool:
    return _batch(eqn) <= PER_MATRIX_BATCH


def _batched_or_few(eqn: JaxprEqn) -> bool:
    """Few matrices, or matrices small enough for cuSOLVER's batched Jacobi routines."""
    return _few_matrices(eqn) or max(eqn.invars[0].aval.shape[-2:]) <= JACOBI_BATCHED_N


def gpu_routine(prim: Primitive, routine: str, applies=None):
    """Registers the decorated ``run(xp, xsl, *operands, **params)`` for ``prim``."""

    def register_run(run):
        ROUTINES[prim] = GpuRoutine(routine, run, applies or (lambda eqn: True))
        return run

    return register_run


def _per_matrix(xp, fn, x) -> list:
    """``fn`` (a list of arrays per matrix) over the batch dimensions of ``x``, stacked."""
    flat = x.reshape((-1, *x.shape[-2:]))
    per = [fn(a) for a in flat]
    return [xp.stack([r[j] for r in per]).reshape((*x.shape[:-2], *per[0][j].shape))
            for j in range(len(per[0]))]


def _to_host(x) -> np.ndarray:
    return x.get() if hasattr(x, "get") else np.asarray(x)


# --- cholesky ---------------------------------------------------------------------------------


@gpu_routine(linalg_solvers.cholesky_p, "cuSOLVER potrf through cupy.linalg.cholesky "
                                        "(potrfBatched for stacks)")
def _cholesky(xp, xsl, x):
    n = x.shape[-1]
    if x.size == 0:
        return [xp.zeros(x.shape, x.dtype)]
    try:
        factor = xp.linalg.cholesky(x)
    except xp.linalg.LinAlgError:  # NumPy refuses the whole batch: factor matrix by matrix
        def one(a):
            try:
                return [xp.linalg.cholesky(a)]
            except xp.linalg.LinAlgError:
                return [xp.full(a.shape, xp.nan, a.dtype)]

        (factor,) = _per_matrix(xp, one, x)
    # CuPy does not raise where potrf fails (its info stays on the device): the factor then
    # has a pivot that is not positive or not finite where the leading minor is not positive
    # definite (potf2 leaves the failing pivot in place). NaN on and below the diagonal there.
    pivots = xp.diagonal(factor, axis1=-2, axis2=-1).real
    ok = xp.all(xp.isfinite(factor), axis=(-2, -1)) & xp.all(pivots > 0, axis=-1)
    failed = xp.tril(xp.full((n, n), xp.nan, factor.dtype))
    return [xp.where(ok[..., None, None], factor, failed)]


# --- triangular_solve -------------------------------------------------------------------------


@gpu_routine(linalg_solvers.triangular_solve_p, "cuBLAS trsm through cupyx.scipy.linalg."
                                                "solve_triangular (trsmBatched for stacks)")
def _triangular_solve(xp, xsl, a, b, *, left_side, lower, transpose_a, conjugate_a,
                      unit_diagonal):
    if b.size == 0:
        return [xp.zeros(b.shape, b.dtype)]
    # solve_triangular solves op(a) x = b on the left; x op(a) = b is op(a)^T x^T = b^T, and
    # op(a)^T transposes a once more. A conjugate without a transpose is no BLAS op: conj(a).
    transposed = transpose_a != (not left_side)
    if conjugate_a and not transposed:
        a, trans = xp.conj(a), "N"
    else:
        trans = ("C" if conjugate_a else "T") if transposed else "N"
    rhs = b if left_side else xp.swapaxes(b, -1, -2)
    x = xsl.solve_triangular(a, rhs, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                             check_finite=False)
    return [x if left_side else xp.swapaxes(x, -1, -2)]


# --- lu and lu_pivots_to_permutation ------------------------------------------------------------


def _permutation(xp, pivots, size: int):
    # The row swaps are sequential: k swaps of int32 on the host (a copy of k int32 each way)
    # beat k rounds of device launches; getrf's info read has synchronized already.
    return xp.asarray(linalg_host.pivots_to_permutation(_to_host(pivots), size))


@gpu_routine(linalg_solvers.lu_p, "cuSOLVER getrf per matrix through "
                                  "cupyx.scipy.linalg.lu_factor", _few_matrices)
def _lu(xp, xsl, x, *, transposed):
    *batch, m, n = x.shape
    k, size = min(m, n), (n if transposed else m)
    flat = x.reshape((-1, m, n))
    factors = xp.zeros(flat.shape, x.dtype)
    pivots = xp.zeros((flat.shape[0], k), np.int32)
    if k:
        with warnings.catch_warnings():  # a singular U is a result, as on CPU and in jax
            warnings.simplefilter("ignore")
            for i in range(flat.shape[0]):
                # transposed: the factors of x^T, transposed back to x's shape.
                f, p = xsl.lu_factor(flat[i].T if transposed else flat[i], check_finite=False)
                factors[i] = f.T if transposed else f
                pivots[i] = p
    return [factors.reshape(x.shape), pivots.reshape((*batch, k)),
            _permutation(xp, pivots, size).reshape((*batch, size))]


@gpu_routine(linalg_solvers.lu_pivots_to_permutation_p,
             "LU pivot rows to a permutation, by swaps (the pivots copied to the host and the "
             "permutation back)")
def _lu_pivots_to_permutation(xp, xsl, pivots, *, permutation_size):
    return [_permutation(xp, pivots, permutation_size)]


# --- tridiagonal_solve --------------------------------------------------------------------------


@gpu_routine(linalg_solvers.tridiagonal_solve_p, "cuSOLVER getrf/getrs of the dense system "
                                                 "(as the CPU's gesv) through cupy.linalg.solve")
def _tridiagonal_solve(xp, xsl, dl, d, du, b, *, perturb_singular):
    m = d.shape[-1]
    if b.size == 0:
        return [xp.zeros(b.shape, b.dtype)]
    a = xp.zeros((*d.shape, m), d.dtype)
    i = xp.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    try:
        return [xp.linalg.solve(a, b)]
    except xp.linalg.LinAlgError:  # NumPy refuses a singular system: NaN for that one
        def one(ab):
            try:
                return [xp.linalg.solve(ab[:, :m], ab[:, m:])]
            except xp.linalg.LinAlgError:
                return [xp.full((m, b.shape[-1]), xp.nan, b.dtype)]

        return _per_matrix(xp, one, xp.concatenate([a, b], axis=-1))


# --- qr and geqrf -------------------------------------------------------------------------------


def _unpivoted_few(eqn: JaxprEqn) -> bool:
    return not eqn.params["pivoting"] and _few_matrices(eqn)  # no geqp3 in cuSOLVER


@gpu_routine(linalg_spectral.qr_p, "cuSOLVER geqrf/orgqr through cupy.linalg.qr",
             _unpivoted_few)
def _qr(xp, xsl, x, *, pivoting, full_matrices):
    q, r = xp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q, r]


@gpu_routine(linalg_householder.geqrf_p, "cuSOLVER geqrf through cupy.linalg.qr(mode='raw')",
             _few_matrices)
def _geqrf(xp, xsl, a):
    h, taus = xp.linalg.qr(a, mode="raw")  # h: the packed factors in Fortran order
    return [xp.swapaxes(h, -1, -2), taus]


# --- eigh and svd -------------------------------------------------------------------------------


@gpu_routine(linalg_spectral.eigh_p, "cuSOLVER syevd/heevd through cupy.linalg.eigh "
                                     "(syevjBatched for stacks of matrices up to 32x32)",
             _batched_or_few)
def _eigh(xp, xsl, x, *, lower, sort_eigenvalues, subset_by_index):
    uplo = "L" if lower else "U"

    def one(a):
        w, v = xp.linalg.eigh(a, UPLO=uplo)  # ascending, as sort_eigenvalues asks
        return [v, w]

    stacked = x.ndim > 2 and x.shape[-1] > JACOBI_BATCHED_N and x.size > 0
    v, w = _per_matrix(xp, one, x) if stacked else one(x)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        v, w = v[..., :, lo:hi], w[..., lo:hi]
    return [v, w]


@gpu_routine(linalg_spectral.svd_p, "cuSOLVER gesvd through cupy.linalg.svd (gesvdjBatched "
                                    "for stacks of matrices up to 32x32)", _batched_or_few)
def _svd(xp, xsl, x, *, full_matrices, compute_uv, subset_by_index):
    sl = slice(None) if subset_by_index is None else slice(*subset_by_index)
    if not compute_uv:
        return [xp.linalg.svd(x, compute_uv=False)[..., sl]]
    u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices and subset_by_index is None)
    return [s[..., sl], u[..., :, sl], vh[..., sl, :]]


# --- fft ----------------------------------------------------------------------------------------

_FFT_FUNCTIONS = {FftType.FFT: "fftn", FftType.IFFT: "ifftn", FftType.RFFT: "rfftn",
                  FftType.IRFFT: "irfftn"}


@gpu_routine(fft_p, "cuFFT through cupy.fft")
def _fft(xp, xsl, x, *, fft_type, fft_lengths):
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    empty = empty_transform(x.shape, x.dtype, fft_type, fft_lengths)
    if empty is not None:
        return [xp.zeros(*empty)]
    return [getattr(xp.fft, _FFT_FUNCTIONS[fft_type])(x, s=tuple(fft_lengths), axes=axes)]


# --- the operator ---------------------------------------------------------------------------------


def _array_modules():
    """CuPy and cupyx.scipy.linalg (the device's modules, at call time)."""
    from fx.runtime.platforms import cupy_module

    cp = cupy_module()
    if cp is None:
        raise RuntimeError("fx: a CUDA library call needs CuPy and a GPU")
    import cupyx.scipy.linalg

    return cp, cupyx.scipy.linalg


def _read(views, v):
    return v.value if isinstance(v, Literal) else views[v]


def cuda_step(step, xp=None, xsl=None) -> Callable:
    """The step's ``run(views)``: the primitive's GPU routine on the operands' arrays, each
    result copied into its planned buffer (cast to the abstract eval's dtype). ``xp`` and
    ``xsl`` stand in for CuPy and ``cupyx.scipy.linalg`` (tests pass NumPy and SciPy)."""
    eqn = step.group.eqns[0]
    gpu = ROUTINES[eqn.primitive]

    def run(views):
        mods = (xp, xsl) if xp is not None else _array_modules()
        outs = gpu.run(*mods, *[_read(views, v) for v in eqn.invars], **eqn.params)
        for v, out in zip(eqn.outvars, outs):
            if isinstance(v, Var) and v in views:
                mods[0].copyto(views[v], out.reshape(v.aval.shape), casting="unsafe")

    return run


def applies(g: FusionGroup) -> bool:
    if len(g.eqns) != 1 or g.eqns[0].primitive not in ROUTINES:
        return False
    return ROUTINES[g.eqns[0].primitive].applies(g.eqns[0])


def routine(g: FusionGroup) -> str:
    """The routine a GPU library-call group runs (for ``as_text()``)."""
    return ROUTINES[g.eqns[0].primitive].routine


def _cost(g: FusionGroup) -> float:
    return 1000.0  # below the host path's fixed cost, which also copies both ways


register(OpImpl("cuda.library", "cuda", GroupKind.OPAQUE, None, {}, False, _cost,
                "a cuSOLVER/cuBLAS/cuFFT call through CuPy on the device (the routine is "
                "named in the reason)", applies=applies, library=cuda_step, describe=routine))
