"""Kernels whose C source is written whole (intrinsics microkernels), beside their loop IR.

A :class:`CKernel` is called like a loop-IR kernel (same parameters, same name in the
program) but renders, in the C dialect, a template filled at lowering time: a microkernel for
the instructions it needs (AVX-512 VNNI's ``vpdpbusd``, AVX-512F's ``vpermps``), with the
loop-IR kernel rendered beside it as ``<name>_ir``, which the template calls where the target
lacks those instructions (the source is compiled for whatever ``-march`` the machine has).
In other dialects (the tests render every CPU kernel for CUDA too) it is the loop-IR kernel.
A kernel without a loop-IR form (a call into a host runtime: ``fx.distributed.native``'s
collectives) renders as nothing in other dialects: it exists only in C programs.
"""

from __future__ import annotations

import dataclasses
import string

from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.render.renderer import C


@dataclasses.dataclass(frozen=True)
class CKernel:
    """A C kernel whose source is made whole (not loop IR), called like the others."""

    name: str
    params: tuple[ir.Param, ...]
    template: str  # string.Template text; ``${name}`` is the kernel's name, ``fields`` the rest
    fields: tuple[tuple[str, object], ...]
    fallback: ir.Kernel | None  # the loop-IR kernel, for targets without the instructions
    work: int = 0
    restrict: bool = False
    launch = None

    def renamed(self, name: str) -> CKernel:
        return dataclasses.replace(self, name=name)

    def render(self, renderer) -> str:
        """C: the microkernel with its fallback beside it; another dialect: the loop-IR form
        under this name."""
        if self.fallback is None:
            return self.source if renderer.d is C else ""
        if renderer.d is not C:
            return renderer.kernel(self.fallback.renamed(self.name))
        fallback = renderer.kernel(self.fallback.renamed(f"{self.name}_ir"))
        return fallback + self.source

    @property
    def source(self) -> str:
        """The template filled: the C text of the kernel itself (without its fallback)."""
        return string.Template(self.template).substitute(dict(self.fields), name=self.name)
