// The float32 convolution reading its input in place (see
// fx.lowering.kernels.cpu.conv_in_place): C, with string.Template placeholders. Sections:
//   kernel  the kernel ${name}, its parameters ${sig} (declared) and ${args} (passed), the
//           group's epilogue ${epilogue}; ${A} the (padded) input, ${B} the kernel; ${L}
//           vector lanes, ${splat} the initializer of a vector of L copies of s. The product
//           C[m, n] = sum_k A[m, k] B[k, n] has ${M} ${N} ${K}. Rows: a tile's ${R} rows run
//           along one free dimension of ${LM} rows, ${SM} apart in x and ${FM} in the flat
//           product; the other free dimensions ${mdims} are ${mxs} apart in x, ${mfs} in the
//           product. Columns: w's free dimensions ${ndims}, ${nws} apart in w, packed into
//           panels of ${V} vectors (${VW} columns). k: the contracted dimensions ${kdims},
//           ${kxs} apart in x and ${kws} in w, run as ${KO} outer steps (their x offsets in a
//           table) of ${KI} inner ones ${SK} apart, in chunks of ${KC} outer steps (each
//           chunk over every tile while its panel stays in cache); ${tile} a tile's body.
//   tile    a tile's loop over a chunk: ${accumulators} its sums loaded from c, ${pointers}
//           each row's pointer at the step's offset, ${steps} one step of every row and
//           vector, ${stores} the sums stored back to c; ${VW} as above.
//@ kernel

#include <stdlib.h>
#include <string.h>
typedef float ${name}_v __attribute__((vector_size(${L} * 4)));
static inline ${name}_v ${name}_splat(float s) { return (${name}_v){${splat}}; }
static inline void ${name}_epilogue(int64_t i0, int64_t i1, float acc, ${sig}) {
${epilogue}
}
/* One tile: rows a[0..R) of A (each a pointer to its row's first element) times KOc outer
   steps of the panel wp (KI x VW columns each, zero beyond N), added to c. Its one kind of
   arithmetic, s * w + acc, contracts to a fused multiply-add where the target has one (the
   kernels are otherwise compiled without contraction). */
static __attribute__((noinline, optimize("fp-contract=fast"))) void ${name}_tile(const float* const* a, const int64_t* ko,
    int64_t KOc, const float* wp, float (*c)[${VW}]) {
  const int64_t KI = ${KI}, SK = ${SK};
${tile}
}
/* The digits of i in the mixed radix dims[0..nd) (the last fastest) dotted with the strides
   sa and sb, into *a and *b: an index of several dimensions as offsets in two arrays. */
static inline void ${name}_digits(int64_t i, const int64_t* dims, int64_t nd,
    const int64_t* sa, const int64_t* sb, int64_t* a, int64_t* b) {
  int64_t oa = 0, ob = 0;
  for (int64_t d = nd - 1; d >= 0; d--) {
    oa += i % dims[d] * sa[d];
    ob += i % dims[d] * sb[d];
    i /= dims[d];
  }
  *a = oa;
  *b = ob;
}
/* A tile's sums through the group's epilogue: rows live of it, from flat row m0 (FM apart),
   columns cols from n0. */
static __attribute__((noinline)) void ${name}_store(int64_t m0, int64_t live, int64_t n0,
    int64_t cols, float (*c)[${VW}], ${sig}) {
  for (int64_t r = 0; r < live; r++)
    for (int64_t j = 0; j < cols; j++) ${name}_epilogue(m0 + r * ${FM}, n0 + j, c[r][j], ${args});
}
/* The driver (tables, packing, the tiles' schedule) is compiled at -O1: its loops run once
   per call or per tile, and at -O3 it took most of a kernel's compile time. */
