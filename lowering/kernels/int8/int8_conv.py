"""An int8 convolution by a constant kernel as the VNNI microkernel reading its input in place.

``lower_convolutions`` makes an int8 convolution a window gather (``conv_patches``) and a
product, which ``pack_int8_weights`` turns into ``int8_packed_dot`` of the patches by the
packed kernel. Run that way the patches are written once (K bytes per output position: nine
times the input for a 3x3 window) and read back by the product. This pass, the next of the
CPU's constant passes, gives such a product of 2-D patches whose channels are whole words
(a multiple of 4) the primitive ``int8_packed_conv(x, b, panels, colsums)``, which takes the
convolution's input itself; its kernel (C) points each row of a tile at the input pixel each
tap reads (or at a row of zeros outside the input) and runs ``int8_vnni``'s tile over the
taps: the same words, in the same order, without the gather. The pass runs for targets with
byte dot products (on x86 without them the product runs as float32 BLAS over the patches,
``op_info``'s ``cpu.int8_gemm_f32``); compiled for a target without AVX-512 VNNI all the same,
the kernel gathers each output position's patch into a row on the stack and sums it against
``b``'s rows (``fx.quant``'s kernels are ``(O, *window, I)``: a feature's weights one
row; other layouts keep the gather and ``int8_gemm``). Both are exact: integer sums equal to
``int8_packed_dot``'s, so the results are the same bits.

``int8_packed_conv``'s NumPy implementation is ``dot_general(conv_patches(x), b)``; like
``int8_packed_dot`` it exists only inside lowered programs (no transformation rules).
"""

from __future__ import annotations

import math

from fx import dtypes
from fx.core import Primitive
from fx.jaxpr import Jaxpr, Var
from fx.lax import linalg
from fx.lowering.codegen.c_kernel import CKernel
from fx.lowering.codegen.conv_patches import conv_patches_p, patches_shape
from fx.lowering.fusion.fusion import FusionGroup, GroupKind
from fx.lowering.fusion.primitive_rules import Pattern, patterns
from fx.lowering.kernels.int8 import int8_vnni
from fx.lowering.kernels.int8.int8_gemm import epilogue_function
from fx.lowering.kernels.int8.pack_int8_weights import int8_packed_dot_p
from fx.lowering.render.render import C
from fx.lowering.select.cost import flops_rules

WORD = 4  # bytes of A a vpdpbusd lane takes

# int8_packed_conv(x, b, panels, colsums): int8_packed_dot(conv_patches(x), b, panels,
# colsums); params ``patches`` (conv_patches's, as a sorted tuple of items) and the dot's.
int8_packed_conv_p = Primitive("int8_packed_conv")


def _patches_aval(x, patches):
    return conv_patches_p.abstract_eval(x, **dict(patches))


@int8_packed_conv_p.def_abstract_eval
def _abstract_eval(x, b, panels, colsums, *, patches, **params):
    return int8_packed_dot_p.abstract_eval(_patches_aval(x, patches), b, panels, colsums,
                                           **params)


@int8_packed_conv_p.def_impl
def _impl(x, b, panels, colsums, *, patches, **params):
    return linalg.dot_general_p.impl(conv_patches_p.impl(x, **dict(patches)), b, **params)


patterns[int8_packed_conv_p] = Pattern.OUT_ELEMENTWISE_FUSABLE


def _flops(eqn) -> float:
    (lc, _), _ = eqn.params["dimension_numbers"]
    pat = patches_shape(eqn.invars[0].aval.shape, **dict(eqn.params["patches"]))
    return 2.0 * math.prod(pat[d] for d in lc) * eqn.outvars[0].aval.size


flops_rules[int8_packed_conv_p] = _flops


# --- the pass -------------------------------------------------------------------------------

def _eligible(dot, made: dict, uses: dict) -> bool:
    """``dot`` (an ``int8_packed_dot``) contracts the trailing (window, channels) dimensions of
    2-D patches of an int8 input, read by nothing else, whose channels are whole words, with
    no input dilation, and the trailing dimensions of a kernel whose output features lead
    (``fx.quant``'s ``(O, *window, I)``: each feature's weights one row)."""
    pat = dot.invars[0]
    eqn = made.get(pat)
    if eqn is None or eqn.primitive is not conv_patches_p or uses.get(pat, 0) != 1:
        return False
    x, b = eqn.invars[0], dot.invars[1]
    (lc, rc), (lb, _) = dot.params["dimension_numbers"]
    nb = b.aval.ndim
    return (isinstance(x, Var) and x.aval.ndim == 4 and x.aval.dtype == dtypes.int8
            and x.aval.shape[-1] % WORD == 0 and not lb and tuple(lc) == (3, 4, 5)
            and tuple(rc) == tuple(range(nb - 3, nb))
            and all(d == 1 for d in eqn.params["base_dilation"]))


