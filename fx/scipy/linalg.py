"""``fx.scipy.linalg``: the functions of ``jax.scipy.linalg`` over ``fx.lax.linalg`` and
``fx.numpy.linalg`` (differentiable, batched over leading dimensions, compiled).

Factorizations return jax's layouts: ``cho_factor`` a ``(c, lower)`` pair, ``lu_factor`` an
``(lu, piv)`` pair with LAPACK's 0-based row swaps, ``lu`` ``(p, l, u)`` or ``(pl, u)`` with
``permute_l``. ``expm`` is scaling and squaring with the [13/13] Padé approximant and a fixed
16 conditional squarings (so reverse mode works without a data-dependent loop), as jax's;
``expm_frechet`` is its jvp. The Schur-based functions (``schur``, ``rsf2csf``, ``sqrtm``,
``funm``, ``hessenberg``, ``solve_sylvester``) live in ``linalg_schur`` and
``eigh_tridiagonal`` in ``linalg_tridiagonal``, the special-matrix constructors (``toeplitz``,
``block_diag``, ``pascal``, ``companion``, ``dft``…) in ``linalg_special_matrices``; ``qr``
(with pivoting) and ``qr_multiply`` go through ``fx.lax.linalg.qr``.
Arguments jax accepts for SciPy compatibility only (``overwrite_*``, ``check_finite``) are
accepted and ignored.
"""

from __future__ import annotations

import numpy as np

