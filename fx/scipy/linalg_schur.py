"""``fx.scipy.linalg``'s Schur-based functions: ``schur``, ``rsf2csf``, ``sqrtm``, ``funm``,
``hessenberg`` and ``solve_sylvester``, with jax.scipy.linalg's signatures and semantics
(re-exported by ``fx.scipy.linalg``).

They build on the ``schur``, ``hessenberg`` and ``householder_product`` primitives of
``fx.lax.linalg``. The triangular recurrences jax runs element by element in ``fori_loop``s
(Björck-Hammarling's square root, Parlett's recurrence in ``funm``, Bartels-Stewart's back
substitution) run here one superdiagonal, or one column, at a time: every element of a
superdiagonal depends only on the diagonals below it, and a column of a Sylvester solution
on the columns to its right, so each step is a few whole-array operations (a matmul, a
triangular solve) batched over leading dimensions — the same formulas as jax's, summed in
another order. Like jax, nothing here differentiates through ``schur`` (its derivative is
refused), ``funm`` takes one matrix, and ``sqrtm``'s ``blocksize`` must be 1.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.core import get_aval
from fx.lax import linalg as lax_linalg

__all__ = ["funm", "hessenberg", "rsf2csf", "schur", "solve_sylvester", "sqrtm"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def _inexact(*args):
    from fx.numpy._promote import promote_to_inexact

    return promote_to_inexact(*args, name="fx.scipy.linalg")


def _H(x):
    fnp = _fnp()
    return fnp.conj(fnp.swapaxes(x, -1, -2))


def _superdiagonal(n: int, p: int):
    """The (row, column) indices of the ``p``-th superdiagonal of an ``n x n`` matrix."""
    i = np.arange(n - p)
    return i, i + p


def schur(a, output: str = "real"):
    """Schur decomposition ``a = z t z^H``: ``(t, z)`` with ``z`` unitary and ``t`` upper
    triangular (``output='complex'``) or quasi upper triangular, 2x2 blocks on the diagonal
    for complex eigenvalue pairs of a real ``a`` (``output='real'``, the default).

    >>> t, z = fx.scipy.linalg.schur(fx.numpy.array([[1., 2.], [0., 3.]]))
    >>> t
    Array([[1., 2.],
           [0., 3.]], dtype=float32)
    """
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                         f"output={output!r}.")
    (a,) = _inexact(a)
    if output == "complex":
        a = a.astype(dtypes.complex_dtype(get_aval(a).dtype))
    t, z = lax_linalg.schur(a)
    return t, z


def rsf2csf(T, Z, check_finite: bool = True):  # noqa: N803
    """Convert a real Schur form ``(T, Z)`` (from ``schur``) to the complex one: each 2x2
    diagonal block is split by a Givens rotation, bottom to top, as SciPy's and jax's.
    Batch dimensions of ``T`` and ``Z`` broadcast.

    >>> t, z = fx.scipy.linalg.rsf2csf(fx.numpy.array([[0., 2.], [-2., 0.]]),
    ...                                fx.numpy.eye(2))
    >>> d = fx.numpy.diagonal(t)  # eigenvalues +-2j; zeros' signs depend on the LAPACK
    >>> fx.numpy.round(d.imag, 3), bool(fx.numpy.abs(d.real).max() < 1e-6)
    (Array([ 2., -2.], dtype=float32), True)
    >>> bool(fx.numpy.abs(t[1, 0]) < 1e-6)
    True
    """
    fnp = _fnp()
    T, Z = fnp.asarray(T), fnp.asarray(Z)  # noqa: N806
    ts, zs = get_aval(T).shape, get_aval(Z).shape
    if len(ts) < 2 or ts[-1] != ts[-2]:
        raise ValueError("Input 'T' must be square.")
    if len(zs) < 2 or zs[-1] != zs[-2]:
        raise ValueError("Input 'Z' must be square.")
    if ts[-1] != zs[-1]:
        raise ValueError(f"Input array shapes must match: Z: {zs} vs. T: {ts}")
    T, Z = _inexact(T, Z)  # noqa: N806
    dtype = dtypes.complex_dtype(get_aval(T).dtype)
    batch = np.broadcast_shapes(ts[:-2], zs[:-2])
    n = ts[-1]
    T = fnp.broadcast_to(T.astype(dtype), (*batch, n, n))  # noqa: N806
    Z = fnp.broadcast_to(Z.astype(dtype), (*batch, n, n))  # noqa: N806
    eps = float(np.finfo(dtypes.real_dtype(dtype)).eps)
    for m in range(n - 1, 0, -1):
        sub = T[..., m, m - 1]
        split = fnp.abs(sub) > eps * (fnp.abs(T[..., m - 1, m - 1]) + fnp.abs(T[..., m, m]))
        # The rotation G = [[c^*, s], [-s, c]] zeroing T[m, m-1], from an eigenvalue of the
        # block shifted by T[m, m].
        mu = fnp.linalg.eigvals(T[..., m - 1:m + 1, m - 1:m + 1])[..., 0] - T[..., m, m]
        r = fnp.sqrt(fnp.abs(mu) ** 2 + fnp.abs(sub) ** 2).astype(dtype)
        c, s = mu / r, sub / r
        g = fnp.stack([fnp.stack([fnp.conj(c), s], -1), fnp.stack([-s, c], -1)], -2)
        # Rows m-1, m from column m-1 on; then columns m-1, m down to row m.
        t_new = T.at[..., m - 1:m + 1, m - 1:].set(fnp.matmul(g, T[..., m - 1:m + 1, m - 1:]))
        t_new = t_new.at[..., :m + 1, m - 1:m + 1].set(
            fnp.matmul(t_new[..., :m + 1, m - 1:m + 1], _H(g)))
        z_new = Z.at[..., :, m - 1:m + 1].set(fnp.matmul(Z[..., :, m - 1:m + 1], _H(g)))
        T = fnp.where(split[..., None, None], t_new, T)  # noqa: N806
        Z = fnp.where(split[..., None, None], z_new, Z)  # noqa: N806
        T = T.at[..., m, m - 1].set(0)  # noqa: N806
    return T, Z


def _sqrtm_triu(t):
    """The upper triangular square root of an upper triangular ``t`` (Björck-Hammarling),
    one superdiagonal at a time: ``u[i, j] = (t[i, j] - sum_{i<k<j} u[i, k] u[k, j]) /
    (u[i, i] + u[j, j])``, and 0 where the numerator is 0 (jax's rule)."""
    fnp = _fnp()
    n = get_aval(t).shape[-1]
    d = fnp.sqrt(fnp.diagonal(t, 0, -2, -1))
    i = np.arange(n)
    u = fnp.zeros_like(t).at[..., i, i].set(d)
    for p in range(1, n):
        # u is zero on and above the p-th superdiagonal, so (u @ u)[i, i+p] is the sum.
        s = fnp.diagonal(fnp.matmul(u, u), p, -2, -1)
        tp = fnp.diagonal(t, p, -2, -1)
        val = fnp.where(tp == s, 0, (tp - s) / (d[..., :n - p] + d[..., p:]))
        u = u.at[(..., *_superdiagonal(n, p))].set(val)
    return u


def sqrtm(A, blocksize: int = 1):  # noqa: N803
    """The principal matrix square root by the complex Schur method (Björck and Hammarling,
    1983), as jax's: always complex.

    >>> fx.scipy.linalg.sqrtm(fx.numpy.array([[4., 0.], [0., 9.]]))
    Array([[2.+0.j, 0.+0.j],
           [0.+0.j, 3.+0.j]], dtype=complex64)
    """
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    fnp = _fnp()
    t, z = schur(A, output="complex")
    return fnp.matmul(fnp.matmul(z, _sqrtm_triu(t)), _H(z))


def funm(A, func, disp: bool = True):  # noqa: N803
    """``func`` of a square matrix by the Schur-Parlett method (Golub and Van Loan's Algorithm
    11.1.1, as jax's): ``func`` maps the eigenvalues (a vector) elementwise; the result is
    complex. With ``disp=False`` also an error estimate ``(F, err)``, as SciPy's. Repeated
    eigenvalues (a zero divisor in the recurrence) give wrong results, as jax's.

    >>> fx.scipy.linalg.funm(fx.numpy.array([[1., 1.], [0., 2.]]), lambda x: x * x)
    Array([[1.+0.j, 3.+0.j],
           [0.+0.j, 4.+0.j]], dtype=complex64)
    """
    fnp = _fnp()
    A = fnp.asarray(A)  # noqa: N806
    shape = get_aval(A).shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError("expected square array_like input")
    T, Z = rsf2csf(*schur(A))  # noqa: N806
    n = shape[0]
    dt = fnp.diagonal(T)
    i = np.arange(n)
    F = fnp.zeros_like(T).at[i, i].set(fnp.asarray(func(dt)).astype(get_aval(T).dtype))  # noqa: N806
    minden = fnp.abs(T[0, 0])
    for p in range(1, n):
        # F is zero on and above the p-th superdiagonal, so (T F - F T)[i, i+p] is
        # T[i, j] (F[j, j] - F[i, i]) + sum_{i<k<j} (T[i, k] F[k, j] - F[i, k] T[k, j]).
        s = fnp.diagonal(fnp.matmul(T, F) - fnp.matmul(F, T), p)
        den = dt[p:] - dt[:n - p]
        F = F.at[_superdiagonal(n, p)].set(fnp.where(den != 0, s / den, s))  # noqa: N806
        minden = fnp.minimum(minden, fnp.min(fnp.abs(den)))
    F = fnp.matmul(fnp.matmul(Z, F), _H(Z))  # noqa: N806
    if disp:
        return F
    tol = float(np.finfo(np.float32 if F.dtype == np.complex64 else np.float64).eps)
    minden = fnp.where(minden == 0.0, tol, minden)
    norm1 = fnp.max(fnp.sum(fnp.abs(fnp.triu(T, 1)), axis=0))
    err = fnp.where(fnp.any(fnp.isinf(F)), np.inf,
                    fnp.minimum(1, fnp.maximum(tol, (tol / minden) * norm1)))
    return F, err


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
    """Hessenberg form ``a = q h q^H``: ``h`` (zero below the first subdiagonal), or ``(h,
    q)`` with ``calc_q``.

    >>> h = fx.scipy.linalg.hessenberg(fx.numpy.array([[1., 2., 3.], [4., 5., 6.],
    ...                                                [7., 8., 0.]]))
    >>> float(h[2, 0])
    0.0
    """
    fnp = _fnp()
    (a,) = _inexact(a)
    shape = get_aval(a).shape
    n = shape[-1]
    if n == 0:
        return (fnp.zeros_like(a), fnp.zeros_like(a)) if calc_q else fnp.zeros_like(a)
    a_out, taus = lax_linalg.hessenberg(a)
    h = fnp.triu(a_out, -1)
    if not calc_q:
        return h
    q = lax_linalg.householder_product(a_out[..., 1:, :-1], taus)
    pad = [(0, 0)] * (len(shape) - 2) + [(1, 0), (1, 0)]
    q = fnp.pad(q, pad).at[..., 0, 0].set(1)
    return h, q


def _solve_triangular_sylvester(r, low, f):
    """``y`` with ``r y + y low = f`` for upper triangular ``r`` [..., m, m] and lower
    triangular ``low`` [..., n, n], one column at a time from the right: column ``j``
    solves ``(r + low[j, j]) y[:, j] = f[:, j] - sum_{k>j} y[:, k] low[k, j]``."""
    fnp = _fnp()
    m, n = get_aval(f).shape[-2:]
    eye = fnp.eye(m, dtype=get_aval(r).dtype)
    cols = [None] * n
    for j in range(n - 1, -1, -1):
        rhs = f[..., :, j]
        if j < n - 1:
            done = fnp.stack(cols[j + 1:], axis=-1)
            rhs = rhs - fnp.matmul(done, low[..., j + 1:, j:j + 1])[..., 0]
        shifted = r + low[..., j, j, None, None] * eye
        cols[j] = lax_linalg.triangular_solve(shifted, rhs[..., None], left_side=True,
                                              lower=False)[..., 0]
    return fnp.stack(cols, axis=-1) if n else fnp.zeros_like(f)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):  # noqa: N803
    """Solve the Sylvester equation ``A X + X B = C`` (``A`` [..., m, m], ``B`` [..., n, n],
    ``C`` [..., m, n], batch dimensions broadcast), by Bartels-Stewart over complex Schur
    forms (``method='schur'``) or eigendecompositions (``'eigen'``), as jax's. Where some
    ``|eig(A)_i + eig(B)_j| < tol`` the solution is NaN.

    >>> fx.scipy.linalg.solve_sylvester(fx.numpy.eye(2), 2 * fx.numpy.eye(2),
    ...                                 3 * fx.numpy.eye(2))
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    fnp = _fnp()
    A, B, C = _inexact(A, B, C)  # noqa: N806
    sa, sb, sc = get_aval(A).shape, get_aval(B).shape, get_aval(C).shape
    m, n = sc[-2:]
    if sa[-2:] != (m, m) or sb[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {sa}\nB: {sb}\n"
                         f"C: {sc}")
    batch = np.broadcast_shapes(sa[:-2], sb[:-2], sc[:-2])
    A = fnp.broadcast_to(A, (*batch, m, m))  # noqa: N806
    B = fnp.broadcast_to(B, (*batch, n, n))  # noqa: N806
    C = fnp.broadcast_to(C, (*batch, m, n))  # noqa: N806
    if method == "schur":
        R, U = schur(A, output="complex")  # noqa: N806
        S, V = schur(_H(B), output="complex")  # noqa: N806
        F = fnp.matmul(fnp.matmul(_H(U), C.astype(get_aval(R).dtype)), V)  # noqa: N806
        Y = _solve_triangular_sylvester(R, _H(S), F)  # noqa: N806
        X = fnp.matmul(fnp.matmul(U, Y), _H(V))  # noqa: N806
    elif method == "eigen":
        RA, UA = fnp.linalg.eig(A)  # noqa: N806
        RB, UB = fnp.linalg.eig(B)  # noqa: N806
        F = fnp.linalg.solve(UA, fnp.matmul(C.astype(get_aval(RA).dtype), UB))  # noqa: N806
        Y = F / (RA[..., :, None] + RB[..., None, :])  # noqa: N806
        X = fnp.matmul(fnp.matmul(UA, Y), fnp.linalg.inv(UB))  # noqa: N806
    else:
        raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                         "\"schur\" or \"eigen\".")
    if not dtypes.is_complex(get_aval(C).dtype):
        X = fnp.real(X)  # noqa: N806
    sums = fnp.linalg.eigvals(A)[..., :, None] + fnp.linalg.eigvals(B)[..., None, :]
    bad = fnp.any(fnp.abs(sums) < tol, axis=(-2, -1))
    return fnp.where(bad[..., None, None], np.nan, X)
