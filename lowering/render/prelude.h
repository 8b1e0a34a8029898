// The prelude: scalar helpers every generated kernel may call, in every dialect (C, CUDA C,
// OpenCL C). The dialect defines FX_FN and the bit casts fx_bits_to_f32/fx_f32_to_bits before
// it; fx.lowering.render.prelude assembles PRELUDE from these sections, in this order:
//   conversions      half precision storage, integer division and shifts, float -> int
//   narrow_from_f32  template, once per narrow integer type: ${name} (i8, u8, i16, u16), ${lo}
//                    and ${hi} (the type's range as float literals)
//   functions        float -> narrow int wrappers, max/min and rounding, the float32 exp/log
//                    family, special functions computed in double
//   complex          template, once per complex type: ${k} (c64, c128), ${t} (the part's C
//                    type), ${f} (the libm suffix: "f" or "")
//@ conversions

/* --- half precision storage: float16 / bfloat16 <-> float32 (round to nearest even) --- */
FX_FN float fx_bf16_to_f32(uint16_t h) { return fx_bits_to_f32(((uint32_t)h) << 16); }
FX_FN uint16_t fx_f32_to_bf16(float f) {
  uint32_t b = fx_f32_to_bits(f);
  uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
  uint32_t nan = (b >> 16) | 0x40u;
  return (uint16_t)(f != f ? nan : rounded);
}
FX_FN float fx_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)(h & 0x8000u)) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  /* normal numbers and inf/nan by re-biasing; subnormals via an exact float product */
  uint32_t normal = sign | ((exp + 112u) << 23) | (man << 13);
  uint32_t infnan = sign | 0x7f800000u | (man << 13);
  float sub = (float)man * 5.9604644775390625e-08f; /* man * 2^-24 */
  float subv = (h & 0x8000u) ? -sub : sub;
  return exp == 0 ? subv : (exp == 31 ? fx_bits_to_f32(infnan) : fx_bits_to_f32(normal));
}
FX_FN uint16_t fx_f32_to_f16(float f) {
  uint32_t b = fx_f32_to_bits(f);
  uint32_t sign = (b >> 16) & 0x8000u;
  uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);             /* nan */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);             /* overflow -> inf */
  if (a < 0x38800000u) {                                              /* subnormal or zero */
    float v = fx_bits_to_f32(a) * 16777216.0f;                          /* * 2^24 */
    uint32_t m = (uint32_t)rintf(v);
    return (uint16_t)(sign | m);
  }
  uint32_t r = a - 0x38000000u;                                         /* rebias 127 -> 15 */
  r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  return (uint16_t)(sign | r);
}

/* --- integer division and shifts with defined results (no SIGFPE) --- */
FX_FN int32_t fx_div_i32(int32_t a, int32_t b) {
  return b == 0 ? -1 : ((a == INT32_MIN && b == -1) ? a : a / b);
}
FX_FN int64_t fx_div_i64(int64_t a, int64_t b) {
  return b == 0 ? -1 : ((a == INT64_MIN && b == -1) ? a : a / b);
}
FX_FN uint32_t fx_div_u32(uint32_t a, uint32_t b) { return b == 0 ? 0xffffffffu : a / b; }
FX_FN int32_t fx_rem_i32(int32_t a, int32_t b) {
  return (b == 0 || b == -1) ? (b == 0 ? a : 0) : a % b;
}
FX_FN int64_t fx_rem_i64(int64_t a, int64_t b) {
  return (b == 0 || b == -1) ? (b == 0 ? a : 0) : a % b;
}
FX_FN uint32_t fx_rem_u32(uint32_t a, uint32_t b) { return b == 0 ? a : a % b; }
FX_FN uint64_t fx_div_u64(uint64_t a, uint64_t b) { return b == 0 ? ~(uint64_t)0 : a / b; }
FX_FN uint64_t fx_rem_u64(uint64_t a, uint64_t b) { return b == 0 ? a : a % b; }
/* (8- and 16-bit integers divide through the 32-bit helpers, see render.py) */

