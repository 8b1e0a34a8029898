"""The operator-info library: which implementations exist for each group, and the choice.

Each :class:`~fx.lowering.select.op_impl.OpImpl` (registered in ``op_impl.registry``) says
which group kind it implements, on which backend, for which dtypes (and which dtypes it
handles by computing in a wider type with explicit casts), whether it needs a C compiler, and
a cost estimate. :func:`select` picks the cheapest applicable one and
says why; the choice is shown by ``Compilation.as_text()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fx import dtypes
from fx.lax import linalg
from fx.lowering.codegen.loop_kernels import KERNEL_BUILDERS
from fx.lowering.fusion import primitive_rules
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.cpu.library import gemm_step
from fx.lowering.kernels.cuda import cuda_gemm, cuda_int8_gemm
from fx.lowering.kernels.int8 import int8_conv, int8_gemm, int8_vnni
from fx.lowering.kernels.nf4 import nf4_gemm
from fx.lowering.kernels.sparse import sparse_gemm
from fx.lowering.program.control_flow import control_flow_prims
from fx.lowering.select import backends
from fx.lowering.select.cost import group_flops
from fx.lowering.select.op_impl import ANY, OpImpl, register

# Primitives whose impl runs only on NumPy (no CuPy/GPU implementation). On the CUDA backend a
# group containing one runs on the host, with explicit copies around it.
host_only_prims: set = set()


def _elements(g: FusionGroup) -> int:
    return sum(math.prod(v.aval.shape) for v in g.outputs) or 1


def _flops(g: FusionGroup) -> float:
    return group_flops(g)


_HALF_TO_F32 = {dtypes.float16: dtypes.float32, dtypes.bfloat16: dtypes.float32}

# Costs are rough nanosecond estimates on one CPU core: a call overhead plus a throughput
# term (generated kernels ~1 ns per element; BLAS ~50 flops per ns; NumPy op by op pays one
# pass over memory per equation).
# The dtypes generated kernels handle, for every value of the group (operands, results and
# intermediates). Groups touching others (float8) run as NumPy steps. Complex values are
# computed by elementwise kernels only, and only by the arithmetic the dialects spell
# (primitive_rules.complex_prims); data movement (transposes, slices, pads, ...) of them is free.
KERNEL_DTYPES = frozenset([dtypes.bool_, *dtypes.INTEGER, dtypes.float16, dtypes.bfloat16,
                           dtypes.float32, dtypes.float64, *dtypes.COMPLEX])


def _generable(g: FusionGroup) -> bool:
    """Every value of the group has a kernel dtype and every equation a kernel spelling."""
    return all(v.aval.dtype in KERNEL_DTYPES for e in g.eqns for v in (*e.invars, *e.outvars)
               if hasattr(v, "aval")) and not any(
        primitive_rules.unsupported[e.primitive](e) for e in g.eqns
        if e.primitive in primitive_rules.unsupported) and not any(
        _complex_unsupported(g, e) for e in g.eqns)


def _complex_unsupported(g: FusionGroup, eqn) -> bool:
    if not primitive_rules.touches_complex(eqn):
        return False
    if g.kind is not GroupKind.ELEMENTWISE:
        return True
    return (primitive_rules.pattern_of(eqn.primitive) is primitive_rules.Pattern.ELEMENTWISE
            and eqn.primitive not in primitive_rules.complex_prims)


for _backend in backends.BACKENDS:  # every target renders the kernel IR
    register(OpImpl(f"{_backend}.fused_elementwise", _backend, GroupKind.ELEMENTWISE, ANY,
                    {}, True, lambda g: 500.0 + _elements(g),
                    "generated loop; half precision stored 16-bit, computed in float32",
                    applies=_generable, kernel=KERNEL_BUILDERS[GroupKind.ELEMENTWISE],
                    in_place_safe=True))
    register(OpImpl(f"{_backend}.fused_reduction", _backend, GroupKind.REDUCTION, ANY, {}, True,
                    lambda g: 500.0 + _touched(g), "generated row-reduction kernel",
                    applies=_generable, kernel=KERNEL_BUILDERS[GroupKind.REDUCTION]))
def _operand_elements(g: FusionGroup) -> float:
    return float(sum(v.aval.size for v in g.anchor.invars[:2]))


def _is_dot(g: FusionGroup) -> bool:
    return g.anchor.primitive is linalg.dot_general_p


def _gemm_library(step):
    return gemm_step(step.group.anchor, step.choice.compute_dtype, step.group.prologue)


register(OpImpl("cpu.blas_gemm", "cpu", GroupKind.GEMM,
                frozenset([dtypes.float32, dtypes.float64]), dict(_HALF_TO_F32), False,
                lambda g: 3000.0 + _flops(g) / 50.0,
                "numpy/BLAS matmul into the planned buffer, then the fused epilogue in place",
                applies=_is_dot, library=_gemm_library))
# H200 FP32 (no TF32): cuBLAS ~50 TFLOP/s; the generated tile ~35; a launch ~5 us; an extra
# epilogue pass reads and writes the product at ~4.8 TB/s.
def _cublas_cost(g: FusionGroup) -> float:
    epilogue = 5000.0 + 8.0 * _elements(g) / 4800.0 if g.epilogue else 0.0
    return 5000.0 + _flops(g) / 50000.0 + epilogue


register(OpImpl("cuda.cublas_gemm", "cuda", GroupKind.GEMM,
                frozenset([dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]), {},
                False, _cublas_cost,
                "cuBLAS through CuPy into the planned buffer, then the epilogue as a kernel",
                applies=_is_dot, library=_gemm_library))
register(OpImpl("cuda.tiled_gemm", "cuda", GroupKind.GEMM,
                frozenset([dtypes.float16, dtypes.bfloat16, dtypes.float32]), {}, False,
                lambda g: 5000.0 + _flops(g) / 35000.0,
                "generated 128x128x8 tiled GEMM, float32 accumulation, epilogue fused in its "
                "store", applies=lambda g: _is_dot(g) and cuda_gemm.applies(g),
                kernel=cuda_gemm.gemm_kernel, fuses_epilogue=True))
# ~60 int8 flops per ns on one core with vpdpbusd, ~40 with AVX2's 16-bit products
# (measured), ~1 ns per element of epilogue.
def _int8_cost(g: FusionGroup) -> float:
    rate = 40.0 if int8_vnni.target_lacks_dot_products() else 60.0
    return 2000.0 + _flops(g) / rate + _elements(g)


def _int8_as_float(g: FusionGroup) -> bool:
    """An int8 product BLAS computes exactly in float32 (every partial sum an integer below
    2**24 in magnitude: K * 128 * 128 <= 2**24), on a target without byte dot products."""
    return (int8_gemm.applies(g) and int8_gemm._sizes(g.anchor)[2] <= 1024
            and int8_vnni.target_lacks_dot_products())


def _int8_float_library(step):
    dot = step.group.anchor
    view = dot.replace(primitive=linalg.dot_general_p, invars=list(dot.invars[:2]))
    return gemm_step(view, np.float32, step.group.prologue)


register(OpImpl("cpu.int8_gemm_f32", "cpu", GroupKind.GEMM, frozenset([dtypes.int32]), {},
                False, lambda g: 3000.0 + _flops(g) / 50.0 + _operand_elements(g) / 4.0,
                "int8 operands converted to float32 and multiplied by BLAS: exact (integer "
                "partial sums below 2**24), faster than integer code on x86 without VNNI",
                applies=_int8_as_float, library=_int8_float_library))
register(OpImpl("cpu.int8_gemm", "cpu", GroupKind.GEMM, frozenset([dtypes.int32]), {}, True,
                _int8_cost,
                "generated int8 x int8 -> int32 dot-product tiles, epilogue fused in the store",
                applies=lambda g: int8_gemm.applies(g) and _generable(g),
                kernel=int8_gemm.gemm_kernel, fuses_epilogue=True,
                describe=int8_gemm.describe))
# The same tiles over a convolution's input read in place (int8_conv: no patches gather).
register(OpImpl("cpu.int8_conv", "cpu", GroupKind.GEMM, frozenset([dtypes.int32]), {}, True,
                lambda g: 1000.0 + _flops(g) / 60.0 + _elements(g),
                "generated int8 x int8 -> int32 dot-product tiles over the input's pixels, "
                "epilogue fused in the store",
                applies=lambda g: int8_conv.applies(g) and _generable(g),
                kernel=int8_conv.conv_kernel, fuses_epilogue=True, describe=int8_conv.describe))
# H200 int8 on __dp4a: ~120 int8 multiply-adds per ns from the generated tile (estimated).
register(OpImpl("cuda.int8_gemm", "cuda", GroupKind.GEMM, frozenset([dtypes.int32]), {}, False,
                lambda g: 5000.0 + _flops(g) / 240000.0,
                "generated int8 x int8 -> int32 64x64 tile on __dp4a, epilogue fused in its store",
                applies=lambda g: int8_gemm.applies(g) and _generable(g),
                kernel=cuda_int8_gemm.gemm_kernel, fuses_epilogue=True,
                describe=int8_gemm.describe))
for _backend in backends.BACKENDS:  # CSR x dense for sparse constant weights (sparse_gemm)
    register(OpImpl(f"{_backend}.sparse_gemm", _backend, GroupKind.GEMM,
                    sparse_gemm.SPARSE_DTYPES, {}, True, sparse_gemm.cost,
                    "generated CSR x dense kernel over the weight's nonzeros, epilogue fused",
                    applies=lambda g: sparse_gemm.applies(g) and _generable(g),
                    kernel=sparse_gemm.gemm_kernel, fuses_epilogue=True,
                    describe=sparse_gemm.describe))
# NF4 weights unpacked, looked up and scaled inside the product (fx.quant.nf4); the epilogue
# runs as a kernel of its own. On CUDA the transposed product (the input gradient) runs op by
# op; the CPU has a kernel for it.
register(OpImpl("cpu.nf4_gemm", "cpu", GroupKind.GEMM, frozenset([dtypes.float32]), {}, True,
                nf4_gemm.cost, "generated NF4 dequantize-in-GEMM, in-order sums over k",
                applies=lambda g: nf4_gemm.applies(g, transposed=True) and _generable(g),
                kernel=nf4_gemm.cpu_kernel, describe=nf4_gemm.describe))
register(OpImpl("cuda.nf4_gemm", "cuda", GroupKind.GEMM, frozenset([dtypes.float32]), {}, False,
                lambda g: 5000.0 + nf4_gemm.cost(g) / 100.0,
                "generated NF4 dequantize-in-GEMM, a thread per byte column",
                applies=lambda g: nf4_gemm.applies(g) and _generable(g),
                kernel=nf4_gemm.cuda_kernel, describe=nf4_gemm.describe))
host_only_prims.add(nf4_gemm.nf4_dot_p)
register(OpImpl("cpu.numpy_gemm", "cpu", GroupKind.GEMM, ANY, {}, False,
                lambda g: 3000.0 + _flops(g) / 2.0, "numpy matmul for dtypes BLAS lacks",
                applies=_is_dot, library=_gemm_library))
def _is_control_flow(g: FusionGroup) -> bool:
    return len(g.eqns) == 1 and g.eqns[0].primitive in control_flow_prims


register(OpImpl("compiled_control_flow", "any", GroupKind.OPAQUE, ANY, {}, False,
                lambda g: 100.0, "each body lowered and compiled as a program of its own",
                applies=_is_control_flow, control_flow=True))
for _kind in GroupKind:
    register(OpImpl(f"numpy.{_kind.value}", "any", _kind, ANY, {}, False,
                    lambda g: 5000.0 * len(g.eqns) + 3.0 * _touched(g) * len(g.eqns)
                    + _flops(g) / 25.0,
                    "the primitives' NumPy impls, op by op (no C compiler needed)",
                    op_by_op=True, fuses_epilogue=True))


def _touched(g: FusionGroup) -> int:
    return max(_elements(g), sum(math.prod(e.invars[0].aval.shape) for e in g.eqns
                                 if e.invars and hasattr(e.invars[0], "aval")))


@dataclass(frozen=True)
class Choice:
    impl: OpImpl
    reason: str
    compute_dtype: np.dtype | None  # set when the impl widens the group's dtype
    # Why the group runs as NumPy where it does for want of another implementation (a
    # ``fallbacks.Fallback``; None otherwise).
    fallback: object | None = None


def _group_dtype(g: FusionGroup) -> np.dtype:
    main = g.anchor if g.kind is GroupKind.GEMM else g.eqns[0]
    return main.outvars[0].aval.dtype if main.outvars else np.dtype(np.float32)


def applicable(g: FusionGroup, backend, have_compiler: bool) -> list[OpImpl]:
    """The implementations of ``g`` in ``backend``'s operator library (a
    ``backends.Backend``) that apply to it, in registration order."""
    dt = _group_dtype(g)
    return [impl for impl in backend.operators
            if impl.kind is g.kind and (have_compiler or not impl.needs_compiler)
            and (impl.applies is None or impl.applies(g)) and impl.supports(dt)]


def select(g: FusionGroup, backend, have_compiler: bool) -> Choice:
    """The cheapest implementation of ``g`` in ``backend``'s operator library (a
    ``backends.Backend``). ``Choice.fallback`` stays None here: ``fallbacks.mark`` says
    why a group runs as NumPy."""
    dt = _group_dtype(g)
    candidates = [(impl.cost(g), impl) for impl in applicable(g, backend, have_compiler)]
    if not candidates:
        raise NotImplementedError(f"no implementation of {g.label()} for {backend} and {dt}")
    cost, impl = min(candidates, key=lambda c: c[0])
    widened = impl.widen.get(dt)
    others = ", ".join(f"{i.name}={c:.3g}" for c, i in sorted(candidates, key=lambda c: c[0])
                       if i is not impl)
    reason = f"cost {cost:.3g}" + (f" (vs {others})" if others else "")
    if impl.describe is not None:
        reason = f"{impl.describe(g)}; {reason}"
    if widened is not None:
        reason += f"; {dt} computed in {widened} with explicit casts"
    return Choice(impl, reason, widened)
