// The float32 convolution reading its input in place (see
// fx.lowering.kernels.cpu.conv_in_place): C, with string.Template placeholders. The driver
// and the tile functions are runtime libraries (each compiled once per machine, loaded with
// RTLD_GLOBAL); a kernel's own text is the header, its store and a call. Sections:
//   header  the types the driver, the tiles and the kernels share, and the driver's
//           prototype; ${driver} its name. Guarded: every kernel of a translation unit
//           starts with it.
//   driver  the driver library (after the header): ${driver}, which runs a product
//           C[m, n] = sum_k A[m, k] B[k, n] described by an fx_tiled_geometry through a
//           tile function and a store function; at most ${MAX_R} rows and ${MAX_VW} columns
//           in a tile.
//   tile    a tile library: the function ${tile}, ${R} rows by ${V} vectors of ${L} lanes
//           (${VW} columns); ${accumulators} its sums loaded from c, ${pointers} each row's
//           pointer at the step's offset, ${steps} one step of every row and vector,
//           ${stores} the sums stored back to c; ${splat} the initializer of a vector of L
//           copies of s.
//   kernel  the kernel ${name}, its parameters ${sig} (declared), ${args} (passed) and
//           ${members} (as the fields of a struct), the group's epilogue ${epilogue}; ${A}
//           the (padded) input, ${B} the kernel, ${tile} the tile function; ${store} the body
//           of its store (section store_epilogue, or store_copy where the group has no
//           epilogue: the product is the output). The product has ${M} ${N} ${K}. Rows: a
//           tile's ${R} rows run along one free dimension of ${LM} rows, ${SM} apart in x and
//           ${FM} in the flat product; the other free dimensions ${mdims} are ${mxs} apart in
//           x, ${mfs} in the product. Columns: w's free dimensions ${ndims}, ${nws} apart in
//           w, packed into panels of ${V} vectors (${VW} columns). k: the contracted
//           dimensions ${kdims}, ${kxs} apart in x and ${kws} in w, run as ${KO} outer steps
//           (their x offsets in a table) of ${KI} inner ones ${SK} apart, in chunks of ${KC}
//           outer steps (each chunk over every tile while its panel stays in cache).
//   store_epilogue, store_copy  a store's body: the sums c (rows ${VW} floats apart) of rows
//           live from flat row m0 and columns cols from n0, through ${name}_epilogue (the
//           group's arguments in *a) or copied into ${out} (row-major, ${N} columns).
//@ header
#ifndef FX_TILED_H
#define FX_TILED_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* A product's shape and the strides of its operands (see the file's header for the names). */
typedef struct {
  int64_t M, N, K, LM, SM, FM, KO, KI, SK, KC, R, VW, MD, KD, ND;
  const int64_t *mdims, *mxs, *mfs, *kdims, *kxs, *kws, *ndims, *nws;
} fx_tiled_geometry;
/* A tile: rows a[0..R) of A (each a pointer to its row's first element) times KOc outer steps
   (x offsets ko) of KI inner ones SK apart, of the panel wp (KI x VW columns per outer step,
   zero beyond N), added to c (R rows of VW). */
typedef void (*fx_tiled_tile)(const float* const* a, const int64_t* ko, int64_t KOc,
                              int64_t KI, int64_t SK, const float* wp, float* c);
/* A store: a tile's sums c (rows VW apart) of rows live from flat row m0 (FM apart), columns
   cols from n0, into the outputs through the epilogue; args holds the kernel's arguments. */
typedef void (*fx_tiled_store)(const void* args, int64_t m0, int64_t live, int64_t n0,
                               int64_t cols, const float* c);
void ${driver}(const fx_tiled_geometry* g, const float* x, const float* w, fx_tiled_tile tile,
    fx_tiled_store store, const void* args);
#endif
//@ driver
/* The digits of i in the mixed radix dims[0..nd) (the last fastest) dotted with the strides
   sa and sb, into *a and *b: an index of several dimensions as offsets in two arrays. */
