// The float32 Winograd convolution F(m x m, 3 x 3) (see fx.lowering.kernels.cpu.winograd): C,
// with string.Template placeholders. Sections:
//   kernel  the kernel ${name}, its parameters ${sig} (declared) and ${args} (passed), the
//           group's epilogue ${epilogue} (output row i0 = (b * QH + y) * QW + x, column i1);
//           ${A} the (padded) input, ${B} the 3x3 kernel. Input: ${BATCH} images of ${H} x
//           ${W} pixels of ${C} channels, ${XB} ${XH} ${XW} ${XC} apart; kernel tap (kh, kw),
//           channel c, output o at kh * ${WH} + kw * ${WW} + c * ${WC} + o * ${WO}; output
//           ${QH} x ${QW} pixels of ${O} channels. Tiles: ${MT} x ${MT} outputs from
//           ${AL} x ${AL} inputs, ${TH} x ${TW} per image, ${T} in all, ${TB} per block, ${R}
//           per register tile; ${L} vector lanes (${splat}: L copies of s), ${CP} the input
//           channels rounded up to vectors, output channels in ${NP} panels of ${VW} (${NW}
//           in all). ${G} the AL x 3 matrix G (doubles, row by row); ${input} the
//           input transform of one channel vector (d<i>_<j> to V's AL * AL rows at
//           ${name}_vrow), ${output} the output transform (m<i>_<j> to y<i>_<j>), ${tile} a
//           register tile's body.
//@ kernel

#include <stdlib.h>
#include <string.h>
typedef float ${name}_v __attribute__((vector_size(${L} * 4)));
static inline ${name}_v ${name}_splat(float s) { return (${name}_v){${splat}}; }
static inline void ${name}_epilogue(int64_t i0, int64_t i1, float acc, ${sig}) {
${epilogue}
}
/* n <= L channels from p (sc apart) as a vector, zeros past n. */
static inline ${name}_v ${name}_load(const float* p, int64_t n, int64_t sc) {
  ${name}_v v = ${name}_splat(0.0f);
  if (sc == 1 && n == ${L}) {
    memcpy(&v, p, sizeof v);
  } else {
    for (int64_t j = 0; j < n; j++) v[j] = p[j * sc];
  }
  return v;
}
/* The transformed kernel U = G g G^T of input channel c and every output channel:
   U[((xi * NP + p) * C + c) * VW + j] for column p * VW + j (zero past O), xi = i * AL + j.
   Computed in double, rounded once; the loops over a panel's columns are the vectors. */
static __attribute__((noinline)) void ${name}_weights(const float* w, float* u, int64_t c) {
  static const double G[${AL}][3] = {${G}};
  for (int64_t p = 0; p < ${NP}; p++) {
    double g[3][3][${VW}], t[${AL}][3][${VW}];
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++)
        for (int64_t j = 0; j < ${VW}; j++) {
          const int64_t o = p * ${VW} + j;
          g[a][b][j] = o < ${O} ? w[a * ${WH} + b * ${WW} + c * ${WC} + o * ${WO}] : 0.0;
        }
    for (int i = 0; i < ${AL}; i++)
      for (int b = 0; b < 3; b++)
        for (int64_t j = 0; j < ${VW}; j++)
          t[i][b][j] = G[i][0] * g[0][b][j] + G[i][1] * g[1][b][j] + G[i][2] * g[2][b][j];
    for (int i = 0; i < ${AL}; i++)
      for (int k = 0; k < ${AL}; k++) {
        float* dst = u + (((i * ${AL} + k) * ${NP} + p) * ${C} + c) * ${VW};
        for (int64_t j = 0; j < ${VW}; j++)
          dst[j] = (float)(t[i][0][j] * G[k][0] + t[i][1][j] * G[k][1] + t[i][2][j] * G[k][2]);
      }
  }
}
/* One tile's AL x AL pixels from p (rows sh apart, columns sw, channels sc) transformed,
   B^T d B, into V from row vr. Inlined with constant strides: the loads are constant offsets
   from p. */
static inline __attribute__((always_inline)) void ${name}_in1(const float* p, int64_t sh,
    int64_t sw, int64_t sc, float* vr) {
  for (int64_t c = 0; c < ${C}; c += ${L}) {
    const int64_t n = ${C} - c < ${L} ? ${C} - c : ${L};
${input}
  }
}
/* The input tiles t0 .. t0 + live of a block, and up to the next multiple of R (those: tile
   t0 again), transformed into V: row xi * TB + r holds tile r's element xi, CP channels. A
   tile reaching past the input is first copied to e (AL x AL pixels of CP channels) with
   zeros there. */
