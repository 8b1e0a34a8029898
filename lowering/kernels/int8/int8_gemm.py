"""A generated int8 × int8 → int32 GEMM for CPU, exact, with the group's epilogue fused.

``C[m, n] = sum_k A[m, k] B[k, n]`` for a ``dot_general`` of int8 operands with
``preferred_element_type=int32`` and no batch dimensions, read as matrices over flattened
dimensions: A's contracting dimensions trailing (or the first of two), B's leading or
trailing, consecutive and in order — a dense layer's ``(M, K) x (K, N)`` or ``(N, K)``
weight, or a convolution's ``(B, *Q, *window, I)`` patches times its ``(O, *window, I)``
kernel. The strides are baked in; an operand may be a reshape of a buffer, read in place.
x86's integer dot-product instructions (``vpdpbusd`` with
AVX-512 VNNI or AVX-VNNI; ``vpmaddubsw`` before them) multiply *unsigned* by signed bytes,
so the kernel reads A offset by 128 as uint8 (``a ^ 0x80``) and subtracts
``128 * sum_k B[k, n]`` from each column afterwards — or, with fewer rows than columns, B
offset and ``128 * sum_k A[m, k]`` subtracted from each row (the row sums accumulate in the
tiles' own loop, where the column sums would cost a pass over B); every step is integer
arithmetic, so the
result is exact (the offset sums stay below 2^31 for K <= 2^16; longer products are left to
the NumPy implementation).

The kernel is loop IR (``kernel_ir``), so both dialects render it. Its parallel loop runs
over blocks of NR columns (NR the largest of 4..1 dividing N); each block sums its columns
of B once, then computes MR×NR tiles of C as MR·NR dot products of K-long rows (A's rows, B's
columns; contiguous when B is laid out ``(N, K)``, as ``fx.quant`` stores its weights): one
loop over k with MR·NR ``int32 += (int32)(uint8)(a ^ 0x80) * (int32)b`` accumulators, which
GCC's vectorizer turns into one dot-product instruction per accumulator per vector of k
(its ``usdot_prod`` pattern; ``vpmaddwd`` on AVX2, still exact). M, N and K are constants of
the kernel; the rows M leaves over make one smaller tile.

Where A is K-contiguous with 16 rows or more, the kernel is ``int8_vnni``'s microkernel over
packed columns (no horizontal sums), with this one as its fallback for targets without
AVX-512 VNNI.

The epilogue (the int32 product's dequantization, bias, activation and the next layer's
requantization, when fusion put them in the group) is generated from the group's equations by the
ordinary codegen after each tile, reading the corrected sums in place of the product.
"""

from __future__ import annotations

import itertools

from fx import dtypes
from fx.jaxpr import Var
from fx.lax import base
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.kernel_builder import KernelBuilder
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.int8 import int8_vnni
from fx.lowering.kernels.int8.int8_epilogue import index_of
from fx.lowering.kernels.int8.int8_products import (
    canonical_int8_dot,
    int8_packed_dot_p,
    layout,
    operand_source,
)

MR, NR = 4, 4
def applies(g: FusionGroup) -> bool:
    return (g.kind is GroupKind.GEMM and canonical_int8_dot(g.anchor)
            and all(e.primitive is base.reshape_p for e in g.prologue))


def describe(g: FusionGroup) -> str:
    m, n, k = _sizes(g.anchor)
    packed = ", B packed at compile time" if g.anchor.primitive is int8_packed_dot_p else ""
    return (f"int8 dot products (uint8-offset A, vpdpbusd where the ISA has it{packed}), "
            f"M={m} N={n} K={k}")


def _sizes(dot) -> tuple[int, int, int]:
    return layout(dot)[:3]


def _int(e: ir.Expr) -> ir.Expr:
    return ir.Op("cast", (e,), dtypes.int32)


def _i32(v: int) -> ir.Const:
    return ir.Const(v, dtypes.int32)


