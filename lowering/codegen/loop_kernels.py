"""The loop kernels generated for fusion groups: an elementwise group as a loop nest over its
output (flat and vectorizable where every index map is), a reduction group as loops over the
kept dimensions around the reduced ones (rows shared by cooperating lanes on a GPU), each
value built by a :class:`~fx.lowering.codegen.kernel_builder.KernelBuilder`.
``KERNEL_BUILDERS`` maps a group kind to its builder (operator selection's generated impls).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fx import dtypes
from fx.jaxpr import JaxprEqn, Var
from fx.lax import base
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.kernel_builder import HALF, KernelBuilder
from fx.lowering.fusion.groups import FusionGroup, GroupKind, reduction_prims
from fx.lowering.fusion.primitive_rules import compute_dtype, scalar_rules, wrapping


def _loops(shape: tuple[int, ...], body_fn: Callable, b: KernelBuilder) -> list[ir.Stmt]:
    """Nested loops over ``shape`` (the outermost one parallel) around ``body_fn(index)``."""
    if not shape:
        b.push()
        body_fn(())
        return b.pop()
    if len(shape) > 2 and shape[0] < 64:
        # Too few rows to share between threads: run the leading two dimensions as one.
        lead = shape[0] * shape[1]
        b.push()
        flat = ir.Sym("i0", ir.INDEX)
        i0, i1 = ir.idiv(flat, shape[1]), ir.imod(flat, shape[1])
        inner = _inner_loops(shape[2:], lambda rest: body_fn((i0, i1) + rest), b, start=2)
        for s in inner:
            b.emit(s)
        return [ir.Loop("i0", lead, tuple(b.pop()), parallel=True)]
    b.push()
    first = ir.Sym("i0", ir.INDEX)
    for s in _inner_loops(shape[1:], lambda rest: body_fn((first,) + rest), b, start=1):
        b.emit(s)
    return [ir.Loop("i0", shape[0], tuple(b.pop()), parallel=True)]


def _inner_loops(shape, body_fn, b: KernelBuilder, start: int) -> list[ir.Stmt]:
    if not shape:
        b.push()
        body_fn(())
        return b.pop()
    var = f"i{start}"
    b.push()
    for s in _inner_loops(shape[1:], lambda rest: body_fn((ir.Sym(var, ir.INDEX),) + rest), b,
                          start + 1):
        b.emit(s)
    return [ir.Loop(var, shape[0], tuple(b.pop()))]


VECTOR_WIDTH = 4
VECTOR_MIN_EXTENT = 4096


def elementwise_kernel(group: FusionGroup, name: str, inputs, outputs) -> ir.Kernel:
    """One pass over the group's iteration space storing every output."""
    b = KernelBuilder(group, name, inputs, outputs)
    b.hoist_scalars = True
    space = outputs[0].aval.shape
    if any(v.aval.shape != space for v in outputs):
        raise AssertionError(f"codegen: {group.label()} stores outputs of different shapes "
                             f"{[v.aval.shape for v in outputs]} from one iteration space")
    if is_flat(group, space):
        # Pure elementwise over same-shaped operands: one flat loop, contiguous and vectorizable.
        n = math.prod(space)
        b.flat = True
        b.push()
        b.store_all(outputs, (ir.Sym("i0", ir.INDEX),))
        # Wide (e.g. float4) accesses pay off on large flat loops; tiny ones stay compact.
        vector = VECTOR_WIDTH if n >= VECTOR_MIN_EXTENT else 1
        body = [ir.Loop("i0", n, tuple(b.pop()), parallel=True, vector=vector)]
    else:
        tail = _reshape_tail(group, outputs)
        if tail is None:
            body = _loops(space, lambda idx: b.store_all(outputs, idx), b)
        else:
            # The outputs are row-major reshapes (a flatten after a pooling window, say) of
            # values of one shape: iterate in that shape and store at the same linear
            # positions, so that the window's loads stay affine in the loop variables
            # (iterating the flat shape delinearized every load's index, with divisions).
            shape = next(iter(tail.values())).aval.shape
            body = _loops(shape, lambda idx: _store_reshaped(b, outputs, tail, idx, shape), b)
    return ir.Kernel(name, b.params(), tuple(b.top.stmts + body), work=math.prod(space))


def _reshape_tail(group: FusionGroup, outputs) -> dict | None:
    """``{output: its reshape's operand}`` when every output is a plain reshape, consumed by
    nothing else in the group, of a value computed in the group, all of one other shape."""
    made = {o: e for e in group.eqns for o in e.outvars}
    read = {v for e in group.eqns for v in e.invars if isinstance(v, Var)}
    tail = {}
    for v in outputs:
        e = made.get(v)
        if (e is None or e.primitive is not base.reshape_p or e.params.get("dimensions")
                is not None or v in read or not isinstance(e.invars[0], Var)
                or e.invars[0] not in made):
            return None
        tail[v] = e.invars[0]
    shapes = {u.aval.shape for u in tail.values()}
    if len(shapes) != 1 or outputs[0].aval.shape in shapes:
        return None
    return tail


