// The file preludes of the kernel dialects: what every generated C, CUDA C or OpenCL C file
// starts with (types, integer limits, bit casts, the complex structs), one section per
// dialect, read by lowering/render/{c,cuda,opencl}_dialect.py. Each dialect appends the
// helpers the elementwise records bring; OpenCL's libm name map, derived from the records,
// goes between its two sections.
//@ c
#include <stdint.h>
#include <string.h>
#include <math.h>
#define FX_FN static inline
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define FX_WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define FX_WIDE_VECTORS
#endif
typedef struct { float re, im; } fx_c64;
typedef struct { double re, im; } fx_c128;
FX_FN float fx_bits_to_f32(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
FX_FN uint32_t fx_f32_to_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
FX_FN double fx_bits_to_f64(uint64_t b) { double f; memcpy(&f, &b, 8); return f; }
FX_FN uint64_t fx_f64_to_bits(double f) { uint64_t b; memcpy(&b, &f, 8); return b; }
//@ cuda
#define FX_FN static __device__ __forceinline__
#ifdef __CUDACC_RTC__
typedef signed char int8_t; typedef short int16_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif
#ifndef INT32_MIN
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#endif
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
struct __align__(8) fx_c64 { float re, im; };
struct __align__(16) fx_c128 { double re, im; };
FX_FN float fx_bits_to_f32(uint32_t b) { return __uint_as_float(b); }
FX_FN uint32_t fx_f32_to_bits(float f) { return __float_as_uint(f); }
FX_FN double fx_bits_to_f64(uint64_t b) { return __longlong_as_double((long long)b); }
FX_FN uint64_t fx_f64_to_bits(double f) { return (uint64_t)__double_as_longlong(f); }
//@ opencl_head
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
#define FX_FN static inline
typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t;
typedef ulong uint64_t;
#define INT32_MIN INT_MIN
#define INT32_MAX INT_MAX
#define INT64_MIN LONG_MIN
#define INT64_MAX LONG_MAX
//@ opencl_tail
typedef struct { float re, im; } fx_c64;
typedef struct { double re, im; } fx_c128;
FX_FN float fx_bits_to_f32(uint32_t b) { return as_float(b); }
FX_FN uint32_t fx_f32_to_bits(float f) { return as_uint(f); }
FX_FN double fx_bits_to_f64(uint64_t b) { return as_double(b); }
FX_FN uint64_t fx_f64_to_bits(double f) { return as_ulong(f); }
