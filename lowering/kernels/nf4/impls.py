"""The NF4 family's products, registered when ``op_info`` imports this module: NF4 weights
unpacked, looked up and scaled inside the product (``nf4_gemm``, for ``fx.quant.nf4``), the
epilogue run as a kernel of its own. On CUDA the transposed product (the input gradient) runs
op by op, on the host (``op_impl.host_only_prims``); the CPU has a kernel for it.
"""

from __future__ import annotations

from fx import dtypes
from fx.lowering.fusion.groups import GroupKind
from fx.lowering.kernels.nf4 import nf4_gemm
from fx.lowering.select.generable import generable
from fx.lowering.select.op_impl import OpImpl, register

register(OpImpl("cpu.nf4_gemm", "cpu", GroupKind.GEMM, frozenset([dtypes.float32]), {}, True,
                nf4_gemm.cost, "generated NF4 dequantize-in-GEMM, in-order sums over k",
                applies=lambda g: nf4_gemm.applies(g, transposed=True) and generable(g),
                kernel=nf4_gemm.cpu_kernel, describe=nf4_gemm.describe))
register(OpImpl("cuda.nf4_gemm", "cuda", GroupKind.GEMM, frozenset([dtypes.float32]), {}, False,
                lambda g: 5000.0 + nf4_gemm.cost(g) / 100.0,
                "generated NF4 dequantize-in-GEMM, a thread per byte column",
                applies=lambda g: nf4_gemm.applies(g) and generable(g),
                kernel=nf4_gemm.cuda_kernel, describe=nf4_gemm.describe))