def _store_reshaped(b: KernelBuilder, outputs, tail: dict, index, shape) -> None:
    """Store each output's operand at ``index`` of ``shape``, the same linear position."""
    vals = []
    for v in outputs:
        val, dt = b.value(tail[v], index), v.aval.dtype
        if dt in HALF:
            val = ir.Op("store_half", (val,), dt)
        elif val.dtype != dt:
            val = ir.Op("cast", (val,), dt)
        vals.append(val)
    for v, val in zip(outputs, vals, strict=True):
        b.emit(ir.Store(b.out_param[v], ir.linearize(index, shape), val))


def is_flat(group: FusionGroup, space) -> bool:
    prims = {e.primitive for e in group.eqns}
    if any(p not in scalar_rules for p in prims):
        return False
    return all(
        not getattr(v, "aval", None) or v.aval.shape in ((), space)
        for e in group.eqns for v in (*e.invars, *e.outvars)
    )


def reduction_kernel(group: FusionGroup, name: str, inputs, outputs) -> ir.Kernel:
    """Per output row: each reduction as a loop over the reduced axes, then the row's
    input-space outputs; output-space values are scalars of the row."""
    b = KernelBuilder(group, name, inputs, outputs)
    b.hoist_scalars = True
    in_shape, axes, out_shape = group.in_shape, group.axes, group.out_shape
    red_shape = tuple(in_shape[a] for a in axes)
    n_out = math.prod(out_shape)

    def full_index(o_idx, r_idx):
        it_o, it_r = iter(o_idx), iter(r_idx)
        return tuple(next(it_r) if d in axes else next(it_o) for d in range(len(in_shape)))

    # When the innermost input axis is reduced, a row is contiguous: lanes can share it
    # (coalesced on GPUs). Otherwise adjacent outputs are adjacent in memory: one lane each.
    b.cooperative = bool(in_shape) and (len(in_shape) - 1) in axes
    b.push()
    o = ir.Sym("o", ir.INDEX)
    o_idx = ir.delinearize(o, out_shape) if out_shape else ()
    for k, eqn in enumerate(e for e in group.eqns if e.primitive in reduction_prims):
        _emit_reduction(b, eqn, k, o_idx, red_shape, full_index)
    for v in outputs:
        if v.aval.shape == out_shape:
            b.store(v, o_idx, out_shape, leader_only=b.cooperative)
    in_space = [v for v in outputs if v.aval.shape == in_shape and in_shape != out_shape]
    if in_space:
        for s in _reduce_loops(b, red_shape, lambda r: [b.store(v, full_index(o_idx, r),
                                                                in_shape) for v in in_space]):
            b.emit(s)
    body = b.pop()
    # A column reduction (the innermost input axis kept, as in a bias gradient): adjacent
    # outputs read adjacent memory, so the loop over outputs vectorizes with a lane per output
    # (each lane sums its column in the same order as before), where one output at a time
    # strode through the whole input.
    columns = not b.cooperative and bool(in_shape) and in_shape[-1] > 1
    loop = ir.Loop("o", n_out, tuple(body), parallel=True, lanes=32 if b.cooperative else 1,
                   simd_iterations=columns)
    return ir.Kernel(name, b.params(), (*b.top.stmts, loop), work=math.prod(in_shape))


def _reduce_loops(b: KernelBuilder, red_shape, body_fn, reductions=()) -> list[ir.Stmt]:
    def rec(k, idx):
        if k == len(red_shape):
            body_fn(tuple(idx))
            return
        var = f"r{k}"
        b.push()
        rec(k + 1, idx + [ir.Sym(var, ir.INDEX)])
        inner = b.pop()
        innermost = k == len(red_shape) - 1
        coop = b.cooperative and innermost
        b.emit(ir.Loop(var, red_shape[k], tuple(inner), cooperative=coop,
                       reductions=tuple(reductions) if coop else ()))

    b.push()
    rec(0, [])
    return b.pop()


def _all_ones(dt):
    dt = np.dtype(dt)
    if dt == dtypes.bool_:
        return 1
    return int(np.iinfo(dt).max) if dt.kind == "u" else -1


_INIT = {
    "add": lambda dt: 0, "mul": lambda dt: 1,
    "max": lambda dt: -np.inf if dtypes.is_float(dt) else (0 if dt == dtypes.bool_ else
                                                            np.iinfo(dt).min),
    "min": lambda dt: np.inf if dtypes.is_float(dt) else (1 if dt == dtypes.bool_ else
                                                           np.iinfo(dt).max),
    "and": _all_ones, "or": lambda dt: 0,
}


