"""Orthogonal and spectral decompositions: the ``qr``, ``eigh``, ``svd`` and ``eig``
primitives (``fx.lax.linalg.*``), with jax's signatures and output orders.

Operands are batches of matrices with the batch dimensions leading. Impls call
``numpy.linalg`` (LAPACK's geqrf/orgqr, syevd/heevd, gesdd, geev) on the host; a batch element
whose iteration fails to converge comes back as NaNs, as jax's. ``eig`` always returns complex
values; its left eigenvectors are the columns of ``inv(vr)^H`` normalized as LAPACK normalizes
them (unit 2-norm, largest component real).

The jvp rules are jax's (``jax/_src/lax/linalg.py``), written with ``fx.lax`` ops so they
batch, jit and nest:
- ``qr``: jax 0.10.2's, for tall, wide and square matrices, reduced and full factors, with
  or without column pivoting (``pivoting=True``: LAPACK's geqp3 through SciPy).
- ``eigh``: nondegenerate perturbation theory; eigenvector tangents are undefined (inf/NaN)
  where eigenvalues repeat, as in jax.
- ``svd``: reduced factors (or square full ones); singular vector tangents are undefined
  where singular values repeat, as in jax.
- ``eig``: eigenvalues; eigenvectors only with ``enable_eigvec_derivs=True`` (they follow
  LAPACK's normalization), as jax 0.10.
"""

from __future__ import annotations

import enum

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import jvp
from fx.lax.base import broadcast_in_dim, full, reduce_sum
from fx.lax.complex_parts import complex, conj, imag, real  # noqa: A004
from fx.lax.convert import convert_element_type
from fx.lax.elementwise import abs, add, div, eq, full_like, integer_pow, mul, neg, select, sub  # noqa: A004
from fx.lax.linalg._common import (
    H,
    T,
    batch_at_front,
    bcast,
    bmul,
    check_matrix,
    eye,
    mm,
    symmetrize,
    to_host,
    tril,
)
from fx.lax.linalg.solvers import permutation_matrix, solve_square, triangular_solve
from fx.lax.reductions import argmax
from fx.lax.structural import broadcasted_iota, concatenate, expand_dims, slice_in_dim

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "eig", "eigh", "qr",
           "svd"]


