"""Convolutions the compiler keeps whole: ``conv_general_dilated`` anchors a GEMM group, like
``dot_general``, so bias and activation epilogues fuse after it. Most convolutions never get
here (``lower_convolutions`` makes them patches and a product, which on the CPU runs as the
kernel reading its input in place, ``conv_in_place``); grouped ones, and those whose
product form costs more than a library implementation (Winograd for a 3x3 float16 or float64
layer), do. Operator selection picks one of three CPU implementations, each a library step
writing the convolution into its planned output buffer:

- ``cpu.conv_im2col``: every window copied once into a matrix, then one batched matmul (BLAS
  for floats). The general case: any layout, stride, padding, dilation and group count.
- ``cpu.conv_direct``: a loop over the kernel taps, each a matmul over the channels of a
  strided slice of the padded input, accumulated in place. No im2col matrix.
- ``cpu.conv_winograd``: Winograd F(2x2, 3x3) for 2-D 3x3 kernels with stride 1 and no
  dilation (feature groups allowed): 2x2 output tiles from overlapping 4x4 input tiles, 16
  multiplications instead of 36 per tile and channel pair (2.25x fewer flops) done as 16
  batched matmuls; the tile transforms are additions over strided views.

Costs are nanosecond estimates like the rest of the registry (``fx.lowering.select.op_info``):
~1 us per NumPy call, BLAS at ~50 flops/ns, ~0.5 ns per element copied or combined. They make
Winograd the choice for eligible 3x3 convolutions with enough channels and positions to repay
its ~50 calls and transforms, the direct loop for 1x1 kernels (no window matrix to build) and
im2col for the rest.

Importing this module registers everything (the op pattern and the impls), after
``op_info``'s implementations (it imports ``op_info`` first: registration order breaks cost ties).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fx import dtypes
from fx.jaxpr import JaxprEqn, Literal
from fx.lax.convolution import computation_dtype, conv_general_dilated_p, conv_im2col
from fx.lax.windowed import dilate_and_pad
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.fusion.primitive_rules import Pattern, patterns
from fx.lowering.kernels.cpu.library import HALF_TO_F32
from fx.lowering.select import cost as _cost
from fx.lowering.select import op_info as _op_info  # noqa: F401  (its implementations register first)
from fx.lowering.select.op_impl import OpImpl, register

__all__ = ["conv_direct", "conv_flops", "conv_winograd", "winograd_eligible"]

patterns[conv_general_dilated_p] = Pattern.OUT_ELEMENTWISE_FUSABLE


def conv_flops(eqn: JaxprEqn) -> float:
    """Multiply-adds x 2: each output element sums over its group's input features and the
    kernel taps."""
    rhs = eqn.invars[1].aval
    rhs_spec = eqn.params["dimension_numbers"].rhs_spec
    per_output = rhs.shape[rhs_spec[1]] * math.prod(rhs.shape[d] for d in rhs_spec[2:])
    return 2.0 * per_output * eqn.outvars[0].aval.size


# The cost module learns conv flops when it has a table for them (see the report on
# fx.lowering.select.cost); until then only this module's own costs count them.
if hasattr(_cost, "flops_rules"):
    _cost.flops_rules[conv_general_dilated_p] = conv_flops


# --- the NumPy kernels (canonical layouts: lhs (N, C, *S), rhs (O, I, *K)) ------------------------


def conv_direct(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                feature_group_count=1, batch_group_count=1):
    """Shift-and-accumulate: for each kernel tap, a strided slice of the padded input times
    that tap's ``(O, I)`` matrix, added into the output."""
    n, c = lhs.shape[:2]
    o, i = rhs.shape[:2]
    kernel = rhs.shape[2:]
    xp = dilate_and_pad(lhs, (1, 1) + tuple(lhs_dilation), ((0, 0), (0, 0)) + tuple(padding), 0)
    out_sp = tuple(0 if size < (k - 1) * r + 1 else (size - (k - 1) * r - 1) // s + 1
                   for size, k, r, s in zip(xp.shape[2:], kernel, rhs_dilation, window_strides))
    q = max(feature_group_count, batch_group_count)
    batch = n // batch_group_count
    p = math.prod(out_sp)
    acc = np.zeros_like(lhs, shape=(q, o // q, batch * p), order="C")
    if p and batch and o:
        w_all = rhs.reshape((q, o // q, i) + kernel)
        for step, tap in enumerate(np.ndindex(*kernel)):
            window = tuple(slice(t * r, t * r + (m - 1) * s + 1, s)
                           for t, r, m, s in zip(tap, rhs_dilation, out_sp, window_strides))
            x = xp[(slice(None), slice(None)) + window]  # (N, C, *P)
            if batch_group_count > 1:  # (q, Nb, C, *P) -> (q, C, Nb * P)
                x = np.swapaxes(x.reshape((q, batch, c, p)), 1, 2).reshape(q, c, batch * p)
            else:  # (N, q, Cq, *P) -> (q, Cq, N * P)
                x = np.transpose(x.reshape((n, q, c // q, p)), (1, 2, 0, 3))
                x = x.reshape(q, c // q, n * p)
            if step == 0:
                np.matmul(w_all[(Ellipsis,) + tap], x, out=acc)
            else:
                acc += np.matmul(w_all[(Ellipsis,) + tap], x)
    out = acc.reshape((q, o // q, batch) + out_sp)
    return np.moveaxis(out, 2, 0).reshape((batch, o) + out_sp)


# Winograd F(2x2, 3x3) (Lavin & Gray): Y = A^T [(G g G^T) * (B^T d B)] A for each 4x4 input tile
# d (tiles overlap by 2) and 2x2 output tile Y. B^T and A^T are additions and subtractions,
# applied below to whole planes (one plane = one tile position for every channel and tile).
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def _input_transform(d, out):
    """``out[i] = (B^T d)[i]`` for four planes ``d[0..3]``."""
    np.subtract(d[0], d[2], out=out[0])
    np.add(d[1], d[2], out=out[1])
    np.subtract(d[2], d[1], out=out[2])
    np.subtract(d[1], d[3], out=out[3])


def _output_transform(m, out):
    """``out[i] = (A^T m)[i]`` for four planes ``m[0..3]``."""
    np.add(m[0], m[1], out=out[0])
    out[0] += m[2]
    np.subtract(m[1], m[2], out=out[1])
    out[1] -= m[3]


def _kernel_transform(rhs, g):
    """``G w G^T`` for every (O, I) kernel, as two matmuls: ``(16, O, I)``."""
    o, i = rhs.shape[:2]
    half = np.matmul(rhs.reshape(o * i * 3, 3), g.T).reshape(o * i, 3, 4)  # w G^T
    full = np.matmul(g, np.swapaxes(half, 0, 1).reshape(3, o * i * 4))  # G (w G^T)
    return np.swapaxes(full.reshape(4, o * i, 4), 1, 2).reshape(16, o, i)


def winograd_eligible(eqn: JaxprEqn) -> bool:
    p = eqn.params
    rhs = eqn.invars[1].aval
    kernel = tuple(rhs.shape[d] for d in p["dimension_numbers"].rhs_spec[2:])
    return (kernel == (3, 3) and p["window_strides"] == (1, 1) and p["lhs_dilation"] == (1, 1)
            and p["rhs_dilation"] == (1, 1) and p["batch_group_count"] == 1
            and dtypes.is_float(eqn.outvars[0].aval.dtype)
            and dtypes.is_float(eqn.invars[0].aval.dtype))


def conv_winograd(lhs, rhs, padding, feature_group_count=1):
    """The 2-D 3x3, stride-1 convolution of canonical buffers by Winograd F(2x2, 3x3)."""
    n, c, _, _ = lhs.shape
    o = rhs.shape[0]
    q = feature_group_count
    xp = dilate_and_pad(lhs, (1, 1, 1, 1), ((0, 0), (0, 0)) + tuple(padding), 0)
    ho, wo = max(xp.shape[2] - 2, 0), max(xp.shape[3] - 2, 0)
    th, tw = -(-ho // 2), -(-wo // 2)
    if not (n and o and th and tw and c):
        return np.zeros_like(lhs, shape=(n, o, ho, wo), order="C")
    # Channels first, and zeros completing the last tiles: tile (y, x) reads rows 2y..2y+3.
    xt = np.zeros_like(lhs, shape=(c, n, 2 * th + 2, 2 * tw + 2), order="C")
    xt[:, :, :xp.shape[2], :xp.shape[3]] = np.swapaxes(xp, 0, 1)
    plane = (c, n, th, tw)
    rows = np.empty_like(lhs, shape=(4, 4) + plane)  # [row transform i][column b]
    for b in range(4):
        _input_transform([xt[:, :, a:a + 2 * th:2, b:b + 2 * tw:2] for a in range(4)],
                         rows[:, b])
    v = np.empty_like(lhs, shape=(4, 4) + plane)  # [xi][nu]
    for xi in range(4):
        _input_transform(rows[xi], v[xi])
    u = _kernel_transform(rhs, _G.astype(lhs.dtype)).reshape(16, q, o // q, c // q)
    m = np.matmul(u, v.reshape(16, q, c // q, n * th * tw)).reshape(4, 4, o, n, th, tw)
    cols = np.empty_like(lhs, shape=(2, 4, o, n, th, tw))  # [a][nu]
    for nu in range(4):
        _output_transform(m[:, nu], cols[:, nu])
    out = np.empty_like(lhs, shape=(o, n, 2 * th, 2 * tw), order="C")
    for a in range(2):
        _output_transform(cols[a], [out[:, :, a::2, b::2] for b in range(2)])
    return np.swapaxes(out, 0, 1)[:, :, :ho, :wo]


# --- library steps --------------------------------------------------------------------------------


def _read(views, v):
    return v.value if isinstance(v, Literal) else views[v]


def _library(kernel):
    """A library-step builder: ``build(step) -> fn(views)`` running ``kernel`` on the
    canonical layouts and writing the result into the output buffer. Reshapes/transposes
    fused in front of the convolution (the group's prologue) are applied to the operands as
    NumPy views first."""

    def build(step):
        eqn, prologue = step.group.anchor, step.group.prologue
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        p = eqn.params
        lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
        comp = step.choice.compute_dtype or computation_dtype(lhs.aval.dtype, out.aval.dtype)
        back = tuple(int(i) for i in np.argsort(out_spec))

        def run(views):
            if prologue:
                views = dict(views)
                for e in prologue:
                    views[e.outvars[0]] = e.primitive.impl(
                        *[_read(views, v) for v in e.invars], **e.params)
            a = np.transpose(_read(views, lhs), lhs_spec).astype(comp, copy=False)
            b = np.transpose(_read(views, rhs), rhs_spec).astype(comp, copy=False)
            res = kernel(a, b, p)
            if out.aval.dtype == dtypes.bool_:
                res = res > 0
            np.copyto(views[out], np.transpose(res, back), casting="unsafe")

        return run

    return build


def _general(fn):
    return lambda a, b, p: fn(a, b, p["window_strides"], p["padding"], p["lhs_dilation"],
                              p["rhs_dilation"], p["feature_group_count"], p["batch_group_count"])


def _conv_eqn(g: FusionGroup) -> JaxprEqn | None:
    e = g.anchor
    return e if e.primitive is conv_general_dilated_p else None


def _is_conv(g: FusionGroup) -> bool:
    return _conv_eqn(g) is not None


def _is_winograd(g: FusionGroup) -> bool:
    e = _conv_eqn(g)
    return e is not None and winograd_eligible(e)


# --- costs ----------------------------------------------------------------------------------------
# Nanoseconds: ~1 us per NumPy call, ~0.5 ns per element copied or combined in a pass, and the
# matmuls at BLAS speed (~50 flops/ns; NumPy's integer loops ~2 flops/ns).

_CALL = 1000.0
_ELEM = 0.5


@dataclass(frozen=True)
class _Geometry:
    batch: int  # input batch
    features: int  # input features
    group_features: int  # input features each output sums over
    o: int  # output features
    out: int  # output elements
    positions: int  # output spatial positions
    taps: int  # kernel spatial positions
    padded: int  # elements of the dilated, padded input
    flops: float
    rate: float  # matmul flops per ns

    @property
    def cols(self) -> int:
        """Elements of the im2col matrix: every input feature once per position and tap."""
        return self.batch * self.features * self.positions * self.taps


def _geometry(g: FusionGroup) -> _Geometry:
    e = _conv_eqn(g)
    lhs, rhs, out = e.invars[0].aval, e.invars[1].aval, e.outvars[0].aval
    p = e.params
    spec = p["dimension_numbers"]
    batch, features = lhs.shape[spec.lhs_spec[0]], lhs.shape[spec.lhs_spec[1]]
    padded = batch * features * math.prod(
        max(lo + max(lhs.shape[d] - 1, 0) * ld + 1 + hi, 0)
        for d, (lo, hi), ld in zip(spec.lhs_spec[2:], p["padding"], p["lhs_dilation"]))
    return _Geometry(
        batch=batch, features=features, group_features=rhs.shape[spec.rhs_spec[1]],
        o=out.shape[spec.out_spec[1]], out=out.size,
        positions=math.prod(out.shape[d] for d in spec.out_spec[2:]),
        taps=math.prod(rhs.shape[d] for d in spec.rhs_spec[2:]), padded=padded,
        flops=conv_flops(e), rate=50.0 if dtypes.is_float(out.dtype) else 2.0)


def _im2col_cost(g: FusionGroup) -> float:
    # Pad, copy the windows into the matrix (a gather: two passes' worth), multiply, and
    # copy the result into the output layout.
    m = _geometry(g)
    return 10 * _CALL + _ELEM * (m.padded + 2 * m.cols + m.out) + m.flops / m.rate


def _direct_cost(g: FusionGroup) -> float:
    # Per tap: a few calls, the tap's slice copied into matmul layout (a plain strided copy,
    # cheaper than im2col's gather) and, after the first tap, a product added into the
    # accumulator. No matrix of every window: the choice for 1x1 kernels, or few outputs.
    m = _geometry(g)
    return ((4 + 3 * m.taps) * _CALL + _ELEM * (m.padded + m.cols + 2 * m.taps * m.out)
            + m.flops / m.rate)


def patches_matmul_cost(eqn: JaxprEqn) -> float:
    """What :mod:`fx.lowering.passes.lower_convolutions` makes of the convolution: a generated
    gather writing the patches (read once by the matmul) and one BLAS product."""
    m = _geometry(FusionGroup(GroupKind.GEMM, [eqn], -1))
    patches = m.batch * m.positions * m.taps * m.group_features
    return 3 * _CALL + _ELEM * 2 * patches + m.flops / m.rate


def winograd_cost(eqn: JaxprEqn) -> float:
    return _winograd_cost(FusionGroup(GroupKind.GEMM, [eqn], -1))


def _winograd_cost(g: FusionGroup) -> float:
    # 16 matmuls over 2x2 output tiles (2.25x fewer flops than the 3x3 taps) and the
    # transforms: 32 plane passes over the input tiles, 24 over the output tiles, 40 per
    # kernel, plus padding into the channel-first tile buffer.
    m = _geometry(g)
    tiles = m.batch * (m.positions + 3) // 4
    return (50 * _CALL + _ELEM * (3 * m.padded + 32 * m.features * tiles + 24 * m.o * tiles
                                  + 40 * m.o * m.group_features + m.out)
            + m.flops / 2.25 / m.rate)


_FLOATS = frozenset([dtypes.float32, dtypes.float64])

register(OpImpl(
    "cpu.conv_im2col", "cpu", GroupKind.GEMM, None, dict(HALF_TO_F32), False, _im2col_cost,
    "windows copied into a matrix, one batched matmul (BLAS) into the output buffer",
    applies=_is_conv, library=_library(_general(conv_im2col))))
register(OpImpl(
    "cpu.conv_direct", "cpu", GroupKind.GEMM, None, dict(HALF_TO_F32), False, _direct_cost,
    "a loop over the kernel taps, each a matmul over channels accumulated in place",
    applies=_is_conv, library=_library(_general(conv_direct))))
register(OpImpl(
    "cpu.conv_winograd", "cpu", GroupKind.GEMM, _FLOATS, dict(HALF_TO_F32), False,
    _winograd_cost, "Winograd F(2x2,3x3): transformed tiles, 16 batched matmuls",
    applies=_is_winograd,
    library=_library(lambda a, b, p: conv_winograd(a, b, p["padding"],
                                                   p["feature_group_count"]))))
