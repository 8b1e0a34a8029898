"""Float32 convolutions as register-blocked kernels reading their input in place.

``lower_convolutions`` makes a float convolution a window gather (``conv_patches``) and a
``dot_general``, which BLAS runs. The patches are the input copied once per kernel tap: for a
5x5 window, 25 times the input written and read back, which cost more than the product itself
in a small CNN's step. This pass, one of the CPU's constant passes, gives each such product of
float32 patches the primitive ``conv_in_place(x, w)``, which takes the gather's operand
itself (padded and dilated first, by an explicit ``pad``, when the gather pads or dilates: the
kernel then reads no bounds), and its kernel (C, ``conv_in_place.c``) runs the product
``C[m, n] = sum_k A[m, k] B[k, n]`` with ``A[m, k]`` read from the input at ``row(m) +
col(k)``: every dimension of the patches is an affine offset into the input, so each row is a
pointer and each contracted index an offset. The forward convolution (rows: batch and output
positions; k: window taps and channels) and the weight gradient (the swapped form: rows: taps
and channels; k: batch and positions) are both such products, as is the input gradient (a
forward convolution of the output gradient).

The kernel packs ``w`` into panels of ``V`` vectors of columns (zeros past ``N``), keeps a
tile of ``R`` rows by ``V`` vectors of sums in registers (``R * V`` fused multiply-adds per
``R`` broadcasts and ``V`` loads), and runs the tiles on the OpenMP threads; the group's
elementwise epilogue (bias, activation) runs in the store. The vectors are GCC vectors of the
target's widest float width (16 lanes with AVX-512, 8 with AVX, else 4), so it compiles for
every ISA level; the tile alone is compiled with contraction, so its ``s * w + acc`` is a
fused multiply-add wherever the target has one (no intrinsics: ``immintrin.h`` alone took
most of a kernel's compile time).

Compile time: the driver (tables, packing, the tiles' schedule) takes the product's sizes and
strides as a record at run time, and a tile function depends only on its shape (rows,
vectors, lanes): both are runtime libraries, each compiled once per machine into the compile
cache and loaded with ``RTLD_GLOBAL`` (``cc.build_global_async``: the first program that
calls them compiles while they do). Their function names carry a digest of their text, so a
program never calls a function of that name from another text. A kernel's own C is its store
(the epilogue vectorized over a row's columns; a row copy where the group has no epilogue)
and the call.

``conv_in_place``'s NumPy implementation is ``dot_general(conv_patches(x), w)``; like
``conv_patches`` it exists only inside lowered programs (no transformation rules).
"""

from __future__ import annotations

import functools
import hashlib
import math
import string
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive
from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from fx.lax import base, linalg, structural
from fx.lowering import resources
from fx.lowering.codegen.c_kernel import CKernel
from fx.lowering.codegen.conv_patches import (
    conv_patches_p,
    patches_product_flops,
    patches_shape,
)
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.fusion.primitive_rules import Pattern, patterns
from fx.lowering.kernels.int8.int8_epilogue import epilogue_function
from fx.lowering.render.renderer import C
from fx.lowering.select.cost import flops_rules
from fx.runtime import cc

# conv_in_place(x, w): dot_general(conv_patches(x), w); params ``patches`` (conv_patches's, as
# a sorted tuple of items, never padding or dilating) and the dot's.
conv_in_place_p = Primitive("conv_in_place")


def _patches_aval(x, patches):
    return conv_patches_p.abstract_eval(x, **dict(patches))


@conv_in_place_p.def_abstract_eval
def _abstract_eval(x, w, *, patches, **params):
    return linalg.dot_general_p.abstract_eval(_patches_aval(x, patches), w, **params)


@conv_in_place_p.def_impl
def _impl(x, w, *, patches, **params):
    return linalg.dot_general_p.impl(conv_patches_p.impl(x, **dict(patches)), w, **params)


patterns[conv_in_place_p] = Pattern.OUT_ELEMENTWISE_FUSABLE


flops_rules[conv_in_place_p] = patches_product_flops

# The kernel's cost in nanoseconds for ``flops`` (operator selection's unit): ~60 flops per ns
# on the machine's cores, after a call's setup (packing w, the offset tables).
RATE = 60.0