/* float -> int: truncate, NaN -> 0, saturate at the bounds */
FX_FN int32_t fx_f2i32(double x) {
  return x != x ? 0
       : (x <= -2147483648.0 ? INT32_MIN : (x >= 2147483647.0 ? INT32_MAX : (int32_t)x));
}
FX_FN int64_t fx_f2i64(double x) {
  return x != x ? 0 : (x <= -9223372036854775808.0 ? INT64_MIN
                       : (x >= 9223372036854775807.0 ? INT64_MAX : (int64_t)x));
}
FX_FN uint32_t fx_f2u32(double x) {
  return x != x ? 0u : (x <= 0.0 ? 0u : (x >= 4294967295.0 ? 0xffffffffu : (uint32_t)x));
}
FX_FN int8_t fx_f2i8(double x) {
  return x != x ? 0 : (x <= -128.0 ? -128 : (x >= 127.0 ? 127 : (int8_t)x));
}
FX_FN int16_t fx_f2i16(double x) {
  return x != x ? 0 : (x <= -32768.0 ? -32768 : (x >= 32767.0 ? 32767 : (int16_t)x));
}
FX_FN uint8_t fx_f2u8(double x) {
  return x != x ? 0 : (x <= 0.0 ? 0 : (x >= 255.0 ? 255 : (uint8_t)x));
}
FX_FN uint16_t fx_f2u16(double x) {
  return x != x ? 0 : (x <= 0.0 ? 0 : (x >= 65535.0 ? 65535 : (uint16_t)x));
}
/* The same from float, for 8/16-bit targets (quantization's float -> int8): clamped in
   float and converted through int32 as selects, so that GCC keeps a vector of floats in
   its lanes (the double versions above widen every lane and branch). The "w" forms leave
   the value in int32: a staged store narrows it later (renderer.Renderer.staged_loop). */
//@ narrow_from_f32
FX_FN int32_t fx_f2${name}w_f32(float x) {
  float c = x < ${lo} ? ${lo} : x;
  c = c > ${hi} ? ${hi} : c;
  c = x != x ? 0.0f : c;
  return (int32_t)c;
}
//@ functions
FX_FN int8_t fx_f2i8_f32(float x) { return (int8_t)fx_f2i8w_f32(x); }
FX_FN uint8_t fx_f2u8_f32(float x) { return (uint8_t)fx_f2u8w_f32(x); }
FX_FN int16_t fx_f2i16_f32(float x) { return (int16_t)fx_f2i16w_f32(x); }
FX_FN uint16_t fx_f2u16_f32(float x) { return (uint16_t)fx_f2u16w_f32(x); }
/* 18446744073709551615.0 is 2^64: below it the conversion is defined */
FX_FN uint64_t fx_f2u64(double x) {
  return x != x ? 0u : (x <= 0.0 ? 0u : (x >= 18446744073709551615.0 ? ~(uint64_t)0
                                        : (uint64_t)x));
}

/* --- NaN-propagating max/min, signed zeros ordered (-0 < +0, as jax), and rounding --- */
/* b when it is greater or NaN, a when it is greater or NaN; equal values are combined bit by
   bit, which only matters for zeros: AND keeps +0 unless both are -0 (max), OR keeps -0 (min).
   So the result never depends on the operands' order, and a max reduction gives the same bits
   however its lanes are combined. The NaN test is of b alone, not of a ('a != a'): in a chain
   (a pooling window, a lane of a max reduction) a is the previous select, and GCC turns
   'select != select' into a select of masks that it cannot vectorize. The three selects are
   separate statements, not one '||' in a nested ?:, which GCC if-converts only in some loops
   (it left a pooling window's chain of them as branches, mispredicted on random data). */
FX_FN float fx_maxf(float a, float b) {
  float tie = fx_bits_to_f32(fx_f32_to_bits(a) & fx_f32_to_bits(b));
  float m = b > a ? b : a;
  m = b == a ? tie : m;
  return b != b ? b : m;
}
/* Integer max/min as calls, not nested ?: (which repeats its operands and, in clamped index
   arithmetic, reads to GCC as control flow that stops vectorization). */
FX_FN int64_t fx_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
FX_FN int64_t fx_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
FX_FN int32_t fx_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
FX_FN int32_t fx_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
FX_FN uint32_t fx_max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }
FX_FN uint32_t fx_min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
FX_FN float fx_minf(float a, float b) {
  float tie = fx_bits_to_f32(fx_f32_to_bits(a) | fx_f32_to_bits(b));
  float m = b < a ? b : a;
  m = b == a ? tie : m;
  return b != b ? b : m;
}
FX_FN double fx_max(double a, double b) {
  double tie = fx_bits_to_f64(fx_f64_to_bits(a) & fx_f64_to_bits(b));
  double m = b > a ? b : a;
  m = b == a ? tie : m;
  return b != b ? b : m;
}
FX_FN double fx_min(double a, double b) {
  double tie = fx_bits_to_f64(fx_f64_to_bits(a) | fx_f64_to_bits(b));
  double m = b < a ? b : a;
  m = b == a ? tie : m;
  return b != b ? b : m;
}
/* A max/min reduction vectorizes as one accumulator per SIMD lane ('#pragma omp simd
   reduction(fx_max:acc)', see the C dialect), merged with the same functions: NaN still wins and
   the zeros are ordered, so only which NaN payload survives may change. */
