// The NF4 dequantize-in-GEMM as AVX-512 microkernels (see fx.lowering.kernels.nf4.nf4_avx512):
// C, with string.Template placeholders. Both kernels call ${name}_ir (the loop-IR kernel
// rendered beside them) where the target lacks AVX-512F. Common placeholders: ${name}, ${sig}
// and ${args} (the parameters declared and passed), the parameters ${x} (the activations),
// ${P} (packed codes), ${S} (block scales), ${code} (the 16 code values), ${out}; ${M} ${K}
// ${N} the product, ${H} = N / 2, ${BS} the block size, ${R} the rows of x per tile and
// ${rest} = M mod R. Sections:
//   kernel      y = x @ W: ${G} groups of 16 bytes per strip.
//   transposed  y = x @ W.T: ${KR} rows of W per step, ${krest} = K mod KR.
//@ kernel

#if defined(__AVX512F__) && defined(__x86_64__)
#include <immintrin.h>
/* rows m0 .. m0+ROWS of the output's strip j0 (see fx.lowering.kernels.nf4.nf4_avx512) */
static inline __attribute__((always_inline)) void ${name}_tile(
    const float* x, const uint8_t* P, const float* S, __m512 code, float* y, int64_t j0,
    int64_t m0, const int ROWS) {
  enum { K = ${K}, N = ${N}, H = ${H}, BS = ${BS}, G = ${G}, PF = 16 };
  __m512 acc[${R}][2 * ${G}];
  for (int r = 0; r < ROWS; r++)
    for (int g = 0; g < 2 * G; g++) acc[r][g] = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi32(15);
  for (int64_t k = 0; k < K; k++) {
    const uint8_t* row = P + k * (int64_t)H + j0;
    const int64_t at = k * (int64_t)N + j0;
    /* The strip's rows are H bytes apart: too far for the hardware prefetchers, which
       follow sequential lines; ask for the bytes and scales PF rows ahead. */
    if (k + PF < K) {
      _mm_prefetch((const char*)(row + PF * (int64_t)H), _MM_HINT_T0);
      _mm_prefetch((const char*)(S + (at + PF * (int64_t)N) / BS), _MM_HINT_T0);
      _mm_prefetch((const char*)(S + (at + PF * (int64_t)N + H) / BS), _MM_HINT_T0);
    }
    for (int g = 0; g < G; g++) {
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(row + 16 * g)));
      const __m512 wl = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_and_si512(b, low), code),
                                      _mm512_set1_ps(S[(at + 16 * g) / BS]));
      const __m512 wh = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), code),
                                      _mm512_set1_ps(S[(at + H + 16 * g) / BS]));
      for (int r = 0; r < ROWS; r++) {
        const __m512 xr = _mm512_set1_ps(x[(m0 + r) * (int64_t)K + k]);
        acc[r][2 * g] = _mm512_add_ps(acc[r][2 * g], _mm512_mul_ps(xr, wl));
        acc[r][2 * g + 1] = _mm512_add_ps(acc[r][2 * g + 1], _mm512_mul_ps(xr, wh));
      }
    }
  }
  for (int r = 0; r < ROWS; r++)
    for (int g = 0; g < G; g++) {
      _mm512_storeu_ps(y + (m0 + r) * (int64_t)N + j0 + 16 * g, acc[r][2 * g]);
      _mm512_storeu_ps(y + (m0 + r) * (int64_t)N + H + j0 + 16 * g, acc[r][2 * g + 1]);
    }
}
#endif
static void ${name}(${sig}) {
#if !(defined(__AVX512F__) && defined(__x86_64__))
  ${name}_ir(${args});
#else
  enum { M = ${M}, K = ${K}, N = ${N}, H = ${H}, R = ${R}, STRIP = 16 * ${G} };
  const __m512 code = _mm512_loadu_ps((const float*)${code});
  #pragma omp parallel for schedule(static) if ((int64_t)M * K * N > 4000000)
  for (int64_t j0 = 0; j0 < H; j0 += STRIP) {
    int64_t m0 = 0;
    for (; m0 + R <= M; m0 += R)
      ${name}_tile(${x}, (const uint8_t*)${P}, ${S}, code, ${out}, j0, m0, R);
    if (${rest})
      ${name}_tile(${x}, (const uint8_t*)${P}, ${S}, code, ${out}, j0, m0, ${rest});
  }
#endif
}
//@ transposed

