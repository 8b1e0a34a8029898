"""``fx.numpy.linalg``'s decompositions and the functions built on them: cholesky, qr, svd,
svdvals, eig, eigvals, eigh, eigvalsh, solve, inv, lstsq, pinv, matrix_rank,
matrix_power, tensorinv, tensorsolve — jax.numpy.linalg's signatures and semantics.

Each takes array-likes, promotes integers and bools to the default float (complex stays
complex), and works on batches of matrices in the trailing two dimensions. They are written
over the ``fx.lax.linalg`` primitives, so they differentiate, batch and compile as those do.
``solve``/``inv`` go through ``lu`` and triangular solves; ``pinv`` has jax's custom jvp.
``det`` and ``slogdet`` live in ``linalg_determinants``.
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from fx import dtypes
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.lax import linalg as lax_linalg
from fx.lax.linalg.solvers import solve_square
from fx.numpy._promote import ensure_arraylike, promote_to_inexact

__all__ = ["EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
           "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matrix_power",
           "matrix_rank", "pinv", "qr", "solve", "svd", "svdvals", "tensorinv",
           "tensorsolve"]


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object  # noqa: N815
    R: object  # noqa: N815


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object  # noqa: N815
    S: object  # noqa: N815
    Vh: object  # noqa: N815


def _fnp():
    import fx.numpy as fnp

    return fnp


def _inexact(name: str, *args):
    ensure_arraylike(f"fx.numpy.linalg.{name}", *args)
    return promote_to_inexact(*args, name=f"fx.numpy.linalg.{name}")


def _H(x):  # noqa: N802
    fnp = _fnp()
    return fnp.conj(fnp.matrix_transpose(x)) if dtypes.is_complex(get_aval(x).dtype) else (
        fnp.matrix_transpose(x))


def _square(name: str, a) -> None:
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"fx.numpy.linalg.{name}: argument must have shape [..., n, n], got "
                         f"{shape}")


# --- decompositions ---------------------------------------------------------------------------


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of Hermitian positive-definite ``a`` ([..., n, n]): lower ``L`` with
    ``a = L L^H``, or upper ``U = L^H`` with ``upper=True``; NaNs if not positive definite.

    >>> fx.numpy.linalg.cholesky(fx.numpy.array([[4., 2.], [2., 5.]]))
    Array([[2., 0.],
           [1., 2.]], dtype=float32)
    """
    (a,) = _inexact("cholesky", a)
    L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(L) if upper else L


