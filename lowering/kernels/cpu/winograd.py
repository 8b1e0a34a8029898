"""Float32 3x3 convolutions by Winograd's minimal filtering, F(2x2, 3x3) and F(4x4, 3x3), as
generated C kernels over the ``conv_in_place`` equations (``kernels.cpu.conv_in_place``).

A convolution of 3x3 taps, stride 1, no dilation, channels last, is cut into tiles of
``m x m`` outputs, each computed from the ``a x a`` input pixels under it (``a = m + 2``)
as ``Y = A^T [U (.) V] A`` with ``V = B^T d B`` the tile's pixels transformed and ``U = G g
G^T`` the kernel's taps transformed (Lavin and Gray, "Fast algorithms for convolutional
neural networks"): the 9 multiply-adds per output and channel pair of the direct form become
``a^2 / m^2`` (16/4 = 4 for F(2x2), 36/16 = 2.25 for F(4x4)), at the price of the transforms,
whose additions scale with the channels rather than with their product.

The kernel (C, ``winograd.c``), per call: ``U`` for every channel pair, in double, rounded
once, packed in panels of output channels; then, per block of ``TB`` tiles on the OpenMP
threads: the block's input tiles transformed into a buffer ``V`` (row ``xi * TB + t``, the
input channels), the ``a^2`` products ``M[xi] = V[xi] U[xi]`` (tiles x input channels times
input x output channels) as register tiles of ``R`` tiles by ``VW`` output channels (the
form and vectors of ``conv_in_place``'s tiles), and each tile's ``A^T M A`` through the
group's epilogue into the output. The block's buffers stay in the core's caches between the
three steps. The transforms are straight-line vector code generated here from the matrices.

Rounding: the result differs from the direct sum by at most about ``(C + 4a) * 2^-24`` times
the same transforms applied to the absolute values (see ``error_bound``), a bound that grows
with ``a`` through the matrices' entries (F(4x4)'s reach 8 and 5): F(2x2) is nearly as
accurate as the direct form, F(4x4) loses a few bits more. The input transform grows
magnitudes by up to 4x (F(2x2)) or 100x (F(4x4)), so inputs within that factor of float32's
largest value overflow where the direct sum does not. An infinite or NaN input makes its
tiles' outputs NaN (the transforms subtract it from itself), where the direct form gives
``inf`` for some of them.

The implementations (``cpu.winograd_f2``, ``cpu.winograd_f4``, registered in ``impls``)
apply where ``applies`` says; their costs (``cost``) are per tile, so selection picks them
over the direct kernel only where the channels are many enough to repay the transforms.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from fx import dtypes
from fx.lowering import resources
from fx.lowering.codegen.c_kernel import CKernel
from fx.lowering.fusion.groups import FusionGroup
from fx.lowering.kernels.cpu import conv_in_place
from fx.lowering.kernels.int8.int8_epilogue import epilogue_function
from fx.lowering.render.renderer import C
from fx.lowering.select.cost import eqn_flops, group_flops

# (B^T, G, A^T) of F(m x m, 3 x 3) by the output tile's side m: a = m + 2 interpolation
# points, 0, +-1 for m = 2 and 0, +-1, +-2 for m = 4, and infinity.
_F = Fraction
MATRICES = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [_F(1, 2), _F(1, 2), _F(1, 2)], [_F(1, 2), _F(-1, 2), _F(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
         [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[_F(1, 4), 0, 0], [_F(-1, 6), _F(-1, 6), _F(-1, 6)], [_F(-1, 6), _F(1, 6), _F(-1, 6)],
         [_F(1, 24), _F(1, 12), _F(1, 6)], [_F(1, 24), _F(-1, 12), _F(1, 6)], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}


def matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B^T, G, A^T) of F(m x m, 3 x 3) as float64 arrays."""
    return tuple(np.array(t, dtype=np.float64) for t in MATRICES[m])


