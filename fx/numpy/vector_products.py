"""Vector and matrix products of the array API in ``fx.numpy``: ``vecdot``, ``matvec``,
``vecmat``, ``cross``, ``matrix_transpose``, ``permute_dims``, and ``einsum_path``.

The products take array-likes, promote them as ``fx.numpy.matmul`` does, broadcast their
leading (batch) dimensions and contract with one ``dot_general``, so they differentiate,
vmap and compile like ``matmul``. ``einsum_path`` reports the pairwise contraction order that
``fx.numpy.einsum`` uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import (
    broadcast_shapes,
    broadcast_to_shape,
    canonical_axis,
    promote_dtypes,
    to_array,
)
from fx.numpy.linalg import _pair_cost, _parse, _sizes
from fx.numpy.manipulation import moveaxis, swapaxes, transpose

__all__ = ["cross", "einsum_path", "matrix_transpose", "matvec", "permute_dims", "vecdot",
           "vecmat"]


def _conj(x):
    # Complex operands (once fx has them) are conjugated where the array API says so.
    dt = get_aval(x).dtype
    if dt.kind == "c":
        from fx import numpy as fnp

        return fnp.conj(x)
    return x


def _batched_contract(name: str, x, y, x_core: int, y_core: int, x_contract: int,
                      y_contract: int, precision, preferred_element_type):
    """Contract axis ``x_contract`` of the trailing ``x_core`` dims of ``x`` with axis
    ``y_contract`` of ``y``'s trailing ``y_core`` dims, broadcasting the leading dims."""
    xs, ys = get_aval(x).shape, get_aval(y).shape
    if len(xs) < x_core or len(ys) < y_core:
        raise ValueError(f"fx.numpy.{name}: operands need at least {x_core} and {y_core} "
                         f"dimensions, got shapes {xs} and {ys}")
    nx, ny = xs[len(xs) - x_core + x_contract], ys[len(ys) - y_core + y_contract]
    if nx != ny:
        raise ValueError(f"fx.numpy.{name}: contracted dimensions differ: {nx} in {xs} and "
                         f"{ny} in {ys}")
    batch = broadcast_shapes(xs[:len(xs) - x_core], ys[:len(ys) - y_core],
                             name=f"fx.numpy.{name}")
    x = broadcast_to_shape(x, batch + xs[len(xs) - x_core:], f"fx.numpy.{name}")
    y = broadcast_to_shape(y, batch + ys[len(ys) - y_core:], f"fx.numpy.{name}")
    b = tuple(range(len(batch)))
    dn = (((len(batch) + x_contract,), (len(batch) + y_contract,)), (b, b))
    pet = None if preferred_element_type is None else dtypes.canonicalize(
        preferred_element_type)
    if get_aval(x).dtype == dtypes.bool_ and pet is None:
        out = lax.dot_general(lax.convert_element_type(x, dtypes.default_int_dtype()),
                              lax.convert_element_type(y, dtypes.default_int_dtype()), dn,
                              precision=precision)
        return lax.ne(out, 0)
    return lax.dot_general(x, y, dn, precision=precision, preferred_element_type=pet)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """The dot product of vectors along ``axis`` of each operand (the first conjugated),
    broadcasting the other dimensions: ``sum(conj(x1) * x2, axis)``.

    Example: ``fnp.vecdot(fnp.ones((2, 3)), fnp.arange(3.0))`` is ``[3., 3.]``.
    """
    name = "fx.numpy.vecdot"
    x1, x2 = promote_dtypes(x1, x2, name=name)
    a1, a2 = get_aval(x1), get_aval(x2)
    if a1.ndim == 0 or a2.ndim == 0:
        raise ValueError(f"{name}: operands must be at least 1-d, got shapes {a1.shape} and "
                         f"{a2.shape}")
    x1 = moveaxis(x1, canonical_axis(axis, a1.ndim, name), -1)
    x2 = moveaxis(x2, canonical_axis(axis, a2.ndim, name), -1)
    return _batched_contract("vecdot", _conj(x1), x2, 1, 1, 0, 0, precision,
                             preferred_element_type)


def matvec(x1, x2, /):
    """Matrix-vector products over broadcast batches: ``x1`` is ``(..., m, n)``, ``x2`` is
    ``(..., n)``, the result ``(..., m)``.

    Example: ``fnp.matvec(fnp.eye(2), fnp.array([1., 2.]))`` is ``[1., 2.]``.
    """
    x1, x2 = promote_dtypes(x1, x2, name="fx.numpy.matvec")
    return _batched_contract("matvec", x1, x2, 2, 1, 1, 0, None, None)


def vecmat(x1, x2, /):
    """Vector-matrix products over broadcast batches: ``conj(x1)`` of shape ``(..., n)``
    times ``x2`` of shape ``(..., n, m)``, giving ``(..., m)``.

    Example: ``fnp.vecmat(fnp.array([1., 2.]), fnp.eye(2))`` is ``[1., 2.]``.
    """
    x1, x2 = promote_dtypes(x1, x2, name="fx.numpy.vecmat")
    return _batched_contract("vecmat", _conj(x1), x2, 1, 2, 0, 0, None, None)


def matrix_transpose(x, /):
    """``x`` with its last two axes swapped (a stack of transposed matrices).

    Example: ``fnp.matrix_transpose(fnp.ones((4, 2, 3))).shape`` is ``(4, 3, 2)``.
    """
    x = to_array(x, "fx.numpy.matrix_transpose")
    if get_aval(x).ndim < 2:
        raise ValueError(f"fx.numpy.matrix_transpose: x must be at least 2-d, got shape "
                         f"{get_aval(x).shape}; use reshape or expand_dims first")
    return swapaxes(x, -1, -2)