def accumulator_dtype(eqn: JaxprEqn) -> np.dtype:
    """The dtype a (non-arg) reduction accumulates in: float32 sums in float64, others in
    their compute dtype."""
    dt = compute_dtype(eqn.outvars[0].aval.dtype)
    add = reduction_prims[eqn.primitive] == "add"
    return dtypes.float64 if dt == dtypes.float32 and add else dt


def initial(eqn: JaxprEqn) -> ir.Const:
    """A (non-arg) reduction's identity, in its accumulator dtype."""
    acc_dt = accumulator_dtype(eqn)
    return ir.Const(_INIT[reduction_prims[eqn.primitive]](eqn.outvars[0].aval.dtype), acc_dt)


def _emit_reduction(b: KernelBuilder, eqn: JaxprEqn, k: int, o_idx, red_shape, full_index):
    combine = reduction_prims[eqn.primitive]
    x = eqn.invars[0]
    out = eqn.outvars[0]
    acc = f"acc{k}"
    if combine in ("argmax", "argmin"):
        val_dt = compute_dtype(x.aval.dtype)
        best = f"best{k}"
        init = -np.inf if combine == "argmax" else np.inf
        if not dtypes.is_float(x.aval.dtype):
            info = np.iinfo(x.aval.dtype) if x.aval.dtype != dtypes.bool_ else None
            init = (info.min if combine == "argmax" else info.max) if info else (
                0 if combine == "argmax" else 1)
        idx_dt = np.dtype(eqn.params["index_dtype"])
        b.emit(ir.Decl(best, val_dt, ir.Const(init, val_dt)))
        b.emit(ir.Decl(acc, idx_dt, ir.Const(-1, idx_dt)))

        def body(r_idx):
            v = b.value(x, full_index(o_idx, r_idx))
            pos = ir.linearize(r_idx, red_shape)
            better = ir.Op("gt" if combine == "argmax" else "lt", (v, ir.Sym(best, val_dt)),
                           dtypes.bool_)
            first = ir.Op("lt", (ir.Sym(acc, idx_dt), ir.Const(0, idx_dt)), dtypes.bool_)
            if dtypes.is_float(x.aval.dtype):
                is_nan = ir.Op("ne", (v, v), dtypes.bool_)
                best_nan = ir.Op("ne", (ir.Sym(best, val_dt), ir.Sym(best, val_dt)), dtypes.bool_)
                better = ir.Op("or", (ir.Op("and", (better, ir.Op("not", (best_nan,),
                                                                   dtypes.bool_)), dtypes.bool_),
                                      ir.Op("and", (is_nan, ir.Op("not", (best_nan,),
                                                                  dtypes.bool_)), dtypes.bool_)),
                               dtypes.bool_)
            take = ir.Op("or", (better, first), dtypes.bool_)
            t = b.let(take)
            b.emit(ir.Assign(best, ir.Op("select", (t, v, ir.Sym(best, val_dt)), val_dt)))
            b.emit(ir.Assign(acc, ir.Op("select", (t, ir.Op("cast", (pos,), idx_dt),
                                                   ir.Sym(acc, idx_dt)), idx_dt)))

        for s in _reduce_loops(b, red_shape, body):
            b.emit(s)
        if b.cooperative:
            b.emit(ir.Combine(best, combine, val_dt, acc, idx_dt))
        b.externals[(out, o_idx)] = ir.Op("max", (ir.Sym(acc, idx_dt), ir.Const(0, idx_dt)),
                                          idx_dt)
        return
    dt, acc_dt = compute_dtype(out.aval.dtype), accumulator_dtype(eqn)
    b.emit(ir.Decl(acc, acc_dt, initial(eqn)))

    def body(r_idx):
        v = b.value(x, full_index(o_idx, r_idx))
        if acc_dt != v.dtype:
            v = ir.Op("cast", (v,), acc_dt)
        # (wrapping on wide signed ints: an int32 sum that overflows wraps, as in eager)
        b.emit(ir.Assign(acc, ir.Op(wrapping(combine, acc_dt), (ir.Sym(acc, acc_dt), v), acc_dt)))

    for s in _reduce_loops(b, red_shape, body, [(acc, combine)]):
        b.emit(s)
    if b.cooperative:
        b.emit(ir.Combine(acc, combine, acc_dt))
    result = ir.Sym(acc, acc_dt)
    if acc_dt != dt:
        result = ir.Op("cast", (result,), dt)
    b.externals[(out, o_idx)] = b.let(result)


KERNEL_BUILDERS = {
    GroupKind.ELEMENTWISE: elementwise_kernel,
    GroupKind.REDUCTION: reduction_kernel,
}
