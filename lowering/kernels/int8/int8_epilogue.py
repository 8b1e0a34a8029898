"""The group's epilogue as a C or CUDA function, for the int8 kernels whose source is written
whole (``int8_vnni``, ``int8_conv``, ``cuda_int8_gemm``): they call it once per output with the
corrected int32 sum."""

from __future__ import annotations

from fx import dtypes
from fx.jaxpr import Var
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.kernel_builder import KernelBuilder
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.kernels.int8.int8_products import layout, operand_source
from fx.lowering.render.renderer import Renderer, storage_type


def epilogue_function(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var],
                      dialect, free: tuple | None = None, acc_dtype=dtypes.int32) -> dict:
    """For kernels whose source is written whole (``int8_vnni``, ``cuda_int8_gemm``): the
    group's epilogue as the body of a function ``(i0, i1, acc, params...)`` storing every
    output at row ``i0``, column ``i1`` of the product (``acc``, of ``acc_dtype``), in
    ``dialect``. Returns the kernel's
    ``params`` and the template fields ``sig``, ``epilogue``, ``args``, ``A`` and ``B`` (the
    parameters holding the operands, read through the group's reshapes)."""
    dot = group.anchor
    lhs_free, rhs_free = layout(dot)[5:] if free is None else free  # (the product's rows, columns)
    b = KernelBuilder(FusionGroup(GroupKind.ELEMENTWISE, group.epilogue, group.id), name,
                      inputs, outputs)
    i0, i1 = ir.Sym("i0", ir.INDEX), ir.Sym("i1", ir.INDEX)
    at = (*index_of(i0, lhs_free), *index_of(i1, rhs_free))
    b.externals[(dot.outvars[0], at)] = ir.Sym("acc", acc_dtype)  # the sum
    b.push()
    b.store_all(outputs, at)
    body = b.pop()
    params = b.params()
    lhs, rhs = dot.invars[:2]
    names = {v: p.name for v, p in zip(inputs, params, strict=False)}
    packed = dot.invars[2:4] if len(dot.invars) >= 4 else (None, None)  # panels, column sums
    return dict(
        params=params,
        sig=", ".join(f"{'' if p.is_output else 'const '}{storage_type(p.dtype)}* {p.name}"
                      for p in params),
        epilogue="\n".join(Renderer(dialect).stmts(tuple(body), 1)),
        args=", ".join(p.name for p in params),
        A=names[operand_source(group, lhs)], B=names[operand_source(group, rhs)],
        P=names.get(packed[0]), CS=names.get(packed[1]))


def index_of(flat: ir.Expr, shape: tuple[int, ...]) -> tuple[ir.Expr, ...]:
    return (flat,) if len(shape) == 1 else tuple(ir.delinearize(flat, shape))
