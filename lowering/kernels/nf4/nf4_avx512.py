"""The NF4 dequantize-in-GEMM as an AVX-512 microkernel: the code book in a register.

``nf4_gemm``'s loop-IR kernel looks each code value up in the 16-float code buffer, which GCC
turns into one scalar load per lane (or a gather), and it adds each row's products into the
output in memory for every ``k``: at batch 1 that is arithmetic- and store-bound, about half
the speed of the float32 product it should beat. Here the 16 code values are one ``zmm``
register and a lookup is one ``vpermps`` of the nibbles; the sums stay in registers for the
whole ``k`` loop. A strip of ``G`` groups of 16 bytes of every row of ``packed`` (columns
``j .. j+16G`` from the low nibbles and ``H+j ..`` from the high ones) is unpacked per ``k``
(``vpmovzxbd``, an and, a shift), looked up, scaled by the group's block scale (one per 16
columns: 16 divides the block size and ``N/2``), and multiplied into ``2G`` accumulators per
row of a tile of up to ``R`` rows; then stored. Multiplies and adds are separate instructions
in ``k`` order, one product at a time, so every output is bit-equal to the loop-IR kernel and
to ``fx.quant.nf4.reference_matmul``.

``nf4_gemm.cpu_kernel`` returns this kernel where the layout allows (16 divides the block size
and ``N/2``); the source compiled for a target without AVX-512F calls the loop-IR kernel,
rendered beside it.
"""

from __future__ import annotations

from fx.lowering import resources
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.c_kernel import CKernel

LANES = 16
TILE_ROWS = 3  # 2G accumulators per row: with G = 4, 24 of the 32 zmm registers


def applies(block_size: int, half: int) -> bool:
    return block_size % LANES == 0 and half % LANES == 0


def kernel(name: str, params: tuple[ir.Param, ...], operands: tuple[str, ...], m: int, k: int,
           n: int, block_size: int, fallback: ir.Kernel) -> CKernel:
    x, packed, scales, code, out = operands
    half = n // 2
    groups = next(g for g in (4, 2, 1) if half % (LANES * g) == 0)
    rows = min(m, TILE_ROWS)
    sig = ", ".join(f"{'' if p.is_output else 'const '}{_ctype(p.dtype)}* {p.name}"
                    for p in params)
    fields = dict(sig=sig, args=", ".join(p.name for p in params), x=x, P=packed, S=scales,
                  code=code, out=out, M=m, K=k, N=n, H=half, BS=block_size, G=groups, R=rows,
                  rest=m % rows)
    return CKernel(name, params, _text("kernel"), tuple(fields.items()), fallback, work=m * k * n)


def _ctype(dt) -> str:
    from fx.lowering.render.renderer import storage_type

    return storage_type(dt)


def _text(name: str) -> str:
    """Section ``name`` of nf4_avx512.c (a template ``CKernel`` fills)."""
    return resources.sections(__package__, "nf4_avx512.c")[name]


# --- the transposed product: y = x @ W.T (the input gradient) -----------------------------------

T_ROWS_W = 4  # rows of W per step: each load of x serves four of them
T_ROWS_X = 3  # rows of x per tile: 4 x 3 accumulators


def transposed_kernel(name: str, params: tuple[ir.Param, ...], operands: tuple[str, ...],
                      m: int, k: int, n: int, block_size: int, fallback: ir.Kernel
                      ) -> CKernel:
    """``y[r, k] = sum_n x[r, n] W[k, n]``: per step, ``T_ROWS_W`` rows of ``W`` (contiguous
    bytes of ``packed``, read in order) are unpacked 16 columns at a time and multiplied by
    the matching 16 columns of up to ``T_ROWS_X`` rows of ``x`` into one accumulator per
    (row of W, row of x); the 16 lanes are summed at the end."""
    x, packed, scales, code, out = operands
    rows = min(m, T_ROWS_X)
    sig = ", ".join(f"{'' if p.is_output else 'const '}{_ctype(p.dtype)}* {p.name}"
                    for p in params)
    fields = dict(sig=sig, args=", ".join(p.name for p in params), x=x, P=packed, S=scales,
                  code=code, out=out, M=m, K=k, N=n, H=n // 2, BS=block_size, R=rows,
                  rest=m % rows, KR=T_ROWS_W, krest=k % T_ROWS_W)
    return CKernel(name, params, _text("transposed"), tuple(fields.items()), fallback,
                   work=m * k * n)
