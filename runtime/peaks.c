/* Calibration loops for fx.runtime.peaks: the machine's float32 FMA throughput and its
 * memory stream bandwidth, each run on `threads` OpenMP threads.
 *
 * Both return the CPU time of the thread that ran longest (each thread's own clock, which
 * stops while the scheduler runs another process on its core). With the work split evenly,
 * total work over that time is the rate of the threads running side by side, also on a
 * machine where other processes take turns on the cores during the calibration.
 *
 * fx_fma_per_iter(): float32 FMAs one thread issues per iteration of fx_fma_peak.
 * fx_fma_peak(threads, iters, sink): each thread keeps CHAINS independent accumulator
 *   vectors (more than two FMA ports times a 4-cycle latency) and updates each `iters` times;
 *   the caller counts FLOPs = 2 * fx_fma_per_iter() * iters * threads.
 * fx_stream(threads, dst, src, n, reps): dst[i] = src[i] * 1.5f over n floats, `reps`
 *   times, each thread on the same slice every time (so its pages stay where it first
 *   touched them); ordinary stores, as the generated kernels' (the caller counts
 *   4 bytes read + 4 written per element).
 */
#include <stddef.h>
#include <time.h>
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

/* This thread's CPU seconds (wall seconds where there is no per-thread clock). */
static double thread_seconds(void) {
#ifdef CLOCK_THREAD_CPUTIME_ID
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0) return (double)t.tv_sec + 1e-9 * t.tv_nsec;
#endif
#ifdef _OPENMP
    return omp_get_wtime();
#else
    struct timespec w;
    clock_gettime(CLOCK_MONOTONIC, &w);
    return (double)w.tv_sec + 1e-9 * w.tv_nsec;
#endif
}

int fx_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int fx_fma_per_iter(void) { return LANES * CHAINS; }

double fx_fma_peak(int threads, long iters, float *sink) {
    double longest = 0;
    #pragma omp parallel num_threads(threads) reduction(max:longest)
    {
        double start = thread_seconds();
        vec acc[CHAINS];
        vec a = SET1(0.999999f), b = SET1(1e-7f);
        for (int c = 0; c < CHAINS; c++) acc[c] = SET1((float)c);
        for (long i = 0; i < iters; i++) {
            #pragma GCC unroll 12
            for (int c = 0; c < CHAINS; c++) acc[c] = FMA(acc[c], a, b);
        }
        float s = 0;
        for (int c = 0; c < CHAINS; c++) s += REDUCE(acc[c]);
        longest = thread_seconds() - start;
        #pragma omp atomic
        *sink += s;
    }
    return longest;
}

double fx_stream(int threads, float *restrict dst, const float *restrict src, long n, long reps) {
    double longest = 0;
    #pragma omp parallel num_threads(threads) reduction(max:longest)
    {
        double start = thread_seconds();
        for (long r = 0; r < reps; r++) {
            #pragma omp for simd schedule(static) nowait
            for (long i = 0; i < n; i++) dst[i] = src[i] * 1.5f;
        }
        longest = thread_seconds() - start;
    }
    return longest;
}
