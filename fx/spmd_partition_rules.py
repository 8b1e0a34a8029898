"""What each equation of a program becomes in one shard's program (:mod:`fx.spmd_partition`):
the rules, given the states of its operands (``REPLICATED``, ``PARTIAL``, or the split
dimension), return the states of its results and a function computing them from the
operands' local values, with the collectives that moves between states need.

A rule takes ``(eqn, ins, layout)``: the equation, its operands' states, and the layout
(``layout.axes``, the batch mesh axes, and ``layout.n``, their devices), and returns
``(outs, run, gathered)``: the results' states, ``run(local operands) -> local results``,
and whether split operands had to be gathered. :func:`equation_rule` picks it; an equation no rule
takes runs whole on gathered operands (:func:`_whole`). The index rules (a gather or scatter
of each row's own row, the cross-entropy's ``take_along_axis``) also take what
:func:`track_positions` knows of the index values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from fx import lax
from fx.jaxpr import Literal
from fx.lax import primitives as prims
from fx.lowering.fusion.primitive_rules import Pattern, pattern_of

REPLICATED = None
PARTIAL = "partial"

_LINEAR_SUMS = (prims.add_p, prims.sub_p, prims.add_any_p)


# --- collectives on local values ---------------------------------------------------------------

def _gather(x, d, layout):
    return lax.all_gather(x, layout.axes, axis=d, tiled=True)


def _local(x, d, layout):
    """A replicated value's block along ``d``."""
    size = x.shape[d] // layout.n
    return lax.dynamic_slice_in_dim(x, lax.axis_index(layout.axes) * size, size, d)


def _to_replicated(x, s, layout):
    if s is PARTIAL:
        return lax.psum(x, layout.axes)
    if s is REPLICATED:
        return x
    return _gather(x, s, layout)


def convert(x, s, want, layout):
    """``x`` in state ``s`` as split along ``want`` (None: replicated)."""
    if s == want and s is not PARTIAL:
        return x
    x = _to_replicated(x, s, layout)
    return x if want is None else _local(x, want, layout)


# --- rules -------------------------------------------------------------------------------------

def _whole(eqn, ins, layout):
    """Run the equation on whole operands: split ones gathered, partial ones summed."""
    prim, params = eqn.primitive, eqn.params

    def run(vals):
        vals = [_to_replicated(v, s, layout) for v, s in zip(vals, ins)]
        out = prim.bind(*vals, **params)
        return list(out) if prim.multiple_results else [out]

    gathered = any(s is not REPLICATED and s is not PARTIAL for s in ins)
    return [REPLICATED] * len(eqn.outvars), run, gathered


def _bind_local(eqn, params, pre: Sequence[Callable | None]):
    """Bind with ``params`` after applying ``pre[i]`` (if any) to operand ``i``."""
    prim = eqn.primitive

    def run(vals):
        vals = [v if f is None else f(v) for v, f in zip(vals, pre)]
        out = prim.bind(*vals, **params)
        return list(out) if prim.multiple_results else [out]

    return run


def _divisible(size: int, layout) -> bool:
    return size % layout.n == 0


