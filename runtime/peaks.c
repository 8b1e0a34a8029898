/* Calibration loops for fx.runtime.peaks: the machine's float32 FMA throughput and its
 * memory copy bandwidth, each run on every core the OpenMP runtime gives.
 *
 * fx_fma_peak(iters): each thread keeps CHAINS independent accumulator vectors (enough to
 * cover the FMA latency on two ports) and updates each `iters` times; returns the number of
 * float32 lanes per vector, so the caller can count FLOPs = 2 * lanes * CHAINS * iters * threads.
 * fx_copy(dst, src, n): copies n floats in parallel (the caller counts 2 * 4 * n bytes moved).
 */
#include <stddef.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#define CHAINS 12

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define REDUCE(v) _mm512_reduce_add_ps(v)
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
static float REDUCE(__m256 v) { float t[8]; _mm256_storeu_ps(t, v); float s = 0; for (int i = 0; i < 8; i++) s += t[i]; return s; }
#else
typedef float vec;
#define LANES 1
#define SET1(x) (x)
#define FMA(a, b, c) __builtin_fmaf(a, b, c)
#define REDUCE(v) (v)
#endif

int fx_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int fx_fma_peak(long iters, float *sink) {
    #pragma omp parallel
    {
        vec acc[CHAINS];
        vec a = SET1(0.999999f), b = SET1(1e-7f);
        for (int c = 0; c < CHAINS; c++) acc[c] = SET1((float)c);
        for (long i = 0; i < iters; i++) {
            #pragma GCC unroll 12
            for (int c = 0; c < CHAINS; c++) acc[c] = FMA(acc[c], a, b);
        }
        float s = 0;
        for (int c = 0; c < CHAINS; c++) s += REDUCE(acc[c]);
        #pragma omp atomic
        *sink += s;
    }
    return LANES * CHAINS;
}

void fx_copy(float *restrict dst, const float *restrict src, long n) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i += 4096) {
        long m = n - i < 4096 ? n - i : 4096;
        memcpy(dst + i, src + i, (size_t)m * sizeof(float));
    }
}
