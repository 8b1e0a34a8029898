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

import numpy as np

from fx import dtypes
from fx.jaxpr import Var
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.codegen import KernelBuilder
from fx.lowering.fusion.fusion import FusionGroup, GroupKind
from fx.lowering.render.render import CUDA, Renderer, storage_type

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
    template: str  # str.format template; ``{name}`` is the kernel's name
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
        return self.template.format(name=self.name, **dict(self.fields))

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
    return RawKernel(name, params, _TEMPLATE, tuple(fields.items()), grid, (THREADS, 1, 1),
                     work=M * N * K)


# Thread t of the block owns rows ty*8..ty*8+7 and columns tx*8..tx*8+7 of the 128x128 tile
# (tx = t % 16, ty = t / 16). Loading a 128x8 A tile: thread t fetches row t/2, four k's
# starting at (t%2)*4. Loading an 8x128 B tile: thread t fetches k-row t/32, four columns
# starting at (t%32)*4. Shared tiles are stored k-major so the compute loop reads contiguous
# rows/columns.
_TEMPLATE = r"""
static __device__ __forceinline__ void {name}_epilogue(int64_t i0, int64_t i1, float acc, {sig}) {{
{epilogue}
}}
extern "C" __global__ void __launch_bounds__(256) {name}({sig}) {{
  __shared__ float As[2][8][128 + 4];
  __shared__ float Bs[2][8][128 + 4];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
  const int a_row = tid / 2, a_col = (tid % 2) * 4;
  const int b_row = tid / 32, b_col = (tid % 32) * 4;
  float acc[8][8];
  #pragma unroll
  for (int i = 0; i < 8; i++)
    #pragma unroll
    for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
  float ra[4], rb[4];

  auto fetch = [&](int k0) {{
    const int gm = row0 + a_row;
    if ({vec_a} && gm < {M} && k0 + a_col + 3 < {K}) {{
      const float4 v = *reinterpret_cast<const float4*>(
          (const float*){A} + (int64_t)gm * {a_sm} + k0 + a_col);
      ra[0] = v.x; ra[1] = v.y; ra[2] = v.z; ra[3] = v.w;
    }} else {{
      #pragma unroll
      for (int c = 0; c < 4; c++) {{
        const int gk = k0 + a_col + c;
        ra[c] = (gm < {M} && gk < {K}) ? {load_a} : 0.0f;
      }}
    }}
    const int gk = k0 + b_row;
    if ({vec_b} && gk < {K} && col0 + b_col + 3 < {N}) {{
      const float4 v = *reinterpret_cast<const float4*>(
          (const float*){B} + (int64_t)gk * {b_sk} + col0 + b_col);
      rb[0] = v.x; rb[1] = v.y; rb[2] = v.z; rb[3] = v.w;
    }} else {{
      #pragma unroll
      for (int c = 0; c < 4; c++) {{
        const int gn = col0 + b_col + c;
        rb[c] = (gk < {K} && gn < {N}) ? {load_b} : 0.0f;
      }}
    }}
  }};
  auto stash = [&](int buf) {{
    #pragma unroll
    for (int c = 0; c < 4; c++) As[buf][a_col + c][a_row] = ra[c];
    #pragma unroll
    for (int c = 0; c < 4; c++) Bs[buf][b_row][b_col + c] = rb[c];
  }};

  fetch(0);
  stash(0);
  __syncthreads();
  int cur = 0;
  for (int k0 = 0; k0 < {K}; k0 += 8) {{
    const bool more = k0 + 8 < {K};
    if (more) fetch(k0 + 8);  // overlaps the global loads with the math below
    #pragma unroll
    for (int kk = 0; kk < 8; kk++) {{
      float a[8], b[8];
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 8]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 8 + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 8]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 8 + 4]);
      a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
      a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
      b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
      b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
      #pragma unroll
      for (int i = 0; i < 8; i++)
        #pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }}
    if (more) {{
      stash(cur ^ 1);
      __syncthreads();
      cur ^= 1;
    }}
  }}
  #pragma unroll
  for (int i = 0; i < 8; i++) {{
    const int m = row0 + ty * 8 + i;
    if (m >= {M}) continue;
    #pragma unroll
    for (int j = 0; j < 8; j++) {{
      const int n = col0 + tx * 8 + j;
      if (n < {N}) {name}_epilogue(m, n, acc[i][j], {args});
    }}
  }}
}}
"""