def _localized(shape: tuple, d: int, layout) -> tuple:
    return shape[:d] + (shape[d] // layout.n,) + shape[d + 1:]


def _elementwise(eqn, ins, layout):
    split = [s for s in ins if s is not REPLICATED and s is not PARTIAL]
    literal = [isinstance(v, Literal) for v in eqn.invars]
    if split:
        d = split[0]
        pre = []
        for v, s in zip(eqn.invars, ins):
            if isinstance(v, Literal) or s == d or (s is REPLICATED and not v.aval.shape):
                pre.append(None)
            elif not v.aval.shape:  # a partial scalar
                pre.append(lambda x, s=s: _to_replicated(x, s, layout))
            else:
                pre.append(lambda x, s=s: convert(x, s, d, layout))
        return [d] * len(eqn.outvars), _bind_local(eqn, eqn.params, pre), False
    if PARTIAL in ins and _stays_partial(eqn, ins, literal):
        return [PARTIAL] * len(eqn.outvars), _bind_local(eqn, eqn.params,
                                                         [None] * len(ins)), False
    return _whole(eqn, ins, layout)


def _stays_partial(eqn, ins, literal) -> bool:
    """Whether the equation maps a sum of terms to the sum of its results on the terms."""
    p = eqn.primitive
    if p in _LINEAR_SUMS:
        return all(s is PARTIAL and not lit for s, lit in zip(ins, literal))
    if p is prims.neg_p:
        return True
    if p is prims.convert_element_type_p:
        return (eqn.invars[0].aval.dtype.kind == "f"
                and eqn.outvars[0].aval.dtype.kind == "f")
    if p is prims.mul_p:
        return sum(s is PARTIAL for s in ins) == 1
    if p is prims.div_p:
        return ins[0] is PARTIAL and ins[1] is REPLICATED
    return False


def _broadcast_in_dim(eqn, ins, layout):
    (s,) = ins[:1]
    if s is REPLICATED or s is PARTIAL:
        if s is PARTIAL and len(ins) > 1:
            return _whole(eqn, ins, layout)
        return [s], _bind_local(eqn, eqn.params, [None] * len(ins)), False
    if len(ins) > 1:  # dynamic shapes: not partitioned
        return _whole(eqn, ins, layout)
    bd = eqn.params["broadcast_dimensions"]
    out_d = bd[s]
    params = dict(eqn.params, shape=_localized(tuple(eqn.params["shape"]), out_d, layout))
    return [out_d], _bind_local(eqn, params, [None]), False


def _transpose(eqn, ins, layout):
    (s,) = ins
    if s is REPLICATED or s is PARTIAL:
        return [s], _bind_local(eqn, eqn.params, [None]), False
    return [list(eqn.params["permutation"]).index(s)], _bind_local(eqn, eqn.params,
                                                                  [None]), False


def _squeeze(eqn, ins, layout):
    (s,) = ins
    if s is REPLICATED or s is PARTIAL:
        return [s], _bind_local(eqn, eqn.params, [None]), False
    dims = eqn.params["dimensions"]
    if s in dims:  # a split dimension of size 1: one device holds it all
        return _whole(eqn, ins, layout)
    return [s - sum(1 for x in dims if x < s)], _bind_local(eqn, eqn.params, [None]), False


def _reshape(eqn, ins, layout):
    s = ins[0]
    if s is REPLICATED or s is PARTIAL:
        if len(ins) > 1 and s is PARTIAL:
            return _whole(eqn, ins, layout)
        return [s], _bind_local(eqn, eqn.params, [None] * len(ins)), False
    if len(ins) > 1 or eqn.params.get("dimensions") is not None:
        return _whole(eqn, ins, layout)
    shape = tuple(eqn.invars[0].aval.shape)
    new = tuple(eqn.params["new_sizes"])
    before = math.prod(shape[:s])
    # the output dimension that starts where the split one does, with a size the devices
    # divide and whose blocks are the input's blocks (the split dimension leads its group)
    for e in range(len(new)):
        if math.prod(new[:e]) == before and new[e] % layout.n == 0:
            inner_in = math.prod(shape[s + 1:])
            inner_out = math.prod(new[e + 1:])
            block_in = shape[s] // layout.n * inner_in
            block_out = new[e] // layout.n * inner_out
            if block_in == block_out:
                params = dict(eqn.params, new_sizes=_localized(new, e, layout))
                return [e], _bind_local(eqn, params, [None]), False
    return _whole(eqn, ins, layout)


_REDUCE_ACROSS = {prims.reduce_max_p: lax.pmax, prims.reduce_min_p: lax.pmin}


def _reduction(eqn, ins, layout):
    (s,) = ins
    axes = tuple(eqn.params["axes"])
    if s is REPLICATED:
        return [REPLICATED], _bind_local(eqn, eqn.params, [None]), False
    if s is PARTIAL:
        if eqn.primitive is prims.reduce_sum_p:
            return [PARTIAL], _bind_local(eqn, eqn.params, [None]), False
        return _whole(eqn, ins, layout)
    if s not in axes:
        return [s - sum(1 for a in axes if a < s)], _bind_local(eqn, eqn.params, [None]), False
    if eqn.primitive is prims.reduce_sum_p:
        return [PARTIAL], _bind_local(eqn, eqn.params, [None]), False
    across = _REDUCE_ACROSS.get(eqn.primitive)
    if across is None:
        return _whole(eqn, ins, layout)
    local = _bind_local(eqn, eqn.params, [None])
    return [REPLICATED], lambda vals: [across(local(vals)[0], layout.axes)], False


def _dot_general(eqn, ins, layout):
    sl, sr = ins[:2]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs_nd, rhs_nd = (len(v.aval.shape) for v in eqn.invars[:2])
    lfree = [d for d in range(lhs_nd) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs_nd) if d not in rc and d not in rb]
    split = lambda s: s is not REPLICATED and s is not PARTIAL  # noqa: E731
    if len(ins) > 2 or (PARTIAL in (sl, sr) and (split(sl) or split(sr)
                                                 or (sl is PARTIAL and sr is PARTIAL))):
        return _whole(eqn, ins, layout)
    if PARTIAL in (sl, sr) or not (split(sl) or split(sr)):
        state = PARTIAL if PARTIAL in (sl, sr) else REPLICATED
        return [state], _bind_local(eqn, eqn.params, [None, None]), False

    def partner(d, mine_c, mine_b, other_c, other_b):
        if d in mine_c:
            return other_c[list(mine_c).index(d)], "contract"
        if d in mine_b:
            return other_b[list(mine_b).index(d)], "batch"
        return None, "free"

    if split(sl):
        pd, kind = partner(sl, lc, lb, rc, rb)
    else:
        pd, kind = partner(sr, rc, rb, lc, lb)
    other = sr if split(sl) else sl
    if kind == "free":
        # the other operand must be whole; the output is split where this free dim lands
        pre_other = (lambda x: _to_replicated(x, other, layout)) if split(other) else None
        if split(sl):
            out_d = len(lb) + lfree.index(sl)
            pre = [None, pre_other]
        else:
            out_d = len(lb) + len(lfree) + rfree.index(sr)
            pre = [pre_other, None]
        return [out_d], _bind_local(eqn, eqn.params, pre), bool(pre_other)
    # contracted or batch: the other operand split along the partner dimension
    def to_partner(x, s=other, pd=pd):
        return convert(x, s, pd, layout)

    pre = [None, to_partner] if split(sl) else [to_partner, None]
    if kind == "contract":
        return [PARTIAL], _bind_local(eqn, eqn.params, pre), False
    out_d = (list(lb).index(sl) if split(sl) else list(rb).index(sr))
    return [out_d], _bind_local(eqn, eqn.params, pre), False


