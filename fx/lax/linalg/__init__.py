"""``fx.lax.linalg``: ``dot_general`` and jax.lax.linalg's decompositions and solvers.

Modules, each a family of primitives with their rules registered beside them:
``contraction`` (``dot_general``, ``dot``), ``solvers`` (``cholesky``, ``triangular_solve``,
``lu``, ``lu_pivots_to_permutation``, ``tridiagonal_solve``), ``spectral`` (``qr``, ``eigh``,
``svd``, ``eig``), ``householder`` (the packed factorizations ``geqrf``,
``householder_product``, ``ormqr``, ``hessenberg``, ``tridiagonal``) and
``schur_decomposition`` (``schur``). ``host`` holds the NumPy/LAPACK kernels the solvers' impls
run, ``_common`` the helpers they share. This package only re-exports: every public name is
reached as ``fx.lax.linalg.<name>``, as in jax.

Example::

    >>> import fx, numpy as np
    >>> fx.lax.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]], np.float32))
    Array([[2.       , 0.       ],
           [1.       , 1.4142135]], dtype=float32)
"""

from fx.lax.linalg.contraction import (
    DimensionNumbers,
    canonical_precision,
    dot,
    dot_general,
    dot_general_p,
)
from fx.lax.linalg.householder import (
    geqrf,
    geqrf_p,
    hessenberg,
    hessenberg_p,
    householder_product,
    householder_product_p,
    ormqr,
    ormqr_p,
    tridiagonal,
    tridiagonal_p,
)
from fx.lax.linalg.schur_decomposition import schur, schur_p
from fx.lax.linalg.solvers import (
    cholesky,
    cholesky_p,
    lu,
    lu_p,
    lu_pivots_to_permutation,
    lu_pivots_to_permutation_p,
    triangular_solve,
    triangular_solve_p,
    tridiagonal_solve,
    tridiagonal_solve_p,
)
from fx.lax.linalg.spectral import (
    EighImplementation,
    EigImplementation,
    SvdAlgorithm,
    eig,
    eig_p,
    eigh,
    eigh_p,
    qr,
    qr_p,
    svd,
    svd_p,
)

__all__ = [
    "DimensionNumbers", "EigImplementation", "EighImplementation", "SvdAlgorithm",
    "canonical_precision", "cholesky", "cholesky_p", "dot", "dot_general", "dot_general_p",
    "eig", "eig_p", "eigh", "eigh_p", "geqrf", "geqrf_p", "hessenberg", "hessenberg_p",
    "householder_product", "householder_product_p", "lu", "lu_p", "lu_pivots_to_permutation",
    "lu_pivots_to_permutation_p", "ormqr", "ormqr_p", "qr", "qr_p", "schur", "schur_p", "svd",
    "svd_p", "triangular_solve", "triangular_solve_p", "tridiagonal", "tridiagonal_p",
    "tridiagonal_solve", "tridiagonal_solve_p",
]