#ifdef _OPENMP
#pragma omp declare reduction(fx_max : float : omp_out = fx_maxf(omp_out, omp_in)) \
    initializer(omp_priv = -INFINITY)
#pragma omp declare reduction(fx_min : float : omp_out = fx_minf(omp_out, omp_in)) \
    initializer(omp_priv = INFINITY)
#pragma omp declare reduction(fx_max : double : omp_out = fx_max(omp_out, omp_in)) \
    initializer(omp_priv = -INFINITY)
#pragma omp declare reduction(fx_min : double : omp_out = fx_min(omp_out, omp_in)) \
    initializer(omp_priv = INFINITY)
#pragma omp declare reduction(fx_max : int32_t : omp_out = fx_max_i32(omp_out, omp_in)) \
    initializer(omp_priv = INT32_MIN)
#pragma omp declare reduction(fx_min : int32_t : omp_out = fx_min_i32(omp_out, omp_in)) \
    initializer(omp_priv = INT32_MAX)
#pragma omp declare reduction(fx_max : int64_t : omp_out = fx_max_i64(omp_out, omp_in)) \
    initializer(omp_priv = INT64_MIN)
#pragma omp declare reduction(fx_min : int64_t : omp_out = fx_min_i64(omp_out, omp_in)) \
    initializer(omp_priv = INT64_MAX)
#pragma omp declare reduction(fx_max : uint32_t : omp_out = fx_max_u32(omp_out, omp_in)) \
    initializer(omp_priv = 0u)
#pragma omp declare reduction(fx_min : uint32_t : omp_out = fx_min_u32(omp_out, omp_in)) \
    initializer(omp_priv = 0xffffffffu)
#pragma omp declare reduction(fx_max : uint64_t : omp_out = omp_out > omp_in ? omp_out : omp_in) \
    initializer(omp_priv = 0u)
#pragma omp declare reduction(fx_min : uint64_t : omp_out = omp_out < omp_in ? omp_out : omp_in) \
    initializer(omp_priv = ~(uint64_t)0)
#pragma omp declare reduction(fx_max : int16_t : omp_out = omp_out > omp_in ? omp_out : omp_in) \
    initializer(omp_priv = -32768)
#pragma omp declare reduction(fx_min : int16_t : omp_out = omp_out < omp_in ? omp_out : omp_in) \
    initializer(omp_priv = 32767)
#pragma omp declare reduction(fx_max : uint16_t : omp_out = omp_out > omp_in ? omp_out : omp_in) \
    initializer(omp_priv = 0)
#pragma omp declare reduction(fx_min : uint16_t : omp_out = omp_out < omp_in ? omp_out : omp_in) \
    initializer(omp_priv = 65535)
#pragma omp declare reduction(fx_mul_u16 : uint16_t : \
    omp_out = (uint16_t)((uint32_t)omp_out * omp_in)) initializer(omp_priv = 1)
#pragma omp declare reduction(fx_max : int8_t : omp_out = omp_out > omp_in ? omp_out : omp_in) \
    initializer(omp_priv = -128)
#pragma omp declare reduction(fx_min : int8_t : omp_out = omp_out < omp_in ? omp_out : omp_in) \
    initializer(omp_priv = 127)
/* uint8_t holds uint8 and bool alike: on bools (0 or 1) max is OR and min is AND */
#pragma omp declare reduction(fx_max : uint8_t : omp_out = omp_out > omp_in ? omp_out : omp_in) \
    initializer(omp_priv = 0)
#pragma omp declare reduction(fx_min : uint8_t : omp_out = omp_out < omp_in ? omp_out : omp_in) \
    initializer(omp_priv = 255)