def pack_int8_convs(jaxpr: Jaxpr, consts: list, hoisted: tuple = ()) -> tuple[Jaxpr, list]:
    """``jaxpr`` with each eligible ``int8_packed_dot`` of patches as ``int8_packed_conv`` of
    the patches' operand (see the module docstring); the constants are unchanged. Not on x86
    without byte dot products, where the product runs as float32 BLAS over the patches."""
    if int8_vnni.target_lacks_dot_products():
        return jaxpr, consts
    made, uses = {}, {}
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            made[v] = eqn
        for v in eqn.invars:
            if isinstance(v, Var):
                uses[v] = uses.get(v, 0) + 1
    for v in jaxpr.outvars:
        if isinstance(v, Var):
            uses[v] = uses.get(v, 0) + 1
    fused = {}  # the patches var -> its gather, for the products that take it over
    for eqn in jaxpr.eqns:
        if eqn.primitive is int8_packed_dot_p and _eligible(eqn, made, uses):
            fused[eqn.invars[0]] = made[eqn.invars[0]]
    if not fused:
        return jaxpr, consts
    gone = {id(e) for e in fused.values()}
    eqns = []
    for eqn in jaxpr.eqns:
        if id(eqn) in gone:
            continue
        if eqn.primitive is int8_packed_dot_p and eqn.invars[0] in fused:
            gather = fused[eqn.invars[0]]
            eqn = eqn.replace(primitive=int8_packed_conv_p,
                              invars=[gather.invars[0], *eqn.invars[1:]],
                              params={**eqn.params,
                                      "patches": tuple(sorted(gather.params.items()))})
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns), consts


# --- the kernel -----------------------------------------------------------------------------

def applies(g: FusionGroup) -> bool:
    return (g.kind is GroupKind.GEMM and g.anchor.primitive is int8_packed_conv_p
            and not g.prologue)


def _geometry(dot) -> dict:
    p = dict(dot.params["patches"])
    x, b = dot.invars[:2]
    _, oh, ow, kh, kw, c = patches_shape(x.aval.shape, **p)
    (_, rc), _ = dot.params["dimension_numbers"]
    n = math.prod(b.aval.shape[d] for d in range(b.aval.ndim) if d not in rc)
    k = kh * kw * c
    (ph, _), (pw, _) = p["padding"]
    return dict(B_=x.aval.shape[0], H=x.aval.shape[1], W=x.aval.shape[2], C=c, OH=oh, OW=ow,
                KH=kh, KW=kw, SH=p["window_strides"][0], SW=p["window_strides"][1], PH=ph,
                PW=pw, DH=p["window_dilation"][0], DW=p["window_dilation"][1],
                M=x.aval.shape[0] * oh * ow, N=n, K=k)


def describe(g: FusionGroup) -> str:
    d = _geometry(g.anchor)
    return (f"int8 convolution reading its input in place (vpdpbusd where the ISA has it, B "
            f"packed at compile time), {d['KH']}x{d['KW']} window, M={d['M']} N={d['N']} "
            f"K={d['K']}")


def conv_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]):
    dot = group.anchor
    d = _geometry(dot)
    rhs_free = tuple(s for i, s in enumerate(dot.outvars[0].aval.shape) if i >= 3)
    fields = epilogue_function(group, name, inputs, outputs, C,
                               free=((d["B_"], d["OH"], d["OW"]), rhs_free))
    params = fields.pop("params")
    rows = min(d["M"], int8_vnni.TILE_ROWS)
    fields.update(d, R=rows, T=d["KH"] * d["KW"], C4=d["C"] // WORD, tile=_tile(rows),
                  store=int8_vnni.store(rows))
    return CKernel(name, params, _TEMPLATE, tuple(fields.items()), None,
                   work=d["M"] * d["N"] * d["K"])


def _tile(rows: int) -> str:
    """The taps and words of a tile of ``rows`` rows, each row a pointer per tap."""
    ptrs = " ".join(f"const fx_word* p{r} = rows[{r} * T + t];" for r in range(rows))
    return (f"  {int8_vnni.accumulators(rows)}\n"
            "  for (int64_t t = 0; t < T; t++) {\n"
            f"    {ptrs}\n"
            "    const int8_t* pt = panel + t * C4 * 128;\n"
            "    for (int64_t c4 = 0; c4 < C4; c4++) {\n"
            "        const __m512i b0 = _mm512_loadu_si512((const void*)(pt + c4 * 128));\n"
            "        const __m512i b1 = _mm512_loadu_si512((const void*)(pt + c4 * 128 + 64));"
            f"\n{int8_vnni.dot_steps(rows, 'p{r}[c4]', '        ')}\n    }}\n  }}\n"
            "  const __m512i c0 = _mm512_loadu_si512((const void*)cs);\n"
            "  const __m512i c1 = _mm512_loadu_si512((const void*)(cs + 16));")


