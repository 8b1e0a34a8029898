"""``dot_general``: contraction of two arrays over paired dimensions, and ``dot``.

``dot_general(lhs, rhs, ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)))`` pairs
``lhs_batch[i]`` with ``rhs_batch[i]`` (kept, elementwise) and ``lhs_contract[i]`` with
``rhs_contract[i]`` (summed over). The result's dimensions are the batch dimensions (in the
order given), then lhs's remaining ("free") dimensions in order, then rhs's — jax.lax's
layout. The primitive's operands share one dtype (``dot_general`` converts mixed operands to
the higher-precision one, as jax's rule picks it); ``preferred_element_type`` sets a
different result dtype; half precision accumulates in float32.

The impl lays both operands out as ``(batch, free, contract)`` / ``(batch, contract, free)``
and calls one ``np.matmul`` (BLAS for floats). The primitive is bilinear: its jvp applies it
to each tangent, and it transposes into another ``dot_general`` plus a ``transpose``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.transpose import is_undefined
from fx.lax.base import shape_error
from fx.lax.base import transpose as transpose_axes
from fx.lax.elementwise import convert_element_type

__all__ = ["dot", "dot_general"]

DimensionNumbers = tuple[tuple[tuple[int, ...], tuple[int, ...]],
                         tuple[tuple[int, ...], tuple[int, ...]]]

# params: dimension_numbers (as above, tuples of ints), precision (kept for the jaxpr; the impl
# always computes at full precision), preferred_element_type (None or a dtype).
dot_general_p = Primitive("dot_general")


def _free_dims(ndim: int, contract: Sequence[int], batch: Sequence[int]) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i not in contract and i not in batch)


def _check_dims(lhs: ShapedArray, rhs: ShapedArray, dimension_numbers) -> None:
    (lc, rc), (lb, rb) = dimension_numbers
    name = "dot_general"
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise shape_error(
            name, f"needs as many lhs as rhs contracting dimensions ({lc} vs {rc}) and batch "
            f"dimensions ({lb} vs {rb})", lhs, rhs)
    for side, aval, dims in (("lhs", lhs, lc + lb), ("rhs", rhs, rc + rb)):
        if any(not 0 <= d < aval.ndim for d in dims):
            raise shape_error(
                name, f"{side} dimension numbers {dims} are out of range for rank {aval.ndim}",
                lhs, rhs)
        if len(set(dims)) != len(dims):
            raise shape_error(
                name, f"{side} dimensions {dims} repeat: a dimension may be contracted or "
                "batched only once", lhs, rhs)
    for kind, ls, rs in (("contracting", lc, rc), ("batch", lb, rb)):
        lsz = tuple(lhs.shape[d] for d in ls)
        rsz = tuple(rhs.shape[d] for d in rs)
        if lsz != rsz:
            raise shape_error(
                name, f"{kind} dimensions must have equal sizes, got {lsz} (lhs dims {ls}) and "
                f"{rsz} (rhs dims {rs})", lhs, rhs)


def _check_preferred(dtype: np.dtype, preferred) -> None:
    if preferred is None or preferred == dtype:
        return
    narrower = np.dtype(preferred).itemsize < dtype.itemsize
    if dtypes.is_float(dtype):
        if not dtypes.is_float(preferred):
            raise TypeError(
                f"dot_general: preferred_element_type {preferred} is not floating point, for "
                f"{dtype} operands; fx does not compute float products in an integer type")
    elif narrower and dtype != dtypes.bool_:
        raise TypeError(
            f"dot_general: preferred_element_type must not be narrower than the operands, got "
            f"{preferred} for {dtype} operands")


@dot_general_p.def_abstract_eval
def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision,
                               preferred_element_type):
    if lhs.dtype != rhs.dtype:
        raise shape_error(
            "dot_general", "operands must have the same dtype; convert one with "
            "fx.lax.convert_element_type or use fx.numpy (which promotes)", lhs, rhs)
    _check_dims(lhs, rhs, dimension_numbers)
    _check_preferred(lhs.dtype, preferred_element_type)
    (lc, rc), (lb, rb) = dimension_numbers
    shape = (tuple(lhs.shape[d] for d in lb)
             + tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
             + tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb)))
    if preferred_element_type is None:
        return ShapedArray(shape, lhs.dtype, lhs.weak_type and rhs.weak_type)
    return ShapedArray(shape, preferred_element_type)


def _computation_dtype(in_dtype: np.dtype, out_dtype: np.dtype) -> np.dtype:
    """The dtype the product is computed in: the wider of the two (integers widened to a
    float result compute in that float), and float32 for half precision."""
    if in_dtype == out_dtype:
        comp = in_dtype
    elif dtypes.is_float(out_dtype) and not dtypes.is_float(in_dtype):
        comp = out_dtype
    else:
        comp = max(in_dtype, out_dtype, key=lambda d: d.itemsize)
    return dtypes.float32 if comp in (dtypes.float16, dtypes.bfloat16) else comp


@dot_general_p.def_impl
def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    comp = _computation_dtype(lhs.dtype, out_dtype)
    lhs, rhs = lhs.astype(comp, copy=False), rhs.astype(comp, copy=False)
    lf, rf = _free_dims(lhs.ndim, lc, lb), _free_dims(rhs.ndim, rc, rb)
    out_shape = (tuple(lhs.shape[d] for d in lb) + tuple(lhs.shape[d] for d in lf)
                 + tuple(rhs.shape[d] for d in rf))
    if not lb and lhs.ndim <= 2 and rhs.ndim <= 2 and lc == (lhs.ndim - 1,) and rc == (0,):
        # The common vector/matrix products: no relayout at all.
        out = np.dot(lhs, rhs)
    else:
        b = math.prod(lhs.shape[d] for d in lb)
        m = math.prod(lhs.shape[d] for d in lf)
        k = math.prod(lhs.shape[d] for d in lc)
        n = math.prod(rhs.shape[d] for d in rf)
        # Views when the operands already have this layout (e.g. batched matmul).
        a = np.reshape(np.transpose(lhs, lb + lf + lc), (b, m, k))
        c = np.reshape(np.transpose(rhs, rb + rc + rf), (b, k, n))
        out = np.matmul(a[0], c[0])[None] if b == 1 else np.matmul(a, c)
    return np.reshape(out, out_shape).astype(out_dtype, copy=False)


# --- differentiation ----------------------------------------------------------------------------

jvp.defjvp(
    dot_general_p,
    lambda t, ans, lhs, rhs, **params: dot_general_p.bind(t, rhs, **params),
    lambda t, ans, lhs, rhs, **params: dot_general_p.bind(lhs, t, **params),
)


def _inverse_permutation(perm: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _operand_cotangent(ct, other, x_aval: ShapedArray, x_contract, x_batch, other_contract,
                       other_batch, other_free_in_ct, precision):
    """The cotangent of one operand ``x`` of ``dot_general(x, other)`` (or ``(other, x)``).

    Contract the cotangent's ``other``-free dimensions against ``other``'s free dimensions,
    batched as before. The product's dimensions are: batch, ``x``'s free (as they sit in the
    cotangent, i.e. in ``x``'s order), then ``other``'s contracting dimensions in ``other``'s
    order — each standing for the ``x`` contracting dimension it was paired with. A transpose
    puts them back in ``x``'s layout.
    """
    other_aval = get_aval(other)
    other_free = _free_dims(other_aval.ndim, other_contract, other_batch)
    n_batch = len(x_batch)
    dims = ((tuple(other_free_in_ct), other_free), (tuple(range(n_batch)), tuple(other_batch)))
    ct_dtype = get_aval(ct).dtype
    if ct_dtype != other_aval.dtype:
        # The result dtype differed from the operands' (preferred_element_type): compute in
        # the wider of the two, then return the operand's dtype.
        common, _ = dtypes.join((ct_dtype, False), (other_aval.dtype, False))
        ct, other = convert_element_type(ct, common), convert_element_type(other, common)
    prod = dot_general_p.bind(ct, other, dimension_numbers=dims, precision=precision,
                              preferred_element_type=None)
    x_free = _free_dims(x_aval.ndim, x_contract, x_batch)
    by_other_order = sorted(range(len(x_contract)), key=lambda i: other_contract[i])
    x_dims_in_prod = tuple(x_batch) + x_free + tuple(x_contract[i] for i in by_other_order)
    out = transpose_axes(prod, _inverse_permutation(x_dims_in_prod))
    return convert_element_type(out, x_aval.dtype, x_aval.weak_type)


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    if is_undefined(lhs) and is_undefined(rhs):
        raise ValueError("dot_general: cannot transpose with respect to both operands at once "
                         "(the product is bilinear, not linear)")
    l_aval = lhs.aval if is_undefined(lhs) else get_aval(lhs)
    r_aval = rhs.aval if is_undefined(rhs) else get_aval(rhs)
    nb = len(lb)
    n_lf = len(_free_dims(l_aval.ndim, lc, lb))
    n_rf = len(_free_dims(r_aval.ndim, rc, rb))
    lf_in_ct = range(nb, nb + n_lf)
    rf_in_ct = range(nb + n_lf, nb + n_lf + n_rf)
    # The cotangent's free dimensions of x keep x's order, so they come out of the product in
    # x's order too.
    if is_undefined(lhs):
        return [_operand_cotangent(ct, rhs, l_aval, lc, lb, rc, rb, rf_in_ct, precision), None]
    return [None, _operand_cotangent(ct, lhs, r_aval, rc, rb, lc, lb, lf_in_ct, precision)]


transpose.deftranspose(dot_general_p, _dot_general_transpose)


# --- batching -----------------------------------------------------------------------------------


def _shift(dims: Sequence[int], at: int) -> tuple[int, ...]:
    """Dimension indices after inserting a dimension at ``at``."""
    return tuple(d + (d >= at) for d in dims)


def _dot_general_batch(axis, vals, dims, *, dimension_numbers, precision,
                       preferred_element_type):
    lhs, rhs = vals
    dl, dr = dims
    (lc, rc), (lb, rb) = dimension_numbers
    params = dict(precision=precision, preferred_element_type=preferred_element_type)
    if dl is not None and dr is not None:
        # Both batched: one more batch dimension pair, which lands in front of the result.
        new = ((_shift(lc, dl), _shift(rc, dr)), ((dl,) + _shift(lb, dl), (dr,) + _shift(rb, dr)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **params), 0
    if dl is not None:
        # Only lhs batched: its batch dimension is just another free lhs dimension.
        lc2, lb2 = _shift(lc, dl), _shift(lb, dl)
        new = ((lc2, rc), (lb2, rb))
        lhs_ndim = get_aval(lhs).ndim
        out_d = len(lb) + _free_dims(lhs_ndim, lc2, lb2).index(dl)
        return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **params), out_d
    rc2, rb2 = _shift(rc, dr), _shift(rb, dr)
    new = ((lc, rc2), (lb, rb2))
    l_aval, r_aval = get_aval(lhs), get_aval(rhs)
    n_lf = len(_free_dims(l_aval.ndim, lc, lb))
    out_d = len(lb) + n_lf + _free_dims(r_aval.ndim, rc2, rb2).index(dr)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **params), out_d


batching.batch_rules[dot_general_p] = _dot_general_batch


# --- the fx.lax functions -----------------------------------------------------------------------


def canonical_precision(precision):
    # Accepted for API compatibility (None, a name like "highest", a Precision-like enum, or a
    # pair of them); the NumPy impl always computes at the full precision of its dtype.
    if precision is None:
        return None
    if isinstance(precision, (tuple, list)):
        return tuple(canonical_precision(p) for p in precision)
    return str(getattr(precision, "name", precision)).lower()


def _canonical_dimension_numbers(dimension_numbers) -> DimensionNumbers:
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        return ((tuple(int(d) for d in lc), tuple(int(d) for d in rc)),
                (tuple(int(d) for d in lb), tuple(int(d) for d in rb)))
    except (TypeError, ValueError):
        raise TypeError(
            "dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
            f"(lhs_batch, rhs_batch)) sequences of ints, got {dimension_numbers!r}") from None


def _precision_rank(dt: np.dtype) -> tuple:
    """XLA's order of "higher precision" types (jax's dot_general dtype rule): complex above
    real, then the real part's exponent range, mantissa and bit width, signed above
    unsigned."""
    real = dtypes.real_dtype(dt)
    floating = dtypes.is_inexact(real)
    return (dtypes.is_complex(dt), dtypes.finfo(real).maxexp if floating else -1,
            dtypes.finfo(real).nmant if floating else -1,
            1 if real == dtypes.bool_ else dtypes.itemsize_bits(real),
            not dtypes.is_unsigned_int(real))


def _common_operand_dtype(lhs, rhs):
    """Operands of different dtypes meet at the higher-precision one, as in jax (whose
    primitive takes mixed operands; fx's converts them first, which computes the same)."""
    ld, rd = get_aval(lhs).dtype, get_aval(rhs).dtype
    if ld == rd:
        return lhs, rhs
    lr, rr = _precision_rank(ld), _precision_rank(rd)
    if lr == rr:
        raise TypeError(f"dot_general: operand dtypes {ld} and {rd} are of equal precision, so "
                        "neither is the result's; convert one with "
                        "fx.lax.convert_element_type")
    out = ld if lr > rr else rd
    return convert_element_type(lhs, out), convert_element_type(rhs, out)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """Contract ``lhs`` with ``rhs``: ``dimension_numbers = ((lhs_contracting,
    rhs_contracting), (lhs_batch, rhs_batch))``. Result dimensions: batch, lhs free, rhs free.
    Operands of different dtypes compute in the higher-precision one, as in jax
    (``f32 x i32`` is ``f32``).

    Example: a batched matmul of ``f32[8,2,3]`` and ``f32[8,3,4]`` is
    ``dot_general(a, b, (((2,), (1,)), ((0,), (0,))))``, an ``f32[8,2,4]``.
    """
    pet = None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    dn = _canonical_dimension_numbers(dimension_numbers)
    lhs, rhs = _common_operand_dtype(lhs, rhs)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                              precision=canonical_precision(precision), preferred_element_type=pet)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix products of rank-1 or rank-2 operands: contracts the last dimension of
    ``lhs`` with the first of ``rhs`` (``f32[2,3] . f32[3]`` is an ``f32[2]``)."""
    la, ra = get_aval(lhs), get_aval(rhs)
    if not (1 <= la.ndim <= 2 and 1 <= ra.ndim <= 2) or la.shape[-1] != ra.shape[0]:
        # A ValueError, as jax's (which asks for dimension_numbers here).
        raise ValueError(
            f"dot: incompatible shapes for dot: got {la.shape} and {ra.shape}; lax.dot takes "
            "rank-1 or rank-2 operands with lhs.shape[-1] == rhs.shape[0] (use dot_general or "
            "fx.numpy.matmul for other cases)")
    return dot_general(lhs, rhs, (((la.ndim - 1,), (0,)), ((), ())), precision,
                       preferred_element_type)