def qr(a, mode: str = "reduced"):
    """QR decomposition: ``QRResult(Q, R)`` with ``mode`` 'reduced' (or 'full'), 'complete'
    (square ``Q``), just ``R`` with 'r', or with 'raw' LAPACK's packed Householder
    reflectors ``(h, tau)`` (``h`` transposed, [..., n, m], as NumPy's).

    >>> q, r = fx.numpy.linalg.qr(fx.numpy.array([[3., 1.], [4., 2.]]))
    >>> fx.numpy.allclose(q @ r, fx.numpy.array([[3., 1.], [4., 2.]]), atol=1e-6)
    Array(True, dtype=bool)
    """
    (a,) = _inexact("qr", a)
    if mode == "raw":
        # LAPACK's packed reflectors, as NumPy returns them (transposed) and jax does.
        h, taus = lax_linalg.geqrf(a)
        return QRResult(_fnp().matrix_transpose(h), taus)
    if mode not in ("reduced", "r", "full", "complete"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
    """Singular value decomposition ``a = U @ diag(S) @ Vh``: ``SVDResult(U, S, Vh)``, or the
    descending singular values alone without ``compute_uv``. ``hermitian=True`` uses ``eigh``.

    >>> fx.numpy.linalg.svd(fx.numpy.array([[3., 0.], [0., -4.]]), compute_uv=False)
    Array([4., 3.], dtype=float32)
    """
    fnp = _fnp()
    (a,) = _inexact("svd", a)
    if hermitian:
        v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
        s = fnp.abs(w)
        order = fnp.flip(fnp.argsort(s, axis=-1, stable=True), axis=-1)
        s = fnp.take_along_axis(s, order, axis=-1)
        if not compute_uv:
            return s
        sign = fnp.take_along_axis(fnp.sign(w), order, axis=-1)
        u = fnp.take_along_axis(v, order[..., None, :], axis=-1)
        return SVDResult(u, s, _H(u * sign[..., None, :].astype(u.dtype)))
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                         subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def svdvals(x, /):
    """The singular values of ``x``, descending: ``svd(x, compute_uv=False)``.

    >>> fx.numpy.linalg.svdvals(fx.numpy.array([[0., 2.], [1., 0.]]))
    Array([2., 1.], dtype=float32)
    """
    return svd(x, compute_uv=False)


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices (always complex):
    ``EigResult(eigenvalues, eigenvectors)``. Only the eigenvalues are differentiable.

    >>> fx.numpy.linalg.eig(fx.numpy.array([[2., 0.], [0., 3.]])).eigenvalues
    Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    (a,) = _inexact("eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """The (complex) eigenvalues of general square matrices.

    >>> fx.numpy.linalg.eigvals(fx.numpy.array([[0., -1.], [1., 0.]]))
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    (a,) = _inexact("eigvals", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def _lower(uplo) -> bool:
    if uplo is None or uplo == "L":
        return True
    if uplo == "U":
        return False
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {uplo}")


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):  # noqa: N803
    """Eigendecomposition of Hermitian matrices: ``EighResult(eigenvalues, eigenvectors)``,
    the eigenvalues real and ascending.

    >>> fx.numpy.linalg.eigh(fx.numpy.array([[2., 1.], [1., 2.]])).eigenvalues
    Array([1., 3.], dtype=float32)
    """
    lower = _lower(UPLO)
    (a,) = _inexact("eigh", a)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):  # noqa: N803
    """The real, ascending eigenvalues of Hermitian matrices.

    >>> fx.numpy.linalg.eigvalsh(fx.numpy.array([[2., 1.], [1., 2.]]))
    Array([1., 3.], dtype=float32)
    """
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


# --- solves, inverses, determinants -----------------------------------------------------------


def solve(a, b):
    """Solve ``a @ x = b`` for square ``a`` ([..., m, m]); ``b`` is ``[..., m]`` (a 1-D ``b``
    is one vector) or ``[..., m, n]``, batch dimensions broadcast. Through ``lu`` and two
    triangular solves.

    >>> fx.numpy.linalg.solve(fx.numpy.array([[2., 0.], [0., 4.]]), fx.numpy.array([2., 2.]))
    Array([1. , 0.5], dtype=float32)
    """
    fnp = _fnp()
    a, b = _inexact("solve", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if len(sa) < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got a.shape={sa}")
    _square("solve", a)
    if len(sb) > 1 and len(sa) == len(sb) + 1 and sa[-1] == sb[-1] and sa[-1] != sb[-2]:
        raise ValueError(f"Invalid shapes for solve: {sa}, {sb}. Prior to JAX v0.5.0, this "
                         "would have been treated as a batched 1-dimensional solve. To recover "
                         "this behavior, use solve(a, b[..., None]).squeeze(-1).")
    vector = len(sb) == 1
    if vector:
        b = b[:, None]
        sb = get_aval(b).shape
    batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    a = fnp.broadcast_to(a, (*batch, *sa[-2:]))
    b = fnp.broadcast_to(b, (*batch, *sb[-2:]))
    x = solve_square(a, b)
    return x[..., 0] if vector else x


def inv(a):
    """The inverse of square matrices, ``solve(a, I)``.

    >>> fx.numpy.linalg.inv(fx.numpy.array([[2., 0.], [0., 4.]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    fnp = _fnp()
    (a,) = _inexact("inv", a)
    _square("inv", a)
    shape = get_aval(a).shape
    return solve(a, fnp.broadcast_to(fnp.eye(shape[-1], dtype=get_aval(a).dtype), shape))


# --- least squares, pseudo-inverse, rank, condition -------------------------------------------


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution of ``a @ x = b`` for 2-D ``a`` by the SVD: ``(x, resid, rank,
    s)`` as jax (``resid`` is always computed unless ``numpy_resid``, NumPy's rule).

    >>> fx.numpy.linalg.lstsq(fx.numpy.array([[1., 0.], [0., 2.], [0., 0.]]),
    ...                       fx.numpy.array([1., 2., 3.]))[0]
    Array([1., 1.], dtype=float32)
    """
    fnp = _fnp()
    a, b = _inexact("lstsq", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if sa[0] != sb[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    b_ndim = len(sb)
    if b_ndim == 1:
        b = b[:, None]
    if len(sa) != 2:
        raise TypeError(f"{len(sa)}-dimensional array given. Array must be two-dimensional")
    if get_aval(b).ndim != 2:
        raise TypeError(f"{b_ndim}-dimensional array given. Array must be one or "
                        "two-dimensional")
    m, n = sa
    dtype = get_aval(a).dtype
    eps = float(np.finfo(dtypes.real_dtype(dtype)).eps)
    rcond = eps * max(n, m) if rcond is None else fnp.where(rcond < 0, eps, rcond)
    u, s, vt = svd(a, full_matrices=False)
    mask = (s > 0) & (s >= fnp.asarray(rcond, dtype=s.dtype) * s[0])
    rank = mask.sum()
    safe_s = fnp.where(mask, s, 1).astype(dtype)
    s_inv = fnp.where(mask, 1 / safe_s, 0)[:, None]
    x = fnp.matmul(_H(vt), s_inv * fnp.matmul(_H(u), b))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = fnp.asarray([], dtype=s.dtype)
    else:
        r = b - fnp.matmul(a, x)
        resid = fnp.sum(fnp.real(r * fnp.conj(r)), axis=0)
    if b_ndim == 1:
        x = x.ravel()
    return x, resid, rank, s


def _pinv_impl(a, rtol, hermitian):
    fnp = _fnp()
    m, n = get_aval(a).shape[-2:]
    dtype = get_aval(a).dtype
    a = fnp.conj(a)
    if rtol is None:
        rtol = 10.0 * max(m, n) * float(np.finfo(dtypes.real_dtype(dtype)).eps)
    rtol = fnp.asarray(rtol)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = fnp.expand_dims(rtol[..., None], tuple(range(s.ndim - rtol.ndim - 1)))
    cutoff = rtol * s[..., 0:1]
    s = fnp.where(s > cutoff, s, np.inf).astype(dtype)
    return fnp.matmul(fnp.matrix_transpose(vh),
                      fnp.matrix_transpose(u) / s[..., None]).astype(dtype)


_pinv = custom_jvp(_pinv_impl, nondiff_argnums=(1, 2))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
    (a,), (a_dot,) = primals, tangents
    mm = _fnp().matmul
    p = _pinv(a, rtol, hermitian)
    if hermitian:
        a, a_dot = (a + _H(a)) / 2, (a_dot + _H(a_dot)) / 2
    m, n = get_aval(a).shape[-2:]
    if m >= n:
        s = mm(mm(p, _H(p)), _H(a_dot))
        t = mm(mm(_H(a_dot), _H(p)), p)
        p_dot = -mm(mm(p, a_dot), p) + s - mm(mm(s, a), p) + t - mm(mm(p, a), t)
    else:
        s = mm(p, mm(_H(p), _H(a_dot)))
        t = mm(_H(a_dot), mm(_H(p), p))
        p_dot = -mm(p, mm(a_dot, p)) + s - mm(s, mm(a, p)) + t - mm(p, mm(a, t))
    return p, p_dot


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse by the SVD, singular values at most ``rtol * s_max``
    dropped (default ``10 * max(m, n) * eps``); jax's custom jvp.

    >>> fx.numpy.linalg.pinv(fx.numpy.array([[2., 0.], [0., 0.]]))
    Array([[0.5, 0. ],
           [0. , 0. ]], dtype=float32)
    """
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    (a,) = _inexact("pinv", a)
    m, n = get_aval(a).shape[-2:]
    if m == 0 or n == 0:
        return _fnp().empty(get_aval(a).shape[:-2] + (n, m), get_aval(a).dtype)
    if rtol is not None and not isinstance(rtol, (int, float)):
        return _pinv_impl(a, rtol, hermitian)  # traced tolerances: differentiate through
    return _pinv(a, rtol, bool(hermitian))


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):  # noqa: N803
    """The number of singular values above ``rtol * s_max`` (default ``max(m, n) * eps``).

    >>> fx.numpy.linalg.matrix_rank(fx.numpy.array([[1., 2.], [2., 4.]]))
    Array(1, dtype=int32)
    """
    fnp = _fnp()
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    (M,) = _inexact("matrix_rank", M)
    if M.ndim < 2:
        return fnp.any(M != 0).astype(np.int32)
    S = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        eps = float(np.finfo(S.dtype).eps)
        rtol = S.max(-1) * np.asarray(max(M.shape[-2:]) * eps, S.dtype)
    rtol = fnp.expand_dims(fnp.asarray(rtol), fnp.ndim(rtol))
    return fnp.sum(S > rtol, axis=-1)


def matrix_power(a, n: int):
    """``a`` to the integer power ``n`` by repeated squaring (``inv`` first for ``n < 0``).

    >>> fx.numpy.linalg.matrix_power(fx.numpy.array([[1., 1.], [0., 1.]]), 3)
    Array([[1., 3.],
           [0., 1.]], dtype=float32)
    """
    fnp = _fnp()
    ensure_arraylike("fx.numpy.linalg.matrix_power", a)
    arr = fnp.asarray(a)
    if arr.ndim < 2:
        raise TypeError(f"{arr.ndim}-dimensional array given. Array must be at least "
                        "two-dimensional")
    if arr.shape[-2] != arr.shape[-1]:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        return fnp.broadcast_to(fnp.eye(arr.shape[-2], dtype=arr.dtype), arr.shape)
    if n < 0:
        arr, n = inv(arr), -n
    z = result = None
    while n > 0:
        z = arr if z is None else fnp.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else fnp.matmul(result, z)
    return result


def tensorinv(a, ind: int = 2):
    """The inverse of ``a`` as a linear map from its first ``ind`` dimensions to the rest.

    >>> fx.numpy.linalg.tensorinv(2 * fx.numpy.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    fnp = _fnp()
    ensure_arraylike("tensorinv", a)
    arr = fnp.asarray(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    contracting, batch = arr.shape[:ind], arr.shape[ind:]
    flat = (math.prod(contracting), math.prod(batch))
    if flat[0] != flat[1]:
        raise ValueError("tensorinv is only possible when the product of the first `ind` "
                         "dimensions equals that of the remaining dimensions. got "
                         f"arr.shape={arr.shape} with ind={ind}.")
    return inv(arr.reshape(flat)).reshape(*batch, *contracting)


def tensorsolve(a, b, axes=None):
    """Solve the tensor equation ``tensordot(a, x, x.ndim) = b`` for ``x``.

    >>> fx.numpy.linalg.tensorsolve(2 * fx.numpy.eye(4).reshape(2, 2, 4),
    ...                             fx.numpy.ones((2, 2))).shape
    (4,)
    """
    fnp = _fnp()
    ensure_arraylike("tensorsolve", a, b)
    a, b = fnp.asarray(a), fnp.asarray(b)
    if axes is not None:
        a = fnp.moveaxis(a, axes, len(axes) * (a.ndim - 1,))
    out_shape = a.shape[b.ndim:]
    if a.shape[:b.ndim] != b.shape:
        raise ValueError("After moving axes to end, leading shape of a must match shape of b. "
                         f"got a.shape={a.shape}, b.shape={b.shape}")
    if b.size != math.prod(out_shape):
        raise ValueError("Input arrays must have prod(a.shape[:b.ndim]) == "
                         f"prod(a.shape[b.ndim:]); got a.shape={a.shape}, b.ndim={b.ndim}.")
    a = a.reshape(b.size, math.prod(out_shape))
    return solve(a, b.ravel()).reshape(out_shape)
