"""Library calls: linear-algebra and FFT primitives run by LAPACK/BLAS and pocketfft.

A group holding one of these primitives alone is a library call, as in XLA's CPU backend:
the primitive's impl calls the routine named below (through SciPy, NumPy without it), and
``as_text()`` shows ``cpu.library`` with the routine. On the CUDA backend most of them are
cuSOLVER/cuBLAS/cuFFT calls through CuPy (:mod:`fx.lowering.kernels.cuda.cuda_library`); the others
(``host_only_prims``) run on the host there, with explicit copies.
"""

from __future__ import annotations

from fx.lax.fft import fft_p
from fx.lax.linalg import householder as linalg_householder
from fx.lax.linalg import schur_decomposition as linalg_schur
from fx.lax.linalg import solvers as linalg_solvers
from fx.lax.linalg import spectral as linalg_spectral
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.cuda import cuda_library as _cuda_library  # noqa: F401  (their GPU routines)
from fx.lowering.select import op_info as _op_info  # noqa: F401  (its implementations register first)
from fx.lowering.select.op_impl import OpImpl, host_only_prims, register

# primitive -> what runs it on the CPU
ROUTINES = {
    linalg_solvers.cholesky_p: "LAPACK potrf per matrix (a C kernel over batches of n <= 4)",
    linalg_solvers.triangular_solve_p: "BLAS trsm per matrix, trsv for one right-hand side "
                                       "(a C kernel over batches of n <= 4)",
    linalg_solvers.lu_p: "LAPACK getrf per matrix, in place on the transpose for solves (a C "
                         "kernel over batches of n <= 4)",
    linalg_solvers.lu_pivots_to_permutation_p: "LU pivot rows to a permutation, by swaps",
    linalg_solvers.tridiagonal_solve_p: "the Thomas algorithm vectorized over the batch "
                                        "(LAPACK gtsv's recurrence)",
    linalg_spectral.qr_p: "LAPACK geqrf/orgqr (geqp3 with pivoting) through numpy/scipy",
    linalg_spectral.eigh_p: "LAPACK syevd/heevd per matrix through scipy (numpy.linalg's "
                            "batched loop below n = 64)",
    linalg_spectral.svd_p: "LAPACK gesdd per matrix through scipy (numpy.linalg's batched "
                           "loop below n = 64)",
    linalg_spectral.eig_p: "LAPACK geev through numpy.linalg.eig",
    linalg_schur.schur_p: "LAPACK gees through scipy.linalg.schur",
    linalg_householder.geqrf_p: "LAPACK geqrf through scipy",
    linalg_householder.householder_product_p: "LAPACK orgqr/ungqr through scipy",
    linalg_householder.ormqr_p: "LAPACK ormqr/unmqr through scipy",
    linalg_householder.hessenberg_p: "LAPACK gehrd through scipy",
    linalg_householder.tridiagonal_p: "LAPACK sytrd/hetrd through scipy",
    fft_p: "pocketfft through scipy.fft (numpy.fft without SciPy)",
}
host_only_prims.update(ROUTINES)


def _is_call(g: FusionGroup) -> bool:
    return len(g.eqns) == 1 and g.eqns[0].primitive in ROUTINES


def _cost(g: FusionGroup) -> float:
    return 1000.0  # below the op-by-op NumPy step's fixed cost: the same call, named


def routine(g: FusionGroup) -> str:
    """The routine a library-call group runs (for ``as_text()``)."""
    return ROUTINES[g.eqns[0].primitive]


register(OpImpl("cpu.library", "cpu", GroupKind.OPAQUE, None, {}, False, _cost,
                "a library call (the routine is named in the reason)", applies=_is_call,
                describe=routine))
