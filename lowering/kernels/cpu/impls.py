"""The CPU family's matrix products, registered when ``op_info`` imports this module:
``dot_general`` as one BLAS call through NumPy, into the planned buffer
(``library.gemm_step``), and ``conv_in_place``'s generated kernel.

The family's other implementations register from the modules that hold them, imported by the
pipeline: ``conv`` (the convolution strategies) and ``library_calls`` (LAPACK and FFT calls).
"""

from __future__ import annotations

import functools

from fx import dtypes
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.cpu import conv_in_place, winograd
from fx.lowering.kernels.cpu.library import HALF_TO_F32, dot_step, eqns_step, is_dot
from fx.lowering.select.cost import group_flops
from fx.lowering.select.generable import generable
from fx.lowering.select.op_impl import OpImpl, register


# ~50 flops per ns on one core from BLAS, after a call overhead.
def _blas_cost(g: FusionGroup) -> float:
    return 3000.0 + group_flops(g) / 50.0


register(OpImpl("cpu.blas_gemm", "cpu", GroupKind.GEMM,
                frozenset([dtypes.float32, dtypes.float64]), dict(HALF_TO_F32), False,
                _blas_cost,
                "numpy/BLAS matmul into the planned buffer, then the fused epilogue in place",
                applies=is_dot, library=dot_step))


# Float32 convolutions reading their input in place (conv_in_place's pass makes them): the
# generated register tiles (conv_in_place.cost), epilogue fused in the store; the NumPy form
# (gather, then BLAS) where the group has no kernel spelling.
def _conv_in_place_library(step):
    g = step.group
    return eqns_step([*g.prologue, g.anchor], [g.anchor.outvars[0]])


register(OpImpl("cpu.in_place_conv", "cpu", GroupKind.GEMM, frozenset([dtypes.float32]), {},
                True, lambda g: conv_in_place.cost(group_flops(g)),
                "generated float32 register tiles over the input's pixels, epilogue fused in "
                "the store",
                applies=lambda g: conv_in_place.applies(g) and generable(g),
                kernel=conv_in_place.conv_kernel, fuses_epilogue=True,
                describe=conv_in_place.describe))
# 3x3 stride-1 ones by Winograd's minimal filtering (winograd.cost: cheaper than the direct
# tiles where the channels are many enough to repay the transforms).
for _m in (2, 4):
    register(OpImpl(f"cpu.winograd_f{_m}", "cpu", GroupKind.GEMM, frozenset([dtypes.float32]),
                    {}, True, functools.partial(winograd.cost, m=_m),
                    f"generated float32 Winograd F({_m}x{_m},3x3): transformed tiles, register "
                    "tiles over the channels, epilogue fused in the output transform",
                    applies=lambda g: winograd.applies(g) and generable(g),
                    kernel=functools.partial(winograd.winograd_kernel, m=_m),
                    fuses_epilogue=True, describe=functools.partial(winograd.describe, m=_m)))
register(OpImpl("cpu.tiled_gemm", "cpu", GroupKind.GEMM, frozenset([dtypes.float32]), {},
                True, lambda g: conv_in_place.cost(group_flops(g)),
                "generated float32 register tiles, epilogue fused in the store",
                applies=lambda g: conv_in_place.tiled_product(g) and generable(g),
                kernel=conv_in_place.conv_kernel, fuses_epilogue=True,
                describe=conv_in_place.describe))
register(OpImpl("cpu.in_place_conv_numpy", "cpu", GroupKind.GEMM, frozenset([dtypes.float32]),
                {}, False, lambda g: 1e9 + group_flops(g),
                "the window gather and a BLAS product in NumPy (no kernel spelling)",
                applies=conv_in_place.anchored, library=_conv_in_place_library))