static __attribute__((optimize("O1"))) void ${name}(${sig}) {
  const int64_t M = ${M}, N = ${N}, K = ${K}, LM = ${LM}, SM = ${SM}, FM = ${FM};
  const int64_t KO = ${KO}, KI = ${KI}, KC = ${KC}, R = ${R}, VW = ${VW};
  static const int64_t mdims[] = {${mdims}}, mxs[] = {${mxs}}, mfs[] = {${mfs}};
  static const int64_t kdims[] = {${kdims}}, kxs[] = {${kxs}}, kws[] = {${kws}};
  static const int64_t ndims[] = {${ndims}}, nws[] = {${nws}};
  const int64_t MD = sizeof mdims / sizeof mdims[0], KD = sizeof kdims / sizeof kdims[0];
  const int64_t ND = sizeof ndims / sizeof ndims[0];
  const float* x = (const float*)${A};
  const float* w = (const float*)${B};
  const int64_t NP = (N + VW - 1) / VW, MO = M / LM, TB = (LM + R - 1) / R;
  const int64_t NC = (KO + KC - 1) / KC, TILES = NP * MO * TB;
  float* wp = (float*)aligned_alloc(64, (size_t)(NP * K * VW) * sizeof(float));
  int64_t* ko = (int64_t*)malloc((size_t)KO * sizeof(int64_t));
  int64_t* mo = (int64_t*)malloc((size_t)MO * 2 * sizeof(int64_t));
  int64_t* nw = (int64_t*)malloc((size_t)NP * VW * sizeof(int64_t));
  int64_t* wk = (int64_t*)malloc((size_t)K * sizeof(int64_t));
  /* the sums of every tile between chunks of k (one chunk: none) */
  float* cs = NC > 1 ? (float*)calloc((size_t)(TILES * R * VW), sizeof(float)) : NULL;
  if (!wp || !ko || !mo || !nw || !wk || (NC > 1 && !cs)) abort();
  for (int64_t n = 0; n < NP * VW; n++) {
    int64_t wo, unused;
    ${name}_digits(n, ndims, ND, nws, nws, &wo, &unused);
    nw[n] = n < N ? wo : -1;
  }
  /* The offsets of the contracted indices in x (outer ones) and in w. */
  for (int64_t k = 0; k < K; k++) {
    int64_t xo, wo;
    ${name}_digits(k, kdims, KD, kxs, kws, &xo, &wo);
    if (k % KI == 0) ko[k / KI] = xo;
    wk[k] = wo;
  }
  /* w packed into panels, one panel's rows of k after the other (columns past N zero); a
     run of w's columns is copied whole where they are one dimension of stride 1 */
  const int contiguous = ND == 1 && nws[0] == 1;
  #pragma omp parallel for collapse(2) schedule(static) if (K * NP * VW > 65536)
  for (int64_t p = 0; p < NP; p++)
    for (int64_t k = 0; k < K; k++) {
      float* dst = wp + (p * K + k) * VW;
      const int64_t n0 = p * VW, cols = N - n0 < VW ? N - n0 : VW;
      if (contiguous) {
        memcpy(dst, w + wk[k] + n0, (size_t)cols * sizeof(float));
      } else {
        for (int64_t j = 0; j < cols; j++) dst[j] = w[wk[k] + nw[n0 + j]];
      }
      for (int64_t j = cols; j < VW; j++) dst[j] = 0.0f;
    }
  /* each outer row index: its offset in x and its flat row of the product */
  for (int64_t o = 0; o < MO; o++)
    ${name}_digits(o, mdims, MD, mxs, mfs, &mo[2 * o], &mo[2 * o + 1]);
  #pragma omp parallel if (M * N * K > 2000000)
  for (int64_t ch = 0; ch < NC; ch++) {
    const int64_t KOc = KO - ch * KC < KC ? KO - ch * KC : KC;
    #pragma omp for schedule(guided)
    for (int64_t u = 0; u < TILES; u++) {
      const int64_t p = u / (MO * TB), t = u % (MO * TB);
      const int64_t o = t / TB, r0 = t % TB * R, live = LM - r0 < R ? LM - r0 : R;
      const int64_t n0 = p * VW, cols = N - n0 < VW ? N - n0 : VW;
      const float* rows[${R}];
      for (int64_t r = 0; r < R; r++) rows[r] = x + mo[2 * o] + (r0 + (r < live ? r : 0)) * SM;
      float one[${R}][${VW}] __attribute__((aligned(64)));
      float (*c)[${VW}] = cs ? (float (*)[${VW}])(cs + u * R * VW) : one;
      if (!cs) memset(one, 0, sizeof one);
      ${name}_tile(rows, ko + ch * KC, KOc, wp + (p * K + ch * KC * KI) * VW, c);
      if (ch == NC - 1) ${name}_store(mo[2 * o + 1] + r0 * FM, live, n0, cols, c, ${args});
    }
  }
  free(cs);
  free(wk);
  free(nw);
  free(mo);
  free(ko);
  free(wp);
}
//@ tile
${accumulators}
  for (int64_t t = 0; t < KOc; t++) {
    const int64_t off = ko[t];
    const float* wt = wp + t * KI * ${VW};
${pointers}
    for (int64_t i = 0; i < KI; i++) {
${steps}
    }
  }
${stores}
