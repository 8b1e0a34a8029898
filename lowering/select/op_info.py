"""The operator-info library: the generic implementations of fusion groups, and the choice.

Each :class:`~fx.lowering.select.op_impl.OpImpl` (registered in ``op_impl.registry``) says
which group kind it implements, on which backend, for which dtypes (and which dtypes it
handles by computing in a wider type with explicit casts), whether it needs a C compiler, and
a cost estimate. :func:`select` picks the cheapest applicable one and says why; the choice is
shown by ``Compilation.as_text()``.

This module registers the implementations every backend has: the generated elementwise and
reduction kernels (for groups ``generable.generable`` accepts; on the CPU also the column
reduction kernel, ``codegen.column_reductions``), compiled control flow, and the NumPy fallbacks
(the primitives' impls op by op; NumPy's matmul for dtypes BLAS lacks). The hand-written kernel
families under ``fx.lowering.kernels`` register their own: each family's ``impls`` module
registers its GEMM implementations when imported, and this module imports them (below) between
the generated kernels and the NumPy fallbacks, in a fixed order: a new family adds its ``impls``
module there. Registration order is part of the choice: ``select`` keeps the first of equally
cheap implementations and ``applicable`` lists them in that order.
Convolutions and library calls register from ``fx.lowering.kernels.cpu.conv`` and
``library_calls`` (imported by the pipeline), libraries above the compiler from their own
modules (``fx.distributed``'s collectives).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fx.lowering.codegen import column_reductions
from fx.lowering.codegen.loop_kernels import KERNEL_BUILDERS
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.cpu.library import dot_step, is_dot
from fx.lowering.program.control_flow import control_flow_prims
from fx.lowering.select import backends
from fx.lowering.select.cost import group_flops, output_elements
from fx.lowering.select.generable import generable
from fx.lowering.select.op_impl import ANY, OpImpl, register


def _touched(g: FusionGroup) -> int:
    return max(output_elements(g), sum(math.prod(e.invars[0].aval.shape) for e in g.eqns
                                       if e.invars and hasattr(e.invars[0], "aval")))


# Costs are rough nanosecond estimates on one CPU core: a call overhead plus a throughput
# term (generated kernels ~1 ns per element; BLAS ~50 flops per ns; NumPy op by op pays one
# pass over memory per equation).
for _backend in backends.BACKENDS:  # every target renders the kernel IR
    register(OpImpl(f"{_backend}.fused_elementwise", _backend, GroupKind.ELEMENTWISE, ANY,
                    {}, True, lambda g: 500.0 + output_elements(g),
                    "generated loop; half precision stored 16-bit, computed in float32",
                    applies=generable, kernel=KERNEL_BUILDERS[GroupKind.ELEMENTWISE],
                    in_place_safe=True))
    register(OpImpl(f"{_backend}.fused_reduction", _backend, GroupKind.REDUCTION, ANY, {}, True,
                    lambda g: 500.0 + _touched(g), "generated row-reduction kernel",
                    applies=generable, kernel=KERNEL_BUILDERS[GroupKind.REDUCTION]))
# A column reduction streams contiguous rows through a row of accumulators, on threads over
# blocks of rows (its kernel runs two loops one after the other: CPU only).
register(OpImpl("cpu.column_reduction", "cpu", GroupKind.REDUCTION, ANY, {}, True,
                lambda g: 500.0 + _touched(g) / 4.0,
                "generated column reduction: rows through a vector of partials",
                applies=column_reductions.applies,
                kernel=column_reductions.column_reduction_kernel))

# The kernel families' GEMM implementations, in this order (see the module docstring).
# isort: off
from fx.lowering.kernels.cpu import impls as _cpu_impls  # noqa: E402, F401
from fx.lowering.kernels.cuda import impls as _cuda_impls  # noqa: E402, F401
from fx.lowering.kernels.int8 import impls as _int8_impls  # noqa: E402, F401
from fx.lowering.kernels.sparse import impls as _sparse_impls  # noqa: E402, F401
from fx.lowering.kernels.nf4 import impls as _nf4_impls  # noqa: E402, F401
# isort: on

register(OpImpl("cpu.numpy_gemm", "cpu", GroupKind.GEMM, ANY, {}, False,
                lambda g: 3000.0 + group_flops(g) / 2.0, "numpy matmul for dtypes BLAS lacks",
                applies=is_dot, library=dot_step))


def _is_control_flow(g: FusionGroup) -> bool:
    return len(g.eqns) == 1 and g.eqns[0].primitive in control_flow_prims


register(OpImpl("compiled_control_flow", "any", GroupKind.OPAQUE, ANY, {}, False,
                lambda g: 100.0, "each body lowered and compiled as a program of its own",
                applies=_is_control_flow, control_flow=True))
for _kind in GroupKind:
    register(OpImpl(f"numpy.{_kind.value}", "any", _kind, ANY, {}, False,
                    lambda g: 5000.0 * len(g.eqns) + 3.0 * _touched(g) * len(g.eqns)
                    + group_flops(g) / 25.0,
                    "the primitives' NumPy impls, op by op (no C compiler needed)",
                    op_by_op=True, fuses_epilogue=True))


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
