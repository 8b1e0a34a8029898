"""The collectives that move parts of values between the lanes of a named axis, as primitives:
``psum_scatter_p`` (a reduce-scatter), ``ppermute_p`` and ``all_to_all_p``.

``fx.lax.psum_scatter``, ``ppermute`` and ``all_to_all`` (``fx.lax.permutes``) bind them for
one axis name. Under ``vmap(axis_name=...)`` their batching rules compute the lanes' result
from the batched value (a sum and a reshape, a gather of lanes, a transpose of chunks); under
``fx.pmap`` or a mesh bound across processes (``fx.distributed``) they reach the jaxpr and run
as one collective each (MPI's reduce-scatter, send-receive and all-to-all), so each process
sends what its peers need rather than gathering every lane's value.

Parameters (all static): ``axis_name``; ``axis_size`` (the lanes, read when the collective
is bound); ``psum_scatter_p``: ``scatter_dimension``, ``tiled`` (False: that dimension has
``axis_size`` entries and is removed; True: a multiple of it, lane ``i`` keeps block ``i``);
``ppermute_p``: ``perm``, a tuple of ``(source, destination)`` lane pairs, lanes that receive
nothing get zeros; ``all_to_all_p`` (tiled form): ``split_axis``, ``concat_axis``: chunk ``j``
of ``split_axis`` goes to lane ``j``, which concatenates what it receives along
``concat_axis`` in lane order.

Transposes (grad): a reduce-scatter's is an all-gather of the cotangent blocks and an
all-gather's (``fx.lax.parallel.all_gather_p``, registered here beside its pair) a
reduce-scatter of the cotangent rows, a permutation's the inverse permutation, an
all-to-all's the all-to-all with the split and concatenation axes swapped.
"""

from __future__ import annotations

import numpy as np

from fx.core import Primitive, get_aval
from fx.interpreters import batching, transpose
from fx.interpreters.batching import moveaxis, not_mapped
from fx.lax import base
from fx.lax.composites import index_in_dim, stack
from fx.lax.elementwise import full_like
from fx.lax.parallel import _unbound, all_gather_p


def _always(rule):
    rule.always = True  # runs even when no operand is batched (the lanes still combine)
    return rule


def _lanes_first(axis, x, d):
    """``x`` with its lanes on dimension 0 (an unbatched value: the same on every lane)."""
    return batching.matchaxis(axis.size, d, 0, x)


# --- psum_scatter ------------------------------------------------------------------------------

psum_scatter_p = Primitive("psum_scatter")
psum_scatter_p.def_impl(_unbound("psum_scatter"))


@psum_scatter_p.def_abstract_eval
def _psum_scatter_abstract_eval(x, *, axis_name, axis_size, scatter_dimension, tiled):
    shape = list(x.shape)
    if tiled:
        shape[scatter_dimension] //= axis_size
    else:
        del shape[scatter_dimension]
    return x.update(shape=tuple(shape))