def _concatenate(eqn, ins, layout):
    split = [s for s in ins if s is not REPLICATED and s is not PARTIAL]
    if not split or split[0] == eqn.params["dimension"]:
        return _whole(eqn, ins, layout)
    d = split[0]
    pre = [None if s == d else (lambda x, s=s: convert(x, s, d, layout)) for s in ins]
    return [d], _bind_local(eqn, eqn.params, pre), False


def _no_operands(eqn, ins, layout):
    return [REPLICATED] * len(eqn.outvars), _bind_local(eqn, eqn.params, []), False


_RULES: dict = {
    prims.broadcast_in_dim_p: _broadcast_in_dim,
    prims.transpose_p: _transpose,
    prims.squeeze_p: _squeeze,
    prims.reshape_p: _reshape,
    prims.reduce_sum_p: _reduction,
    prims.reduce_max_p: _reduction,
    prims.reduce_min_p: _reduction,
    prims.reduce_prod_p: _reduction,
    prims.reduce_and_p: _reduction,
    prims.reduce_or_p: _reduction,
    prims.argmax_p: _reduction,
    prims.argmin_p: _reduction,
    prims.dot_general_p: _dot_general,
    prims.concatenate_p: _concatenate,
}


def _is_elementwise(eqn) -> bool:
    if pattern_of(eqn.primitive) != Pattern.ELEMENTWISE or len(eqn.outvars) != 1:
        return False
    shape = tuple(eqn.outvars[0].aval.shape)
    return all(isinstance(v, Literal) or tuple(v.aval.shape) in ((), shape)
               for v in eqn.invars)


def equation_rule(eqn, ins, layout):
    if not eqn.invars:
        return _no_operands(eqn, ins, layout)
    if all(s is REPLICATED for s in ins):
        return [REPLICATED] * len(eqn.outvars), _bind_local(eqn, eqn.params,
                                                            [None] * len(ins)), False
    rule = _RULES.get(eqn.primitive)
    if rule is None and _is_elementwise(eqn):
        rule = _elementwise
    if rule is None:
        return _whole(eqn, ins, layout)
    outs, run, gathered = rule(eqn, ins, layout)
    # a split output dimension the devices do not divide: run whole instead
    for v, s in zip(eqn.outvars, outs):
        if s is not REPLICATED and s is not PARTIAL and not _divisible(v.aval.shape[s], layout):
            return _whole(eqn, ins, layout)
    return outs, run, gathered


