// The int8 convolution reading its input in place (see fx.lowering.kernels.int8.int8_conv): C,
// with string.Template placeholders. Sections:
//   kernel  the kernel ${name}, its parameters ${sig} (declared) and ${args} (passed), the
//           group's epilogue ${epilogue}; the parameters ${A} (the NHWC int8 input), ${B} (the
//           kernel as rows of K bytes), ${P} and ${CS} (its panels and column sums, packed at
//           compile time); the geometry ${H} ${W} ${C} ${OH} ${OW} ${KW}, strides ${SH} ${SW},
//           padding ${PH} ${PW}, dilation ${DH} ${DW}, ${T} taps, ${C4} words per pixel;
//           ${M} ${N} ${K} the product, ${R} the rows of a tile; ${tile} (section tile) and
//           ${store} (int8_vnni.store) a tile's loop and its stores.
//   tile    a tile's taps and words: ${accumulators} their declaration, ${pointers} each row's
//           pixel pointer for tap t, ${steps} one step of every row (int8_vnni.dot_steps).
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
/* One tile of R output positions x 32 columns: rows[r * T + t] is the input pixel (C bytes)
   tap t of row r reads, or zeros (see fx.lowering.kernels.int8.int8_conv). */
static __attribute__((noinline)) void ${name}_tile(const fx_word* const* rows,
    const int8_t* panel, const int32_t* cs, int32_t (*c)[32]) {
  const int64_t T = ${T}, C4 = ${C4};
${tile}${store}
}
#endif
static void ${name}(${sig}) {
  const int64_t H = ${H}, W = ${W}, C = ${C}, OH = ${OH}, OW = ${OW}, KW = ${KW}, T = ${T};
  const int64_t SH = ${SH}, SW = ${SW}, PH = ${PH}, PW = ${PW}, DH = ${DH}, DW = ${DW};
  const int64_t M = ${M}, N = ${N}, K = ${K}, R = ${R};
  const int8_t* x = (const int8_t*)${A};
#ifdef FX_VNNI
  const int8_t* P = (const int8_t*)${P};
  const int32_t* cs = (const int32_t*)${CS};
  static const uint32_t zeros[${C4}];  /* a pixel outside the input: zero bytes */
  const int64_t NB = (N + 31) / 32, MB = (M + R - 1) / R;
  #pragma omp parallel for collapse(2) schedule(static) if (M * N * K > 4000000)
  for (int64_t nb = 0; nb < NB; nb++)
    for (int64_t mb = 0; mb < MB; mb++) {
      const int64_t m0 = mb * R, n0 = nb * 32;
      const fx_word* rows[${R} * ${T}];
      for (int64_t r = 0; r < R; r++) {
        const int64_t m = m0 + r, b = m / (OH * OW), oh = m / OW % OH, ow = m % OW;
        for (int64_t t = 0; t < T; t++) {
          const int64_t ih = oh * SH + t / KW * DH - PH, iw = ow * SW + t % KW * DW - PW;
          rows[r * T + t] = m < M && ih >= 0 && ih < H && iw >= 0 && iw < W
              ? (const fx_word*)(x + ((b * H + ih) * W + iw) * C) : (const fx_word*)zeros;
        }
      }
      int32_t c[${R}][32];
      ${name}_tile(rows, P + nb * (K / 4) * 128, cs + n0, c);
      const int64_t live = M - m0 < R ? M - m0 : R, cols = N - n0 < 32 ? N - n0 : 32;
      for (int64_t r = 0; r < live; r++)
        for (int64_t j = 0; j < cols; j++) ${name}_epilogue(m0 + r, n0 + j, c[r][j], ${args});
    }
#else
  /* Without VNNI: each output position's patch gathered into a row (zeros outside the
     input), then one sum per feature over it and the feature's row of B (vectorized over k,
     as int8_gemm's loop-IR kernel). */
  const int8_t* Bw = (const int8_t*)${B};
  #pragma omp parallel for schedule(static) if (M * N * K > 4000000)
  for (int64_t m = 0; m < M; m++) {
    const int64_t b = m / (OH * OW), oh = m / OW % OH, ow = m % OW;
    int8_t arow[${K}];
    for (int64_t t = 0; t < T; t++) {
      const int64_t ih = oh * SH + t / KW * DH - PH, iw = ow * SW + t % KW * DW - PW;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) memset(arow + t * C, 0, C);
      else memcpy(arow + t * C, x + ((b * H + ih) * W + iw) * C, C);
    }
    for (int64_t n = 0; n < N; n++) {
      const int8_t* wr = Bw + n * K;
      int32_t acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (int32_t)arow[k] * (int32_t)wr[k];
      ${name}_epilogue(m, n, acc, ${args});
    }
  }
#endif
}
//@ tile
  ${accumulators}
  for (int64_t t = 0; t < T; t++) {
    ${pointers}
    const int8_t* pt = panel + t * C4 * 128;
    for (int64_t c4 = 0; c4 < C4; c4++) {
        const __m512i b0 = _mm512_loadu_si512((const void*)(pt + c4 * 128));
        const __m512i b1 = _mm512_loadu_si512((const void*)(pt + c4 * 128 + 64));
${steps}
    }
  }
  const __m512i c0 = _mm512_loadu_si512((const void*)cs);
  const __m512i c1 = _mm512_loadu_si512((const void*)(cs + 16));
