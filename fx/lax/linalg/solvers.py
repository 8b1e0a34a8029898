"""Triangular and LU-type linear algebra: the ``cholesky``, ``triangular_solve``, ``lu``,
``lu_pivots_to_permutation`` and ``tridiagonal_solve`` primitives (``fx.lax.linalg.*``).

Each takes a batch of matrices with the batch dimensions leading (``[..., m, n]``), as
``jax.lax.linalg``, and works on float32/float64/complex64/complex128. Impls run on the host
(:mod:`fx.lax.linalg.host`): LAPACK through SciPy one matrix at a time, closed forms
vectorized over the batch for many small matrices, or NumPy loops over rows or columns that
are batched over the leading dimensions. Failures are values, not exceptions: a Cholesky of a
matrix that is not positive definite is all NaN, a singular triangular solve gives inf/NaN,
as in jax.

Derivative rules are jax's (``jax/_src/lax/linalg.py``), written with ``fx.lax`` ops so they
batch, compile and differentiate again. ``triangular_solve`` and ``tridiagonal_solve`` are
linear in their right-hand side (transposed by a solve with the transposed matrix) and not in
the matrix, like ``div``. Batching moves every batch dimension to the front.

``solve_square`` (``a^-1 b``, which fx.numpy.linalg's ``solve``/``inv`` and several jvp rules
call) is built from these primitives here, so it batches and differentiates through them.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import jvp, transpose
from fx.interpreters.jvp import Zero, instantiate
from fx.lax.base import broadcast_in_dim, shape_error
from fx.lax.convert import convert_element_type
from fx.lax.elementwise import add, div, eq, full_like, neg, select, sub
from fx.lax.linalg import host
from fx.lax.linalg._common import (
    T,
    batch_at_front,
    bmul,
    check_matrix,
    eye,
    mm,
    symmetrize,
    to_host,
    tril,
    triu,
)
from fx.lax.structural import broadcasted_iota, pad, slice_in_dim

__all__ = ["cholesky", "lu", "lu_pivots_to_permutation", "triangular_solve",
           "tridiagonal_solve"]

# --- cholesky ---------------------------------------------------------------------------------

# Reads the lower triangle; returns L with A = L L^H and zeros above the diagonal (every impl
# in host.py writes them), NaNs on and below it where A is not positive definite. The
# tril after it stays: without it jit(grad) of a Cholesky hits a KeyError in the pipeline's
# kernel generation (pipeline._kernel, a step input without a buffer).
cholesky_p = Primitive("cholesky")


@cholesky_p.def_abstract_eval
def _cholesky_abstract_eval(x):
    check_matrix("cholesky", x, square=True)
    return x.strip_weak_type()


@cholesky_p.def_impl
def _cholesky_impl(x):
    return host.cholesky(to_host(x))


def _cholesky_jvp(primals, tangents):
    # Forward-mode rule of Murray, arXiv:1602.07527, as jax: L_dot = L phi(L^-1 A_dot L^-H),
    # phi taking the lower triangle with the diagonal halved.
    (x,), (x_dot,) = primals, tangents
    L = tril(cholesky_p.bind(x))
    if isinstance(x_dot, Zero):
        return L, Zero.like(L)
    tmp = triangular_solve(L, x_dot, left_side=False, transpose_a=True, conjugate_a=True,
                           lower=True)
    inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
    shape = get_aval(inner).shape
    halve = add(full_like(inner, 1), eye(get_aval(inner).dtype, shape[-1], shape[:-2]))
    return L, mm(L, div(tril(inner), halve))


jvp.jvp_rules[cholesky_p] = _cholesky_jvp
batch_at_front(cholesky_p)


def cholesky(x, *, symmetrize_input: bool = True):
    """Cholesky factor ``L`` (lower triangular, ``A = L L^H``) of Hermitian positive-definite
    matrices ``x`` of shape ``[..., n, n]``, as ``jax.lax.linalg.cholesky``.

    ``symmetrize_input`` uses ``(x + x^H) / 2``; otherwise only the lower triangle is read.
    A matrix that is not positive definite gives a factor full of NaNs.

    >>> import numpy as np
    >>> fx.lax.linalg.cholesky(np.array([[4., 2.], [2., 5.]]))
    Array([[2., 0.],
           [1., 2.]], dtype=float32)
    """
    if symmetrize_input:
        x = symmetrize(x)
    return tril(cholesky_p.bind(x))


# --- triangular_solve -------------------------------------------------------------------------

# params: left_side, lower, transpose_a, conjugate_a, unit_diagonal (jax's)
triangular_solve_p = Primitive("triangular_solve")


@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
    name = "triangular_solve"
    check_matrix(name, a, square=True)
    check_matrix(name, b)
    if a.dtype != b.dtype:
        raise shape_error(name, "a and b must have the same dtype", a, b)
    if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
        raise shape_error(name, "a and b must have equal batch dimensions", a, b)
    m = a.shape[-1]
    if (b.shape[-2] if left_side else b.shape[-1]) != m:
        side = "rows" if left_side else "columns"
        raise shape_error(name, f"b must have {m} {side} (left_side={left_side})", a, b)
    return b.strip_weak_type()


@triangular_solve_p.def_impl
def _triangular_solve_impl(a, b, **params):
    return host.triangular_solve(to_host(a), to_host(b), **params)


def _triangular_solve_jvp(primals, tangents, **params):
    (a, b), (a_dot, b_dot) = primals, tangents
    ans = triangular_solve_p.bind(a, b, **params)
    out = None if isinstance(b_dot, Zero) else triangular_solve_p.bind(a, b_dot, **params)
    if not isinstance(a_dot, Zero):
        out_a = _triangular_solve_jvp_a(a_dot, ans, a, **params)
        out = out_a if out is None else add(out, out_a)
    return ans, (Zero.like(ans) if out is None else out)


def _triangular_solve_jvp_a(g_a, ans, a, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    # d(op(A)^-1 B) = -op(A)^-1 op(dA) X, in whichever order of solve and product is cheaper.
    from fx.lax.complex_parts import conj

    m, n = get_aval(ans).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = neg(tril(g_a, -k) if lower else triu(g_a, k))
    g_a = T(g_a) if transpose_a else g_a
    g_a = conj(g_a) if conjugate_a else g_a
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, **params)

    if left_side:
        return a_inverse(mm(g_a, ans)) if m > n else mm(a_inverse(g_a), ans)
    return a_inverse(mm(ans, g_a)) if m < n else mm(ans, a_inverse(g_a))


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    if transpose.is_undefined(a):
        raise NotImplementedError("triangular_solve is not linear in its matrix operand a: "
                                  "reverse mode transposes only the right-hand side b")
    ct_b = triangular_solve_p.bind(a, instantiate(ct), left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


jvp.jvp_rules[triangular_solve_p] = _triangular_solve_jvp
jvp.linear_prims.add(triangular_solve_p)
transpose.transpose_rules[triangular_solve_p] = _triangular_solve_transpose
batch_at_front(triangular_solve_p)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``, as
    ``jax.lax.linalg.triangular_solve``.

    ``a`` is ``[..., m, m]``; only its ``lower`` (or upper) triangle is read, its diagonal not
    at all with ``unit_diagonal``. ``op`` transposes (``transpose_a``) and conjugates
    (``conjugate_a``, complex only). ``b`` is ``[..., m, n]`` (left) or ``[..., n, m]``; a
    ``b`` with one dimension fewer than ``a`` is one vector.

    >>> import numpy as np
    >>> fx.lax.linalg.triangular_solve(np.array([[2., 0.], [1., 1.]]), np.array([2., 3.]),
    ...                                left_side=True, lower=True)
    Array([1., 2.], dtype=float32)
    """
    from fx.lax.structural import expand_dims, squeeze

    conjugate_a = bool(conjugate_a) and dtypes.is_complex(get_aval(a).dtype)
    singleton = get_aval(b).ndim == get_aval(a).ndim - 1
    if singleton:
        b = expand_dims(b, (-1 if left_side else -2,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        nd = get_aval(out).ndim
        out = squeeze(out, (nd - 1,) if left_side else (nd - 2,))
    return out


# --- lu ---------------------------------------------------------------------------------------

# -> lu, pivots (int32), permutation (int32). params: transposed (False: jax's lu; True: the
# factors of x^T, transposed back to x's shape, lu(x^T)[0]^T with lu(x^T)'s pivots and
# permutation, which LAPACK computes without transposed copies; solve_square uses them).
lu_p = Primitive("lu", multiple_results=True)


@lu_p.def_abstract_eval
def _lu_abstract_eval(x, *, transposed):
    check_matrix("lu", x)
    *batch, m, n = x.shape
    return [x.strip_weak_type(), ShapedArray((*batch, min(m, n)), np.int32),
            ShapedArray((*batch, n if transposed else m), np.int32)]


@lu_p.def_impl
def _lu_impl(x, *, transposed):
    return host.lu(to_host(x), transposed=transposed)


def permutation_matrix(permutation, dtype, transpose: bool = False):
    """The ``[..., m, m]`` matrix ``P`` with ``P @ a == a[..., permutation, :]`` (``P^T`` with
    ``transpose``)."""
    shape = get_aval(permutation).shape
    nd = len(shape) + 1
    full = (*shape, shape[-1])
    # P[i, j] = (permutation[i] == j), P^T[i, j] = (permutation[j] == i)
    along = nd - 2 if transpose else nd - 1
    spread = tuple(d for d in range(nd) if d != along)
    on = eq(broadcast_in_dim(permutation, full, spread), broadcasted_iota(np.int32, full, along))
    return convert_element_type(on, dtype)


GATHER_ROWS = 256  # permute_rows gathers matrices of more rows than this


def permute_rows(x, permutation, inverse: bool = False):
    """``P x``: each matrix's rows in the order ``permutation[..., i]`` (int32, the batch
    dimensions of ``x``), ``x[..., permutation, :]``; with ``inverse``, ``P^T x``, the rows
    put back, ``x[..., inv, :]`` where ``inv[permutation[i]] = i``.

    Matrices of more than ``GATHER_ROWS`` rows are gathered, as jax's ``x[..., permutation,
    :]`` (the inverse by a sort, as jax's ``lu_solve``): 0.1 ms for 1024 rows, where the
    permutation-matrix product builds an ``m x m`` matrix and multiplies by it (2.5 ms). Up
    to there the product stays: one fused kernel and a small matrix product, where the
    gather and the sort are two host calls (~0.1 ms of a 64x64 solve's 0.3 ms; gathering
    100,000 3x3 right-hand sides took 31-35 ms against the product's 14-20 ms)."""
    from fx.lax.indexing import CLIP, gather
    from fx.lax.sorting import sort_key_val
    from fx.lax.structural import concatenate

    shape = get_aval(permutation).shape
    nb = len(shape) - 1
    if shape[-1] <= GATHER_ROWS:
        return mm(permutation_matrix(permutation, get_aval(x).dtype, transpose=inverse), x)
    if inverse:
        iota = broadcasted_iota(np.int32, shape, nb)
        permutation = sort_key_val(permutation, iota, dimension=nb)[1]
    col = (*shape, 1)
    index = [broadcasted_iota(np.int32, col, d) for d in range(nb)]
    index.append(broadcast_in_dim(permutation, col, tuple(range(nb + 1))))
    return gather(x, concatenate(index, nb + 1), tuple(range(nb + 1)), mode=CLIP)


def lu_factors(lu_matrix):
    """The unit-lower ``l`` ([..., m, m]) and upper ``u`` ([..., n, n], identity below row
    min(m, n)) of a packed LU, as jax's jvp builds them."""
    from fx.lax.elementwise import ge

    aval = get_aval(lu_matrix)
    *batch, m, n = aval.shape
    k = min(m, n)
    nd = aval.ndim
    zero = full_like(lu_matrix, 0, shape=())
    l_pad = [(0, 0, 0)] * nd
    l_pad[-1] = (0, m - k, 0)
    l = add(pad(tril(slice_in_dim(lu_matrix, 0, k, axis=nd - 1), -1), zero, l_pad),
            eye(aval.dtype, m, batch))
    u_pad = [(0, 0, 0)] * nd
    u_pad[-2] = (0, n - k, 0)
    u_eye = eye(aval.dtype, n, batch)
    below_k = ge(broadcasted_iota(np.int32, get_aval(u_eye).shape, nd - 2), k)
    u = add(pad(triu(slice_in_dim(lu_matrix, 0, k, axis=nd - 2)), zero, u_pad),
            select(below_k, u_eye, full_like(u_eye, 0)))
    return l, u


def _lu_jvp(primals, tangents, *, transposed):
    # De Hoog, Anderssen and Lukas, as jax: with X = P A_dot, L' = L tril(L^-1 X U^-1, -1) and
    # U' = triu(L^-1 X U^-1) U. The transposed factors are those of A^T, tangent A_dot^T.
    (a,), (a_dot,) = primals, tangents
    outs = lu_p.bind(a, transposed=transposed)
    if isinstance(a_dot, Zero):
        return outs, [Zero.like(outs[0]), None, None]
    lu_m, _, permutation = outs
    if transposed:
        lu_m, a_dot = T(lu_m), T(a_dot)
    x = permute_rows(a_dot, permutation)
    l, u = lu_factors(lu_m)
    la = triangular_solve(l, x, left_side=True, transpose_a=False, lower=True,
                          unit_diagonal=True)
    lau = triangular_solve(u, la, left_side=False, transpose_a=False, lower=False)
    lu_dot = add(mm(l, tril(lau, -1)), mm(triu(lau), u))
    return outs, [T(lu_dot) if transposed else lu_dot, None, None]


jvp.jvp_rules[lu_p] = _lu_jvp
batch_at_front(lu_p)


def lu(x):
    """LU decomposition with partial pivoting, ``P A = L U``, as ``jax.lax.linalg.lu``.

    Returns ``(lu, pivots, permutation)``: ``lu`` ([..., m, n]) holds ``U`` in its upper
    triangle and the unit-lower ``L`` below the diagonal; ``pivots`` (int32, [..., min(m, n)])
    are the row swaps (LAPACK's, 0-based); ``permutation`` (int32, [..., m]) is ``P`` as
    indices, ``A[permutation] == L @ U``.

    >>> import numpy as np
    >>> lu, piv, perm = fx.lax.linalg.lu(np.array([[1., 2.], [3., 4.]]))
    >>> perm
    Array([1, 0], dtype=int32)
    """
    return tuple(lu_p.bind(x, transposed=False))


def solve_square(a, b):
    """``a^-1 b`` for square ``a`` ([..., m, m]) and ``b`` ([..., m, k], the same batch
    dimensions), through an LU factorization and two triangular solves (differentiable,
    batchable).

    Above ``host.SMALL_N`` (``host.solve_by_transposed_lu``) the factors are
    those of ``a^T``, which getrf computes without transposed copies: with ``P a^T = L U``,
    ``a = U^T L^T P`` and ``x = P^T L^-T U^-T b`` (LAPACK getrs' transposed solve; ``tril``
    of the transposed factors is ``U^T``, the rest ``L^T``). The results agree with jax's
    (factors of ``a``) to rounding; both are partial-pivoting solves.
    """
    if host.solve_by_transposed_lu(get_aval(a).shape[-1]):
        lu_t, _, perm = lu_p.bind(a, transposed=True)
        z = triangular_solve(lu_t, b, left_side=True, lower=True)
        w = triangular_solve(lu_t, z, left_side=True, lower=False, unit_diagonal=True)
        return permute_rows(w, perm, inverse=True)
    lu_m, _, perm = lu_p.bind(a, transposed=False)
    y = triangular_solve(lu_m, permute_rows(b, perm), left_side=True, lower=True,
                         unit_diagonal=True)
    return triangular_solve(lu_m, y, left_side=True, lower=False)


# --- lu_pivots_to_permutation -----------------------------------------------------------------

lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")  # params: permutation_size


@lu_pivots_to_permutation_p.def_abstract_eval
def _pivots_abstract_eval(pivots, *, permutation_size):
    if pivots.dtype != np.int32 or pivots.ndim < 1:
        raise shape_error("lu_pivots_to_permutation", "pivots must be an int32 array [..., k]",
                          pivots)
    if permutation_size < pivots.shape[-1]:
        raise shape_error("lu_pivots_to_permutation", f"permutation_size {permutation_size} "
                          "must be at least the number of pivots", pivots)
    return ShapedArray((*pivots.shape[:-1], permutation_size), np.int32)


@lu_pivots_to_permutation_p.def_impl
def _pivots_impl(pivots, *, permutation_size):
    return host.pivots_to_permutation(to_host(pivots), permutation_size)


batch_at_front(lu_pivots_to_permutation_p)


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (int32, ``[..., permutation_size]``) that the row swaps ``pivots``
    apply, as ``jax.lax.linalg.lu_pivots_to_permutation``.

    >>> import numpy as np
    >>> fx.lax.linalg.lu_pivots_to_permutation(np.array([2, 2], np.int32), 3)
    Array([2, 0, 1], dtype=int32)
    """
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


# --- tridiagonal_solve ------------------------------------------------------------------------

tridiagonal_solve_p = Primitive("tridiagonal_solve")  # params: perturb_singular


@tridiagonal_solve_p.def_abstract_eval
def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
    name = "tridiagonal_solve"
    check_matrix(name, b)
    for v in (dl, d, du):
        if v.dtype != b.dtype or v.shape != b.shape[:-1]:
            raise shape_error(name, "dl, d and du must be [..., m] of b's dtype for b "
                              "[..., m, n]", dl, d, du, b)
    return b.strip_weak_type()


@tridiagonal_solve_p.def_impl
def _tridiagonal_solve_impl(dl, d, du, b, *, perturb_singular):
    # The dense system through LAPACK's gesv: partial pivoting as gtsv, in O(m^3).
    dl, d, du, b = map(to_host, (dl, d, du, b))
    m = d.shape[-1]
    a = np.zeros((*d.shape, m), d.dtype)
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        fa, fb = a.reshape((-1, m, m)), b.reshape((-1, *b.shape[-2:]))
        out = np.full(fb.shape, np.nan, b.dtype)
        for k in range(fa.shape[0]):
            try:
                out[k] = np.linalg.solve(fa[k], fb[k])
            except np.linalg.LinAlgError:
                pass
        return out.reshape(b.shape)


def _tridiagonal_product(dl, d, du, b):
    nd = get_aval(b).ndim
    m = get_aval(b).shape[-2]
    y = bmul(broadcast_in_dim(d, (*get_aval(d).shape, 1), tuple(range(nd - 1))), b)
    if m == 1:
        return y
    zero = full_like(b, 0, shape=())

    def col(v, lo, hi):
        v = slice_in_dim(v, lo, hi, axis=nd - 2)
        return broadcast_in_dim(v, (*get_aval(v).shape, 1), tuple(range(nd - 1)))

    def shifted(x, before, after):
        cfg = [(0, 0, 0)] * nd
        cfg[nd - 2] = (before, after, 0)
        return pad(x, zero, cfg)

    upper = bmul(col(du, 0, m - 1), slice_in_dim(b, 1, m, axis=nd - 2))
    lower = bmul(col(dl, 1, m), slice_in_dim(b, 0, m - 1, axis=nd - 2))
    return add(add(y, shifted(upper, 0, 1)), shifted(lower, 1, 0))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    *diags, b = primals
    *diags_dot, b_dot = tangents
    ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    if all(isinstance(t, Zero) for t in diags_dot):
        if isinstance(b_dot, Zero):
            return ans, Zero.like(ans)
        rhs = b_dot
    else:
        matvec = _tridiagonal_product(*map(instantiate, diags_dot), ans)
        rhs = neg(matvec) if isinstance(b_dot, Zero) else sub(b_dot, matvec)
    return ans, tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    from fx.lax.structural import concatenate

    if any(transpose.is_undefined(v) for v in (dl, d, du)):
        raise NotImplementedError("tridiagonal_solve is linear only in its right-hand side b")
    nd = get_aval(d).ndim
    m = get_aval(d).shape[-1]

    def part(v, lo, hi):
        return slice_in_dim(v, lo, hi, axis=nd - 1)

    zeros = full_like(part(d, 0, 1), 0)
    dl_t = concatenate([zeros, part(du, 0, m - 1)], nd - 1)
    du_t = concatenate([part(dl, 1, m), zeros], nd - 1)
    return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, instantiate(ct),
                                                       perturb_singular=perturb_singular)]


jvp.jvp_rules[tridiagonal_solve_p] = _tridiagonal_solve_jvp
jvp.linear_prims.add(tridiagonal_solve_p)
transpose.transpose_rules[tridiagonal_solve_p] = _tridiagonal_solve_transpose
batch_at_front(tridiagonal_solve_p)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve the tridiagonal system ``A x = b``, as ``jax.lax.linalg.tridiagonal_solve``.

    ``dl``, ``d``, ``du`` ([..., m]) are the sub-, main and super-diagonals (``dl[0]`` and
    ``du[m-1]`` are ignored); ``b`` is ``[..., m, n]``. A singular system gives NaNs
    (``perturb_singular`` is accepted; fx does not perturb pivots).

    >>> import numpy as np
    >>> one = np.ones(3, np.float32)
    >>> fx.lax.linalg.tridiagonal_solve(0 * one, 2 * one, 0 * one, np.ones((3, 1), np.float32))
    Array([[0.5],
           [0.5],
           [0.5]], dtype=float32)
    """
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))