# --- indexing by position ----------------------------------------------------------------------
#
# A gather that reads, for each row of a split batch, the same row of a split operand (the
# cross-entropy's take_along_axis: indices whose column is an iota along the batch) stays
# local: each device reads its own rows. ``positions`` follows the integer values known to be
# positions: ("along", k), a value equal to its index along dimension k (an iota, an arange
# constant, their broadcasts); ("cols", {c: k}), index rows whose column c is such a value.

def positions_of_consts(constvars, consts) -> dict:
    out = {}
    for v, c in zip(constvars, consts):
        c = np.asarray(c)
        if c.ndim == 1 and c.dtype.kind in "iu" and np.array_equal(c, np.arange(c.shape[0])):
            out[v] = ("along", 0)
    return out


def track_positions(eqn, positions: dict) -> None:
    p, params = eqn.primitive, eqn.params
    if p is prims.iota_p and np.dtype(params["dtype"]).kind in "iu":
        positions[eqn.outvars[0]] = ("along", params["dimension"])
        return
    if isinstance(eqn.invars[0] if eqn.invars else None, Literal):
        return
    first = positions.get(eqn.invars[0]) if eqn.invars else None
    if p is prims.broadcast_in_dim_p and first and first[0] == "along" and len(eqn.invars) == 1:
        positions[eqn.outvars[0]] = ("along", params["broadcast_dimensions"][first[1]])
    elif p is prims.concatenate_p:
        last = eqn.outvars[0].aval.ndim - 1
        if params["dimension"] != last:
            return
        cols, at = {}, 0
        for v in eqn.invars:
            if isinstance(v, Literal):
                return
            pos = positions.get(v)
            width = v.aval.shape[last]
            if pos and pos[0] == "along" and width == 1 and pos[1] != last:
                cols[at] = pos[1]
            elif pos and pos[0] == "cols":
                cols.update({at + c: k for c, k in pos[1].items()})
            at += width
        if cols:
            positions[eqn.outvars[0]] = ("cols", cols)


def _position_column(eqn, ins, layout, cols, operand_index: int):
    """For a gather or scatter whose index rows are split along dimension e and whose column
    j is the global position along e: (j, the operand dimension it indexes, e); else None."""
    indices = eqn.invars[1]
    e = ins[1]
    if cols is None or cols[0] != "cols" or e is REPLICATED or e is PARTIAL:
        return None
    if e >= indices.aval.ndim - 1:
        return None
    axes = tuple(eqn.params["axes"])
    operand = eqn.invars[operand_index]
    for j, k in cols[1].items():
        if k == e and j < len(axes):
            d = axes[j]
            if operand.aval.shape[d] == indices.aval.shape[e] and ins[operand_index] in (
                    REPLICATED, d):
                return j, d, e
    return None


def _local_positions(idx, j: int, size: int, layout):
    """Index rows with column j moved from global positions to this device's block."""
    ncol = idx.shape[-1]
    mask = np.zeros(ncol, idx.dtype)
    mask[j] = 1
    off = lax.convert_element_type(lax.axis_index(layout.axes) * size, idx.dtype)
    shift = lax.mul(lax.broadcast_in_dim(mask, idx.shape, (idx.ndim - 1,)),
                    lax.broadcast_in_dim(off, idx.shape, ()))
    return lax.sub(idx, shift)


def _gather_rows(eqn, ins, layout, cols):
    found = _position_column(eqn, ins, layout, cols, 0)
    if found is None:
        return None
    j, d, e = found
    size = eqn.invars[0].aval.shape[d] // layout.n
    pre = [None if ins[0] == d else (lambda x: _local(x, d, layout)),
           lambda i: _local_positions(i, j, size, layout)]
    return [e], _bind_local(eqn, eqn.params, pre), False


def _scatter_rows(eqn, ins, layout, cols):
    found = _position_column(eqn, ins, layout, cols, 0)
    if found is None or ins[2] is PARTIAL:
        return None
    j, d, e = found
    size = eqn.invars[0].aval.shape[d] // layout.n
    pre = [None if ins[0] == d else (lambda x: _local(x, d, layout)),
           lambda i: _local_positions(i, j, size, layout),
           None if ins[2] == e else (lambda u, s=ins[2]: convert(u, s, e, layout))]
    return [d], _bind_local(eqn, eqn.params, pre), False


INDEX_RULES: dict = {}


def _register_index_rules() -> None:
    from fx.lax import indexing

    INDEX_RULES[indexing.gather_p] = _gather_rows
    INDEX_RULES[indexing.scatter_add_p] = _scatter_rows


_register_index_rules()
