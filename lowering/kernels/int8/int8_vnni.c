// The int8 GEMM as an AVX-512 VNNI microkernel over packed columns (see
// fx.lowering.kernels.int8.int8_vnni): C, with string.Template placeholders. Sections:
//   kernel  the kernel ${name}, its parameters ${sig} (declared) and ${args} (passed), the
//           group's epilogue ${epilogue} (int8_epilogue.epilogue_function), ${A} the parameter
//           holding A; ${M} ${N} ${K}, ${a_sm} A's row stride, ${R} the rows of a tile,
//           ${direct} 1 where full tiles read A in place; ${prepare} B's panels and column
//           sums (section packed or pack), ${release} what frees them; ${tile} (section tile)
//           and ${store} (int8_vnni.store) a tile's k loop and its stores.
//   packed  panels ${P} and column sums ${CS} packed at compile time (pack_int8_weights).
//   pack    B (the parameter ${B}, strides ${b_sk} along k and ${b_sn} along n) packed on
//           every call into memory the kernel frees.
//   tile    a tile's k loop: ${accumulators} their declaration (int8_vnni.accumulators),
//           ${steps} one step of every row (int8_vnni.dot_steps).
//@ kernel

#include <stdlib.h>
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__x86_64__)
#include <immintrin.h>
#define FX_VNNI 1
#endif
static inline void ${name}_epilogue(int64_t i0, int64_t i1, int32_t acc, ${sig}) {
${epilogue}
}
#ifdef FX_VNNI
typedef uint32_t fx_word __attribute__((may_alias, aligned(1)));
/* One tile: rows r of A at aw + r * rs (words), the panel's 32 columns, the corrected sums
   into c. A function of its own, its 2R accumulators named variables: inside the tile loop
   (an OpenMP region) GCC copied every accumulator between registers on each step. */
static __attribute__((noinline)) void ${name}_tile(const fx_word* aw, int64_t rs,
    const int8_t* panel, const int32_t* cs, int32_t (*c)[32]) {
  enum { K4 = (${K} + 3) / 4 };
${tile}${store}
}
#endif
static void ${name}(${sig}) {
#ifndef FX_VNNI
  ${name}_ir(${args});
#else
  enum { M = ${M}, N = ${N}, K = ${K}, K4 = (${K} + 3) / 4, NB = (${N} + 31) / 32, R = ${R},
         MB = (${M} + ${R} - 1) / ${R} };
  const int8_t* A = (const int8_t*)${A};
${prepare}  /* Aw: rows of A as words of four bytes, zeros past K; the tile loop offsets them to
     unsigned bytes (x ^ 0x80) as it broadcasts them. Where K and the row stride are whole
     words (${direct}), the full tiles read A itself and Aw holds the last, partial tile's rows
     (zero rows after M); otherwise Aw holds every row. */
  const int64_t first = ${direct} ? M / R * R : 0;  /* the first row Aw holds */
  const int64_t held = (int64_t)MB * R - first;
  uint32_t* Aw = (uint32_t*)aligned_alloc(64, ((size_t)(held > 0 ? held : 1) * K4 * 4 + 63)
                                              / 64 * 64);
  for (int64_t m = first; m < (int64_t)MB * R; m++)
    for (int64_t k4 = 0; k4 < K4; k4++) {
      uint32_t w = 0;
      if (m < M) {
        const int8_t* row = A + m * (int64_t)${a_sm};
        if (4 * k4 + 4 <= K) memcpy(&w, row + 4 * k4, 4);
        else
          for (int j = 0; j < 4 && 4 * k4 + j < K; j++)
            w |= (uint32_t)(uint8_t)row[4 * k4 + j] << (8 * j);
      }
      Aw[(m - first) * K4 + k4] = w;
    }
  #pragma omp parallel for collapse(2) schedule(static) if ((int64_t)M * N * K > 4000000)
  for (int64_t nb = 0; nb < NB; nb++)
    for (int64_t mb = 0; mb < MB; mb++) {
      const int64_t m0 = mb * R, n0 = nb * 32;
      const int8_t* panel = P + nb * (int64_t)K4 * 128;
      /* row r of the tile: a word every K4 (Aw) or every row stride / 4 (A) */
      const fx_word* aw = m0 >= first ? (const fx_word*)(Aw + (m0 - first) * K4)
                                      : (const fx_word*)(A + m0 * (int64_t)${a_sm});
      const int64_t rs = m0 >= first ? K4 : (int64_t)${a_sm} / 4;
      int32_t c[R][32];
      ${name}_tile(aw, rs, panel, cs + n0, c);
      const int rows = M - m0 < R ? (int)(M - m0) : R;
      const int cols = N - n0 < 32 ? (int)(N - n0) : 32;
      for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) ${name}_epilogue(m0 + r, n0 + j, c[r][j], ${args});
    }
${release}
  free(Aw);
#endif
}
//@ packed
  const int8_t* P = (const int8_t*)${P};
  const int32_t* cs = (const int32_t*)${CS};
//@ pack
  /* B packed in panels of 32 columns, [NB][K4][32][4] bytes, zeros past K and N
     (a panel, K * 32 bytes, stays in cache while every row block passes over it); cs:
     128 * the column sums. */
  const int8_t* B = (const int8_t*)${B};
  int8_t* Pm = (int8_t*)aligned_alloc(64, (size_t)NB * K4 * 128);
  int32_t* csm = (int32_t*)aligned_alloc(64, (size_t)NB * 128);
  memset(Pm, 0, (size_t)NB * K4 * 128);
  memset(csm, 0, (size_t)NB * 128);
  if (${b_sk} == 1) {  /* (N, K) rows: whole words, each panel written in order */
    for (int64_t nb = 0; nb < NB; nb++)
      for (int64_t k4 = 0; k4 < K / 4; k4++)
        for (int64_t j = 0; j < 32 && nb * 32 + j < N; j++)
          memcpy(Pm + (nb * (int64_t)K4 + k4) * 128 + j * 4,
                 B + (nb * 32 + j) * (int64_t)${b_sn} + 4 * k4, 4);
  }
  for (int64_t n = 0; n < N; n++) {
    const int8_t* col = B + n * (int64_t)${b_sn};
    int8_t* panel = Pm + (n / 32) * (int64_t)K4 * 128 + (n % 32) * 4;
    int32_t s = 0;
    for (int64_t k = 0; k < K; k++) s += col[k * (int64_t)${b_sk}];
    for (int64_t k = (${b_sk} == 1 ? K / 4 * 4 : 0); k < K; k++)
      panel[(k / 4) * 128 + k % 4] = col[k * (int64_t)${b_sk}];
    csm[n] = 128 * s;
  }
  const int8_t* P = Pm;
  const int32_t* cs = csm;
//@ tile
      ${accumulators}
      for (int64_t k4 = 0; k4 < K4; k4++) {
        const __m512i b0 = _mm512_loadu_si512((const void*)(panel + k4 * 128));
        const __m512i b1 = _mm512_loadu_si512((const void*)(panel + k4 * 128 + 64));
${steps}
      }
      const __m512i c0 = _mm512_loadu_si512((const void*)cs);
      const __m512i c1 = _mm512_loadu_si512((const void*)(cs + 16));
