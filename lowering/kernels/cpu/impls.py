"""The CPU family's matrix product: ``dot_general`` as one BLAS call through NumPy, into the
planned buffer (``library.gemm_step``), registered when ``op_info`` imports this module.

The family's other implementations register from the modules that hold them, imported by the
pipeline: ``conv`` (the convolution strategies) and ``library_calls`` (LAPACK and FFT calls).
"""

from __future__ import annotations

from fx import dtypes
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.cpu.library import HALF_TO_F32, dot_step, is_dot
from fx.lowering.select.cost import group_flops
from fx.lowering.select.op_impl import OpImpl, register


# ~50 flops per ns on one core from BLAS, after a call overhead.
def _blas_cost(g: FusionGroup) -> float:
    return 3000.0 + group_flops(g) / 50.0


register(OpImpl("cpu.blas_gemm", "cpu", GroupKind.GEMM,
                frozenset([dtypes.float32, dtypes.float64]), dict(HALF_TO_F32), False,
                _blas_cost,
                "numpy/BLAS matmul into the planned buffer, then the fused epilogue in place",
                applies=is_dot, library=dot_step))
