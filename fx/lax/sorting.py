"""Sorting and cumulative primitives, and the parallel prefix scan their derivatives use.

``sort`` takes one or more operands of one shape and returns them all permuted along a
dimension, ordered lexicographically by the first ``num_keys`` of them. Floating keys use
JAX's total order: ``-0.0`` and ``0.0`` compare equal, and NaNs (of either sign) come last.

``cumsum``, ``cumprod``, ``cummax``, ``cummin`` and ``cumlogsumexp`` return an array of the
operand's shape holding the running reduction along ``axis`` (from the end when ``reverse``).
``cumsum`` is linear; the others are differentiated through :func:`associative_scan`, so their
derivatives are exact where a closed form would divide by zero (``cumprod`` of zeros) and
``cummax``/``cummin`` split the gradient at ties exactly as JAX does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fx import dtypes, tree_util
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.batching import matchaxis, not_mapped
from fx.interpreters.jvp import Zero, instantiate, jvp_flat
from fx.interpreters.transpose import is_undefined
from fx.lax import extrema
from fx.lax.base import full, shape_error
from fx.lax.elementwise import (
    abs,
    add,
    bitcast_convert_type,
    bitwise_not,
    exp,
    log1p,
    lt,
    max,
    min,
    mul,
    ne,
    neg,
    select_n,
    sub,
    xor,
)
from fx.lax.structural import broadcasted_iota, concatenate, pad, slice_in_dim

# --- sort ----------------------------------------------------------------------------------------

sort_p = Primitive("sort", multiple_results=True)  # params: dimension, is_stable, num_keys


@sort_p.def_abstract_eval
def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort: needs at least one operand")
    if any(a.shape != operands[0].shape for a in operands):
        raise shape_error("sort", "all operands must have the same shape", *operands)
    if not 0 <= dimension < operands[0].ndim:
        raise shape_error(
            "sort", f"dimension {dimension} is out of range for operands of rank "
            f"{operands[0].ndim}", *operands,
        )
    if not 1 <= num_keys <= len(operands):
        raise ValueError(
            f"sort: num_keys={num_keys} must be between 1 and the number of operands "
            f"({len(operands)})"
        )
    return list(operands)


def _sortable(key):
    # Half precision sorts through float32 (exact); NumPy already orders NaNs last and treats
    # -0.0 == 0.0, which is JAX's order.
    if key.dtype in (dtypes.float16, dtypes.bfloat16):
        return key.astype(np.float32)
    return key


@sort_p.def_impl
def _sort_impl(*operands, dimension, is_stable, num_keys):
    # Always stable: ``is_stable=False`` only permits other tie orders, and one order for
    # primal and tangent sorts keeps their permutations identical.
    keys = [_sortable(k) for k in operands[:num_keys]]
    if num_keys == 1:
        perm = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        perm = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in operands]


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    params = dict(dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    outs = sort_p.bind(*primals, **params)
    nonzero = [i for i, t in enumerate(tangents) if not isinstance(t, Zero)]
    tangents_out = [Zero.like(o) for o in outs]
    if nonzero:
        # The tangents ride along as non-key operands of a sort by the same keys, so they
        # are permuted exactly as the primals are.
        moved = sort_p.bind(*primals[:num_keys], *[tangents[i] for i in nonzero], **params)
        for i, t in zip(nonzero, moved[num_keys:]):
            tangents_out[i] = t
    return outs, tangents_out


def _sort_transpose(cts, *operands, dimension, is_stable, num_keys):
    # Only non-key operands can be linear (the jvp above sorts tangents by primal keys).
    # The transpose of "permute by perm" puts ct[i] back at perm[i]: a sort keyed by perm.
    keys = operands[:num_keys]
    if any(is_undefined(k) for k in keys):
        raise ValueError("sort: the keys of a sort are not linear inputs; cannot transpose")
    linear = [
        i for i in range(num_keys, len(operands))
        if is_undefined(operands[i]) and not isinstance(cts[i], Zero)
    ]
    out: list = [None] * len(operands)
    if not linear:
        return out
    shape = get_aval(keys[0]).shape
    iota = broadcasted_iota(dtypes.int32, shape, dimension)
    params = dict(dimension=dimension, is_stable=True)
    perm = sort_p.bind(*keys, iota, num_keys=num_keys, **params)[-1]
    back = sort_p.bind(perm, *[cts[i] for i in linear], num_keys=1, **params)[1:]
    for i, ct in zip(linear, back):
        out[i] = ct
    return out


def _sort_batch(axis, vals, dims, *, dimension, is_stable, num_keys):
    # Every operand gets the batch dimension where the first batched one has it; the sort
    # dimension shifts past it.
    bdim = next(d for d in dims if d is not not_mapped)
    vals = [matchaxis(axis.size, d, bdim, v) for v, d in zip(vals, dims)]
    new_dim = dimension + (bdim <= dimension)
    outs = sort_p.bind(*vals, dimension=new_dim, is_stable=is_stable, num_keys=num_keys)
    return outs, [bdim] * len(outs)


jvp.jvp_rules[sort_p] = _sort_jvp
transpose.transpose_rules[sort_p] = _sort_transpose
batching.batch_rules[sort_p] = _sort_batch


def _canonical_dim(dimension: int, ndim: int, name: str) -> int:
    dimension = int(dimension)
    if not -ndim <= dimension < ndim:
        raise ValueError(
            f"{name}: dimension {dimension} is out of range for an operand of rank {ndim}"
            + ("; sort a rank-0 value by reshaping it to shape (1,)" if ndim == 0 else "")
        )
    return dimension % ndim


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort ``operand`` (an array, or a tuple of equally shaped arrays) along ``dimension``.

    With a tuple, every operand is permuted the same way, ordered lexicographically by the
    first ``num_keys`` operands. NaNs sort to the end; ``-0.0`` and ``0.0`` are equal.

    Example::

        >>> lax.sort(x)                               # ascending along the last axis
        >>> keys, vals = lax.sort((keys, vals), num_keys=1)
    """
    single = not isinstance(operand, (tuple, list))
    operands = [operand] if single else list(operand)
    if not operands:
        raise TypeError("sort: needs at least one operand")
    ndim = get_aval(operands[0]).ndim
    dim = _canonical_dim(dimension, ndim, "sort")
    num_keys = int(num_keys)
    if not 1 <= num_keys <= len(operands):
        raise ValueError(
            f"sort: num_keys={num_keys} must be between 1 and the number of operands "
            f"({len(operands)})"
        )
    outs = sort_p.bind(*operands, dimension=dim, is_stable=bool(is_stable), num_keys=num_keys)
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort ``keys`` along ``dimension`` and permute ``values`` the same way: ``(keys,
    values)``."""
    k, v = sort((keys, values), dimension, is_stable, num_keys=1)
    return k, v


def descending_keys(x) -> list:
    """Sort keys whose ascending order is ``x``'s descending order, NaNs first (as
    ``top_k`` and ``argsort(descending=True)`` order them), ties left in index order."""
    dt = get_aval(x).dtype
    if dtypes.is_float(dt):
        # ne(x, x) is True for NaN; its negation puts NaNs (False) first.
        return [bitwise_not(ne(x, x)), neg(x)]
    # bitwise_not reverses the order of signed and unsigned integers and of bools alike.
    return [bitwise_not(x)]


def _total_order_key(x):
    """Signed integers in the order of IEEE's total order of the floats ``x``: -NaN < -inf <
    ... < -0.0 < 0.0 < ... < inf < NaN (the bits, with those of negatives reversed)."""
    aval = get_aval(x)
    it = np.dtype(f"i{aval.dtype.itemsize}")
    bits = bitcast_convert_type(x, it)
    flipped = xor(bits, full(aval.shape, np.iinfo(it).max, it))
    return select_n(lt(bits, full(aval.shape, 0, it)), bits, flipped)


def top_k(operand, k: int):
    """The ``k`` largest entries along the last axis and their indices (int32), largest
    first; equal entries keep index order. Floats are ordered as jax's (XLA's) TopK orders
    them, by total order: NaN first, then inf, ..., 0.0 before -0.0, ..., -inf, and NaNs
    with the sign bit set last.

    Example::

        >>> values, indices = lax.top_k(x, 3)
    """
    aval = get_aval(operand)
    if aval.ndim == 0:
        raise ValueError(f"top_k: the operand must have rank >= 1, got {aval.str_short()}")
    k, n = int(k), aval.shape[-1]
    if not 0 <= k <= n:
        raise ValueError(f"top_k: k={k} must be between 0 and the last axis size {n}")
    if dtypes.is_float(aval.dtype):
        keys = [bitwise_not(_total_order_key(operand))]
    else:
        keys = descending_keys(operand)
    iota = broadcasted_iota(dtypes.int32, aval.shape, aval.ndim - 1)
    *_, values, indices = sort((*keys, operand, iota), -1, True, num_keys=len(keys))
    return (slice_in_dim(values, 0, k, 1, aval.ndim - 1),
            slice_in_dim(indices, 0, k, 1, aval.ndim - 1))


# --- associative_scan ---------------------------------------------------------------------------


def _interleave(evens: Sequence, odds: Sequence, axis: int, first_is_even: bool) -> list:
    """Merge two arrays along ``axis``, alternating and starting from ``evens`` (or odds)."""
    out = []
    for e, o in zip(evens, odds):
        ne_, no = get_aval(e).shape[axis], get_aval(o).shape[axis]
        first, second = (e, o) if first_is_even else (o, e)
        n1, n2 = (ne_, no) if first_is_even else (no, ne_)
        ndim = get_aval(e).ndim

        def cfg(lo, hi, _ndim=ndim):
            c = [(0, 0, 0)] * _ndim
            c[axis] = (lo, hi, 1)
            return c

        # Zero-free padding: a select keeps signed zeros and infinities intact.
        a = pad(first, full((), 0, get_aval(e).dtype), cfg(0, n2 - n1 + 1))
        b = pad(second, full((), 0, get_aval(e).dtype), cfg(1, n1 - n2))
        mask_shape = list(get_aval(first).shape)
        mask = pad(full(mask_shape, True, dtypes.bool_), full((), False, dtypes.bool_),
                   cfg(0, n2 - n1 + 1))
        out.append(select_n(mask, b, a))
    return out


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """All prefix reductions of ``elems`` along ``axis`` by the associative ``fn``.

    ``fn(a, b)`` combines two pytrees shaped like ``elems`` (with any length along ``axis``),
    ``a`` holding the earlier elements. Works in O(log n) rounds of elementwise work
    (Blelloch's parallel prefix scan). With ``reverse``, scans from the end.

    Example::

        >>> lax.associative_scan(lax.add, x)        # == lax.cumsum(x)
    """
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        return elems
    ndim = get_aval(leaves[0]).ndim
    axis = _canonical_dim(axis, ndim, "associative_scan")
    n = get_aval(leaves[0]).shape[axis]
    if any(get_aval(x).shape[axis] != n for x in leaves):
        raise ValueError(
            "associative_scan: every input needs the same size along axis "
            f"{axis}, got shapes {[get_aval(x).shape for x in leaves]}"
        )

    def combine(a, b):
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        return tree_util.tree_flatten(out)[0]

    def sl(xs, lo, hi, stride=1):
        return [slice_in_dim(x, lo, hi, stride, axis) for x in xs]

    # Arrays stay in storage order; with ``reverse`` the logical sequence runs from the
    # end, so every logical slice is mirrored and combine still gets the logically earlier
    # operand first (which also makes ties split as a scan of the reversed array does).
    def scan(xs):
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        m = n // 2
        if not reverse:
            pairs = combine(sl(xs, 0, n - 1, 2), sl(xs, 1, n, 2))
        else:
            pairs = combine(sl(xs, n + 1 - 2 * m, n, 2), sl(xs, n - 2 * m, n - 1, 2))
        odds = scan(pairs)
        c = (n - 1) // 2  # evens after the first: E_k = O_(k-1) . x_(2k), k = 1..c
        if not reverse:
            evens = sl(xs, 0, 1)
            if c:
                rest = combine(sl(odds, 0, c), sl(xs, 2, n, 2))
                evens = [concatenate([f, e], axis) for f, e in zip(evens, rest)]
            return _interleave(evens, odds, axis, first_is_even=True)
        evens = sl(xs, n - 1, n)
        if c:
            rest = combine(sl(odds, m - c, m), sl(xs, n - 1 - 2 * c, n - 2, 2))
            evens = [concatenate([e, f], axis) for f, e in zip(evens, rest)]
        return _interleave(evens, odds, axis, first_is_even=(n % 2 == 1))

    return tree_util.tree_unflatten(tree, scan(leaves))


# --- cumulative reductions ----------------------------------------------------------------------


def _logaddexp(x, y):
    # log(exp(x) + exp(y)) without overflow; where x - y is NaN (a NaN, or equal infinities)
    # x + y gives the right answer. Its derivative is exp(x - out), split evenly at ties.
    amax = max(x, y)
    delta = sub(x, y)
    return select_n(ne(delta, delta), add(amax, log1p(exp(neg(abs(delta))))), add(x, y))


_EXTREMA = {np.maximum: "max", np.minimum: "min"}


def _accumulate(ufunc) -> Callable:
    def impl(x, *, axis, reverse):
        dt = x.dtype
        work = x.astype(np.float32) if dt in (dtypes.float16, dtypes.bfloat16) else x
        if reverse:
            work = np.flip(work, axis)
        with np.errstate(all="ignore"):
            if ufunc in _EXTREMA:  # -0.0 < +0.0, as jax
                out = extrema.accumulate(_EXTREMA[ufunc], work, axis)
            else:
                out = ufunc.accumulate(work, axis=axis, dtype=work.dtype)
        if reverse:
            out = np.flip(out, axis)
        return np.asarray(out).astype(dt, copy=False)

    return impl


def _cumulative(name: str, ufunc, floating_only: bool = False,
                complex_ok: bool = False) -> Primitive:
    prim = Primitive(name)  # params: axis, reverse

    def abstract_eval(x, *, axis, reverse):
        ok = (dtypes.is_float(x.dtype) or (not floating_only and dtypes.is_int(x.dtype))
              or (complex_ok and dtypes.is_complex(x.dtype)))
        if not ok:
            kind = "floating" if floating_only else "numeric"
            raise TypeError(
                f"{name} requires a {kind} operand, got {x.dtype} ({x.str_short()}); "
                "convert it first with fx.lax.convert_element_type"
            )
        if not 0 <= axis < x.ndim:
            raise shape_error(name, f"axis {axis} is out of range for rank {x.ndim}", x)
        return x

    def batch(ax, vals, dims, *, axis, reverse):
        (x,), (d,) = vals, dims
        return prim.bind(x, axis=axis + (d <= axis), reverse=reverse), d

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_accumulate(ufunc))
    batching.batch_rules[prim] = batch
    return prim


def _scan_jvp(combine: Callable, description: str) -> Callable:
    # Differentiate the prefix scan itself: exact with zeros (no division by the operand) and
    # with JAX's tie splitting, since JAX differentiates the same scan.
    def rule(primals, tangents, *, axis, reverse):
        def f(x):
            return [associative_scan(combine, x, reverse=reverse, axis=axis)]

        (out,), (t_out,) = jvp_flat(f, primals, [instantiate(tangents[0])], description)
        return out, t_out

    return rule


cumsum_p = _cumulative("cumsum", np.add, complex_ok=True)
transpose.deflinear(
    cumsum_p, lambda ct, x, *, axis, reverse: [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]
)

cumprod_p = _cumulative("cumprod", np.multiply, complex_ok=True)
jvp.jvp_rules[cumprod_p] = _scan_jvp(mul, "jvp of cumprod")

cummax_p = _cumulative("cummax", np.maximum)  # (zeros ordered: see _accumulate)
jvp.jvp_rules[cummax_p] = _scan_jvp(max, "jvp of cummax")

cummin_p = _cumulative("cummin", np.minimum)
jvp.jvp_rules[cummin_p] = _scan_jvp(min, "jvp of cummin")

cumlogsumexp_p = _cumulative("cumlogsumexp", np.logaddexp, floating_only=True)
jvp.jvp_rules[cumlogsumexp_p] = _scan_jvp(_logaddexp, "jvp of cumlogsumexp")


def _cumulative_fn(prim: Primitive, what: str) -> Callable:
    def f(operand, axis: int = 0, reverse: bool = False):
        ndim = get_aval(operand).ndim
        return prim.bind(operand, axis=_canonical_dim(axis, ndim, prim.name),
                         reverse=bool(reverse))

    f.__name__ = prim.name
    f.__doc__ = (
        f"The cumulative {what} of ``operand`` along ``axis`` (from the end if ``reverse``).\n\n"
        f"Example::\n\n    >>> lax.{prim.name}(x, axis=0)\n"
    )
    return f


cumsum = _cumulative_fn(cumsum_p, "sum")
cumprod = _cumulative_fn(cumprod_p, "product")
cummax = _cumulative_fn(cummax_p, "maximum")
cummin = _cumulative_fn(cummin_p, "minimum")
cumlogsumexp = _cumulative_fn(cumlogsumexp_p, "log-sum-exp")
