"""The CUDA C dialect of the kernel renderer (NVRTC through CuPy, or nvcc).

Kernels are ``extern "C" __global__`` functions; the parallel loop is a grid-stride loop over
the thread index (32-bit indices where every index fits), rows shared by a warp combine with
``__shfl_xor_sync``, and flat loops may load and store ``float4``-wide. NVRTC has no standard
headers, so the file prelude defines the fixed-width integer types and limits it uses.
"""

from __future__ import annotations

from fx.lowering import resources
from fx.lowering.render.dialect_base import RECORD_HELPERS, Dialect

CUDA = Dialect(
    name="cuda",
    file_prelude=resources.sections(__package__, "dialect_preludes.h")["cuda"] + RECORD_HELPERS,
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