def permute_dims(a, /, axes: Sequence[int]):
    """``a`` with its axes reordered by ``axes`` (the array API's name for ``transpose``)."""
    return transpose(a, axes)


def _component(x, i: int):
    return lax.reshape(lax.slice_in_dim(x, i, i + 1, 1, get_aval(x).ndim - 1),
                       get_aval(x).shape[:-1])


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """The cross product of 2- or 3-vectors along ``axisa`` of ``a`` and ``axisb`` of ``b``
    (``axis`` sets all three), broadcasting the other dimensions, as ``numpy.cross``. Two
    2-vectors give the scalar z component; a 2-vector is a 3-vector with z = 0 otherwise.

    Example: ``fnp.cross(fnp.array([1., 0, 0]), fnp.array([0., 1, 0]))`` is ``[0., 0., 1.]``.
    """
    name = "fx.numpy.cross"
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_dtypes(a, b, name=name)
    if get_aval(a).ndim == 0 or get_aval(b).ndim == 0:
        raise ValueError(f"{name}: operands must be at least 1-d, got shapes "
                         f"{get_aval(a).shape} and {get_aval(b).shape}")
    a = moveaxis(a, canonical_axis(axisa, get_aval(a).ndim, name), -1)
    b = moveaxis(b, canonical_axis(axisb, get_aval(b).ndim, name), -1)
    na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"{name}: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got {na} and {nb} (shapes {get_aval(a).shape} and "
                         f"{get_aval(b).shape} after moving the vector axis last)")
    if get_aval(a).dtype == dtypes.bool_:
        raise TypeError(f"{name}: bool operands are not supported (the product subtracts); "
                        "convert them to an integer or float dtype")
    batch = broadcast_shapes(get_aval(a).shape[:-1], get_aval(b).shape[:-1], name=name)
    a = broadcast_to_shape(a, batch + (na,), name)
    b = broadcast_to_shape(b, batch + (nb,), name)
    ax = [_component(a, i) for i in range(na)]
    bx = [_component(b, i) for i in range(nb)]
    z = lax.sub(lax.mul(ax[0], bx[1]), lax.mul(ax[1], bx[0]))
    if na == 2 and nb == 2:
        return z
    zero = lax.full_like(ax[0], 0)
    a2 = ax[2] if na == 3 else zero
    b2 = bx[2] if nb == 3 else zero
    x = lax.sub(lax.mul(ax[1], b2), lax.mul(a2, bx[1]))
    y = lax.sub(lax.mul(a2, bx[0]), lax.mul(ax[0], b2))
    parts = [lax.reshape(c, batch + (1,)) for c in (x, y, z)]
    out = lax.concatenate(parts, len(batch))
    return moveaxis(out, -1, canonical_axis(axisc, len(batch) + 1, name))


def einsum_path(subscripts, /, *operands, optimize="greedy"):
    """The order in which :func:`fx.numpy.einsum` contracts ``operands``, as jax gives it:
    ``([(i, j), ...], report)``. Each ``(i, j)`` contracts those two of the
    current operands and appends the result; ``report`` is a short text with the naive and
    the path's cost in multiply-adds and the largest intermediate.

    fx always contracts greedily (the pair with the smallest intermediate first); ``optimize``
    is accepted for compatibility and does not change the path.

    Example: ``fnp.einsum_path("ij,jk,kl->il", a, b, c)[0]`` is ``[(0, 1), (0, 1)]`` when
    ``a @ b`` is the smaller intermediate.
    """
    if not isinstance(subscripts, str):
        raise TypeError("fx.numpy.einsum_path: subscripts must be a string (the interleaved "
                        "operand/sublist form is only accepted by einsum)")
    shapes = [get_aval(to_array(x, "fx.numpy.einsum_path")).shape for x in operands]
    in_labels, out_labels = _parse(subscripts, shapes)
    sizes = _sizes([to_array(x) for x in operands], in_labels, subscripts)
    terms = []
    for labs, shape in zip(in_labels, shapes):
        kept = [lab for lab, d in zip(labs, shape) if not (d == 1 and sizes[lab] != 1)]
        terms.append(list(dict.fromkeys(kept)))
    out_set = set(out_labels)
    path: list = []
    flops, largest = 0, 0
    naive = math.prod(sizes.values()) * max(len(terms) - 1, 1)
    while len(terms) > 1:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                keep = out_set.union(*(set(t) for k, t in enumerate(terms) if k not in (i, j)))
                cost = _pair_cost(terms[i], terms[j], keep, sizes)
                if best is None or cost < best[0]:
                    best = (cost, i, j, keep)
        cost, i, j, keep = best
        flops += math.prod(sizes[lab] for lab in set(terms[i]) | set(terms[j]))
        largest = max(largest, cost)
        merged = [lab for lab in dict.fromkeys(terms[i] + terms[j]) if lab in keep]
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [merged]
        path.append((i, j))
    if not path and operands:
        path.append((0,))
    report = (f"  Complete contraction:  {subscripts}\n"
              f"         Naive scaling:  {len(sizes)}\n"
              f"     Naive FLOP count:  {naive:.3e}\n"
              f" Optimized FLOP count:  {flops:.3e}\n"
              f"  Largest intermediate:  {largest:.3e} elements\n")
    return path, report