def cost(flops: float) -> float:
    return 1000.0 + flops / RATE


def available(dtype) -> bool:
    """Whether a convolution computing in ``dtype`` can run in place here (float32, with a C
    compiler for the kernels)."""
    return dtype == dtypes.float32 and cc.compiler() is not None


# --- the pass -------------------------------------------------------------------------------

def _eligible(dot: JaxprEqn, made: dict) -> bool:
    """``dot`` multiplies float32 patches of a float32 operand by a float32 operand into
    float32, without batch dimensions."""
    if dot.primitive is not linalg.dot_general_p:
        return False
    pat, w = dot.invars
    eqn = made.get(pat)
    if eqn is None or eqn.primitive is not conv_patches_p or not isinstance(w, Var):
        return False
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    f32 = dtypes.float32
    return (isinstance(eqn.invars[0], Var) and not lb and not rb and len(lc) > 0
            and eqn.invars[0].aval.dtype == w.aval.dtype == dot.outvars[0].aval.dtype == f32
            and dot.params["preferred_element_type"] in (None, f32)
            and dot.outvars[0].aval.size > 0
            and math.prod(pat.aval.shape[d] for d in lc) > 0)


def _padded(x: Var, params: dict, eqn: JaxprEqn, new: list[JaxprEqn], made: dict) -> Var:
    """``x`` (channels last) padded and base-dilated as the gather ``params`` read it."""
    config = ((0, 0, 0), *((int(lo), int(hi), int(d) - 1)
                           for (lo, hi), d in zip(params["padding"], params["base_dilation"])),
              (0, 0, 0))
    key = (x, config)
    if key not in made:
        zero = Literal(np.zeros((), x.aval.dtype), ShapedArray((), x.aval.dtype))
        v = Var(structural.pad_p.abstract_eval(x.aval, zero.aval, padding_config=config))
        new.append(JaxprEqn(structural.pad_p, [x, zero], [v], {"padding_config": config},
                            eqn.source_info))
        made[key] = v
    return made[key]


def convs_in_place(jaxpr: Jaxpr, consts: list, hoisted: tuple = (),
                   available: Callable[[np.dtype], bool] = available) -> tuple[Jaxpr, list]:
    """``jaxpr`` with each eligible product of patches as ``conv_in_place`` of the patches'
    operand (see the module docstring), and the gathers no one reads any more dropped; the
    constants are unchanged. Only where ``available`` says the target's kernel runs float32
    (here: where C kernels can be compiled; ``kernels.cuda.conv_in_place`` passes CUDA's)."""
    if not available(dtypes.float32):
        return jaxpr, consts
    made = {v: e for e in jaxpr.eqns for v in e.outvars}
    if not any(_eligible(e, made) for e in jaxpr.eqns):
        return jaxpr, consts
    eqns: list[JaxprEqn] = []
    pads: dict = {}
    for eqn in jaxpr.eqns:
        if not _eligible(eqn, made):
            eqns.append(eqn)
            continue
        gather = made[eqn.invars[0]]
        p = gather.params
        x = gather.invars[0]
        if (any(pad != (0, 0) for pad in p["padding"])
                or any(d != 1 for d in p["base_dilation"])):
            x = _padded(x, p, gather, eqns, pads)
            nsp = len(p["window_dimensions"])
            p = {**p, "padding": ((0, 0),) * nsp, "base_dilation": (1,) * nsp}
        eqns.append(eqn.replace(primitive=conv_in_place_p, invars=[x, eqn.invars[1]],
                                params={**eqn.params, "patches": tuple(sorted(p.items()))}))
    read = {v for e in eqns for v in e.invars if isinstance(v, Var)} | set(jaxpr.outvars)
    eqns = [e for e in eqns
            if e.primitive is not conv_patches_p or e.outvars[0] in read]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns), consts


# --- the kernel -----------------------------------------------------------------------------

# Float32 products run as the same kernel (a dot_general of plain operands is the case of a
# window of one element), on the generated kernels' OpenMP threads: with BLAS's own thread
# pool beside them the two pools take turns on the cores (BLAS's idle threads keep spinning
# after each call while the next kernel's threads want the cores: on a 2-core machine the
# residual CNN's step took 93 ms with OpenBLAS's two threads, 48 ms with one), and a small
# product costs less than BLAS's call and the wake-up of its pool. Tiles are as fast as
# OpenBLAS's on the MLP's products. Products above this many flops keep BLAS (none: the
# constant is there to compare the two).
TILED_PRODUCT_MAX_FLOPS = math.inf


