"""The CPU kernel of a column reduction: a reduction group whose innermost input axis is kept
(a bias gradient, ``sum(g, (0, 1, 2))`` of an NHWC ``g``), so that every reduced row is a
contiguous run of ``C`` columns.

The generic reduction kernel (``loop_kernels.reduction_kernel``) computes one output at a
time, each striding through the whole input; this one streams the rows through a local row of
``C`` accumulators (one SIMD lane per column), and splits the reduced rows into ``K`` blocks
of equal length that run in parallel::

    for p in range(O * K):               # parallel: (outer output row, block of rows)
        acc[:] = identity
        for j in range(rows):             # the block's rows, in order
            acc[:] = acc op value(o, k * rows + j, :)
        part[p, :] = acc                  # (K == 1: the epilogue and stores, directly)
    for o in range(O):                    # then, for each outer output row
        part[o, 0, :] op= part[o, 1, :] ... part[o, K-1, :]   # the blocks, in order
        part[o, 0, :] op= value(o, K * rows + j, :) for the R - K * rows rows left over
        epilogue and stores of each column

``K`` and the block length depend on the shapes only, so every run and every thread count
sums in the same order. Each column accumulates in the type the generic kernel uses (float32
sums in float64); ``K == 1`` (a small reduction, or enough outer rows to share) sums each
column in exactly the generic kernel's order, and ``K > 1`` in ``K`` sequential runs added in
order, which rounds no worse.

:func:`applies` says which groups it takes: non-arg reductions with no input-space outputs,
none of whose operands depends on another reduction of the group, with between 2 and
``MAX_COLUMNS`` columns and no empty dimension. The local rows and the block partials live on
the stack, bounded by ``MAX_COLUMNS`` and ``MAX_PARTIALS``.
"""

from __future__ import annotations

import math

from fx.jaxpr import Var
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.kernel_builder import KernelBuilder
from fx.lowering.codegen.loop_kernels import accumulator_dtype, initial, reduction_kernel
from fx.lowering.fusion.groups import FusionGroup, GroupKind, reduction_prims
from fx.lowering.fusion.primitive_rules import compute_dtype, wrapping
from fx.lowering.select.generable import generable

MAX_COLUMNS = 2048  # a local row of accumulators per thread (16 KiB of float64)
MAX_PARTIALS = 8192  # elements of all blocks' partial rows together (64 KiB of float64)
BLOCK_WORK = 16384  # input elements a block of rows reads, at least
BLOCKS = 64  # blocks (times outer rows) that keep any core count busy


def applies(g: FusionGroup) -> bool:
    """Whether :func:`column_reduction_kernel` builds ``g`` (see the module docstring)."""
    if g.kind is not GroupKind.REDUCTION or not g.axes or not math.prod(g.in_shape):
        return False
    if len(g.in_shape) - 1 in g.axes or not 2 <= g.in_shape[-1] <= MAX_COLUMNS:
        return False
    reductions = [e for e in g.eqns if e.primitive in reduction_prims]
    if not reductions or any(reduction_prims[e.primitive] in ("argmax", "argmin")
                             for e in reductions):
        return False
    if any(v.aval.shape != g.out_shape for v in g.outputs):
        return False
    # An operand computed from another reduction's result needs that result first.
    producer = {v: e for e in g.eqns for v in e.outvars}
    results = {v for e in reductions for v in e.outvars}
    stack = [v for e in reductions for v in e.invars if isinstance(v, Var)]
    seen: set = set()
    while stack:
        v = stack.pop()
        if v in results:
            return False
        if v in seen or v not in producer:
            continue
        seen.add(v)
        stack.extend(u for u in producer[v].invars if isinstance(u, Var))
    return generable(g)


