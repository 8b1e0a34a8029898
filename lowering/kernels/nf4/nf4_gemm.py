"""The fused NF4 dequantize-in-GEMM kernels: ``y = x @ W`` with ``W`` read as 4-bit codes.

For ``nf4_dot(x, packed, scales, code)`` (see ``fx.quant.nf4``; ``x`` is ``(M, K)``, ``W`` is
``(K, N)``, byte ``j`` of row ``k`` of ``packed`` holds columns ``j`` and ``j + N/2``), each
weight is made where it is used: unpack the nibble, look the code value up (a 16-float
buffer), multiply by its block's scale, multiply by ``x`` and add. No float32 copy of ``W`` is
written, so the kernel reads ``K·N/2`` bytes of weight instead of ``4·K·N``: the product of a
batch of a few rows is bound by memory traffic, which this divides by about 7.

Both kernels sum over ``k`` in order, one product at a time (``y = y + x·w``, no fused
multiply-add: the C flags have ``-ffp-contract=off``, NVRTC ``--fmad=false``), so the result is
bit-equal to ``fx.quant.nf4.reference_matmul`` whatever the vector width or thread count.

- CPU (``cpu_kernel``): the parallel loop runs over chunks of ``C`` bytes of a row (``C`` the
  largest of 64..1 dividing both the block size and ``N/2``: the chunk's low and high halves
  then each lie in one scale block, whose scale is loaded once per ``k``). For each tile of up
  to ``MR`` rows of ``x`` and each ``k``, one straight loop over the chunk's bytes unpacks,
  looks up and scales two weights and adds their products into the tile's output rows (in L1:
  ``MR·2C`` floats). That loop is what GCC vectorizes (the lookup a gather on AVX2/AVX-512).
- CUDA (``cuda_kernel``): one thread per byte column (two output columns), the tile's
  ``2·MR`` sums in registers over the ``k`` loop; consecutive threads read consecutive bytes.

Where AVX-512F is there, the CPU kernel is ``nf4_avx512``'s microkernel (the code book in a
register, the sums in registers), this loop IR its fallback.

The transposed product (``transposed=True``: the input gradient, ``x @ W.T``) has its own
kernels on the CPU (``transposed_kernel``: a dot product per row of ``W``); on CUDA it runs as
its NumPy impl.
"""

from __future__ import annotations

import math
import os

from fx import dtypes
from fx.core import Primitive
from fx.jaxpr import Var
from fx.lax import base
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.fusion import primitive_rules
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.nf4 import nf4_avx512
from fx.lowering.select.cost import flops_rules
from fx.lowering.select.op_impl import host_only_prims

MR = 4  # rows of x per tile: each unpacked weight is used MR times
F32, I32 = dtypes.float32, dtypes.int32

# fx.quant.nf4's primitive, which that module registers on import (register_nf4_dot): the
# compiler sits below fx.quant and never imports it. None until then, when no jaxpr can hold it.
nf4_dot_p: Primitive | None = None


def register_nf4_dot(prim: Primitive) -> None:
    """Lower ``prim`` (``fx.quant.nf4.nf4_dot_p``) with these kernels: its pattern, its flops
    and the ``applies`` test of the ``*.nf4_gemm`` implementations in ``op_info``."""
    global nf4_dot_p
    nf4_dot_p = prim
    # Its NumPy impl has no CuPy counterpart: on CUDA a product the kernel does not take (the
    # transposed one) runs on the host, with copies around it.
    host_only_prims.add(prim)
    # A GEMM-like anchor: its elementwise consumers (bias, activation) join its group.
    primitive_rules.patterns[prim] = primitive_rules.Pattern.OUT_ELEMENTWISE_FUSABLE
    # The multiply-adds, plus ~10 operations per weight to unpack, look up and scale it (what
    # the NumPy impl spends dequantizing before its BLAS call).
    flops_rules[prim] = lambda e: (2.0 * e.invars[0].aval.shape[0] + 10.0) * math.prod(
        e.invars[1].aval.shape) * 2