def tiled_product(g: FusionGroup) -> bool:
    """A GEMM group anchored by a float32 ``dot_general`` of two operands with free
    dimensions, without batch dimensions, of at most ``TILED_PRODUCT_MAX_FLOPS``, whose
    operands the kernel can read (see ``applies``)."""
    if g.kind is not GroupKind.GEMM or g.anchor.primitive is not linalg.dot_general_p:
        return False
    dot = g.anchor
    x, w = dot.invars
    (lc, _), (lb, _) = dot.params["dimension_numbers"]
    f32 = dtypes.float32
    if (lb or not lc or not isinstance(x, Var) or not isinstance(w, Var)
            or not x.aval.dtype == w.aval.dtype == dot.outvars[0].aval.dtype == f32
            or dot.params["preferred_element_type"] not in (None, f32)
            or dot.outvars[0].aval.size == 0):
        return False
    (lc, rc), _ = dot.params["dimension_numbers"]
    if len(lc) == x.aval.ndim or len(rc) == w.aval.ndim:
        return False  # a vector operand: no rows or no columns to tile
    k = math.prod(x.aval.shape[d] for d in lc)
    return (0 < 2.0 * k * dot.outvars[0].aval.size <= TILED_PRODUCT_MAX_FLOPS
            and all(_source(g, v) is not None for v in dot.invars))


def anchored(g: FusionGroup) -> bool:
    return g.kind is GroupKind.GEMM and g.anchor.primitive is conv_in_place_p


def applies(g: FusionGroup) -> bool:
    """Anchored by ``conv_in_place``, whose operands the kernel can read through the group's
    prologue (see ``_source``)."""
    return anchored(g) and all(_source(g, v) is not None for v in g.anchor.invars)


def _source(g: FusionGroup, v: Var) -> tuple[Var, list[int]] | None:
    """The buffer ``v`` is read from and the element stride there of each dimension of
    ``v``: through the group's prologue of row-major reshapes (the flat order unchanged, so
    ``v``'s own row-major strides) or one transpose (the source's strides permuted); None
    through anything else."""
    made = {e.outvars[0]: e for e in g.prologue}
    eqn = made.get(v)
    if eqn is None:
        return v, _row_major(v.aval.shape)
    if eqn.primitive is base.reshape_p:
        src = eqn.invars[0]
        while src in made and made[src].primitive is base.reshape_p:
            src = made[src].invars[0]
        return None if src in made else (src, _row_major(v.aval.shape))
    if eqn.primitive is not base.transpose_p or eqn.invars[0] in made:
        return None
    inner = _row_major(eqn.invars[0].aval.shape)
    return eqn.invars[0], [inner[d] for d in eqn.params["permutation"]]


def _row_major(shape) -> list[int]:
    return [math.prod(shape[i + 1:]) for i in range(len(shape))]


def lanes() -> int:
    """float32 lanes of the target's widest vectors (at most ``MAX_LANES``)."""
    m = cc.target_macros()
    return 16 if "__AVX512F__" in m else 8 if "__AVX__" in m else 4