def blocks(in_shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """``K``, the number of blocks the reduced rows are split into."""
    columns = in_shape[-1]
    rows = math.prod(in_shape[a] for a in axes)
    outer = math.prod(in_shape) // (rows * columns)
    return max(1, min(-(-BLOCKS // outer), rows * columns // BLOCK_WORK,
                      MAX_PARTIALS // (outer * columns)))


def column_reduction_kernel(group: FusionGroup, name: str, inputs, outputs) -> ir.Kernel:
    """The kernel of a column reduction (see the module docstring); the generic reduction
    kernel for a group :func:`applies` refuses."""
    in_shape, axes, out_shape = group.in_shape, group.axes, group.out_shape
    if not applies(group) or any(v.aval.shape != out_shape for v in outputs):
        return reduction_kernel(group, name, inputs, outputs)
    b = KernelBuilder(group, name, inputs, outputs)
    b.hoist_scalars = True
    reductions = [e for e in group.eqns if e.primitive in reduction_prims]
    red_shape = tuple(in_shape[a] for a in axes)
    columns, outer_shape = in_shape[-1], out_shape[:-1]
    n_rows, n_outer = math.prod(red_shape), math.prod(outer_shape)
    k_blocks = blocks(in_shape, axes)
    rows = n_rows // k_blocks
    left = n_rows - k_blocks * rows
    acc_dt = [accumulator_dtype(e) for e in reductions]
    col = ir.Sym("c", ir.INDEX)

    def full_index(outer_idx, row):
        r_idx = iter(ir.delinearize(row, red_shape))
        kept = iter((*outer_idx, col))
        return tuple(next(r_idx) if d in axes else next(kept) for d in range(len(in_shape)))

    def columns_loop(fill) -> ir.Loop:
        b.push()
        fill()
        return ir.Loop("c", columns, tuple(b.pop()))

    def accumulate(targets, outer_idx, row) -> None:
        # Each reduction's row of accumulators (``targets[i]``: array and element) takes the
        # input row ``row``.
        def fill():
            vals = []
            for e, dt in zip(reductions, acc_dt):
                v = b.value(e.invars[0], full_index(outer_idx, row))
                vals.append(ir.Op("cast", (v,), dt) if v.dtype != dt else v)
            for e, dt, (buf, at), v in zip(reductions, acc_dt, targets, vals):
                op = wrapping(reduction_prims[e.primitive], dt)
                b.emit(ir.Store(buf, at, ir.Op(op, (ir.Load(buf, at, dt), v), dt)))
        return columns_loop(fill)

    def finish(results, outer_idx) -> ir.Loop:
        # The group's outputs of each column, from each reduction's result there.
        def fill():
            o_idx = (*outer_idx, col)
            for e, (buf, at), dt in zip(reductions, results, acc_dt):
                value: ir.Expr = ir.Load(buf, at, dt)
                out_dt = compute_dtype(e.outvars[0].aval.dtype)
                if out_dt != dt:
                    value = ir.Op("cast", (value,), out_dt)
                b.externals[(e.outvars[0], o_idx)] = b.let(value)
            for v in outputs:
                b.store(v, o_idx, out_shape)
        return columns_loop(fill)

    p = ir.Sym("p", ir.INDEX)
    outer = ir.idiv(p, k_blocks)
    outer_idx = tuple(ir.delinearize(outer, outer_shape)) if outer_shape else ()
    block = ir.imod(p, k_blocks)
    accs = [f"acc{i}" for i in range(len(reductions))]
    parts = [f"part{i}" for i in range(len(reductions))]
    b.push()
    for a, dt in zip(accs, acc_dt):
        b.emit(ir.Array(a, dt, columns))
    b.emit(ir.Loop("c", columns, tuple(ir.Store(a, col, initial(e))
                                       for a, e in zip(accs, reductions))))
    j = ir.Sym("j", ir.INDEX)
    b.push()
    b.emit(accumulate([(a, col) for a in accs], outer_idx,
                      ir.iadd(ir.imul(block, ir.const_index(rows)), j)))
    b.emit(ir.Loop("j", rows, tuple(b.pop())))
    if k_blocks == 1:
        b.emit(finish([(a, col) for a in accs], outer_idx))
    else:
        at = ir.iadd(ir.imul(p, ir.const_index(columns)), col)
        b.emit(ir.Loop("c", columns, tuple(ir.Store(q, at, ir.Load(a, col, dt))
                                           for q, a, dt in zip(parts, accs, acc_dt))))
    tasks = ir.Loop("p", n_outer * k_blocks, tuple(b.pop()), parallel=True)
    body: list[ir.Stmt] = []
    if k_blocks > 1:
        body += [ir.Array(q, dt, n_outer * k_blocks * columns) for q, dt in zip(parts, acc_dt)]
    body.append(tasks)
    if k_blocks > 1:
        o = ir.Sym("o", ir.INDEX)
        outer_idx = tuple(ir.delinearize(o, outer_shape)) if outer_shape else ()
        first = ir.iadd(ir.imul(o, ir.const_index(k_blocks * columns)), col)
        k = ir.Sym("k", ir.INDEX)
        later = ir.iadd(first, ir.imul(ir.iadd(k, ir.const_index(1)),
                                       ir.const_index(columns)))
        b.push()
        merge = tuple(ir.Store(q, first, ir.Op(wrapping(reduction_prims[e.primitive], dt),
                                               (ir.Load(q, first, dt), ir.Load(q, later, dt)),
                                               dt))
                      for q, e, dt in zip(parts, reductions, acc_dt))
        b.emit(ir.Loop("k", k_blocks - 1, (ir.Loop("c", columns, merge),)))
        if left:
            b.push()
            b.emit(accumulate([(q, first) for q in parts], outer_idx,
                              ir.iadd(ir.const_index(k_blocks * rows), j)))
            b.emit(ir.Loop("j", left, tuple(b.pop())))
        b.emit(finish([(q, first) for q in parts], outer_idx))
        body.append(ir.Loop("o", n_outer, tuple(b.pop())))
    return ir.Kernel(name, b.params(), (*b.top.stmts, *body), work=math.prod(in_shape),
                     dialects=("c",))  # a CPU strategy (op_info registers it for the CPU)