def error_bound(x: np.ndarray, w: np.ndarray, m: int) -> np.ndarray:
    """A bound on the float32 kernel's rounding error at each output of the convolution of
    ``x`` (channels last, ``(B, H, W, C)``, padded already) by ``w`` (``(3, 3, C, O)``):
    ``(C + 4a) * 2^-24`` times ``|A^T| [ sum_c (|G| |g| |G^T|) (.) (|B^T| |d| |B|) ] |A|``,
    the transforms of the absolute values. To first order, each rounding (a transform's sum
    of at most ``a`` terms per stage, two stages each side; the product; the ``C`` terms of
    the sum over the input channels) errs by at most ``2^-24`` relative to the sum of the
    magnitudes it combines, and those magnitudes are bounded by the transforms of the
    absolute values."""
    bt, g, at = (np.abs(t) for t in matrices(m))
    a = m + 2
    b, h, wd, c = x.shape
    th, tw = -(-(h - 2) // m), -(-(wd - 2) // m)
    xp = np.zeros((b, th * m + 2, tw * m + 2, c))
    xp[:, :h, :wd] = np.abs(x)
    u = np.einsum("ik,klco,jl->ijco", g, np.abs(w).astype(np.float64), g)  # (a, a, C, O)
    out = np.zeros((b, th * m, tw * m, w.shape[-1]))
    for ty in range(th):
        for tx in range(tw):
            d = xp[:, ty * m:ty * m + a, tx * m:tx * m + a]  # (B, a, a, C)
            v = np.einsum("ik,bklc,jl->bijc", bt, d, bt)
            prod = np.einsum("bijc,ijco->bijo", v, u)
            out[:, ty * m:(ty + 1) * m, tx * m:(tx + 1) * m] = np.einsum(
                "ik,bklo,jl->bijo", at, prod, at)
    return (c + 4 * a) * 2.0 ** -24 * out[:, :h - 2, :wd - 2]


# --- which groups ---------------------------------------------------------------------------

def _shape_of(g: FusionGroup) -> dict | None:
    """The convolution ``g`` anchors, where the kernel runs it: ``conv_in_place`` of a 4-D
    operand, 3x3 window, stride and dilation 1, contracting the window and the channels with
    three dimensions of a 4-D kernel, both read through the group's prologue."""
    if not conv_in_place.anchored(g):
        return None
    dot = g.anchor
    x, w = dot.invars
    p = dict(dot.params["patches"])
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    if (x.aval.ndim != 4 or w.aval.ndim != 4 or lb or rb
            or tuple(p["window_dimensions"]) != (3, 3)
            or tuple(p["window_strides"]) != (1, 1)
            or tuple(p["window_dilation"]) != (1, 1)
            or any(tuple(q) != (0, 0) for q in p["padding"])
            or tuple(p["base_dilation"]) != (1, 1)
            or tuple(int(d) for d in lc) != (3, 4, 5) or len(set(rc)) != 3):
        return None
    xsrc, wsrc = conv_in_place._source(g, x), conv_in_place._source(g, w)
    if xsrc is None or wsrc is None:
        return None
    (free,) = [d for d in range(4) if d not in rc]
    b, h, wd, c = x.aval.shape
    if h < 3 or wd < 3 or b == 0 or c == 0:
        return None
    xs, ws = xsrc[1], wsrc[1]
    return dict(BATCH=b, H=h, W=wd, C=c, O=w.aval.shape[free], QH=h - 2, QW=wd - 2,
                XB=xs[0], XH=xs[1], XW=xs[2], XC=xs[3],
                WH=ws[rc[0]], WW=ws[rc[1]], WC=ws[rc[2]], WO=ws[free])


def applies(g: FusionGroup) -> bool:
    """A 3x3, stride-1 float32 convolution the kernel reads (see ``_shape_of``)."""
    return _shape_of(g) is not None


# --- cost -----------------------------------------------------------------------------------

# The kernel's cost in conv_in_place.cost's unit (nanoseconds, its products' flops at
# conv_in_place.RATE): the a^2 products' flops as the direct tiles', each tile's transforms
# as this many flops of those tiles per vector of channels (input, output; measured against
# them on one core), the weight transform in double per element of U, a call's setup.
TRANSFORM_FLOPS = {2: (4400.0, 2500.0), 4: (13300.0, 9400.0)}
WEIGHT_FLOPS = 24.0  # per element of U


def cost(g: FusionGroup, m: int) -> float:
    if not applies(g):
        return math.inf
    d = _geometry(g, m)
    a, lane, tiles = d["AL"], d["L"], d["T"]
    blocks, last = divmod(tiles, d["TB"])  # the products run on whole register tiles
    rows = blocks * d["TB"] + -(-last // d["R"]) * d["R"]
    product = 2.0 * a * a * rows * d["C"] * d["NW"]
    tin, tout = TRANSFORM_FLOPS[m]
    transforms = rows * tin * -(-d["C"] // lane) + tiles * tout * -(-d["O"] // lane)
    weights = WEIGHT_FLOPS * a * a * d["C"] * d["NW"]
    epilogue = group_flops(g) - eqn_flops(g.anchor)
    return 2000.0 + (product + transforms + weights + epilogue) / conv_in_place.RATE


# --- the kernel -----------------------------------------------------------------------------

def _panels(o: int, lane: int) -> tuple[int, int, int]:
    """(vectors per panel, panels, columns in all) of ``o`` output channels: panels of up
    to 4 vectors, as ``conv_in_place``'s."""
    v = min(-(-o // lane), 4)
    vw = v * lane
    npn = -(-o // vw)
    return v, npn, npn * vw


# Bytes of a block's two buffers (V and M): about the core's L1 data cache, so that the
# transformed tiles and their products are read back from it.
BLOCK_BYTES = 48 * 1024


def _geometry(g: FusionGroup, m: int) -> dict:
    s = _shape_of(g)
    lane = conv_in_place.lanes()
    a = m + 2
    v, npn, nw = _panels(s["O"], lane)
    rows = max(1, min(14, (24 if lane == 16 else 12) // v))
    cp = -(-s["C"] // lane) * lane
    per_tile = a * a * (cp + nw) * 4
    tb = rows * max(1, BLOCK_BYTES // (per_tile * rows))
    th, tw = -(-s["QH"] // m), -(-s["QW"] // m)
    return dict(s, MT=m, AL=a, TH=th, TW=tw, T=s["BATCH"] * th * tw, TB=tb, R=rows, L=lane,
                CP=cp, V=v, NP=npn, VW=v * lane, NW=nw)


def describe(g: FusionGroup, m: int) -> str:
    d = _geometry(g, m)
    return (f"float32 Winograd F({m}x{m},3x3) convolution, {d['T']} tiles of {m}x{m} in "
            f"blocks of {d['TB']}, {d['R']}x{d['VW']} register tiles, C={d['C']} O={d['O']}")


def winograd_kernel(group: FusionGroup, name: str, inputs, outputs, m: int) -> CKernel:
    d = _geometry(group, m)
    fields = epilogue_function(
        group, name, inputs, outputs, C,
        free=((d["BATCH"], d["QH"], d["QW"]), (d["O"],)), acc_dtype=dtypes.float32)
    params = fields.pop("params")
    names = {v: q.name for v, q in zip(inputs, params, strict=False)}
    fields["A"], fields["B"] = (names[conv_in_place._source(group, v)[0]]
                                for v in group.anchor.invars)
    bt, g, at = MATRICES[m]
    lane, a = d["L"], d["AL"]
    fields.update({k: v for k, v in d.items() if k != "V"},
                  splat=", ".join(["s"] * lane),
                  G=", ".join(repr(float(e)) for row in g for e in row))
    # the generated text goes into the template itself: it names the kernel's vector type and
    # helpers by ${name}, which a kernel renamed later (a compiled loop's body) fills anew
    kernel = resources.sections(__package__, "winograd.c")["kernel"]
    for key, text in (("tile", _tile(d["R"], d["V"], lane, d["CP"], d["NW"])),
                      ("input", _input_transform(bt, d["TB"], d["CP"])),
                      ("output", _output_transform(at, d["TB"], d["NW"]))):
        kernel = kernel.replace("${" + key + "}", text)
    return CKernel(name, params, kernel, tuple(fields.items()), None,
                   work=d["T"] * a * a * d["C"] * d["NW"])


def _combination(terms: dict) -> str:
    """``sum c * t`` over ``terms`` (t -> c) as C, in order, skipping zeros, +-1 as
    additions."""
    out = []
    for t, c in terms.items():
        if c == 0:
            continue
        sign = "-" if c < 0 else "+"
        out.append((sign, t if abs(c) == 1 else f"{float(abs(c))!r}f * {t}"))
    if not out:
        return "${name}_splat(0.0f)"
    first = ("-" if out[0][0] == "-" else "") + out[0][1]
    return " ".join([first, *(f"{s} {t}" for s, t in out[1:])])


def _operations(rows: list[dict]) -> int:
    """Vector operations of the combinations ``rows`` (term -> coefficient each): a sum of n
    terms takes n - 1 (a coefficient fuses into its multiply-add), one more where no
    coefficient is +-1."""
    return sum(len(r) - 1 + all(abs(c) != 1 for c in r.values()) for r in rows if r)


def _paired_columns(rows: list[dict], tmp: str) -> tuple[list, list[dict]]:
    """Columns ``t``, ``t'`` whose coefficients agree up to sign in every row, as their sum
    and difference (defined once): ``[(name, combination)], rows over them``."""
    names = list(dict.fromkeys(t for r in rows for t in r))
    defs, out, used = [], [dict(r) for r in rows], set()
    for k, t in enumerate(names):
        for t2 in names[k + 1:]:
            if t in used or t2 in used:
                continue
            if any(abs(r.get(t, 0)) != abs(r.get(t2, 0)) for r in rows):
                continue
            same = [r for r in rows if r.get(t, 0) != 0 and r[t] == r[t2]]
            diff = [r for r in rows if r.get(t, 0) != 0 and r[t] == -r[t2]]
            if not same or not diff:
                continue
            used |= {t, t2}
            s, d = f"{tmp}_s{len(defs)}", f"{tmp}_d{len(defs)}"
            defs += [(s, {t: 1, t2: 1}), (d, {t: 1, t2: -1})]
            for r in out:
                c = r.pop(t, 0)
                c2 = r.pop(t2, 0)
                if c:
                    r[s if c == c2 else d] = c
    return defs, out


def _paired_rows(rows: list[dict], tmp: str) -> tuple[list, list[dict]]:
    """Rows ``r``, ``r'`` over the same terms with coefficients equal up to sign as ``e + o``
    and ``e - o``: ``e`` the terms where they agree, ``o`` where they differ."""
    defs, out, used = [], [dict(r) for r in rows], set()
    for i, r in enumerate(rows):
        for i2 in range(i + 1, len(rows)):
            r2 = rows[i2]
            if i in used or i2 in used or len(r) < 3 or r.keys() != r2.keys():
                continue
            e = {t: c for t, c in r.items() if r2[t] == c}
            o = {t: c for t, c in r.items() if r2[t] == -c}
            if not e or not o or len(e) + len(o) != len(r):
                continue
            used |= {i, i2}
            en, on = f"{tmp}_e{len(defs)}", f"{tmp}_o{len(defs)}"
            defs += [(en, e), (on, o)]
            out[i], out[i2] = {en: 1, on: 1}, {en: 1, on: -1}
    return defs, out


def _product(mat, terms: list[str], tmp: str) -> tuple[list, list[dict]]:
    """``mat @ terms`` as definitions of intermediate vectors (``tmp``-prefixed names) and
    one combination per row: paired columns or rows shared where that takes fewer
    operations (GCC keeps the order of floating-point sums as written)."""
    rows = [{t: c for t, c in zip(terms, r) if c != 0} for r in mat]
    best = ([], rows)
    for plan in (_paired_columns, _paired_rows):
        defs, out = plan(rows, tmp)
        if _operations([d for _, d in defs] + out) < _operations(
                [d for _, d in best[0]] + best[1]):
            best = (defs, out)
    return best


def _two_sided(mat, src: str, dst, ind: str) -> list[str]:
    """Statements computing ``mat src mat^T`` over named vectors ``src<i>_<j>``: the left
    product into ``src<i>_<j>_l``, then the right, each element assigned to ``dst(i, j)`` (the
    left-hand side's text)."""
    v_t = "${name}_v"
    rows, cols = len(mat), len(mat[0])
    lines = []

    def emit(defs, out, target):
        lines.extend(f"{ind}const {v_t} {n} = {_combination(d)};"
                     for n, d in defs)
        lines.extend(f"{ind}{target(i)} = {_combination(r)};"
                     for i, r in enumerate(out))

    for j in range(cols):
        defs, out = _product(mat, [f"{src}{k}_{j}" for k in range(cols)], f"{src}c{j}")
        emit(defs, out, lambda i, j=j: f"const {v_t} {src}{i}_{j}_l")
    for i in range(rows):
        defs, out = _product(mat, [f"{src}{i}_{k}_l" for k in range(cols)], f"{src}r{i}")
        emit(defs, out, lambda j, i=i: dst(i, j))
    return lines


def _input_transform(bt, tb: int, cp: int) -> str:
    """One channel vector of a tile: its pixels ``d<i>_<j>`` loaded, ``B^T d B`` stored to
    row ``(i * a + j) * TB`` of V (from the tile's row ``vr``)."""
    a, ind = len(bt), " " * 6
    lines = [f"{ind}const ${{name}}_v d{i}_{j} = "
             f"${{name}}_load(p + {i} * sh + {j} * sw + c * sc, n, sc);"
             for i in range(a) for j in range(a)]
    lines += _two_sided(bt, "d", lambda i, j: f"*(${{name}}_v*)(vr + {(i * a + j) * tb * cp} + c)",
                        ind)
    return "\n".join(lines)


def _output_transform(at, tb: int, nw: int) -> str:
    """One output channel vector of a tile: its products ``m<i>_<j>`` loaded from row
    ``(i * a + j) * TB`` of M (from the tile's row ``mr``), ``A^T m A`` stored to ``y``."""
    a, ind = len(at[0]), " " * 6
    lines = [f"{ind}const ${{name}}_v m{i}_{j} = *(const ${{name}}_v*)"
             f"(mr + {(i * a + j) * tb * nw} + o);" for i in range(a) for j in range(a)]
    lines += _two_sided(at, "m", lambda i, j: f"*(${{name}}_v*)y[{i}][{j}]", ind)
    return "\n".join(lines)


def _tile(rows: int, vecs: int, lane: int, cp: int, nw: int) -> str:
    """The body of a register tile of ``rows`` x ``vecs`` vectors (section tile)."""
    v_t = "${name}_v"
    acc = "\n".join(f"  {v_t} c{r}_{v} = ${{name}}_splat(0.0f);"
                    for r in range(rows) for v in range(vecs))
    steps = [f"    const {v_t} w{v} = *(const {v_t}*)(wk + {v * lane});" for v in range(vecs)]
    for r in range(rows):
        steps.append(f"    {{ const {v_t} s = ${{name}}_splat(a[{r * cp} + k]);")
        steps += [f"      c{r}_{v} = s * w{v} + c{r}_{v};" for v in range(vecs)]
        steps[-1] += " }"
    stores = "\n".join(f"  *({v_t}*)(c + {r * nw + v * lane}) = c{r}_{v};"
                       for r in range(rows) for v in range(vecs))
    return resources.template(__package__, "winograd.c", "tile").substitute(
        accumulators=acc, steps="\n".join(steps), stores=stores, C="${C}", VW="${VW}")