def _rows(length: int, most: int) -> int:
    """Rows of a tile along a dimension of ``length``: the fewest tiles, then the least
    waste, with at most ``most`` rows."""
    return min(range(1, most + 1), key=lambda r: (-(-length // r), -(-length // r) * r - length))


# The most rows, vectors of columns and lanes a tile has (the driver's tile buffers are that
# size).
MAX_ROWS, MAX_VECS, MAX_LANES = 14, 4, 16


def _tile_shape(n: int, lanes: int, mshape: tuple[int, ...]) -> tuple[int, int, int]:
    """(rows, vectors, dimension) of a tile: up to ``MAX_VECS`` vectors of columns, rows as
    many as the registers hold beside them (32 vector registers with AVX-512, 16 otherwise),
    along the innermost free dimension of ``mshape`` (whose neighbouring rows read
    overlapping windows of the input) unless its tiles would use fewer than half of that,
    then along the one whose tiles waste the fewest rows."""
    v = min(-(-n // lanes), MAX_VECS)
    most = max(1, min(MAX_ROWS, (24 if lanes == 16 else 12) // v))

    def used(d):  # rows computed per tile that are real
        r = _rows(mshape[d], most)
        return mshape[d] / -(-mshape[d] // r), d

    if not mshape:
        return 1, v, -1
    d = len(mshape) - 1
    if used(d)[0] < most / 2:
        d = max(range(len(mshape)), key=used)
    return _rows(mshape[d], most), v, d


# Outer steps of k per chunk: a chunk of the packed panel (KI x VW floats per step) about this
# many bytes, so that it and the rows' reads of the input stay in the core's L2 cache while
# every tile runs over it.
CHUNK_BYTES = 64 * 1024


def _geometry(g: FusionGroup) -> dict:
    dot = g.anchor
    x, w = dot.invars
    (_, xs), (_, ws) = _source(g, x), _source(g, w)
    if dot.primitive is conv_in_place_p:
        p = dict(dot.params["patches"])
        pat = patches_shape(x.aval.shape, **p)
        # each dimension of the patches (B, *Q, *K, F) as a stride into x
        strides = [xs[0], *(s * xs[1 + j] for j, s in enumerate(p["window_strides"])),
                   *(d * xs[1 + j] for j, d in enumerate(p["window_dilation"])), xs[-1]]
    else:  # a product of x itself
        pat, strides = x.aval.shape, xs
    (lc, rc), _ = dot.params["dimension_numbers"]
    lc, rc = tuple(int(d) for d in lc), tuple(int(d) for d in rc)
    mfree = [d for d in range(len(pat)) if d not in lc]
    nfree = [d for d in range(w.aval.ndim) if d not in rc]
    mshape = tuple(pat[d] for d in mfree)
    N = math.prod(w.aval.shape[d] for d in nfree)
    K = math.prod(pat[d] for d in lc)
    rows, vecs, t = _tile_shape(N, lanes(), mshape)
    flat = [math.prod(mshape[i + 1:]) for i in range(len(mshape))]
    outer = [i for i in range(len(mshape)) if i != t]
    # The inner run of k: the last contracted dimension, with the ones before it whose x
    # offsets continue it (a window row of channels: kw * C elements one apart in x), so that
    # a step of the tile's outer loop (an offset read, every row's pointer set) runs over
    # as many elements as it can.
    ki, sk = pat[lc[-1]], strides[lc[-1]]
    for d in reversed(lc[:-1]):
        if strides[d] != ki * sk:
            break
        ki *= pat[d]
    return dict(M=math.prod(mshape), N=N, K=K, R=rows, V=vecs,
                LM=mshape[t] if mshape else 1, SM=strides[mfree[t]] if mshape else 0,
                FM=flat[t] if mshape else 0,
                KO=K // ki, KI=ki, SK=sk,
                KC=max(1, CHUNK_BYTES // (ki * vecs * lanes() * 4)),
                mdims=[mshape[i] for i in outer] or [1],
                mxs=[strides[mfree[i]] for i in outer] or [0],
                mfs=[flat[i] for i in outer] or [0],
                kdims=[pat[d] for d in lc], kxs=[strides[d] for d in lc],
                kws=[ws[d] for d in rc],
                ndims=[w.aval.shape[d] for d in nfree], nws=[ws[d] for d in nfree],
                lhs_free=mshape or (1,),
                rhs_free=tuple(w.aval.shape[d] for d in nfree))


def describe(g: FusionGroup) -> str:
    d = _geometry(g)
    r, v = d["R"], d["V"]
    what = ("convolution reading its input in place" if g.anchor.primitive is conv_in_place_p
            else "product on the kernels' threads")
    return (f"float32 {what}, {r}x{v * lanes()} register "
            f"tiles, M={d['M']} N={d['N']} K={d['K']}")


def conv_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]):
    d = _geometry(group)
    lane = lanes()
    rows, vecs = d["R"], d["V"]
    fields = epilogue_function(group, name, inputs, outputs, C,
                               free=(d.pop("lhs_free"), d.pop("rhs_free")),
                               acc_dtype=dtypes.float32)
    params = fields.pop("params")
    names = {v: q.name for v, q in zip(inputs, params, strict=False)}
    fields["A"], fields["B"] = (names[_source(group, v)[0]] for v in group.anchor.invars)
    for key in ("mdims", "mxs", "mfs", "kdims", "kxs", "kws", "ndims", "nws"):
        d[key] = ", ".join(str(int(s)) for s in d[key])
    driver, tile = _driver(), _tile(rows, vecs, lane)
    fields.update(d, L=lane, VW=vecs * lane, driver=driver.name, tile=tile.name,
                  members=fields["sig"].replace(", ", "; "),
                  fields=", ".join(f"a->{q.name}" for q in params),
                  out=next(q.name for q in params if q.is_output))
    text = resources.sections(__package__, "conv_in_place.c")
    # Without an epilogue the product is the output, row-major: the store copies rows.
    copy = not group.epilogue and list(outputs) == [group.anchor.outvars[0]]
    store = text["store_copy" if copy else "store_epilogue"]
    kernel = text["header"] + text["kernel"].replace("${store}\n", store)
    return CKernel(name, params, kernel, tuple(fields.items()), None,
                   work=d["M"] * d["N"] * d["K"])


@dataclass(frozen=True)
class RuntimeLibrary:
    """A runtime library of the kernels: ``source`` defines the function ``name``."""

    name: str
    source: str


def _library(prefix: str, source: string.Template, **fields) -> RuntimeLibrary:
    """``source`` filled, its function named ``prefix`` and a digest of the text: a library
    of another text (another fx) defines another name, so that programs never call a
    function of the same name loaded from another text."""
    digest = hashlib.sha256(source.template.encode())
    for k, v in sorted(fields.items()):
        digest.update(f"\0{k}={v}".encode())
    name = f"{prefix}_{digest.hexdigest()[:12]}"
    return RuntimeLibrary(name, source.substitute(fields, driver=name, tile=name))


@functools.cache
def _driver() -> RuntimeLibrary:
    """The driver library (section driver after the header), its build started."""
    text = resources.sections(__package__, "conv_in_place.c")
    lib = _library("fx_tiled_run", string.Template(text["header"] + text["driver"]),
                   MAX_R=MAX_ROWS, MAX_VW=MAX_VECS * MAX_LANES)
    cc.build_global_async(lib.source)
    return lib


@functools.cache
def _tile(rows: int, vecs: int, lane: int) -> RuntimeLibrary:
    """The library of the tile function of ``rows`` x ``vecs`` vectors of ``lane`` floats
    (section tile of the C file), its build started."""
    lib = tile_library(rows, vecs, lane)
    cc.build_global_async(lib.source)
    return lib


def tile_library(rows: int, vecs: int, lane: int) -> RuntimeLibrary:
    """The tile function of ``rows`` x ``vecs`` vectors of ``lane`` floats and its source."""
    v_t = f"fx_tiled_v{lane}"
    acc = "\n".join(f"  {v_t} c{r}_{v}; memcpy(&c{r}_{v}, c + {r * vecs * lane + v * lane}, "
                    f"sizeof c{r}_{v});" for r in range(rows) for v in range(vecs))
    pointers = "\n".join(f"    const float* p{r} = a[{r}] + off;" for r in range(rows))
    steps = [f"      const {v_t} w{v} = *(const {v_t}*)(wt + i * {vecs * lane} + {v * lane});"
             for v in range(vecs)]
    for r in range(rows):
        steps.append(f"      {{ const {v_t} s = fx_tiled_splat{lane}(p{r}[i * SK]);")
        steps += [f"        c{r}_{v} = s * w{v} + c{r}_{v};" for v in range(vecs)]
        steps[-1] += " }"
    stores = "\n".join(f"  memcpy(c + {r * vecs * lane + v * lane}, &c{r}_{v}, sizeof c{r}_{v});"
                       for r in range(rows) for v in range(vecs))
    return _library(f"fx_tile_{rows}x{vecs}x{lane}",
                    resources.template(__package__, "conv_in_place.c", "tile"),
                    accumulators=acc, pointers=pointers, steps="\n".join(steps), stores=stores,
                    R=rows, V=vecs, L=lane, VW=vecs * lane, splat=", ".join(["s"] * lane))
