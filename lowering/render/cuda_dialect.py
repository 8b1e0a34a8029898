"""The CUDA C dialect of the kernel renderer (NVRTC through CuPy, or nvcc).

Kernels are ``extern "C" __global__`` functions; the parallel loop is a grid-stride loop over
the thread index (32-bit indices where every index fits), rows shared by a warp combine with
``__shfl_xor_sync``, and flat loops may load and store ``float4``-wide. NVRTC has no standard
headers, so the file prelude defines the fixed-width integer types and limits it uses.
"""

from __future__ import annotations

from fx.lowering.render.dialect_base import RECORD_HELPERS, Dialect

CUDA = Dialect(
    name="cuda",
    # nvcc includes the standard headers itself; NVRTC (CuPy) has none, so define what we use.
    file_prelude="#define FX_FN static __device__ __forceinline__\n"
                 "#ifdef __CUDACC_RTC__\n"
                 "typedef signed char int8_t; typedef short int16_t;\n"
                 "typedef unsigned char uint8_t; typedef unsigned short uint16_t;\n"
                 "typedef int int32_t; typedef unsigned int uint32_t;\n"
                 "typedef long long int64_t; typedef unsigned long long uint64_t;\n"
                 "#else\n#include <stdint.h>\n#endif\n"
                 "#ifndef INT32_MIN\n#define INT32_MIN (-2147483647 - 1)\n"
                 "#define INT32_MAX 2147483647\n"
                 "#define INT64_MIN (-9223372036854775807LL - 1)\n"
                 "#define INT64_MAX 9223372036854775807LL\n#endif\n"
                 "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
                 "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif\n"
                 "struct __align__(8) fx_c64 { float re, im; };\n"
                 "struct __align__(16) fx_c128 { double re, im; };\n"
                 "FX_FN float fx_bits_to_f32(uint32_t b) { return __uint_as_float(b); }\n"
                 "FX_FN uint32_t fx_f32_to_bits(float f) { return __float_as_uint(f); }\n"
                 "FX_FN double fx_bits_to_f64(uint64_t b) "
                 "{ return __longlong_as_double((long long)b); }\n"
                 "FX_FN uint64_t fx_f64_to_bits(double f) "
                 "{ return (uint64_t)__double_as_longlong(f); }\n" + RECORD_HELPERS,
    kernel_prefix='extern "C" __global__ void',
    restrict="__restrict__",
    parallel_for="for ({it} {v} = {start} + (({it})blockIdx.x * blockDim.x + threadIdx.x); "
                 "{v} < {stop}; {v} += ({it})gridDim.x * blockDim.x)",
    parallel_for_lanes="const int fx_lane = threadIdx.x & ({lanes} - 1);\n"
                       "for ({it} {v} = (({it})blockIdx.x * blockDim.x + threadIdx.x) / {lanes}; "
                       "{v} < {stop}; {v} += (({it})gridDim.x * blockDim.x) / {lanes})",
    cooperative_for="for ({it} {v} = fx_lane; {v} < {stop}; {v} += 32)",
    small_index_type="int",
    combine="for (int fx_off = 16; fx_off > 0; fx_off >>= 1) {{ "
            "{type} {other} = ({type})__shfl_xor_sync(0xffffffffu, {shfl}, fx_off); "
            "{acc} = {expr}; }}",
    combine_arg="for (int fx_off = 16; fx_off > 0; fx_off >>= 1) {{ "
                "{vtype} fx_ob = ({vtype})__shfl_xor_sync(0xffffffffu, {vshfl}, fx_off); "
                "{itype} fx_oi = __shfl_xor_sync(0xffffffffu, {idx}, fx_off); "
                "if ({better}) {{ {best} = fx_ob; {idx} = fx_oi; }} }}",
    leader_guard="if (fx_lane == 0) ",
    vector_types={(4, "float"): "float4", (4, "int32_t"): "int4", (4, "uint32_t"): "uint4"},
    vector_aligned="((({ptrs}) % {bytes}ull) == 0ull)",
    vector_pointer="(unsigned long long){p}",
    vector_load="const {vt} {name} = reinterpret_cast<const {vt}*>({buf})[{i}];",
    vector_store="reinterpret_cast<{vt}*>({buf})[{i}] = {name};",
)