def applies(g: FusionGroup, transposed: bool = False) -> bool:
    """The forward product (or, with ``transposed``, either product), its operands buffers
    or row-major reshapes of them (views with the same flat layout: a batch of rows
    flattened to ``M``)."""
    if g.kind is not GroupKind.GEMM:
        return False
    e = g.anchor
    return (e.primitive is nf4_dot_p and (transposed or not e.params["transposed"])
            and all(p.primitive is base.reshape_p for p in g.prologue)
            and all(isinstance(v, Var) for v in e.invars))


def _source(group: FusionGroup, v: Var) -> Var:
    """The buffer behind ``v``: through the prologue's reshapes to a group input."""
    made = {o: p for p in group.prologue for o in p.outvars}
    while v in made:
        v = made[v].invars[0]
    return v


def _sizes(e) -> tuple[int, int, int]:
    x, packed = e.invars[0], e.invars[1]
    return x.aval.shape[0], packed.aval.shape[0], 2 * packed.aval.shape[1]


def chunk(block_size: int, half: int) -> int:
    g = math.gcd(block_size, half)
    return next(c for c in (64, 32, 16, 8, 4, 2, 1) if g % c == 0)


def describe(g: FusionGroup) -> str:
    m, k, n = _sizes(g.anchor)
    if g.anchor.params["transposed"]:
        return (f"NF4 dequantize-in-GEMM, transposed (x @ W.T: a dot product per row of W), "
                f"M={m} N={n} K={k} block={g.anchor.params['block_size']}")
    return (f"NF4 dequantize-in-GEMM (nibble unpack, code lookup, block scale, in-order sum "
            f"over k), M={m} N={n} K={k} block={g.anchor.params['block_size']}")


def cost(g: FusionGroup) -> float:
    """~0.1 ns per weight and tile of rows for the unpack/lookup/scale (vector lanes), plus
    ~0.05 ns per multiply-add into the tile's rows."""
    m, k, n = _sizes(g.anchor)
    return 2000.0 + 0.1 * k * n * math.ceil(m / MR) + 0.05 * m * k * n


def _f(op: str, *args: ir.Expr) -> ir.Expr:
    return ir.Op(op, args, F32)


def _weight(packed: str, code: str, byte_at: ir.Expr, scale_lo: ir.Expr, scale_hi: ir.Expr):
    """The two weights of one byte: ``code[nibble] * scale`` (low nibble, high nibble). The
    lookup is a load from the 16-float ``code`` buffer: GCC vectorizes it as a gather where the
    tuning favours one (``-march=native`` on recent Intel), else as one load per lane. (A tree
    of 15 selects measured slower there.)"""
    byte = ir.Op("cast", (ir.Load(packed, byte_at, dtypes.uint8),), I32)
    lo = ir.Op("and", (byte, ir.Const(15, I32)), I32)
    hi = ir.Op("shr_logical", (byte, ir.Const(4, I32)), I32)
    return (_f("mul", ir.Load(code, lo, F32), scale_lo),
            _f("mul", ir.Load(code, hi, F32), scale_hi))


def _byte_weights(packed: str, scales: str, code: str, k: ir.Expr, j: ir.Expr, n: int,
                  block_size: int):
    """The two weights of byte ``j`` of row ``k`` of ``packed`` (columns ``j`` and
    ``j + n/2``), each scaled by its own block's scale."""
    half, row = n // 2, ir.imul(k, ir.const_index(n))
    return _weight(packed, code, ir.iadd(ir.imul(k, ir.const_index(half)), j),
                   ir.Load(scales, ir.idiv(ir.iadd(row, j), block_size), F32),
                   ir.Load(scales, ir.idiv(ir.iadd(row, ir.iadd(j, ir.const_index(half))),
                                           block_size), F32))


def _operands(group: FusionGroup, inputs: list[Var], outputs: list[Var]):
    e = group.anchor
    names = {v: f"in{i}" for i, v in enumerate(inputs)}
    x, packed, scales, code = (names[_source(group, v)] for v in e.invars)
    (prod,) = outputs
    if prod is not e.outvars[0]:
        raise AssertionError("nf4_gemm: the kernel writes the product only (no epilogue)")
    params = tuple([ir.Param(f"in{i}", v.aval.dtype, v.aval.size, False)
                    for i, v in enumerate(inputs)]
                   + [ir.Param("out0", prod.aval.dtype, prod.aval.size, True)])
    return e, (x, packed, scales, code, "out0"), params