def gemm_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]) -> ir.Kernel:
    dot = group.anchor
    lhs, rhs = dot.invars[:2]
    # Element strides of A[m, k] and B[k, n] in their buffers.
    M, N, K, (a_sm, a_sk), (b_sk, b_sn), lhs_free, rhs_free = layout(dot)
    nr = next(d for d in range(NR, 0, -1) if N % d == 0)  # the column blocks tile N exactly

    epi = FusionGroup(GroupKind.ELEMENTWISE, group.epilogue, group.id)
    b = KernelBuilder(epi, name, inputs, outputs)
    a_buf, b_buf = b.param_of[operand_source(group, lhs)], b.param_of[operand_source(group, rhs)]
    n0 = ir.imul(ir.Sym("nb", ir.INDEX), ir.const_index(nr))
    k = ir.Sym("k", ir.INDEX)

    # Which operand is offset to unsigned bytes: A (then 128 * B's column sums are subtracted,
    # one pass over B per column block) or, for fewer rows than columns, B (then 128 * A's
    # row sums, accumulated in the tile's own loop over k: no extra pass at all).
    offset_b = M <= N

    def byte(buf, index: ir.Expr, unsigned: bool) -> ir.Expr:
        x = ir.Load(buf, index, dtypes.int8)
        if not unsigned:
            return _int(x)
        return _int(ir.Op("xor", (ir.Op("cast", (x,), dtypes.uint8),
                                  ir.Const(0x80, dtypes.uint8)), dtypes.uint8))

    def a_at(m: ir.Expr) -> ir.Expr:  # A[m, k] widened (+ 128 as an unsigned byte: offset A)
        return byte(a_buf, ir.iadd(ir.imul(m, ir.const_index(a_sm)),
                                   ir.imul(k, ir.const_index(a_sk))), not offset_b)

    def b_at(j: int) -> ir.Expr:
        n = ir.iadd(n0, ir.const_index(j))
        return byte(b_buf, ir.iadd(ir.imul(k, ir.const_index(b_sk)),
                                   ir.imul(n, ir.const_index(b_sn))), offset_b)

    def add(name: str, value: ir.Expr) -> ir.Stmt:
        return ir.Assign(name, ir.Op("add", (ir.Sym(name, dtypes.int32), value), dtypes.int32))

    body: list[ir.Stmt] = []
    if not offset_b:  # the block's column sums (times 128: the offset A's rows carry)
        body += [ir.Decl(f"cs{j}", dtypes.int32, _i32(0)) for j in range(nr)]
        body.append(ir.Loop("k", K, tuple(add(f"cs{j}", b_at(j)) for j in range(nr))))

    def tile(m0: ir.Expr, mr: int) -> list[ir.Stmt]:
        acc = {(i, j): f"s{i}_{j}" for i, j in itertools.product(range(mr), range(nr))}
        stmts: list[ir.Stmt] = [ir.Decl(a, dtypes.int32, _i32(0)) for a in acc.values()]
        inner: list[ir.Stmt] = [ir.Let(f"x{i}", a_at(ir.iadd(m0, ir.const_index(i))))
                                for i in range(mr)]
        inner += [ir.Let(f"y{j}", b_at(j)) for j in range(nr)]
        inner += [add(a, ir.Op("mul", (ir.Sym(f"x{i}", dtypes.int32),
                                       ir.Sym(f"y{j}", dtypes.int32)), dtypes.int32))
                  for (i, j), a in acc.items()]
        if offset_b:  # the tile's row sums, in the same loop
            stmts += [ir.Decl(f"rs{i}", dtypes.int32, _i32(0)) for i in range(mr)]
            inner += [add(f"rs{i}", ir.Sym(f"x{i}", dtypes.int32)) for i in range(mr)]
        stmts.append(ir.Loop("k", K, tuple(inner)))
        b.push()
        for (i, j), a in acc.items():
            at = (*index_of(ir.iadd(m0, ir.const_index(i)), lhs_free),
                  *index_of(ir.iadd(n0, ir.const_index(j)), rhs_free))
            sums = ir.Sym(f"rs{i}" if offset_b else f"cs{j}", dtypes.int32)
            correction = ir.Op("mul", (_i32(128), sums), dtypes.int32)
            b.externals[(dot.outvars[0], at)] = ir.Op(
                "sub", (ir.Sym(a, dtypes.int32), correction), dtypes.int32)
            b.store_all(outputs, at)
        return stmts + b.pop()

    if M >= MR:
        mt = ir.Sym("mt", ir.INDEX)
        body.append(ir.Loop("mt", M // MR, tuple(tile(ir.imul(mt, ir.const_index(MR)), MR))))
    if M % MR:
        body += tile(ir.const_index(M - M % MR), M % MR)
    loop = ir.Loop("nb", N // nr, tuple(body), parallel=True)
    kernel = ir.Kernel(name, b.params(), (loop,), work=M * N * K, wide_vectors=True)
    if dot.primitive is int8_packed_dot_p or (
            a_sk == 1 and M >= int8_vnni.MIN_ROWS and K <= int8_vnni.MAX_K):
        return int8_vnni.gemm_kernel(group, name, inputs, outputs, kernel)
    return kernel
