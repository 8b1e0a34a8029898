"""The sparse family's product, registered for every backend when ``op_info`` imports this
module: CSR x dense over a sparse constant weight's nonzeros (``sparse_gemm``), the epilogue
fused in the kernel's store."""

from __future__ import annotations

from fx.lowering.fusion.groups import GroupKind
from fx.lowering.kernels.sparse import sparse_gemm
from fx.lowering.select import backends
from fx.lowering.select.generable import generable
from fx.lowering.select.op_impl import OpImpl, register

for _backend in backends.BACKENDS:  # every target renders the kernel IR
    register(OpImpl(f"{_backend}.sparse_gemm", _backend, GroupKind.GEMM,
                    sparse_gemm.SPARSE_DTYPES, {}, True, sparse_gemm.cost,
                    "generated CSR x dense kernel over the weight's nonzeros, epilogue fused",
                    applies=lambda g: sparse_gemm.applies(g) and generable(g),
                    kernel=sparse_gemm.gemm_kernel, fuses_epilogue=True,
                    describe=sparse_gemm.describe))