static __attribute__((noinline, optimize("fp-contract=fast"))) void ${name}_in(const float* x,
    float* e, int64_t t0, int64_t live, float* V) {
  for (int64_t r = 0; r < (live + ${R} - 1) / ${R} * ${R}; r++) {
    const int64_t t = t0 + (r < live ? r : 0);
    const int64_t b = t / (${TH} * ${TW}), h0 = t / ${TW} % ${TH} * ${MT}, w0 = t % ${TW} * ${MT};
    const float* p = x + b * ${XB} + h0 * ${XH} + w0 * ${XW};
    if (h0 + ${AL} <= ${H} && w0 + ${AL} <= ${W}) {
      ${name}_in1(p, ${XH}, ${XW}, ${XC}, V + r * ${CP});
      continue;
    }
    for (int64_t i = 0; i < ${AL}; i++)
      for (int64_t j = 0; j < ${AL}; j++) {
        float* dst = e + (i * ${AL} + j) * ${CP};
        const int inside = h0 + i < ${H} && w0 + j < ${W};
        for (int64_t c = 0; c < ${C}; c++) dst[c] = inside ? p[i * ${XH} + j * ${XW} + c * ${XC}] : 0.0f;
      }
    ${name}_in1(e, ${AL} * ${CP}, ${CP}, 1, V + r * ${CP});
  }
}
/* The tiles t0 .. t0 + live of a block from their products M (row xi * TB + r, NW columns),
   transformed, A^T m A, through the group's epilogue: the outputs inside QH x QW. */
static __attribute__((noinline, optimize("fp-contract=fast"))) void ${name}_out(const float* M,
    int64_t t0, int64_t live, ${sig}) {
  for (int64_t r = 0; r < live; r++) {
    const int64_t t = t0 + r;
    const int64_t b = t / (${TH} * ${TW}), h0 = t / ${TW} % ${TH} * ${MT}, w0 = t % ${TW} * ${MT};
    const int64_t nh = ${QH} - h0 < ${MT} ? ${QH} - h0 : ${MT};
    const int64_t nw = ${QW} - w0 < ${MT} ? ${QW} - w0 : ${MT};
    const float* mr = M + r * ${NW};
    for (int64_t o = 0; o < ${O}; o += ${L}) {
      const int64_t n = ${O} - o < ${L} ? ${O} - o : ${L};
      float y[${MT}][${MT}][${L}] __attribute__((aligned(64)));
${output}
      for (int64_t i = 0; i < nh; i++)
        for (int64_t j = 0; j < nw; j++) {
          const int64_t row = (b * ${QH} + h0 + i) * ${QW} + w0 + j;
          for (int64_t k = 0; k < n; k++) ${name}_epilogue(row, o + k, y[i][j][k], ${args});
        }
    }
  }
}
/* One register tile: R rows of a (CP apart) times the C x VW panel u into R rows of c (NW
   apart). Its one kind of arithmetic, s * w + acc, contracts to a fused multiply-add where
   the target has one. */
static __attribute__((noinline, optimize("fp-contract=fast"))) void ${name}_tile(
    const float* a, const float* u, float* c) {
${tile}
}
/* The driver (the weight transform, the blocks' schedule) is compiled at -O1: its loops run
   once per call or per block. */
static __attribute__((optimize("O1"))) void ${name}(${sig}) {
  const float* x = (const float*)${A};
  const float* w = (const float*)${B};
  const int64_t AA = ${AL} * ${AL}, NB = (${T} + ${TB} - 1) / ${TB};
  float* u = (float*)aligned_alloc(64, (size_t)(AA * ${NP} * ${C} * ${VW}) * sizeof(float));
  if (!u) abort();
  #pragma omp parallel for schedule(static) if (${C} * ${NW} > 1024)
  for (int64_t c = 0; c < ${C}; c++) ${name}_weights(w, u, c);
  #pragma omp parallel if (${T} > ${TB})
  {
    float* V = (float*)aligned_alloc(64, (size_t)(AA * ${TB} * ${CP}) * sizeof(float));
    float* M = (float*)aligned_alloc(64, (size_t)(AA * ${TB} * ${NW}) * sizeof(float));
    float* e = (float*)malloc((size_t)(AA * ${CP}) * sizeof(float));
    if (!V || !M || !e) abort();
    #pragma omp for schedule(static)
    for (int64_t blk = 0; blk < NB; blk++) {
      const int64_t t0 = blk * ${TB}, live = ${T} - t0 < ${TB} ? ${T} - t0 : ${TB};
      ${name}_in(x, e, t0, live, V);
      for (int64_t xi = 0; xi < AA; xi++)
        for (int64_t p = 0; p < ${NP}; p++)
          for (int64_t r0 = 0; r0 < live; r0 += ${R})
            ${name}_tile(V + (xi * ${TB} + r0) * ${CP}, u + (xi * ${NP} + p) * ${C} * ${VW},
                         M + (xi * ${TB} + r0) * ${NW} + p * ${VW});
      ${name}_out(M, t0, live, ${args});
    }
    free(e);
    free(M);
    free(V);
  }
  free(u);
}
//@ tile
${accumulators}
  for (int64_t k = 0; k < ${C}; k++) {
    const float* wk = u + k * ${VW};
${steps}
  }
${stores}