#endif
/* c ? a : b by the bits (the C dialect's select for a float accumulator, see render.py) */
FX_FN float fx_blendf(uint8_t c, float a, float b) {
  uint32_t m = 0u - (uint32_t)(c != 0);
  return fx_bits_to_f32((fx_f32_to_bits(a) & m) | (fx_f32_to_bits(b) & ~m));
}
/* round half away from zero, keeping the sign of zero (-0.3 -> -0.0, as C's round) */
FX_FN float fx_round_awayf(float x) {
  float t = truncf(x);
  return copysignf(t + ((fabsf(x - t) >= 0.5f) ? copysignf(1.0f, x) : 0.0f), x);
}
FX_FN double fx_round_away(double x) {
  double t = trunc(x);
  return copysign(t + ((fabs(x - t) >= 0.5) ? copysign(1.0, x) : 0.0), x);
}
FX_FN float fx_signf(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }
FX_FN double fx_sign(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x); }

/* --- float32 exp/log family: polynomial, vectorizable, special values explicit --- */
/* The polynomials use a fused multiply-add where the target has one. Without it (x86-64-v2)
   fmaf is a libm call that keeps every loop calling it scalar: multiply, then add (two
   roundings; the error bounds hold for both, see tests/lowering/test_prelude_accuracy.py). */
FX_FN float fx_fmaf(float a, float b, float c) {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__FP_FAST_FMAF)
  return fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
/* 2^k for k in [-126, 127], by the bits (unsigned: wraps, never overflows, for any k) */
FX_FN float fx_pow2f(uint32_t k) { return fx_bits_to_f32((k + 127u) << 23); }
/* exp(x) = 2^k e^r, k = rint(x / ln 2), r = x - k ln 2 (in two parts), e^r by a polynomial.
   k is rounded by adding 1.5 * 2^23 (its integer is then in the low bits: defined for every x,
   where rintf and an (int) cast of a huge or NaN k are not), and 2^k is applied in two halves
   so that results down to the subnormals are rounded once. No clamp of x in front: GCC
   sank such a clamp's selects into every value computed from it (8 blends a vector on
   AVX2); an x out of range gives a meaningless y that the selects at the end replace. A NaN
   x needs no select: it makes r, and so y, NaN. */
