"""A generated tiled GEMM for CUDA with the group's elementwise epilogue fused into its store.

``C[m, n] = sum_k A[m, k] B[k, n]`` for a plain 2-D ``dot_general`` (one contracting
dimension, no batch dimensions; operands in either layout — the strides are baked in). Each
256-thread block computes a 128×128 tile with 8×8 outputs per thread held in registers; A and
B tiles of depth 8 are staged through double-buffered shared memory (the next tile is fetched
into registers while the current one is consumed), with 128-bit loads where the layout and
the sizes allow. Half-precision operands are widened to float32 in the load; accumulation is
float32 (TF32 is not used). The epilogue (bias, activation, casts) is a device function
generated from the group's equations by the ordinary codegen, called once per output element
with the accumulator.

Operator selection weighs it against cuBLAS (which needs the epilogue as a second kernel).
"""

from __future__ import annotations

import dataclasses
import string

import numpy as np

from fx import dtypes
from fx.jaxpr import Var
from fx.lowering import resources
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.kernel_builder import KernelBuilder
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.render.renderer import CUDA, Renderer, storage_type

TILE_M = TILE_N = 128
TILE_K = 8
THREADS = 256


def canonical_dot(eqn) -> bool:
    """A 2-D x 2-D product with one contracting dimension and no batch dimensions."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.invars
    return (isinstance(lhs, Var) and isinstance(rhs, Var) and lhs.aval.ndim == 2
            and rhs.aval.ndim == 2 and len(lc) == 1 and not lb
            and eqn.outvars[0].aval.dtype in (dtypes.float32, dtypes.float16, dtypes.bfloat16))


def applies(g: FusionGroup) -> bool:
    return g.kind is GroupKind.GEMM and not g.prologue and canonical_dot(g.anchor)


@dataclasses.dataclass(frozen=True)
class RawKernel:
    """A kernel whose CUDA source a builder produces whole (not from loop IR), with its own
    launch shape. The source is rendered from ``template`` and ``fields`` at render time, with
    the kernel's name, so renaming never edits generated text."""

    name: str
    params: tuple[ir.Param, ...]
    template: str  # string.Template text; ``${name}`` is the kernel's name
    fields: tuple[tuple[str, object], ...]  # the template's other values
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    work: int = 0
    restrict: bool = True

    @property
    def launch(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return self.grid, self.block

    @property
    def source(self) -> str:
        return string.Template(self.template).substitute(dict(self.fields), name=self.name)

    def renamed(self, name: str) -> RawKernel:
        return dataclasses.replace(self, name=name)

    def render(self, renderer) -> str:
        if renderer.d is not CUDA:
            raise ValueError(f"{self.name}: a CUDA-only kernel cannot be rendered in the "
                             f"{renderer.d.name} dialect")
        return self.source


def _load(ptr: str, dt) -> str:
    dt = np.dtype(dt)
    if dt == dtypes.bfloat16:
        return f"fx_bf16_to_f32({ptr})"
    if dt == dtypes.float16:
        return f"fx_f16_to_f32({ptr})"
    return f"(float)({ptr})"


def gemm_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]) -> RawKernel:
    dot = group.anchor
    (lc, rc), _ = dot.params["dimension_numbers"]
    lhs, rhs = dot.invars
    (m_dim,) = [d for d in (0, 1) if d != lc[0]]
    (n_dim,) = [d for d in (0, 1) if d != rc[0]]
    M, K = lhs.aval.shape[m_dim], lhs.aval.shape[lc[0]]
    N = rhs.aval.shape[n_dim]
    # Row-major strides of A[m, k] and B[k, n] in their buffers.
    a_sm, a_sk = (K, 1) if m_dim == 0 else (1, M)
    b_sk, b_sn = (N, 1) if n_dim == 1 else (1, K)
    prod = dot.outvars[0]

    # The epilogue: the group's other equations at output element (i0, i1), given the product.
    epi = FusionGroup(GroupKind.ELEMENTWISE, group.epilogue, group.id)
    b = KernelBuilder(epi, name, inputs, outputs)
    i0, i1 = ir.Sym("i0", ir.INDEX), ir.Sym("i1", ir.INDEX)
    b.externals[(prod, (i0, i1))] = ir.Sym("acc", dtypes.float32)  # the float32 accumulator
    b.push()
    for v in outputs:
        b.store(v, (i0, i1), (M, N))
    body = b.pop()
    params = b.params()
    r = Renderer(CUDA)
    sig = ", ".join(f"{'' if p.is_output else 'const '}{storage_type(p.dtype)}* {p.name}"
                    for p in params)
    a_param = params[inputs.index(lhs)].name
    b_param = params[inputs.index(rhs)].name
    epilogue = "\n".join(r.stmts(tuple(body), 1))
    vec_a = a_sk == 1 and K % 4 == 0 and lhs.aval.dtype == dtypes.float32
    vec_b = b_sn == 1 and N % 4 == 0 and rhs.aval.dtype == dtypes.float32
    args = ", ".join(p.name for p in params)
    a_t, b_t = storage_type(lhs.aval.dtype), storage_type(rhs.aval.dtype)
    fields = dict(
        sig=sig, epilogue=epilogue, args=args, M=M, N=N, K=K,
        a_sm=a_sm, a_sk=a_sk, b_sk=b_sk, b_sn=b_sn, A=a_param, B=b_param, a_t=a_t, b_t=b_t,
        load_a=_load(f"{a_param}[(int64_t)gm * {a_sm} + (int64_t)gk * {a_sk}]", lhs.aval.dtype),
        load_b=_load(f"{b_param}[(int64_t)gk * {b_sk} + (int64_t)gn * {b_sn}]", rhs.aval.dtype),
        vec_a=int(vec_a), vec_b=int(vec_b),
    )
    grid = ((N + TILE_N - 1) // TILE_N, (M + TILE_M - 1) // TILE_M, 1)
    template = resources.text(__package__, "cuda_gemm.cu")
    return RawKernel(name, params, template, tuple(fields.items()), grid, (THREADS, 1, 1),
                     work=M * N * K)