def _tiles(m: int):
    """(first row, rows) of each tile of up to MR rows."""
    return [(r, min(MR, m - r)) for r in range(0, m, MR)]


def strip(block_size: int, half: int, strips: int) -> tuple[int, int]:
    """(C, S): chunks of ``C`` bytes (one scale each per half), ``S`` of them per strip: the
    strips (the parallel loop's iterations) are at most ``strips`` (halving while even) and
    each reads ``C·S`` consecutive bytes of every row, which the hardware prefetchers follow.
    (One chunk per iteration strides through memory a row apart: measured 2-3x slower.)"""
    c = chunk(block_size, half)
    s = 1
    while (half // (c * s)) % 2 == 0 and half // (c * s) > strips:
        s *= 2
    return c, s


# One strip per core: the kernel runs where it is compiled (the C backend).
STRIPS = max(1, os.cpu_count() or 1)


def cpu_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]
               ) -> ir.Kernel:
    if group.anchor.params["transposed"]:
        return transposed_kernel(group, name, inputs, outputs)
    e, (x, packed, scales, code, out), params = _operands(group, inputs, outputs)
    M, K, N = _sizes(e)
    H, bs = N // 2, e.params["block_size"]
    C, S = strip(bs, H, STRIPS)
    k, jj = ir.Sym("k", ir.INDEX), ir.Sym("jj", ir.INDEX)
    first = ir.imul(ir.Sym("jb", ir.INDEX), ir.const_index(C * S))  # the strip's first byte
    j0 = ir.iadd(first, ir.imul(ir.Sym("s", ir.INDEX), ir.const_index(C)))  # the chunk's
    col = ir.iadd(j0, jj)  # the low half's column; the high half's is col + H

    def at(row: int, column: ir.Expr) -> ir.Expr:
        return ir.iadd(ir.const_index(row * N), column)

    body: list[ir.Stmt] = []
    for r0, mr in _tiles(M):
        zero = []
        for i in range(mr):
            for c in (ir.iadd(first, jj), ir.iadd(first, ir.iadd(jj, ir.const_index(H)))):
                zero.append(ir.Store(out, at(r0 + i, c), ir.Const(0.0, F32)))
        body.append(ir.Loop("jj", C * S, tuple(zero)))
        row_k = ir.imul(k, ir.const_index(N))
        per_chunk: list[ir.Stmt] = [
            ir.Let("slo", ir.Load(scales, ir.idiv(ir.iadd(row_k, j0), bs), F32)),
            ir.Let("shi", ir.Load(scales, ir.idiv(ir.iadd(row_k, ir.iadd(
                j0, ir.const_index(H))), bs), F32))]
        lo, hi = _weight(packed, code, ir.iadd(ir.imul(k, ir.const_index(H)), col),
                         ir.Sym("slo", F32), ir.Sym("shi", F32))
        inner: list[ir.Stmt] = [ir.Let("wlo", lo), ir.Let("whi", hi)]
        for i in range(mr):
            xi = ir.Sym(f"x{i}", F32)
            for w, c in (("wlo", col), ("whi", ir.iadd(col, ir.const_index(H)))):
                idx = at(r0 + i, c)
                inner.append(ir.Store(out, idx, _f("add", ir.Load(out, idx, F32),
                                                   _f("mul", xi, ir.Sym(w, F32)))))
        per_chunk.append(ir.Loop("jj", C, tuple(inner)))
        per_k: list[ir.Stmt] = [
            ir.Let(f"x{i}", ir.Load(x, ir.iadd(ir.const_index((r0 + i) * K), k), F32))
            for i in range(mr)]
        per_k.append(ir.Loop("s", S, tuple(per_chunk)))
        body.append(ir.Loop("k", K, tuple(per_k)))
    loop = ir.Loop("jb", H // (C * S), tuple(body), parallel=True)
    kernel = ir.Kernel(name, params, (loop,), work=M * K * N)
    if nf4_avx512.applies(bs, H):  # the code book in a register, the sums in registers
        return nf4_avx512.kernel(name, params, (x, packed, scales, code, out), M, K, N, bs,
                                 kernel)
    return kernel


def cuda_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]
                ) -> ir.Kernel:
    e, (x, packed, scales, code, out), params = _operands(group, inputs, outputs)
    M, K, N = _sizes(e)
    H, bs = N // 2, e.params["block_size"]
    j, k = ir.Sym("j", ir.INDEX), ir.Sym("k", ir.INDEX)
    lo, hi = _byte_weights(packed, scales, code, k, j, N, bs)
    body: list[ir.Stmt] = []
    for r0, mr in _tiles(M):
        accs = [(f"a{r0 + i}_{h}", i, h) for i in range(mr) for h in (0, 1)]
        body += [ir.Decl(a, F32, ir.Const(0.0, F32)) for a, _, _ in accs]
        per_k: list[ir.Stmt] = [ir.Let("wlo", lo), ir.Let("whi", hi)]
        for a, i, h in accs:
            xi = ir.Load(x, ir.iadd(ir.const_index((r0 + i) * K), k), F32)
            w = ir.Sym("whi" if h else "wlo", F32)
            per_k.append(ir.Assign(a, _f("add", ir.Sym(a, F32), _f("mul", xi, w))))
        body.append(ir.Loop("k", K, tuple(per_k)))
        for a, i, h in accs:
            column = ir.iadd(j, ir.const_index(H)) if h else j
            body.append(ir.Store(out, ir.iadd(ir.const_index((r0 + i) * N), column),
                                 ir.Sym(a, F32)))
    loop = ir.Loop("j", H, tuple(body), parallel=True)
    return ir.Kernel(name, params, (loop,), work=M * K * N)