class EigImplementation(enum.Enum):
    """Implementation of the nonsymmetric eigendecomposition (fx always uses LAPACK)."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Implementation of the Hermitian eigendecomposition (fx always uses LAPACK's QR)."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """SVD algorithm (fx always uses LAPACK's divide and conquer)."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _nan_on_failure(fn, x: np.ndarray, nan_shapes):
    """``fn(x)`` for a batch, or per matrix with NaN outputs where LAPACK does not converge."""
    try:
        return fn(x)
    except np.linalg.LinAlgError:
        flat = x.reshape((-1, *x.shape[-2:]))
        outs = [np.full((flat.shape[0], *s), np.nan, dt) for s, dt in nan_shapes]
        for i, a in enumerate(flat):
            try:
                for out, r in zip(outs, fn(a)):
                    out[i] = r
            except np.linalg.LinAlgError:
                pass
        return [o.reshape((*x.shape[:-2], *o.shape[1:])) for o in outs]


# From this size on one matrix at a time through SciPy's LAPACK (syevd/heevd, gesdd: the
# routines jaxlib calls) beats numpy.linalg's batched loop over its own LAPACK build (1.7-1.8x
# for float32 at n = 1024 here); smaller matrices stay batched in NumPy, which has no
# per-matrix Python cost.
_SCIPY_FROM_N = 64


def _lapack_per_matrix(x: np.ndarray) -> bool:
    if x.shape[-1] < _SCIPY_FROM_N or x.dtype not in (np.float32, np.float64, np.complex64,
                                                      np.complex128):
        return False
    try:
        import scipy.linalg  # noqa: F401
    except ImportError:  # SciPy is a dependency; numpy.linalg still does it all without it
        return False
    return True


def _each(fn, x: np.ndarray) -> list[np.ndarray]:
    """``fn`` (a list of arrays per matrix) over the batch dimensions of ``x``, stacked."""
    flat = x.reshape((-1, *x.shape[-2:]))
    per = [fn(a) for a in flat]
    return [np.stack([r[j] for r in per]).reshape((*x.shape[:-2], *per[0][j].shape))
            for j in range(len(per[0]))]


def _diagonal(x):
    """The diagonal of a batch of square matrices: ``x[..., i, i]``."""
    aval = get_aval(x)
    n = aval.shape[-1]
    picked = select(eq(broadcasted_iota(np.int32, aval.shape, aval.ndim - 2),
                       broadcasted_iota(np.int32, aval.shape, aval.ndim - 1)), x, full_like(x, 0))
    return reduce_sum(picked, (aval.ndim - 1,)) if n else reduce_sum(x, (aval.ndim - 1,))


def _diag_matrix(v):
    """The batch of diagonal matrices with diagonal ``v`` ([..., k] -> [..., k, k])."""
    shape = get_aval(v).shape
    k = shape[-1]
    full = (*shape, k)
    wide = broadcast_in_dim(v, full, tuple(range(len(shape) - 1)) + (len(shape),))
    return select(eq(broadcasted_iota(np.int32, full, len(shape) - 1),
                     broadcasted_iota(np.int32, full, len(shape))), wide, full_like(wide, 0))


def _as(x, dtype):
    return convert_element_type(x, dtype) if get_aval(x).dtype != dtype else x


# --- qr ---------------------------------------------------------------------------------------

qr_p = Primitive("qr", multiple_results=True)  # params: pivoting, full_matrices; -> q, r, [p]


@qr_p.def_abstract_eval
def _qr_abstract_eval(x, *, pivoting, full_matrices):
    check_matrix("qr", x)
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    out = [ShapedArray((*batch, m, k), x.dtype), ShapedArray((*batch, k, n), x.dtype)]
    return out + [ShapedArray((*batch, n), np.dtype(np.int32))] if pivoting else out


@qr_p.def_impl
def _qr_impl(x, *, pivoting, full_matrices):
    x = to_host(x)
    if not pivoting:
        q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
        return [q, r]
    # LAPACK's geqp3 (column pivoting), through SciPy, one matrix at a time.
    import scipy.linalg

    *batch, m, n = x.shape
    flat = x.reshape((-1, m, n))
    mode = "full" if full_matrices else "economic"
    outs = [scipy.linalg.qr(a, mode=mode, pivoting=True, check_finite=False) for a in flat]
    avals = _qr_abstract_eval(ShapedArray(x.shape, x.dtype), pivoting=True,
                              full_matrices=full_matrices)
    return [np.stack([o[i] for o in outs]).reshape(a.shape).astype(a.dtype)
            if outs else np.zeros(a.shape, a.dtype) for i, a in enumerate(avals)]


def _thin_qr_jvp(q, r, dx):
    """The tangents of ``q`` and ``r`` for ``[..., m, n]`` factors with ``m >= n``; see
    j-towns.github.io/papers/qr-derivative.pdf (jax's rule)."""
    dx_rinv = triangular_solve(r, dx)  # right side: dx r^-1
    qt_dx_rinv = mm(H(q), dx_rinv)
    low = tril(qt_dx_rinv, -1)
    do = sub(low, H(low))  # skew-Hermitian
    if dtypes.is_complex(get_aval(q).dtype):
        n = get_aval(r).shape[-1]
        i_n = eye(get_aval(q).dtype, n, get_aval(q).shape[:-2])
        imag_part = sub(qt_dx_rinv, complex(real(qt_dx_rinv), full_like(real(qt_dx_rinv), 0)))
        do = add(do, mul(i_n, imag_part))
    dq = add(mm(q, sub(do, qt_dx_rinv)), dx_rinv)
    dr = mm(sub(qt_dx_rinv, do), r)
    return dq, dr


def _cols(x, lo, hi):
    nd = get_aval(x).ndim
    return slice_in_dim(x, lo, hi, axis=nd - 1)


def _rows(x, lo, hi):
    nd = get_aval(x).ndim
    return slice_in_dim(x, lo, hi, axis=nd - 2)


def _qr_jvp(primals, tangents, *, pivoting, full_matrices):
    (x,), (dx,) = primals, tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices)
    q, r = outs[0], outs[1]
    *batch, m, n = get_aval(x).shape
    nd = len(batch) + 2
    if pivoting:
        # The tangent of x[..., p]: the columns of dx in the pivot order.
        dx = T(mm(permutation_matrix(outs[2], get_aval(x).dtype), T(dx)))
    if m < n:
        # x = [x1 x2] with x1 square: x1 = q r1 is a square QR, and r2 = q^H x2.
        dq, dr1 = _thin_qr_jvp(q, _cols(r, 0, m), _cols(dx, 0, m))
        xp = x if not pivoting else T(mm(permutation_matrix(outs[2], get_aval(x).dtype), T(x)))
        dr2 = add(mm(H(dq), _cols(xp, m, n)), mm(H(q), _cols(dx, m, n)))
        dr = concatenate([dr1, dr2], nd - 1)
    elif not full_matrices or m == n:
        dq, dr = _thin_qr_jvp(q, r, dx)
    else:
        # Full factors of a tall x: the extra columns of q follow arxiv.org/pdf/2409.13374
        # (eqs. 32-33), as jax.
        q_mn, r_nn = _cols(q, 0, n), _rows(r, 0, n)
        dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
        q_nn, q_pn, q_mp = _rows(q_mn, 0, n), _rows(q_mn, n, m), _cols(q, n, m)
        dq_nn, dq_pn = _rows(dq_mn, 0, n), _rows(dq_mn, n, m)
        i_n = eye(get_aval(x).dtype, n, batch)
        z_pn_h = solve_square(H(sub(q_nn, i_n)), H(q_pn))
        z_pn = H(z_pn_h)
        dq_mp = sub(mm(dq_mn, z_pn_h),
                    mm(add(q_mn, mm(q_mp, z_pn)), H(sub(dq_pn, mm(z_pn, dq_nn)))))
        dq = concatenate([dq_mn, dq_mp], nd - 1)
        dr = concatenate([dr_nn, full((*batch, m - n, n), 0, get_aval(x).dtype)], nd - 2)
    return outs, [dq, dr] + ([None] if pivoting else [])