from fx.core import get_aval
from fx.lax import linalg as lax_linalg
from fx.numpy import linalg as np_linalg
from fx.scipy.linalg_schur import (  # noqa: E402, F401
    funm,
    hessenberg,
    rsf2csf,
    schur,
    solve_sylvester,
    sqrtm,
)
from fx.scipy.linalg_special_matrices import (  # noqa: F401
    block_diag,
    circulant,
    companion,
    convolution_matrix,
    dft,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    hilbert,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    toeplitz,
)
from fx.scipy.linalg_tridiagonal import eigh_tridiagonal  # noqa: F401

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
           "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm",
           "expm_frechet", "fiedler", "fiedler_companion", "funm", "hadamard", "hankel",
           "helmert", "hessenberg", "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu",
           "lu_factor", "lu_solve", "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur",
           "solve", "solve_sylvester", "solve_triangular", "sqrtm", "svd", "toeplitz"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def _inexact(*args):
    from fx.numpy._promote import promote_to_inexact

    return promote_to_inexact(*args, name="fx.scipy.linalg")


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """Cholesky factor, upper (``a = U^H U``) by default as SciPy, lower with ``lower``.

    >>> fx.scipy.linalg.cholesky(fx.numpy.array([[4., 2.], [2., 5.]]))
    Array([[2., 1.],
           [0., 2.]], dtype=float32)
    """
    fnp = _fnp()
    (a,) = _inexact(a)
    # jax's: no symmetrization, the factor of the triangle named by ``lower``.
    l = lax_linalg.cholesky(a if lower else fnp.conj(fnp.matrix_transpose(a)),
                            symmetrize_input=False)
    return l if lower else fnp.conj(fnp.matrix_transpose(l))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for ``cho_solve``: ``c`` is the Cholesky factor in the chosen triangle."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``a x = b`` from ``cho_factor``'s ``(c, lower)``.

    >>> c = fx.scipy.linalg.cho_factor(fx.numpy.array([[4., 2.], [2., 5.]]))
    >>> fx.scipy.linalg.cho_solve(c, fx.numpy.array([6., 7.]))
    Array([1., 1.], dtype=float32)
    """
    c, lower = c_and_lower
    c, b = _inexact(c, b)
    vec = get_aval(b).ndim == get_aval(c).ndim - 1
    b = b[..., None] if vec else b
    kw = dict(left_side=True, lower=lower)
    y = lax_linalg.triangular_solve(c, b, transpose_a=not lower, conjugate_a=not lower, **kw)
    x = lax_linalg.triangular_solve(c, y, transpose_a=lower, conjugate_a=lower, **kw)
    return x[..., 0] if vec else x


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """Solve ``op(a) x = b`` for triangular ``a``; ``trans`` 0/'N', 1/'T' or 2/'C'.

    >>> fx.scipy.linalg.solve_triangular(fx.numpy.array([[2., 0.], [1., 1.]]),
    ...                                  fx.numpy.array([2., 3.]), lower=True)
    Array([1., 2.], dtype=float32)
    """
    a, b = _inexact(a, b)
    codes = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
             2: (True, True), "C": (True, True)}
    if trans not in codes:
        raise ValueError(f"Invalid 'trans' value {trans}")
    transpose_a, conjugate_a = codes[trans]
    vec = get_aval(b).ndim == 1
    b = b[:, None] if vec else b
    x = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=transpose_a,
                                    conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    return x[:, 0] if vec else x


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: the packed LU factors and LAPACK's 0-based row swaps (int32)."""
    (a,) = _inexact(a)
    lu_m, pivots, _ = lax_linalg.lu(a)
    return lu_m, pivots


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """Solve ``a x = b`` (``trans`` 0), ``a^T x = b`` (1) or ``a^H x = b`` (2) from
    ``lu_factor``.

    >>> f = fx.scipy.linalg.lu_factor(fx.numpy.array([[1., 2.], [3., 4.]]))
    >>> fx.scipy.linalg.lu_solve(f, fx.numpy.array([5., 11.]))
    Array([1., 2.], dtype=float32)
    """
    fnp = _fnp()
    lu_m, pivots = lu_and_piv
    lu_m, b = _inexact(lu_m, b)
    m = get_aval(lu_m).shape[-1]
    perm = lax_linalg.lu_pivots_to_permutation(pivots, m)
    vec = get_aval(b).ndim == 1
    b = b[:, None] if vec else b
    tri = lax_linalg.triangular_solve
    if trans == 0:
        x = fnp.take(b, perm, axis=-2)
        x = tri(lu_m, x, left_side=True, lower=True, unit_diagonal=True)
        x = tri(lu_m, x, left_side=True, lower=False)
    elif trans in (1, 2):
        conj = trans == 2
        x = tri(lu_m, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
        x = tri(lu_m, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True,
                conjugate_a=conj)
        x = fnp.take(x, fnp.argsort(perm), axis=-2)
    else:
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    return x[:, 0] if vec else x


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (or ``(p @ l, u)`` with ``permute_l``).

    >>> p, l, u = fx.scipy.linalg.lu(fx.numpy.array([[1., 2.], [3., 4.]]))
    >>> p
    Array([[0., 1.],
           [1., 0.]], dtype=float32)
    """
    fnp = _fnp()
    (a,) = _inexact(a)
    lu_m, _, perm = lax_linalg.lu(a)
    *_, m, n = get_aval(a).shape
    k = min(m, n)
    dtype = get_aval(a).dtype
    p = fnp.real(fnp.swapaxes(fnp.eye(m, dtype=dtype)[perm], -1, -2))  # real, as jax's
    low = fnp.tril(lu_m[..., :, :k], -1) + fnp.eye(m, k, dtype=dtype)
    up = fnp.triu(lu_m[..., :k, :])
    return (fnp.matmul(p, low), up) if permute_l else (p, low, up)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """Determinant (``fx.numpy.linalg.det``)."""
    return np_linalg.det(a)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """Inverse (``fx.numpy.linalg.inv``)."""
    return np_linalg.inv(a)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """Solve ``a x = b``; ``assume_a`` 'gen' (LU) or 'sym'/'her'/'pos' (Cholesky for 'pos')."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"Expected assume_a to be one of 'gen', 'sym', 'her', 'pos'; got "
                         f"{assume_a!r}")
    if assume_a != "pos":
        return np_linalg.solve(a, b)
    return cho_solve(cho_factor(a, lower=lower), b)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """SVD (``fx.numpy.linalg.svd``): ``(u, s, vh)`` or ``s``."""
    out = np_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """QR with SciPy's modes: 'full' (square ``q``), 'r', 'economic' (as jax, not 'raw'):
    ``(q, r)``, ``(r,)``; with ``pivoting`` (LAPACK's geqp3) also the column permutation
    ``p`` (int32, ``a[..., p] == q @ r``): ``(q, r, p)``, ``(r, p)``.

    >>> q, r, p = fx.scipy.linalg.qr(fx.numpy.array([[1., 3.], [0., 4.]]), pivoting=True)
    >>> p
    Array([1, 0], dtype=int32)
    """
    if mode in ("full", "r"):
        full_matrices = True
    elif mode == "economic":
        full_matrices = False
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    (a,) = _inexact(a)
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full_matrices)
    if mode == "r":
        return (r, *p)
    return (q, r, *p)


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """The QR decomposition of ``a`` ([..., m, n], ``k = min(m, n)``) with ``q`` applied to
    ``c``: ``(q @ c, r)`` for ``mode='left'`` (``c`` [..., k, p]) or ``(c @ q, r)`` for
    ``'right'`` (``c`` [..., p, m]; a 1-D ``c`` is a row, or a column for 'left', and the
    product is 1-D too); ``conj(q)`` with ``conjugate``; ``(.., r, p)`` with ``pivoting``.
    ``r`` is the economic ``[..., k, n]`` factor. As jax's, batch dimensions broadcast;
    unlike jax's (LAPACK's ormqr, which jax does not differentiate) it is differentiable.

    >>> a = fx.numpy.array([[1., 1.], [1., 2.], [1., 3.], [1., 4.]])
    >>> qtb, r = fx.scipy.linalg.qr_multiply(a, fx.numpy.array([2., 4., 5., 4.]))
    >>> fx.numpy.round(fx.scipy.linalg.solve_triangular(r, qtb), 4)  # (last digits: the BLAS)
    Array([2. , 0.7], dtype=float32)
    """
    fnp = _fnp()
    a, c = _inexact(a, c)
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    onedim = get_aval(c).ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    sa, sc = get_aval(a).shape, get_aval(c).shape
    m, n = sa[-2:]
    k = min(m, n)
    if mode == "left" and sc[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{tuple(sa)} so Q has {k} columns, but c has {sc[-2]} rows "
                         f"(expected {k}).")
    if mode == "right" and sc[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{tuple(sa)} so Q has {m} rows, but c has {sc[-1]} columns "
                         f"(expected {m}).")
    batch = np.broadcast_shapes(sa[:-2], sc[:-2])
    a = fnp.broadcast_to(a, (*batch, m, n))
    c = fnp.broadcast_to(c, (*batch, *sc[-2:]))
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=False)
    if conjugate:
        q = fnp.conj(q)
    cq = fnp.matmul(q, c) if mode == "left" else fnp.matmul(c, q)
    if onedim:
        cq = fnp.ravel(cq)
    return (cq, r, *p)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,  # noqa: A002
         check_finite: bool = True):
    """Hermitian eigendecomposition: ``(w, v)``, or ``w`` with ``eigvals_only``."""
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    w, v = np_linalg.eigh(a, "L" if lower else "U", symmetrize_input=False)
    return w if eigvals_only else (w, v)


