"""The int8 family's products (int8 x int8 -> int32, exact), registered when ``op_info``
imports this module, cheapest first on a typical target:

- ``cpu.int8_gemm_f32``: BLAS on the operands converted to float32, where that is exact and the
  target lacks byte dot products;
- ``cpu.int8_gemm``: the generated dot-product tiles (``int8_gemm``; the VNNI microkernel for
  packed weights, ``int8_vnni``);
- ``cpu.int8_conv``: the same tiles over a convolution's input read in place (``int8_conv``);
- ``cuda.int8_gemm``: the 64x64 tile on ``__dp4a`` (``fx.lowering.kernels.cuda.cuda_int8_gemm``).
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.lax import linalg
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.cpu.library import gemm_step
from fx.lowering.kernels.cuda import cuda_int8_gemm
from fx.lowering.kernels.int8 import int8_conv, int8_gemm, int8_vnni
from fx.lowering.select.cost import group_flops, output_elements
from fx.lowering.select.generable import generable
from fx.lowering.select.op_impl import OpImpl, register


# ~60 int8 flops per ns on one core with vpdpbusd, ~40 with AVX2's 16-bit products
# (measured), ~1 ns per element of epilogue.
def _int8_cost(g: FusionGroup) -> float:
    rate = 40.0 if int8_vnni.target_lacks_dot_products() else 60.0
    return 2000.0 + group_flops(g) / rate + output_elements(g)


def _as_float_cost(g: FusionGroup) -> float:
    operands = float(sum(v.aval.size for v in g.anchor.invars[:2]))
    return 3000.0 + group_flops(g) / 50.0 + operands / 4.0


def _int8_as_float(g: FusionGroup) -> bool:
    """An int8 product BLAS computes exactly in float32 (every partial sum an integer below
    2**24 in magnitude: K * 128 * 128 <= 2**24), on a target without byte dot products."""
    return (int8_gemm.applies(g) and int8_gemm._sizes(g.anchor)[2] <= 1024
            and int8_vnni.target_lacks_dot_products())


def _int8_float_library(step):
    dot = step.group.anchor
    view = dot.replace(primitive=linalg.dot_general_p, invars=list(dot.invars[:2]))
    return gemm_step(view, np.float32, step.group.prologue)


register(OpImpl("cpu.int8_gemm_f32", "cpu", GroupKind.GEMM, frozenset([dtypes.int32]), {},
                False, _as_float_cost,
                "int8 operands converted to float32 and multiplied by BLAS: exact (integer "
                "partial sums below 2**24), faster than integer code on x86 without VNNI",
                applies=_int8_as_float, library=_int8_float_library))
register(OpImpl("cpu.int8_gemm", "cpu", GroupKind.GEMM, frozenset([dtypes.int32]), {}, True,
                _int8_cost,
                "generated int8 x int8 -> int32 dot-product tiles, epilogue fused in the store",
                applies=lambda g: int8_gemm.applies(g) and generable(g),
                kernel=int8_gemm.gemm_kernel, fuses_epilogue=True,
                describe=int8_gemm.describe))
# The same tiles over a convolution's input read in place (int8_conv: no patches gather).
register(OpImpl("cpu.int8_conv", "cpu", GroupKind.GEMM, frozenset([dtypes.int32]), {}, True,
                lambda g: 1000.0 + group_flops(g) / 60.0 + output_elements(g),
                "generated int8 x int8 -> int32 dot-product tiles over the input's pixels, "
                "epilogue fused in the store",
                applies=lambda g: int8_conv.applies(g) and generable(g),
                kernel=int8_conv.conv_kernel, fuses_epilogue=True, describe=int8_conv.describe))
# H200 int8 on __dp4a: ~120 int8 multiply-adds per ns from the generated tile (estimated).
register(OpImpl("cuda.int8_gemm", "cuda", GroupKind.GEMM, frozenset([dtypes.int32]), {}, False,
                lambda g: 5000.0 + group_flops(g) / 240000.0,
                "generated int8 x int8 -> int32 64x64 tile on __dp4a, epilogue fused in its store",
                applies=lambda g: int8_gemm.applies(g) and generable(g),
                kernel=cuda_int8_gemm.gemm_kernel, fuses_epilogue=True,
                describe=int8_gemm.describe))