@_always
def _psum_scatter_batch(axis, vals, dims, *, axis_name, axis_size, scatter_dimension, tiled):
    (x,), (d,) = vals, dims
    if axis.name != axis_name:
        if d is not_mapped:
            return psum_scatter_p.bind(x, axis_name=axis_name, axis_size=axis_size,
                                       scatter_dimension=scatter_dimension, tiled=tiled), d
        return psum_scatter_p.bind(moveaxis(x, d, 0), axis_name=axis_name,
                                   axis_size=axis_size, scatter_dimension=scatter_dimension + 1,
                                   tiled=tiled), 0
    total = base.reduce_sum(_lanes_first(axis, x, d), (0,))
    if tiled:  # the scattered dimension as (lane, block): the lane is the batch dimension
        shape = get_aval(total).shape
        s = scatter_dimension
        total = base.reshape(total, shape[:s] + (axis.size, shape[s] // axis.size) +
                             shape[s + 1:])
    return total, scatter_dimension


batching.batch_rules[psum_scatter_p] = _psum_scatter_batch


def _psum_scatter_transpose(ct, x, *, axis_name, axis_size, scatter_dimension, tiled):
    # Each lane's block came from every lane's operand: each operand's cotangent is every
    # lane's block cotangent, gathered in lane order.
    every = moveaxis(all_gather_p.bind(ct, axis_name=axis_name, axis_size=axis_size), 0,
                     scatter_dimension)
    if tiled:
        shape = get_aval(every).shape
        s = scatter_dimension
        every = base.reshape(every, shape[:s] + (shape[s] * shape[s + 1],) + shape[s + 2:])
    return [every]


transpose.deflinear(psum_scatter_p, _psum_scatter_transpose)


def _all_gather_transpose(ct, x, *, axis_name, axis_size):
    # Every lane's output stacks all lanes' x, so lane i's cotangent is the sum over lanes of
    # their output cotangents at row i: a reduce-scatter of the rows.
    return [psum_scatter_p.bind(ct, axis_name=axis_name, axis_size=axis_size,
                                scatter_dimension=0, tiled=False)]


transpose.deflinear(all_gather_p, _all_gather_transpose)

# --- ppermute ----------------------------------------------------------------------------------

ppermute_p = Primitive("ppermute")
ppermute_p.def_impl(_unbound("ppermute"))
ppermute_p.def_abstract_eval(lambda x, *, axis_name, perm: x)


@_always
def _ppermute_batch(axis, vals, dims, *, axis_name, perm):
    (x,), (d,) = vals, dims
    if axis.name != axis_name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    lanes = _lanes_first(axis, x, d)
    source = dict((dst, src) for src, dst in perm)
    zero = None
    rows = []
    for lane in range(axis.size):
        if lane in source:
            rows.append(index_in_dim(lanes, source[lane], 0, keepdims=False))
        else:
            if zero is None:
                zero = full_like(index_in_dim(lanes, 0, 0, keepdims=False), 0)
            rows.append(zero)
    return stack(rows, 0), 0


batching.batch_rules[ppermute_p] = _ppermute_batch
transpose.deflinear(ppermute_p, lambda ct, x, *, axis_name, perm: [
    ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))])

# --- all_to_all --------------------------------------------------------------------------------

all_to_all_p = Primitive("all_to_all")
all_to_all_p.def_impl(_unbound("all_to_all"))


@all_to_all_p.def_abstract_eval
def _all_to_all_abstract_eval(x, *, axis_name, axis_size, split_axis, concat_axis):
    shape = list(x.shape)
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return x.update(shape=tuple(shape))


@_always
def _all_to_all_batch(axis, vals, dims, *, axis_name, axis_size, split_axis, concat_axis):
    (x,), (d,) = vals, dims
    if axis.name != axis_name:
        if d is not_mapped:
            return all_to_all_p.bind(x, axis_name=axis_name, axis_size=axis_size,
                                     split_axis=split_axis, concat_axis=concat_axis), d
        return all_to_all_p.bind(moveaxis(x, d, 0), axis_name=axis_name, axis_size=axis_size,
                                 split_axis=split_axis + 1, concat_axis=concat_axis + 1), 0
    n = axis.size
    lanes = _lanes_first(axis, x, d)  # (sender j, *shape)
    shape = get_aval(lanes).shape[1:]
    s, c = split_axis, concat_axis
    # Split dimension s into (chunk, k): dims are [j, shape[:s], chunk, k, shape[s+1:]].
    k = shape[s] // n
    chunked = base.reshape(lanes, (n,) + shape[:s] + (n, k) + shape[s + 1:])

    def dim(t):  # where dimension t of the operand (its piece, for s) lies in ``chunked``
        return t + 1 if t < s else (s + 2 if t == s else t + 2)

    # The receiving lane (the chunk index) becomes the batch dimension; the sender j goes
    # just before the concatenation dimension's piece (senders in lane order, major).
    order = [s + 1]
    sizes = []
    for t in range(len(shape)):
        piece = k if t == s else shape[t]
        if t == c:
            order += [0, dim(t)]
            sizes.append(n * piece)
        else:
            order.append(dim(t))
            sizes.append(piece)
    out = base.reshape(base.transpose(chunked, order), (n,) + tuple(sizes))
    return out, 0


batching.batch_rules[all_to_all_p] = _all_to_all_batch
transpose.deflinear(all_to_all_p, lambda ct, x, *, axis_name, axis_size, split_axis,
                    concat_axis: [all_to_all_p.bind(ct, axis_name=axis_name,
                                                    axis_size=axis_size, split_axis=concat_axis,
                                                    concat_axis=split_axis)])

# The data-moving collectives fx.distributed runs across processes (beside parallel's).
move_prims = frozenset([psum_scatter_p, ppermute_p, all_to_all_p])


def as_perm(pairs) -> tuple[tuple[int, int], ...]:
    """``perm`` as the primitive's static parameter (a tuple of int pairs)."""
    return tuple((int(s), int(t)) for s, t in np.asarray(pairs, np.int64).reshape(-1, 2))