jvp.jvp_rules[qr_p] = _qr_jvp
batch_at_front(qr_p)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition ``x = q @ r``, as ``jax.lax.linalg.qr``: ``(q, r)``, or ``(q, r, p)``
    with ``pivoting`` (LAPACK's geqp3: ``x[..., p] = q @ r`` with ``|diag(r)|``
    non-increasing; ``p`` int32).

    ``q`` is ``[..., m, m]`` unitary and ``r`` ``[..., m, n]`` upper triangular with
    ``full_matrices``; else ``[..., m, k]`` and ``[..., k, n]`` with ``k = min(m, n)``.

    >>> import numpy as np
    >>> q, r = fx.lax.linalg.qr(np.array([[3., 1.], [4., 2.]]))
    >>> np.allclose(np.asarray(q @ r), [[3., 1.], [4., 2.]], atol=1e-6)
    True
    """
    out = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices))
    return tuple(out)


# --- eigh -------------------------------------------------------------------------------------

# params: lower, sort_eigenvalues, subset_by_index (None or (lo, hi)); -> v, w (real)
eigh_p = Primitive("eigh", multiple_results=True)


@eigh_p.def_abstract_eval
def _eigh_abstract_eval(x, *, lower, sort_eigenvalues, subset_by_index):
    check_matrix("eigh", x, square=True)
    *batch, n, _ = x.shape
    d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    return [ShapedArray((*batch, n, d), x.dtype),
            ShapedArray((*batch, d), dtypes.real_dtype(x.dtype))]


@eigh_p.def_impl
def _eigh_impl(x, *, lower, sort_eigenvalues, subset_by_index):
    x = to_host(x)
    n = x.shape[-1]
    real_dt = np.dtype(dtypes.real_dtype(x.dtype))

    def run(a):
        if _lapack_per_matrix(a):
            import scipy.linalg

            return _each(lambda m: scipy.linalg.eigh(m, lower=lower, driver="evd",
                                                     check_finite=False)[::-1], a)
        w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
        return [v, w]

    v, w = _nan_on_failure(run, x, [((n, n), x.dtype), ((n,), real_dt)])
    if subset_by_index is not None:
        lo, hi = subset_by_index
        v, w = v[..., :, lo:hi], w[..., lo:hi]
    return [v, w]


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index):
    (a,), (a_dot,) = primals, tangents
    n = get_aval(a).shape[-1]
    if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
        raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
    v, w_real = eigh_p.bind(symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues,
                            subset_by_index=subset_by_index)
    dtype = get_aval(a).dtype
    w = _as(w_real, dtype)
    batch = get_aval(a).shape[:-2]
    eye_n = eye(dtype, n, batch)
    # The reciprocal eigenvalue gaps, built so the diagonal stays finite (jax's Fmat).
    gaps = add(eye_n, sub(bcast(expand_dims(w, (-2,)), (*batch, n, n)),
                          bcast(expand_dims(w, (-1,)), (*batch, n, n))))
    fmat = sub(integer_pow(gaps, -1), eye_n)
    vdag_adot_v = mm(mm(H(v), a_dot), v)
    dv = mm(v, mul(fmat, vdag_adot_v))
    dw = _diagonal(real(vdag_adot_v) if dtypes.is_complex(dtype) else vdag_adot_v)
    return [v, w_real], [dv, dw]


jvp.jvp_rules[eigh_p] = _eigh_jvp
batch_at_front(eigh_p)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
    """Eigendecomposition of Hermitian (real symmetric) matrices, as
    ``jax.lax.linalg.eigh``: returns ``(v, w)`` with ``x @ v[..., :, i] == w[..., i] *
    v[..., :, i]``, ``w`` real and ascending.

    ``symmetrize_input`` uses ``(x + x^H) / 2``; otherwise only the ``lower`` (or upper)
    triangle is read. ``subset_by_index=(lo, hi)`` keeps eigenpairs ``lo..hi-1``.

    >>> import numpy as np
    >>> v, w = fx.lax.linalg.eigh(np.array([[2., 1.], [1., 2.]]))
    >>> w
    Array([1., 3.], dtype=float32)
    """
    if symmetrize_input:
        x = symmetrize(x)
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                       subset_by_index=subset)
    return v, w


# --- svd --------------------------------------------------------------------------------------

# params: full_matrices, compute_uv, subset_by_index; -> s, u, vh (or s alone)
svd_p = Primitive("svd", multiple_results=True)


@svd_p.def_abstract_eval
def _svd_abstract_eval(x, *, full_matrices, compute_uv, subset_by_index):
    check_matrix("svd", x)
    *batch, m, n = x.shape
    k = min(m, n)
    d = k if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    s = ShapedArray((*batch, d), dtypes.real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    um, vn = (m, n) if full_matrices and subset_by_index is None else (d, d)
    return [s, ShapedArray((*batch, m, um), x.dtype), ShapedArray((*batch, vn, n), x.dtype)]


@svd_p.def_impl
def _svd_impl(x, *, full_matrices, compute_uv, subset_by_index):
    x = to_host(x)
    *_, m, n = x.shape
    k = min(m, n)
    real_dt = np.dtype(dtypes.real_dtype(x.dtype))
    if not compute_uv:
        (s,) = _nan_on_failure(lambda a: [np.linalg.svd(a, compute_uv=False)], x,
                               [((k,), real_dt)])
        return [s if subset_by_index is None else s[..., slice(*subset_by_index)]]
    full = full_matrices and subset_by_index is None
    um, vn = (m, n) if full else (k, k)

    def run(a):
        if _lapack_per_matrix(a):
            import scipy.linalg

            return _each(lambda m: (lambda u, s, vh: [s, u, vh])(*scipy.linalg.svd(
                m, full_matrices=full, lapack_driver="gesdd", check_finite=False)), a)
        u, s, vh = np.linalg.svd(a, full_matrices=full)
        return [s, u, vh]

    s, u, vh = _nan_on_failure(run, x, [((k,), real_dt), ((m, um), x.dtype),
                                        ((vn, n), x.dtype)])
    if subset_by_index is not None:
        sl = slice(*subset_by_index)
        s, u, vh = s[..., sl], u[..., :, sl], vh[..., sl, :]
    return [s, u, vh]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index):
    (a,), (da,) = primals, tangents
    s, U, Vt = svd_p.bind(a, full_matrices=False, compute_uv=True,
                          subset_by_index=subset_by_index)
    *batch, m, n = get_aval(a).shape
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices")
    dtype = get_aval(a).dtype
    cplx = dtypes.is_complex(dtype)
    Ut, V = H(U), H(Vt)
    k = get_aval(s).shape[-1]
    s_row = expand_dims(s, (-2,))  # [..., 1, k]
    dS = mm(mm(Ut, da), V)
    ds = _diagonal(real(dS) if cplx else dS)
    if not compute_uv:
        return [s], [ds]
    sq = (*batch, k, k)
    s_r, s_c = bcast(s_row, sq), T(bcast(s_row, sq))
    s_diffs = mul(add(s_r, s_c), sub(s_r, s_c))
    eye_s = eye(get_aval(s).dtype, k, batch)
    F = _as(sub(div(full_like(s_diffs, 1), add(s_diffs, eye_s)), eye_s), dtype)
    s_row_c = _as(s_row, dtype)
    dSS = bmul(s_row_c, dS)
    SdS = bmul(T(s_row_c), dS)
    s_zeros = _as(eq(s, full_like(s, 0)), get_aval(s).dtype)
    s_inv = sub(div(full_like(s, 1), add(s, s_zeros)), s_zeros)
    half = full_like(dS, 0.5)
    dUdV_diag = mul(mul(half, sub(dS, H(dS))), _as(_diag_matrix(s_inv), dtype))
    dU = mm(U, add(mul(F, add(dSS, H(dSS))), dUdV_diag))
    dV = mm(V, mul(F, add(SdS, H(SdS))))
    if m > n:
        dAV = mm(da, V)
        dU = add(dU, div(sub(dAV, mm(U, mm(Ut, dAV))), bcast(s_row_c, get_aval(dAV).shape)))
    if n > m:
        dAHU = mm(H(da), U)
        dV = add(dV, div(sub(dAHU, mm(V, mm(Vt, dAHU))), bcast(s_row_c, get_aval(dAHU).shape)))
    return [s, U, Vt], [ds, dU, H(dV)]


jvp.jvp_rules[svd_p] = _svd_jvp
batch_at_front(svd_p)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
    """Singular value decomposition ``x = u @ diag(s) @ vh``, as ``jax.lax.linalg.svd``:
    returns ``(u, s, vh)``, or ``s`` alone without ``compute_uv``; ``s`` is real, descending.

    >>> import numpy as np
    >>> fx.lax.linalg.svd(np.array([[3., 0.], [0., -4.]]), compute_uv=False)
    Array([4., 3.], dtype=float32)
    """
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                     subset_by_index=subset)
    if compute_uv:
        s, u, vh = out
        return u, s, vh
    return out[0]


# --- eig --------------------------------------------------------------------------------------

# params: compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs;
# -> w, [vl], [vr] (complex)
eig_p = Primitive("eig", multiple_results=True)


@eig_p.def_abstract_eval
def _eig_abstract_eval(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                       enable_eigvec_derivs):
    check_matrix("eig", x, square=True)
    *batch, n, _ = x.shape
    c = dtypes.complex_dtype(x.dtype)
    vecs = [ShapedArray((*batch, n, n), c)] * (int(compute_left_eigenvectors)
                                               + int(compute_right_eigenvectors))
    return [ShapedArray((*batch, n), c), *vecs]


def _lapack_normalized(v: np.ndarray) -> np.ndarray:
    """Columns scaled to unit 2-norm with their largest-magnitude component real positive."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    k = np.argmax(np.abs(v), axis=-2)[..., None, :]
    big = np.take_along_axis(v, k, axis=-2)
    return v * (np.conj(big) / np.abs(big))