_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):  # noqa: N803
    """Matrix exponential by scaling and squaring with the [13/13] Padé approximant.

    >>> fx.scipy.linalg.expm(fx.numpy.zeros((2, 2)))
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    fnp = _fnp()
    (A,) = _inexact(A)
    shape = get_aval(A).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={shape}")
    n = shape[-1]
    dtype = get_aval(A).dtype
    norm1 = fnp.max(fnp.sum(fnp.abs(A), axis=-2), axis=-1)
    theta13 = 5.371920351148152
    s = fnp.maximum(0.0, fnp.ceil(fnp.log2(norm1 / theta13)))
    s = fnp.where(fnp.isfinite(s), fnp.minimum(s, float(max_squarings)), 0.0)
    A = A / fnp.power(2.0, s).astype(dtype)[..., None, None]
    mm = fnp.matmul
    b = [np.asarray(c, dtype) for c in _PADE13]
    ident = fnp.broadcast_to(fnp.eye(n, dtype=dtype), shape)
    A2 = mm(A, A)
    A4 = mm(A2, A2)
    A6 = mm(A4, A2)
    U = mm(A, mm(A6, b[13] * A6 + b[11] * A4 + b[9] * A2)
           + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)
    V = (mm(A6, b[12] * A6 + b[10] * A4 + b[8] * A2)
         + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * ident)
    R = np_linalg.solve(V - U, V + U)
    for i in range(max_squarings):
        R = fnp.where((i < s)[..., None, None], mm(R, R), R)
    return R


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):  # noqa: N803
    """The Frechet derivative of ``expm`` at ``A`` in the direction ``E`` (the jvp of
    ``expm``, as jax's): ``(expm(A), L(A, E))``, or ``L(A, E)`` without ``compute_expm``.
    ``method`` is ignored.

    >>> a = fx.numpy.array([[0., 1.], [0., 0.]])
    >>> fx.scipy.linalg.expm_frechet(a, fx.numpy.eye(2), compute_expm=False)
    Array([[1., 1.],
           [0., 1.]], dtype=float32)
    """
    from fx import jvp

    fnp = _fnp()
    A, E = fnp.asarray(A), fnp.asarray(E)  # noqa: N806
    sa, se = get_aval(A).shape, get_aval(E).shape
    if len(sa) < 2 or sa[-2] != sa[-1]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={sa}")
    if len(se) < 2 or se[-2] != se[-1]:
        raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={se}")
    if sa != se:
        raise ValueError(f"expected A and E to be the same shape, got A.shape={sa} "
                         f"E.shape={se}")
    A, E = _inexact(A, E)  # noqa: N806
    expm_a, frechet = jvp(lambda x: expm(x, max_squarings=16), (A,), (E,))
    return (expm_a, frechet) if compute_expm else frechet


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """Polar decomposition ``a = u p`` (right) or ``p u`` (left); computed by the SVD for
    either ``method`` (jax's default 'qdwh' iterates to the same factors).

    >>> u, p = fx.scipy.linalg.polar(fx.numpy.array([[2., 0.], [0., 3.]]))
    >>> p
    Array([[2., 0.],
           [0., 3.]], dtype=float32)
    """
    fnp = _fnp()
    if method not in ("svd", "qdwh"):
        raise ValueError(f"Unknown polar decomposition method {method}.")
    if side not in ("right", "left"):
        raise ValueError(f"side={side!r} is not understood; must be 'right' or 'left'")
    (a,) = _inexact(a)
    w, s, vh = np_linalg.svd(a, full_matrices=False)
    u = fnp.matmul(w, vh)
    dtype = get_aval(a).dtype
    H = lambda x: fnp.conj(fnp.swapaxes(x, -1, -2))  # noqa: E731
    if side == "right":
        p = fnp.matmul(H(vh) * s.astype(dtype)[..., None, :], vh)
    else:
        p = fnp.matmul(w * s.astype(dtype)[..., None, :], H(w))
    return u, p
