"""Products of ``fx.numpy``: ``dot``, ``matmul`` (the ``@`` operator), ``vdot``, ``inner``,
``outer``, ``tensordot``, ``kron`` and ``einsum``; and the ``fx.numpy.linalg`` namespace, which
gathers the rest of jax.numpy.linalg from the ``linalg_*`` modules at the bottom (they do not
import this module).

Each takes arrays or array-likes, promotes them to one dtype (JAX's rules), and lowers to
``fx.lax.dot_general`` with reshapes, transposes and reductions around it, so every function
is differentiable and batchable. Shapes follow NumPy: ``matmul`` broadcasts batch dimensions
and promotes 1-D operands; ``einsum`` accepts ellipses, repeated subscripts (diagonals) and
size-1 broadcasting, and contracts pairwise in a greedy smallest-intermediate order.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import axis_list, broadcast_shapes, promote_dtypes

__all__ = ["dot", "einsum", "inner", "kron", "matmul", "outer", "tensordot", "vdot"]


def _dot_general(a, b, contract, batch=((), ()), precision=None, preferred_element_type=None):
    return lax.dot_general(a, b, (contract, batch), precision=precision,
                           preferred_element_type=preferred_element_type)


def _ravel(x):
    return lax.reshape(x, (get_aval(x).size,))


def _size_mismatch(name: str, a, b, da: int, db: int) -> TypeError:
    # A TypeError, as jax's (its dot_general's shape rule raises it for every product here).
    sa, sb = get_aval(a).shape, get_aval(b).shape
    return TypeError(
        f"fx.numpy.{name}: shapes {sa} and {sb} are not aligned: dimension {da} of the first "
        f"(size {sa[da]}) must match dimension {db} of the second (size {sb[db]}); transpose "
        "or reshape an operand so the contracted dimensions agree")


def dot(a, b, *, precision=None, preferred_element_type=None):
    """``numpy.dot``: scalars multiply; otherwise the last axis of ``a`` contracts with the
    only axis of a 1-D ``b`` or the second-to-last of ``b``. Example: ``dot(f32[2,3],
    f32[4,3,5])`` is an ``f32[2,4,5]``."""
    a, b = promote_dtypes(a, b, name="fx.numpy.dot")
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim == 0 or ba.ndim == 0:
        return _scalar_product(a, b, preferred_element_type)
    db = 0 if ba.ndim == 1 else ba.ndim - 2
    if aa.shape[-1] != ba.shape[db]:
        raise _size_mismatch("dot", a, b, aa.ndim - 1, db)
    return _dot_general(a, b, ((aa.ndim - 1,), (db,)), precision=precision,
                        preferred_element_type=preferred_element_type)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """``numpy.matmul`` (``a @ b``): matrix products over the last two axes, with the leading
    (batch) axes broadcast; a 1-D operand is a row (``a``) or column (``b``) whose axis is
    removed from the result. Example: ``f32[5,1,2,3] @ f32[4,3,6]`` is ``f32[5,4,2,6]``."""
    a, b = promote_dtypes(a, b, name="fx.numpy.matmul")
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim == 0 or ba.ndim == 0:
        raise ValueError(
            f"fx.numpy.matmul: operands must be at least 1-D, got shapes {aa.shape} and "
            f"{ba.shape}; use fx.numpy.multiply (or *) for scalars")
    a_vec, b_vec = aa.ndim == 1, ba.ndim == 1
    if a_vec:
        a = lax.reshape(a, (1,) + aa.shape)
    if b_vec:
        b = lax.reshape(b, ba.shape + (1,))
    ash, bsh = get_aval(a).shape, get_aval(b).shape
    if ash[-1] != bsh[-2]:
        raise TypeError(
            f"fx.numpy.matmul: the contracted dimensions differ: {aa.shape} @ {ba.shape} "
            f"({ash[-1]} != {bsh[-2]}); a's last dimension must match b's second-to-last (its "
            "only one if 1-D)")
    a_batch, b_batch = ash[:-2], bsh[:-2]
    broadcast_shapes(a_batch, b_batch, name="fx.numpy.matmul (batch dimensions)")
    nb = max(len(a_batch), len(b_batch))
    # Each output batch position i is a batch pair (equal sizes), or a free dimension of the
    # operand that has it when the other lacks it or has size 1 (squeezed): no broadcast is
    # ever materialized.
    a_keep, b_keep, pairs, a_free, b_free = [], [], [], [], []
    for i in range(nb):
        ai = i - (nb - len(a_batch))
        bi = i - (nb - len(b_batch))
        ad = a_batch[ai] if ai >= 0 else None
        bd = b_batch[bi] if bi >= 0 else None
        if ad is not None and bd is not None and ad == bd:
            pairs.append((ai, bi, i))
        elif bd is None or (bd == 1 and ad is not None):
            a_free.append((ai, i))
        else:
            b_free.append((bi, i))
        if ad is not None and not (ad == 1 and bd is not None and bd != 1):
            a_keep.append(ai)
        if bd is not None and not (bd == 1 and ad is not None and ad != 1):
            b_keep.append(bi)
    a = _drop_unit_dims(a, a_batch, a_keep)
    b = _drop_unit_dims(b, b_batch, b_keep)
    a_pos = {d: k for k, d in enumerate(a_keep)}
    b_pos = {d: k for k, d in enumerate(b_keep)}
    na, nbk = len(a_keep), len(b_keep)
    out = _dot_general(
        a, b, ((na + 1,), (nbk,)),
        (tuple(a_pos[p[0]] for p in pairs), tuple(b_pos[p[1]] for p in pairs)),
        precision=precision, preferred_element_type=preferred_element_type)
    # Result layout: pairs, a's free batch dims then M, b's free batch dims then N.
    labels = [p[2] for p in pairs] + [i for _, i in a_free] + ["m"] + [i for _, i in b_free] + [
        "n"]
    want = list(range(nb)) + ["m", "n"]
    out = lax.transpose(out, [labels.index(w) for w in want])
    shape = list(get_aval(out).shape)
    if b_vec:
        del shape[-1]
    if a_vec:
        del shape[-2 if not b_vec else -1]
    return lax.reshape(out, shape)


def _drop_unit_dims(x, batch_shape, keep):
    """Remove the batch dimensions of ``x`` not in ``keep`` (all of size 1)."""
    if len(keep) == len(batch_shape):
        return x
    shape = get_aval(x).shape
    return lax.reshape(x, tuple(batch_shape[d] for d in keep) + shape[-2:])


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of ``a`` conjugated and ``b``, both flattened."""
    a, b = promote_dtypes(a, b, name="fx.numpy.vdot")
    a, b = _ravel(a), _ravel(b)
    if dtypes.is_complex(get_aval(a).dtype):
        a = lax.conj(a)
    if get_aval(a).size != get_aval(b).size:
        raise TypeError(f"fx.numpy.vdot: the operands have different sizes "
                        f"({get_aval(a).size} and {get_aval(b).size}); vdot flattens both, "
                        "so they need as many elements")
    return _dot_general(a, b, ((0,), (0,)), precision=precision,
                        preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Contraction over the last axes of ``a`` and ``b``: the result has shape
    ``a.shape[:-1] + b.shape[:-1]`` (scalars multiply)."""
    a, b = promote_dtypes(a, b, name="fx.numpy.inner")
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim == 0 or ba.ndim == 0:
        return _scalar_product(a, b, preferred_element_type)
    if aa.shape[-1] != ba.shape[-1]:
        raise _size_mismatch("inner", a, b, aa.ndim - 1, ba.ndim - 1)
    return _dot_general(a, b, ((aa.ndim - 1,), (ba.ndim - 1,)), precision=precision,
                        preferred_element_type=preferred_element_type)


def _scalar_product(a, b, preferred_element_type):
    """``a * b`` where one of them is rank 0 (the elementwise primitive broadcasts it)."""
    if preferred_element_type is not None:
        pet = dtypes.canonicalize(preferred_element_type)
        a, b = lax.convert_element_type(a, pet), lax.convert_element_type(b, pet)
    return lax.mul(a, b)


def outer(a, b):
    """``outer(a, b)[i, j] = a.ravel()[i] * b.ravel()[j]``."""
    a, b = promote_dtypes(a, b, name="fx.numpy.outer")
    a, b = _ravel(a), _ravel(b)
    shape = (get_aval(a).size, get_aval(b).size)
    return lax.mul(lax.broadcast_in_dim(a, shape, (0,)), lax.broadcast_in_dim(b, shape, (1,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Contract ``a``'s last ``axes`` dimensions with ``b``'s first ones, or the dimensions
    listed by a pair ``(a_axes, b_axes)``. Result: ``a``'s free dims then ``b``'s."""
    a, b = promote_dtypes(a, b, name="fx.numpy.tensordot")
    aa, ba = get_aval(a), get_aval(b)
    # Error types as jax's: TypeError for a malformed axes argument, ValueError (from the axis
    # canonicalization) for an axis out of range. A negative int contracts nothing, as jax's.
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n > min(aa.ndim, ba.ndim):
            raise TypeError(f"fx.numpy.tensordot: axes={n} exceeds the operands' ranks (shapes "
                            f"{aa.shape} and {ba.shape}); pass at most the smaller rank")
        ca, cb = tuple(range(aa.ndim - n, aa.ndim)), tuple(range(n))
    else:
        if not isinstance(axes, (tuple, list)) or len(axes) != 2:
            raise TypeError("fx.numpy.tensordot: axes must be an int or a pair (a_axes, "
                            f"b_axes), got {axes!r}")
        axes_a, axes_b = axes
        ints = [isinstance(x, (int, np.integer)) for x in axes]
        seqs = [isinstance(x, (tuple, list)) for x in axes]
        if not (all(ints) or all(seqs)):
            raise TypeError("fx.numpy.tensordot: the axes pair must be two ints or two "
                            f"sequences of ints, got {axes_a!r} and {axes_b!r}")
        ca = axis_list(axes_a, aa.ndim, "tensordot")
        cb = axis_list(axes_b, ba.ndim, "tensordot")
        if len(ca) != len(cb):
            raise TypeError(f"fx.numpy.tensordot: {len(ca)} axes of a paired with {len(cb)} "
                            f"axes of b ({axes_a!r} and {axes_b!r}); give as many of each")
    for da, db in zip(ca, cb):
        if aa.shape[da] != ba.shape[db]:
            raise _size_mismatch("tensordot", a, b, da, db)
    return _dot_general(a, b, (ca, cb), precision=precision,
                        preferred_element_type=preferred_element_type)


def kron(a, b):
    """The Kronecker product: blocks ``a[i, j, ...] * b``."""
    a, b = promote_dtypes(a, b, name="fx.numpy.kron")
    aa, ba = get_aval(a), get_aval(b)
    nd = max(aa.ndim, ba.ndim)
    ash = (1,) * (nd - aa.ndim) + aa.shape
    bsh = (1,) * (nd - ba.ndim) + ba.shape
    a, b = lax.reshape(a, ash), lax.reshape(b, bsh)
    inter = tuple(s for pair in zip(ash, bsh) for s in pair)
    prod = lax.mul(lax.broadcast_in_dim(a, inter, tuple(range(0, 2 * nd, 2))),
                   lax.broadcast_in_dim(b, inter, tuple(range(1, 2 * nd, 2))))
    return lax.reshape(prod, tuple(x * y for x, y in zip(ash, bsh)))


# --- einsum -------------------------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _term_labels(term: str, ndim: int | None, spec: str) -> list:
    """The labels of one subscript term: letters, and ``("...", k)`` for the ellipsis
    dimension ``k``-th from the right (so ellipses of different ranks align on the right)."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise ValueError(f"fx.numpy.einsum: malformed ellipsis in {term!r} of {spec!r}")
    left, ell, right = term.partition("...")
    for c in left + right:
        if c not in _LETTERS:
            raise ValueError(f"fx.numpy.einsum: invalid subscript {c!r} in {spec!r} (use "
                             "letters a-z, A-Z and '...')")
    if ndim is None:
        return list(left) + (["..."] if ell else []) + list(right)
    n_ell = ndim - len(left) - len(right)
    if n_ell < 0 or (n_ell and not ell):
        raise ValueError(
            f"fx.numpy.einsum: subscripts {term!r} of {spec!r} do not match an operand of rank "
            f"{ndim}")
    return list(left) + [("...", n_ell - k) for k in range(n_ell)] + list(right)


def _parse(spec: str, shapes: Sequence[tuple[int, ...]]):
    s = spec.replace(" ", "")
    if s.count("->") > 1:
        raise ValueError(f"fx.numpy.einsum: more than one '->' in {spec!r}")
    lhs, arrow, rhs = s.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"fx.numpy.einsum: {spec!r} has {len(terms)} operand terms, but "
                         f"{len(shapes)} operands were given")
    in_labels = [_term_labels(t, len(sh), spec) for t, sh in zip(terms, shapes)]
    n_ell = max([lab[1] for labs in in_labels for lab in labs if isinstance(lab, tuple)],
                default=0)
    ellipsis = [("...", n_ell - k) for k in range(n_ell)]
    letters = [lab for labs in in_labels for lab in labs if isinstance(lab, str)]
    if arrow:
        out = []
        for lab in _term_labels(rhs, None, spec):
            if lab == "...":
                out += ellipsis
            elif lab in out:
                raise ValueError(f"fx.numpy.einsum: output subscript {lab!r} repeats in {spec!r}")
            elif lab not in letters:
                raise ValueError(f"fx.numpy.einsum: output subscript {lab!r} of {spec!r} does "
                                 "not appear in any input")
            else:
                out.append(lab)
        # Ellipsis dimensions left out of an explicit output are summed (as jax does; numpy
        # raises).
    else:
        # Implicit output: the ellipsis, then the letters used once, in ASCII order.
        out = ellipsis + sorted(c for c in set(letters) if letters.count(c) == 1)
    return in_labels, out


def _sizes(operands, in_labels, spec):
    sizes: dict = {}
    for k, (x, labs) in enumerate(zip(operands, in_labels)):
        for lab, d in zip(labs, get_aval(x).shape):
            prev = sizes.get(lab)
            if prev is None or prev == 1:
                sizes[lab] = d
            elif d != prev and d != 1:
                name = "..." if isinstance(lab, tuple) else lab
                raise ValueError(
                    f"fx.numpy.einsum: size of label {name!r} for operand {k} ({d}) does not "
                    f"match previous terms ({prev}) in {spec!r}")
    return sizes


def _squeeze_broadcast(x, labs, sizes):
    """Drop size-1 dimensions whose label is larger elsewhere (numpy-style broadcasting)."""
    shape = get_aval(x).shape
    keep = [i for i, (lab, d) in enumerate(zip(labs, shape)) if not (d == 1 and sizes[lab] != 1)]
    if len(keep) == len(labs):
        return x, labs
    return lax.reshape(x, tuple(shape[i] for i in keep)), [labs[i] for i in keep]


def _take_diagonals(x, labs):
    """Collapse repeated labels of one operand to their diagonal (``ii->i``)."""
    while len(set(labs)) != len(labs):
        lab = next(lab for lab in labs if labs.count(lab) > 1)
        p = labs.index(lab)
        q = labs.index(lab, p + 1)
        rest = [i for i in range(len(labs)) if i not in (p, q)]
        shape = get_aval(x).shape
        n = shape[p]
        x = lax.transpose(x, rest + [p, q])
        x = lax.reshape(x, tuple(shape[i] for i in rest) + (n * n,))
        # Entries (i, i) of the flattened n*n block sit every n+1 places.
        x = lax.slice_in_dim(x, 0, n * n, n + 1, len(rest))
        labs = [labs[i] for i in rest] + [lab]
    return x, labs


def _sum_out(x, labs, drop):
    axes = tuple(i for i, lab in enumerate(labs) if drop(lab))
    if not axes:
        return x, labs
    return lax.reduce_sum(x, axes), [lab for i, lab in enumerate(labs) if i not in axes]


def _contract_pair(x, xl, y, yl, keep, precision):
    x, xl = _sum_out(x, xl, lambda lab: lab not in yl and lab not in keep)
    y, yl = _sum_out(y, yl, lambda lab: lab not in xl and lab not in keep)
    batch = [lab for lab in xl if lab in yl and lab in keep]
    contract = [lab for lab in xl if lab in yl and lab not in keep]
    dn = ((tuple(xl.index(c) for c in contract), tuple(yl.index(c) for c in contract)),
          (tuple(xl.index(b) for b in batch), tuple(yl.index(b) for b in batch)))
    out = lax.dot_general(x, y, dn, precision=precision)
    labels = batch + [lab for lab in xl if lab not in yl] + [lab for lab in yl if lab not in xl]
    return out, labels


def _pair_cost(xl, yl, keep, sizes):
    """The size of the intermediate that contracting this pair would make: it keeps the
    labels still needed by the output or the other operands."""
    return math.prod(sizes[lab] for lab in (set(xl) | set(yl)) & keep)


def _interleaved(args):
    """``einsum(op0, sublist0, op1, sublist1, ..., [out])`` as a subscript string."""
    def term(sub):
        return "".join("..." if s is Ellipsis else _LETTERS[operator.index(s)] for s in sub)

    operands, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(operands) > len(subs):
        out = operands.pop()
    spec = ",".join(term(s) for s in subs) + ("" if out is None else "->" + term(out))
    return spec, operands


def einsum(subscripts, *operands, optimize="greedy", precision=None,
           preferred_element_type=None, out=None):
    """Einstein summation, as ``numpy.einsum``: ``einsum("bij,bjk->bik", x, y)``.

    Supports implicit and explicit output, ``...``, repeated subscripts in one operand
    (diagonals), size-1 broadcasting and the interleaved ``(op, sublist, ...)`` form.
    Operands are contracted two at a time (greedily, smallest intermediate first), each step a
    ``dot_general``; ``optimize`` is accepted for compatibility.
    """
    if out is not None:
        raise NotImplementedError("fx.numpy.einsum: out= is not supported (fx arrays are "
                                  "immutable)")
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts,) + operands)
    if not operands:
        raise ValueError("fx.numpy.einsum: needs at least one operand")
    ops = promote_dtypes(*operands, name="fx.numpy.einsum")
    dtype = get_aval(ops[0]).dtype
    work = dtypes.canonicalize(preferred_element_type) if preferred_element_type else (
        dtypes.default_int_dtype() if dtype == dtypes.bool_ else dtype)
    ops = [lax.convert_element_type(x, work) for x in ops]
    in_labels, out_labels = _parse(subscripts, [get_aval(x).shape for x in ops])
    sizes = _sizes(ops, in_labels, subscripts)
    terms = []
    for x, labs in zip(ops, in_labels):
        x, labs = _squeeze_broadcast(x, labs, sizes)
        terms.append(_take_diagonals(x, labs))
    out_set = set(out_labels)
    while len(terms) > 1:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                keep = out_set.union(*(set(t[1]) for k, t in enumerate(terms) if k not in (i, j)))
                cost = _pair_cost(terms[i][1], terms[j][1], keep, sizes)
                if best is None or cost < best[0]:
                    best = (cost, i, j, keep)
        _, i, j, keep = best
        merged = _contract_pair(*terms[i], *terms[j], keep, precision)
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [merged]
    x, labs = _sum_out(*terms[0], lambda lab: lab not in out_set)
    res = lax.transpose(x, [labs.index(lab) for lab in out_labels])
    if dtype == dtypes.bool_ and preferred_element_type is None:
        res = lax.ne(res, 0)
    return res


# The rest of jax.numpy.linalg (decompositions, solves, the array-API names) lives in its own
# modules; these names are fx.numpy.linalg's only (not in __all__, so not in fx.numpy).
from fx.numpy.linalg_array_api import *  # noqa: E402, F403
from fx.numpy.linalg_decompositions import *  # noqa: E402, F403
from fx.numpy.linalg_determinants import *  # noqa: E402, F403
from fx.numpy.linalg_norms import *  # noqa: E402, F403