static inline void fx_tiled_digits(int64_t i, const int64_t* dims, int64_t nd,
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
/* The product of x and w (tables, packing, the tiles' schedule), compiled at -O1: its loops
   run once per call or per tile. */
__attribute__((optimize("O1"))) void ${driver}(const fx_tiled_geometry* g, const float* x,
    const float* w, fx_tiled_tile tile, fx_tiled_store store, const void* args) {
  const int64_t M = g->M, N = g->N, K = g->K, LM = g->LM, SM = g->SM, FM = g->FM;
  const int64_t KO = g->KO, KI = g->KI, SK = g->SK, KC = g->KC, R = g->R, VW = g->VW;
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
    fx_tiled_digits(n, g->ndims, g->ND, g->nws, g->nws, &wo, &unused);
    nw[n] = n < N ? wo : -1;
  }
  /* The offsets of the contracted indices in x (outer ones) and in w. */
  for (int64_t k = 0; k < K; k++) {
    int64_t xo, wo;
    fx_tiled_digits(k, g->kdims, g->KD, g->kxs, g->kws, &xo, &wo);
    if (k % KI == 0) ko[k / KI] = xo;
    wk[k] = wo;
  }
  /* w packed into panels, one panel's rows of k after the other (columns past N zero); a
     run of w's columns is copied whole where they are one dimension of stride 1 */
  const int contiguous = g->ND == 1 && g->nws[0] == 1;
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
    fx_tiled_digits(o, g->mdims, g->MD, g->mxs, g->mfs, &mo[2 * o], &mo[2 * o + 1]);
  #pragma omp parallel if (M * N * K > 2000000)
  for (int64_t ch = 0; ch < NC; ch++) {
    const int64_t KOc = KO - ch * KC < KC ? KO - ch * KC : KC;
    #pragma omp for schedule(guided)
    for (int64_t u = 0; u < TILES; u++) {
      const int64_t p = u / (MO * TB), t = u % (MO * TB);
      const int64_t o = t / TB, r0 = t % TB * R, live = LM - r0 < R ? LM - r0 : R;
      const int64_t n0 = p * VW, cols = N - n0 < VW ? N - n0 : VW;
      const float* rows[${MAX_R}];
      for (int64_t r = 0; r < R; r++) rows[r] = x + mo[2 * o] + (r0 + (r < live ? r : 0)) * SM;
      float one[${MAX_R} * ${MAX_VW}] __attribute__((aligned(64)));
      float* c = cs ? cs + u * R * VW : one;
      if (!cs) memset(one, 0, (size_t)(R * VW) * sizeof(float));
      tile(rows, ko + ch * KC, KOc, KI, SK, wp + (p * K + ch * KC * KI) * VW, c);
      if (ch == NC - 1) store(args, mo[2 * o + 1] + r0 * FM, live, n0, cols, c);
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
#include <stdint.h>
#include <string.h>
typedef float fx_tiled_v${L} __attribute__((vector_size(${L} * 4)));
static inline fx_tiled_v${L} fx_tiled_splat${L}(float s) { return (fx_tiled_v${L}){${splat}}; }
/* A tile (fx_tiled_tile). Its one kind of arithmetic, s * w + acc, contracts to a fused
   multiply-add where the target has one (the kernels are otherwise compiled without
   contraction). */
__attribute__((optimize("fp-contract=fast"))) void ${tile}(const float* const* a,
    const int64_t* ko, int64_t KOc, int64_t KI, int64_t SK, const float* wp, float* c) {
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
}
//@ kernel
void ${tile}(const float* const* a, const int64_t* ko, int64_t KOc, int64_t KI, int64_t SK,
    const float* wp, float* c);
struct ${name}_args { ${members}; };
static inline void ${name}_epilogue(int64_t i0, int64_t i1, float acc, ${sig}) {
${epilogue}
}
/* The store (fx_tiled_store), at -O2: its row loop vectorizes there as at -O3, in a good
   part less of the compiler's time. */
static __attribute__((optimize("O2"))) void ${name}_store(const void* args, int64_t m0,
    int64_t live, int64_t n0, int64_t cols, const float* c) {
  const struct ${name}_args* a = (const struct ${name}_args*)args;
${store}
}
static void ${name}(${sig}) {
  const int64_t M = ${M}, N = ${N}, K = ${K};
  static const int64_t mdims[] = {${mdims}}, mxs[] = {${mxs}}, mfs[] = {${mfs}};
  static const int64_t kdims[] = {${kdims}}, kxs[] = {${kxs}}, kws[] = {${kws}};
  static const int64_t ndims[] = {${ndims}}, nws[] = {${nws}};
  const fx_tiled_geometry g = {
    M, N, K, ${LM}, ${SM}, ${FM}, ${KO}, ${KI}, ${SK}, ${KC}, ${R}, ${VW},
    sizeof mdims / sizeof mdims[0], sizeof kdims / sizeof kdims[0],
    sizeof ndims / sizeof ndims[0], mdims, mxs, mfs, kdims, kxs, kws, ndims, nws};
  const struct ${name}_args a = {${args}};
  ${driver}(&g, (const float*)${A}, (const float*)${B}, ${tile}, ${name}_store, &a);
}
//@ store_epilogue
  for (int64_t r = 0; r < live; r++) {
    /* an epilogue reads each input at its own element or a broadcast one, and writes each
       output once: no iteration depends on another */
    #pragma omp simd
    for (int64_t j = 0; j < cols; j++)
      ${name}_epilogue(m0 + r * ${FM}, n0 + j, c[r * ${VW} + j], ${fields});
  }
//@ store_copy
  for (int64_t r = 0; r < live; r++)
    memcpy(a->${out} + (m0 + r * ${FM}) * ${N} + n0, c + r * ${VW}, (size_t)cols * sizeof(float));