#if defined(__AVX512F__) && defined(__x86_64__)
#include <immintrin.h>
/* y[m0 .. m0+ROWS, k0 .. k0+KROWS] (see fx.lowering.kernels.nf4.nf4_avx512.transposed_kernel) */
static inline __attribute__((always_inline)) void ${name}_tile(
    const float* x, const uint8_t* P, const float* S, __m512 code, float* y, int64_t k0,
    const int KROWS, int64_t m0, const int ROWS) {
  enum { K = ${K}, N = ${N}, H = ${H}, BS = ${BS} };
  __m512 acc[${KR}][${R}];
  for (int q = 0; q < KROWS; q++)
    for (int r = 0; r < ROWS; r++) acc[q][r] = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi32(15);
  for (int64_t j = 0; j < H; j += 16) {
    __m512 xl[${R}], xh[${R}];
    for (int r = 0; r < ROWS; r++) {
      xl[r] = _mm512_loadu_ps(x + (m0 + r) * (int64_t)N + j);
      xh[r] = _mm512_loadu_ps(x + (m0 + r) * (int64_t)N + H + j);
    }
    for (int q = 0; q < KROWS; q++) {
      const int64_t k = k0 + q;
      const __m512i b = _mm512_cvtepu8_epi32(
          _mm_loadu_si128((const __m128i*)(P + k * (int64_t)H + j)));
      const __m512 wl = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_and_si512(b, low), code),
                                      _mm512_set1_ps(S[(k * (int64_t)N + j) / BS]));
      const __m512 wh = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), code),
                                      _mm512_set1_ps(S[(k * (int64_t)N + H + j) / BS]));
      for (int r = 0; r < ROWS; r++) {
        acc[q][r] = _mm512_add_ps(acc[q][r], _mm512_mul_ps(xl[r], wl));
        acc[q][r] = _mm512_add_ps(acc[q][r], _mm512_mul_ps(xh[r], wh));
      }
    }
  }
  for (int q = 0; q < KROWS; q++)
    for (int r = 0; r < ROWS; r++)
      y[(m0 + r) * (int64_t)K + k0 + q] = _mm512_reduce_add_ps(acc[q][r]);
}
#endif
static void ${name}(${sig}) {
#if !(defined(__AVX512F__) && defined(__x86_64__))
  ${name}_ir(${args});
#else
  enum { M = ${M}, K = ${K}, R = ${R}, KR = ${KR} };
  const __m512 code = _mm512_loadu_ps((const float*)${code});
  #pragma omp parallel for schedule(static) if ((int64_t)M * K * ${N} > 4000000)
  for (int64_t k0 = 0; k0 < K - ${krest}; k0 += KR) {
    int64_t m0 = 0;
    for (; m0 + R <= M; m0 += R)
      ${name}_tile(${x}, (const uint8_t*)${P}, ${S}, code, ${out}, k0, KR, m0, R);
    if (${rest})
      ${name}_tile(${x}, (const uint8_t*)${P}, ${S}, code, ${out}, k0, KR, m0, ${rest});
  }
  if (${krest}) {
    const int64_t k0 = K - ${krest};
    int64_t m0 = 0;
    for (; m0 + R <= M; m0 += R)
      ${name}_tile(${x}, (const uint8_t*)${P}, ${S}, code, ${out}, k0, ${krest}, m0, R);
    if (${rest})
      ${name}_tile(${x}, (const uint8_t*)${P}, ${S}, code, ${out}, k0, ${krest}, m0, ${rest});
  }
#endif
}
