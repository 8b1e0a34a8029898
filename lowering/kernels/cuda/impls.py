"""The CUDA family's matrix products, registered when ``op_info`` imports this module: cuBLAS
through CuPy (``cuda.cublas_gemm``), the generated tiled GEMM (``cuda_gemm``,
``cuda.tiled_gemm``) and the convolution reading its input in place (``conv_in_place``,
``cuda.in_place_conv``).

The family's other implementations register from the modules that hold them: the int8 tile
(``cuda_int8_gemm``) with the int8 family (``fx.lowering.kernels.int8.impls``), the cuSOLVER,
cuBLAS and cuFFT calls from ``cuda_library`` (imported by ``cpu.library_calls``).
"""

from __future__ import annotations

from fx import dtypes
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.cpu.library import dot_step, is_dot
from fx.lowering.kernels.cuda import conv_in_place, cuda_gemm
from fx.lowering.select.cost import group_flops, output_elements
from fx.lowering.select.generable import generable
from fx.lowering.select.op_impl import OpImpl, register


# H200 FP32 (no TF32): cuBLAS ~50 TFLOP/s; the generated tile ~35; a launch ~5 us; an extra
# epilogue pass reads and writes the product at ~4.8 TB/s.
def _cublas_cost(g: FusionGroup) -> float:
    epilogue = 5000.0 + 8.0 * output_elements(g) / 4800.0 if g.epilogue else 0.0
    return 5000.0 + group_flops(g) / 50000.0 + epilogue


def _tiled_cost(g: FusionGroup) -> float:
    return 5000.0 + group_flops(g) / 35000.0


register(OpImpl("cuda.cublas_gemm", "cuda", GroupKind.GEMM,
                frozenset([dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]), {},
                False, _cublas_cost,
                "cuBLAS through CuPy into the planned buffer, then the epilogue as a kernel",
                applies=is_dot, library=dot_step))
register(OpImpl("cuda.tiled_gemm", "cuda", GroupKind.GEMM,
                frozenset([dtypes.float16, dtypes.bfloat16, dtypes.float32]), {}, False,
                _tiled_cost,
                "generated 128x128x8 tiled GEMM, float32 accumulation, epilogue fused in its "
                "store", applies=lambda g: is_dot(g) and cuda_gemm.applies(g),
                kernel=cuda_gemm.gemm_kernel, fuses_epilogue=True))


# Float32 convolutions reading their input in place (the constant pass makes them): the
# generated block tiles, epilogue fused in the store.
register(OpImpl("cuda.in_place_conv", "cuda", GroupKind.GEMM, frozenset([dtypes.float32]), {},
                False, lambda g: conv_in_place.cost(group_flops(g)),
                "generated float32 block tiles over the input's pixels, epilogue fused in the "
                "store", applies=lambda g: conv_in_place.applies(g) and generable(g),
                kernel=conv_in_place.conv_kernel, fuses_epilogue=True,
                describe=conv_in_place.describe))