_TEMPLATE = r"""
#include <stdlib.h>
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__x86_64__)
#include <immintrin.h>
#define FX_VNNI 1
#endif
static inline void {name}_epilogue(int64_t i0, int64_t i1, int32_t acc, {sig}) {{
{epilogue}
}}
#ifdef FX_VNNI
typedef uint32_t fx_word __attribute__((may_alias, aligned(1)));
/* One tile of R output positions x 32 columns: rows[r * T + t] is the input pixel (C bytes)
   tap t of row r reads, or zeros (see fx.lowering.kernels.int8.int8_conv). */
static __attribute__((noinline)) void {name}_tile(const fx_word* const* rows,
    const int8_t* panel, const int32_t* cs, int32_t (*c)[32]) {{
  const int64_t T = {T}, C4 = {C4};
{tile}
{store}
}}
#endif
static void {name}({sig}) {{
  const int64_t H = {H}, W = {W}, C = {C}, OH = {OH}, OW = {OW}, KW = {KW}, T = {T};
  const int64_t SH = {SH}, SW = {SW}, PH = {PH}, PW = {PW}, DH = {DH}, DW = {DW};
  const int64_t M = {M}, N = {N}, K = {K}, R = {R};
  const int8_t* x = (const int8_t*){A};
#ifdef FX_VNNI
  const int8_t* P = (const int8_t*){P};
  const int32_t* cs = (const int32_t*){CS};
  static const uint32_t zeros[{C4}];  /* a pixel outside the input: zero bytes */
  const int64_t NB = (N + 31) / 32, MB = (M + R - 1) / R;
  #pragma omp parallel for collapse(2) schedule(static) if (M * N * K > 4000000)
  for (int64_t nb = 0; nb < NB; nb++)
    for (int64_t mb = 0; mb < MB; mb++) {{
      const int64_t m0 = mb * R, n0 = nb * 32;
      const fx_word* rows[{R} * {T}];
      for (int64_t r = 0; r < R; r++) {{
        const int64_t m = m0 + r, b = m / (OH * OW), oh = m / OW % OH, ow = m % OW;
        for (int64_t t = 0; t < T; t++) {{
          const int64_t ih = oh * SH + t / KW * DH - PH, iw = ow * SW + t % KW * DW - PW;
          rows[r * T + t] = m < M && ih >= 0 && ih < H && iw >= 0 && iw < W
              ? (const fx_word*)(x + ((b * H + ih) * W + iw) * C) : (const fx_word*)zeros;
        }}
      }}
      int32_t c[{R}][32];
      {name}_tile(rows, P + nb * (K / 4) * 128, cs + n0, c);
      const int64_t live = M - m0 < R ? M - m0 : R, cols = N - n0 < 32 ? N - n0 : 32;
      for (int64_t r = 0; r < live; r++)
        for (int64_t j = 0; j < cols; j++) {name}_epilogue(m0 + r, n0 + j, c[r][j], {args});
    }}
#else
  /* Without VNNI: each output position's patch gathered into a row (zeros outside the
     input), then one sum per feature over it and the feature's row of B (vectorized over k,
     as int8_gemm's loop-IR kernel). */
  const int8_t* Bw = (const int8_t*){B};
  #pragma omp parallel for schedule(static) if (M * N * K > 4000000)
  for (int64_t m = 0; m < M; m++) {{
    const int64_t b = m / (OH * OW), oh = m / OW % OH, ow = m % OW;
    int8_t arow[{K}];
    for (int64_t t = 0; t < T; t++) {{
      const int64_t ih = oh * SH + t / KW * DH - PH, iw = ow * SW + t % KW * DW - PW;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) memset(arow + t * C, 0, C);
      else memcpy(arow + t * C, x + ((b * H + ih) * W + iw) * C, C);
    }}
    for (int64_t n = 0; n < N; n++) {{
      const int8_t* wr = Bw + n * K;
      int32_t acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (int32_t)arow[k] * (int32_t)wr[k];
      {name}_epilogue(m, n, acc, {args});
    }}
  }}
#endif
}}
"""