def transposed_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]
                      ) -> ir.Kernel:
    """``y = x @ W.T`` (the input gradient of a product by NF4 weights): ``x`` is ``(M, N)``,
    ``y`` is ``(M, K)``, each output the dot product of a row of ``x`` with row ``k`` of
    ``W``, unpacked, looked up and scaled where it is read (a row of ``packed`` is
    contiguous: the parallel loop runs over ``k``). The loop IR sums in column order, one
    product at a time, in float32; the AVX-512 microkernel (``nf4_avx512``) sums 16 lanes
    apart and then across them: both agree with the NumPy product to rounding, not bit for
    bit (the dense product's BLAS order is not defined either)."""
    e, (x, packed, scales, code, out), params = _operands(group, inputs, outputs)
    M, K, N = _sizes(e)
    H, bs = N // 2, e.params["block_size"]
    j, k = ir.Sym("j", ir.INDEX), ir.Sym("k", ir.INDEX)
    lo, hi = _byte_weights(packed, scales, code, k, j, N, bs)
    body: list[ir.Stmt] = []
    for r0, mr in _tiles(M):
        accs = [f"a{r0 + i}" for i in range(mr)]
        body += [ir.Decl(a, F32, ir.Const(0.0, F32)) for a in accs]
        per_j: list[ir.Stmt] = [ir.Let("wlo", lo), ir.Let("whi", hi)]
        for i, a in enumerate(accs):
            for w, column in (("wlo", j), ("whi", ir.iadd(j, ir.const_index(H)))):
                xi = ir.Load(x, ir.iadd(ir.const_index((r0 + i) * N), column), F32)
                per_j.append(ir.Assign(a, _f("add", ir.Sym(a, F32),
                                             _f("mul", xi, ir.Sym(w, F32)))))
        body.append(ir.Loop("j", H, tuple(per_j)))
        body += [ir.Store(out, ir.iadd(ir.const_index((r0 + i) * K), k), ir.Sym(a, F32))
                 for i, a in enumerate(accs)]
    kernel = ir.Kernel(name, params, (ir.Loop("k", K, tuple(body), parallel=True),),
                       work=M * K * N)
    if nf4_avx512.applies(bs, H):
        return nf4_avx512.transposed_kernel(name, params, (x, packed, scales, code, out), M,
                                            K, N, bs, kernel)
    return kernel