FX_FN float fx_expf(float x) {
  float t = x * 1.44269504088896341f + 12582912.0f;
  uint32_t ki = fx_f32_to_bits(t) - 0x4b400000u;  /* rint(x / ln 2), two's complement */
  float k = t - 12582912.0f;
  float r = fx_fmaf(k, -0.693359375f, x);  /* exact: k * 0.693359375 has 17 bits */
  r = fx_fmaf(k, 2.12194440e-4f, r);
  float z = r * r;
  float p = 1.9875691500e-4f;
  p = fx_fmaf(p, r, 1.3981999507e-3f);
  p = fx_fmaf(p, r, 8.3334519073e-3f);
  p = fx_fmaf(p, r, 4.1665795894e-2f);
  p = fx_fmaf(p, r, 1.6666665459e-1f);
  p = fx_fmaf(p, r, 5.0000001201e-1f);
  p = p * z + r + 1.0f;
  uint32_t k1 = (uint32_t)((int32_t)ki >> 1);
  float y = p * fx_pow2f(k1) * fx_pow2f(ki - k1);
  y = x > 88.72283935546875f ? INFINITY : y;
  return x < -103.97208f ? 0.0f : y;
}
FX_FN float fx_logf(float x) {
  int sub = x < 1.17549435e-38f;
  float xs = sub ? x * 8388608.0f : x;          /* scale subnormals by 2^23 */
  uint32_t b = fx_f32_to_bits(xs);
  int e = (int)((b >> 23) & 0xffu) - 127 - (sub ? 23 : 0);
  float m = fx_bits_to_f32((b & 0x7fffffu) | 0x3f800000u);  /* [1, 2) */
  int big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  e = big ? e + 1 : e;
  float f = m - 1.0f;
  float z = f * f;
  float p = 7.0376836292e-2f;
  p = fx_fmaf(p, f, -1.1514610310e-1f);
  p = fx_fmaf(p, f, 1.1676998740e-1f);
  p = fx_fmaf(p, f, -1.2420140846e-1f);
  p = fx_fmaf(p, f, 1.4249322787e-1f);
  p = fx_fmaf(p, f, -1.6668057665e-1f);
  p = fx_fmaf(p, f, 2.0000714765e-1f);
  p = fx_fmaf(p, f, -2.4999993993e-1f);
  p = fx_fmaf(p, f, 3.3333331174e-1f);
  float fe = (float)e;
  float y = f * z * p;
  y = y - 2.12194440e-4f * fe;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + 0.693359375f * fe;
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  r = x == INFINITY ? INFINITY : r;
  return x != x ? x : r;
}
FX_FN float fx_log1pf(float x) {
  float u = 1.0f + x;
  float l = fx_logf(u);
  /* log(u) * x / (u - 1) corrects the rounding of 1 + x */
  float d = u - 1.0f;
  float r = d == 0.0f ? x : l * (x / d);
  return (u == INFINITY || x != x) ? l : r;
}
FX_FN float fx_expm1f(float x) {
  float u = fx_expf(x);
  float d = u - 1.0f;
  float l = fx_logf(u);
  float r = (u == 1.0f) ? x : ((d == -1.0f) ? -1.0f : d * (x / l));
  return (u == INFINITY || x != x) ? u : r;
}
FX_FN float fx_tanhf(float x) {
  float ax = fabsf(x);
  float z = x * x;
  float q = fx_fmaf(-5.70498872745e-3f, z, 2.06390887954e-2f);
  q = fx_fmaf(q, z, -5.37397155531e-2f);
  q = fx_fmaf(q, z, 1.33314422036e-1f);
  q = fx_fmaf(q, z, -3.33332819422e-1f);
  float small = fx_fmaf(q * z, x, x);
  /* 1 - 2 / (e^2|x| + 1): e^2|x| is inf from |x| > 44.4, and 2 / inf is 0 */
  float e = fx_expf(2.0f * ax);
  float big = copysignf(1.0f - 2.0f / (e + 1.0f), x);
  return ax < 0.625f ? small : big;
}
FX_FN float fx_logisticf(float x) {
  float e = fx_expf(-fabsf(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);  /* NaN: e is NaN */
}
FX_FN double fx_logistic(double x) {
  double e = exp(-fabs(x));
  return x >= 0.0 ? 1.0 / (1.0 + e) : (x != x ? x : e / (1.0 + e));
}

/* --- special functions computed in double --- */
FX_FN double fx_digamma(double x) {
  if (x != x || x == -INFINITY) return NAN;
  if (x <= 0.0 && x == floor(x)) return NAN;
  double acc = 0.0;
  if (x < 0.5) {                       /* reflection */
    acc = -3.14159265358979323846 / tan(3.14159265358979323846 * x);
    x = 1.0 - x;
  }
  while (x < 12.0) { acc -= 1.0 / x; x += 1.0; }
  double z = 1.0 / (x * x);
  double s = z * (1.0/12 - z * (1.0/120 - z * (1.0/252 - z * (1.0/240 - z * (1.0/132
               - z * (691.0/32760 - z * (1.0/12)))))));
  return acc + log(x) - 0.5 / x - s;
}
FX_FN double fx_polygamma(int m, double x) {
  if (m == 0) return fx_digamma(x);
  if (x != x) return NAN;
  if (x <= 0.0 && x == floor(x)) return NAN;
  double fact = 1.0;
  for (int i = 2; i <= m; i++) fact *= i;
  double sign = (m % 2 == 0) ? -1.0 : 1.0;
  double s = m + 1.0, acc = 0.0;
  int guard = 0;
  while (x < 20.0 && guard < 200) { acc += pow(x, -s); x += 1.0; guard++; }
  double zeta = pow(x, 1.0 - s) / (s - 1.0) + 0.5 * pow(x, -s);
  double rising = s, power = pow(x, -s - 1.0), fk = 1.0;
  for (int k = 1; k <= 9; k++) {
    double b2k = k == 1 ? 1.0/6 : k == 2 ? -1.0/30 : k == 3 ? 1.0/42 : k == 4 ? -1.0/30
               : k == 5 ? 5.0/66 : k == 6 ? -691.0/2730 : k == 7 ? 7.0/6 : k == 8 ? -3617.0/510
               : 43867.0/798;
    fk *= (2.0 * k - 1.0) * (2.0 * k);
    zeta += b2k / fk * rising * power;
    rising *= (s + 2.0 * k - 1.0) * (s + 2.0 * k);
    power /= x * x;
  }
  return sign * fact * (acc + zeta);
}
FX_FN double fx_erf_inv(double y) {
  if (y != y || y < -1.0 || y > 1.0) return NAN;
  if (y == 1.0) return INFINITY;
  if (y == -1.0) return -INFINITY;
  double w = -log((1.0 - y) * (1.0 + y)), x;
  if (w < 6.25) {
    w -= 3.125;
    x = -3.6444120640178196996e-21; x = -1.685059138182016589e-19 + x * w;
    x = 1.2858480715256400167e-18 + x * w; x = 1.115787767802518096e-17 + x * w;
    x = -1.333171662854620906e-16 + x * w; x = 2.0972767875968561637e-17 + x * w;
    x = 6.6376381343583238325e-15 + x * w; x = -4.0545662729752068639e-14 + x * w;
    x = -8.1519341976054721522e-14 + x * w; x = 2.6335093153082322977e-12 + x * w;
    x = -1.2975133253453532498e-11 + x * w; x = -5.4154120542946279317e-11 + x * w;
    x = 1.051212273321532285e-09 + x * w; x = -4.1126339803469836976e-09 + x * w;
    x = -2.9070369957882005086e-08 + x * w; x = 4.2347877827932403518e-07 + x * w;
    x = -1.3654692000834678645e-06 + x * w; x = -1.3882523362786468719e-05 + x * w;
    x = 0.0001867342080340571352 + x * w; x = -0.00074070253416626697512 + x * w;
    x = -0.0060336708714301490533 + x * w; x = 0.24015818242558961693 + x * w;
    x = 1.6536545626831027356 + x * w;
  } else {
    w = sqrt(w) - 3.25;
    x = 2.2137376921775787049e-09; x = 9.0756561938885390979e-08 + x * w;
    x = -2.7517406297064545428e-07 + x * w; x = 1.8239629214389227755e-08 + x * w;
    x = 1.5027403968909827627e-06 + x * w; x = -4.013867526981545969e-06 + x * w;
    x = 2.9234449089955446044e-06 + x * w; x = 1.2475304481671778723e-05 + x * w;
    x = -4.7318229009055733981e-05 + x * w; x = 6.8284851459573175448e-05 + x * w;
    x = 2.4031110387097893999e-05 + x * w; x = -0.0003550375203628474796 + x * w;
    x = 0.00095328937973738049703 + x * w; x = -0.0016882755560235047313 + x * w;
    x = 0.0024914420961078508066 + x * w; x = -0.0037512085075692412107 + x * w;
    x = 0.005370914553590063617 + x * w; x = 1.0052589676941592334 + x * w;
    x = 3.0838856104922207635 + x * w;
  }
  x *= y;
  for (int i = 0; i < 2; i++) {
    double err = erf(x) - y;
    double d = 1.1283791670955126 * exp(-x * x);
    if (d > 0.0) x -= err / d;
  }
  return x;
}
//@ complex

/* --- complex pairs fx_${k} --- */
FX_FN fx_${k} fx_make_${k}(${t} re, ${t} im) { fx_${k} z; z.re = re; z.im = im; return z; }
FX_FN fx_${k} fx_add_${k}(fx_${k} a, fx_${k} b) { return fx_make_${k}(a.re + b.re, a.im + b.im); }
FX_FN fx_${k} fx_sub_${k}(fx_${k} a, fx_${k} b) { return fx_make_${k}(a.re - b.re, a.im - b.im); }
FX_FN fx_${k} fx_neg_${k}(fx_${k} a) { return fx_make_${k}(-a.re, -a.im); }
FX_FN fx_${k} fx_conj_${k}(fx_${k} a) { return fx_make_${k}(a.re, -a.im); }
FX_FN int fx_eq_${k}(fx_${k} a, fx_${k} b) { return a.re == b.re && a.im == b.im; }
FX_FN ${t} fx_abs_${k}(fx_${k} a) { return hypot${f}(a.re, a.im); }
FX_FN fx_${k} fx_mul_${k}(fx_${k} a, fx_${k} b) {
  return fx_make_${k}(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
FX_FN fx_${k} fx_div_${k}(fx_${k} a, fx_${k} b) {
  ${t} abr = fabs${f}(b.re), abi = fabs${f}(b.im);
  if (abr >= abi) {
    if (abr == 0 && abi == 0) return fx_make_${k}(a.re / abr, a.im / abi);
    ${t} rat = b.im / b.re, scl = 1.0${f} / (b.re + b.im * rat);
    return fx_make_${k}((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
  }
  ${t} rat = b.re / b.im, scl = 1.0${f} / (b.im + b.re * rat);
  return fx_make_${k}((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
