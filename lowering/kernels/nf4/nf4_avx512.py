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
    return CKernel(name, params, _TEMPLATE, tuple(fields.items()), fallback, work=m * k * n)


def _ctype(dt) -> str:
    from fx.lowering.render.render import storage_type

    return storage_type(dt)


_TEMPLATE = r"""
#if defined(__AVX512F__) && defined(__x86_64__)
#include <immintrin.h>
/* rows m0 .. m0+ROWS of the output's strip j0 (see fx.lowering.kernels.nf4.nf4_avx512) */
static inline __attribute__((always_inline)) void {name}_tile(
    const float* x, const uint8_t* P, const float* S, __m512 code, float* y, int64_t j0,
    int64_t m0, const int ROWS) {{
  enum {{ K = {K}, N = {N}, H = {H}, BS = {BS}, G = {G}, PF = 16 }};
  __m512 acc[{R}][2 * {G}];
  for (int r = 0; r < ROWS; r++)
    for (int g = 0; g < 2 * G; g++) acc[r][g] = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi32(15);
  for (int64_t k = 0; k < K; k++) {{
    const uint8_t* row = P + k * (int64_t)H + j0;
    const int64_t at = k * (int64_t)N + j0;
    /* The strip's rows are H bytes apart: too far for the hardware prefetchers, which
       follow sequential lines; ask for the bytes and scales PF rows ahead. */
    if (k + PF < K) {{
      _mm_prefetch((const char*)(row + PF * (int64_t)H), _MM_HINT_T0);
      _mm_prefetch((const char*)(S + (at + PF * (int64_t)N) / BS), _MM_HINT_T0);
      _mm_prefetch((const char*)(S + (at + PF * (int64_t)N + H) / BS), _MM_HINT_T0);
    }}
    for (int g = 0; g < G; g++) {{
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(row + 16 * g)));
      const __m512 wl = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_and_si512(b, low), code),
                                      _mm512_set1_ps(S[(at + 16 * g) / BS]));
      const __m512 wh = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), code),
                                      _mm512_set1_ps(S[(at + H + 16 * g) / BS]));
      for (int r = 0; r < ROWS; r++) {{
        const __m512 xr = _mm512_set1_ps(x[(m0 + r) * (int64_t)K + k]);
        acc[r][2 * g] = _mm512_add_ps(acc[r][2 * g], _mm512_mul_ps(xr, wl));
        acc[r][2 * g + 1] = _mm512_add_ps(acc[r][2 * g + 1], _mm512_mul_ps(xr, wh));
      }}
    }}
  }}
  for (int r = 0; r < ROWS; r++)
    for (int g = 0; g < G; g++) {{
      _mm512_storeu_ps(y + (m0 + r) * (int64_t)N + j0 + 16 * g, acc[r][2 * g]);
      _mm512_storeu_ps(y + (m0 + r) * (int64_t)N + H + j0 + 16 * g, acc[r][2 * g + 1]);
    }}
}}
#endif
static void {name}({sig}) {{
#if !(defined(__AVX512F__) && defined(__x86_64__))
  {name}_ir({args});
#else
  enum {{ M = {M}, K = {K}, N = {N}, H = {H}, R = {R}, STRIP = 16 * {G} }};
  const __m512 code = _mm512_loadu_ps((const float*){code});
  #pragma omp parallel for schedule(static) if ((int64_t)M * K * N > 4000000)
  for (int64_t j0 = 0; j0 < H; j0 += STRIP) {{
    int64_t m0 = 0;
    for (; m0 + R <= M; m0 += R)
      {name}_tile({x}, (const uint8_t*){P}, {S}, code, {out}, j0, m0, R);
    if ({rest})
      {name}_tile({x}, (const uint8_t*){P}, {S}, code, {out}, j0, m0, {rest});
  }}
#endif
}}
"""


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
    return CKernel(name, params, _TRANSPOSED, tuple(fields.items()), fallback, work=m * k * n)


_TRANSPOSED = r"""
#if defined(__AVX512F__) && defined(__x86_64__)
#include <immintrin.h>
/* y[m0 .. m0+ROWS, k0 .. k0+KROWS] (see fx.lowering.kernels.nf4.nf4_avx512.transposed_kernel) */
static inline __attribute__((always_inline)) void {name}_tile(
    const float* x, const uint8_t* P, const float* S, __m512 code, float* y, int64_t k0,
    const int KROWS, int64_t m0, const int ROWS) {{
  enum {{ K = {K}, N = {N}, H = {H}, BS = {BS} }};
  __m512 acc[{KR}][{R}];
  for (int q = 0; q < KROWS; q++)
    for (int r = 0; r < ROWS; r++) acc[q][r] = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi32(15);
  for (int64_t j = 0; j < H; j += 16) {{
    __m512 xl[{R}], xh[{R}];
    for (int r = 0; r < ROWS; r++) {{
      xl[r] = _mm512_loadu_ps(x + (m0 + r) * (int64_t)N + j);
      xh[r] = _mm512_loadu_ps(x + (m0 + r) * (int64_t)N + H + j);
    }}
    for (int q = 0; q < KROWS; q++) {{
      const int64_t k = k0 + q;
      const __m512i b = _mm512_cvtepu8_epi32(
          _mm_loadu_si128((const __m128i*)(P + k * (int64_t)H + j)));
      const __m512 wl = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_and_si512(b, low), code),
                                      _mm512_set1_ps(S[(k * (int64_t)N + j) / BS]));
      const __m512 wh = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), code),
                                      _mm512_set1_ps(S[(k * (int64_t)N + H + j) / BS]));
      for (int r = 0; r < ROWS; r++) {{
        acc[q][r] = _mm512_add_ps(acc[q][r], _mm512_mul_ps(xl[r], wl));
        acc[q][r] = _mm512_add_ps(acc[q][r], _mm512_mul_ps(xh[r], wh));
      }}
    }}
  }}
  for (int q = 0; q < KROWS; q++)
    for (int r = 0; r < ROWS; r++)
      y[(m0 + r) * (int64_t)K + k0 + q] = _mm512_reduce_add_ps(acc[q][r]);
}}
#endif
static void {name}({sig}) {{
#if !(defined(__AVX512F__) && defined(__x86_64__))
  {name}_ir({args});
#else
  enum {{ M = {M}, K = {K}, R = {R}, KR = {KR} }};
  const __m512 code = _mm512_loadu_ps((const float*){code});
  #pragma omp parallel for schedule(static) if ((int64_t)M * K * {N} > 4000000)
  for (int64_t k0 = 0; k0 < K - {krest}; k0 += KR) {{
    int64_t m0 = 0;
    for (; m0 + R <= M; m0 += R)
      {name}_tile({x}, (const uint8_t*){P}, {S}, code, {out}, k0, KR, m0, R);
    if ({rest})
      {name}_tile({x}, (const uint8_t*){P}, {S}, code, {out}, k0, KR, m0, {rest});
  }}
  if ({krest}) {{
    const int64_t k0 = K - {krest};
    int64_t m0 = 0;
    for (; m0 + R <= M; m0 += R)
      {name}_tile({x}, (const uint8_t*){P}, {S}, code, {out}, k0, {krest}, m0, R);
    if ({rest})
      {name}_tile({x}, (const uint8_t*){P}, {S}, code, {out}, k0, {krest}, m0, {rest});
  }}
#endif
}}
"""