@eig_p.def_impl
def _eig_impl(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
              enable_eigvec_derivs):
    x = to_host(x)
    n = x.shape[-1]
    c = np.dtype(dtypes.complex_dtype(x.dtype))

    def run(a):
        w, vr = np.linalg.eig(a)
        return [w.astype(c), vr.astype(c)]

    w, vr = _nan_on_failure(run, x, [((n,), c), ((n, n), c)])
    out = [w]
    if compute_left_eigenvectors:
        with np.errstate(all="ignore"):
            try:
                vl = np.conj(np.swapaxes(np.linalg.inv(vr), -1, -2))
            except np.linalg.LinAlgError:
                vl = np.full(vr.shape, np.nan, c)
            out.append(_lapack_normalized(vl).astype(c))
    if compute_right_eigenvectors:
        out.append(vr)
    return out


def _eig_vec_jvp(w, v, da):
    # Nondegenerate perturbation theory with LAPACK's normalization of each v_j (unit 2-norm,
    # largest component real) fixing the free scalar c_j, as jax.
    shape = get_aval(v).shape
    *batch, n, _ = shape
    nd = len(shape)
    dtype = get_aval(v).dtype
    eye_n = eye(dtype, n, batch)
    gaps = add(eye_n, sub(bcast(expand_dims(w, (-2,)), shape), bcast(expand_dims(w, (-1,)),
                                                                      shape)))
    fmat = sub(div(full_like(gaps, 1), gaps), eye_n)
    P = mm(solve_square(v, da), v)
    dw = _diagonal(P)
    U = mm(v, mul(fmat, P))
    k = argmax(abs(v), nd - 2, np.int32)
    mask = _as(eq(broadcasted_iota(np.int32, shape, nd - 2),
                  broadcast_in_dim(k, shape, tuple(i for i in range(nd) if i != nd - 2))), dtype)
    c = complex(neg(real(reduce_sum(mul(conj(v), U), (nd - 2,)))),
                neg(div(imag(reduce_sum(mul(mask, U), (nd - 2,))),
                        real(reduce_sum(mul(mask, v), (nd - 2,))))))
    return dw, add(U, mul(v, bcast(expand_dims(c, (nd - 2,)), shape)))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs):
    (a,), (da,) = primals, tangents
    if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on "
            "the input that fx cannot check (see the enable_eigvec_derivs argument to "
            "fx.lax.linalg.eig). Pass enable_eigvec_derivs=True to opt in, as in jax.")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs)
    w, vr = outs[0], outs[-1]
    da = _as(da, get_aval(vr).dtype)
    if not (compute_left_eigenvectors or compute_right_eigenvectors):
        nd = get_aval(vr).ndim
        return [w], [reduce_sum(mul(solve_square(vr, da), T(vr)), (nd - 1,))]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    primal_out, tangent_out = [w], [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(conj(w), outs[1], H(da))
        primal_out.append(outs[1])
        tangent_out.append(dvl)
    if compute_right_eigenvectors:
        primal_out.append(vr)
        tangent_out.append(dvr)
    return primal_out, tangent_out


jvp.jvp_rules[eig_p] = _eig_jvp
batch_at_front(eig_p)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigendecomposition of general square matrices, as ``jax.lax.linalg.eig``: returns
    ``[w, vl, vr]`` (complex; ``vl``/``vr`` only as requested) with ``x @ vr[..., :, j] ==
    w[..., j] * vr[..., :, j]`` and ``vl[..., :, j]^H x == w[..., j] vl[..., :, j]^H``.

    Forward-mode derivatives of the eigenvalues; of eigenvectors with
    ``enable_eigvec_derivs=True``.

    >>> import numpy as np
    >>> fx.lax.linalg.eig(np.array([[0., -1.], [1., 0.]]), compute_left_eigenvectors=False,
    ...                   compute_right_eigenvectors=False)[0]
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors),
                      enable_eigvec_derivs=bool(enable_eigvec_derivs))
