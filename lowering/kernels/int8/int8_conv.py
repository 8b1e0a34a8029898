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
import string

from fx import dtypes
from fx.core import Primitive
from fx.jaxpr import Jaxpr, Var
from fx.lax import linalg
from fx.lowering import resources
from fx.lowering.codegen.c_kernel import CKernel
from fx.lowering.codegen.conv_patches import (
    conv_patches_p,
    patches_product_flops,
    patches_shape,
)
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.fusion.primitive_rules import Pattern, patterns
from fx.lowering.kernels.int8 import int8_vnni
from fx.lowering.kernels.int8.int8_epilogue import epilogue_function
from fx.lowering.kernels.int8.int8_products import int8_packed_dot_p
from fx.lowering.render.renderer import C
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


flops_rules[int8_packed_conv_p] = patches_product_flops


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
    kernel = resources.sections(__package__, "int8_conv.c")["kernel"]
    return CKernel(name, params, kernel, tuple(fields.items()), None,
                   work=d["M"] * d["N"] * d["K"])


def _tile(rows: int) -> str:
    """The taps and words of a tile of ``rows`` rows, each row a pointer per tap."""
    pointers = " ".join(f"const fx_word* p{r} = rows[{r} * T + t];" for r in range(rows))
    return _section("tile").substitute(accumulators=int8_vnni.accumulators(rows),
                                       pointers=pointers,
                                       steps=int8_vnni.dot_steps(rows, "p{r}[c4]", "        "))


def _section(name: str) -> string.Template:
    """Section ``name`` of int8_conv.c as a template."""
    return resources.template(__package__, "int8_conv.c", name)
