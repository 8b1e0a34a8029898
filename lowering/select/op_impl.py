"""What an implementation of a fusion group is (:class:`OpImpl`), and the registry of them
every backend's operator library is read from (``backends.Backend.operators``).

Implementations register themselves with :func:`register` when their module is imported:
``op_info`` the generic ones, each kernel family under ``fx.lowering.kernels`` its own (its
``impls`` module, which ``op_info`` imports in a fixed order; convolutions and library calls
from their modules), and the libraries above the compiler theirs (``fx.distributed``'s
collectives). ``import fx`` imports the pipeline and so ``op_info``, so the registry is filled
before any program is lowered. :func:`op_info.select` picks among them; where costs tie, the
first registered wins, so the order is kept stable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fx.lowering.fusion.groups import FusionGroup, GroupKind

ANY = None  # dtypes: any


@dataclass(frozen=True)
class OpImpl:
    name: str
    backend: str  # the backend whose library holds it, or "any" (see ``backends``)
    kind: GroupKind
    dtypes: frozenset | None  # dtypes computed natively (None: any)
    widen: dict  # dtype -> dtype it is computed in, with casts around the call
    needs_compiler: bool
    cost: Callable[[FusionGroup], float]
    note: str = ""
    # Restricts the impl to some groups of its kind (e.g. GEMM groups anchored by a conv).
    applies: Callable[[FusionGroup], bool] | None = None
    # For library impls: builds the step's ``fn(views)`` from the Step (see pipeline).
    library: Callable | None = None
    # For generated impls: ``kernel(group, name, inputs, outputs)`` builds the step's kernel.
    kernel: Callable | None = None
    # A GEMM impl that computes the group's elementwise epilogue itself; the others write
    # the product and the pipeline splits the epilogue into a kernel of its own.
    fuses_epilogue: bool = False
    # Its kernel reads each element before writing the same element, so an output may share
    # a dying input's storage (when the group's index maps are flat, see pipeline).
    in_place_safe: bool = False
    # Runs the primitives' NumPy impls op by op: on a device backend a group holding a
    # host-only primitive then runs on the host, with copies around it.
    op_by_op: bool = False
    # Lowers a control-flow equation: its bodies become programs of their own.
    control_flow: bool = False
    # What it runs for a group, shown in as_text() before the cost (e.g. the LAPACK routine).
    describe: Callable[[FusionGroup], str] | None = None
    # ``first_run(group)`` -> a check the executable runs once, before its first call runs
    # any step (a native collective's agreement with the other processes: it may raise).
    first_run: Callable[[FusionGroup], Callable[[], None]] | None = None

    def supports(self, dt) -> bool:
        return self.dtypes is None or dt in self.dtypes or dt in self.widen


registry: list[OpImpl] = []

# Primitives whose impl runs only on NumPy (no CuPy/GPU implementation). On the CUDA backend a
# group containing one runs on the host, with explicit copies around it. Kernel families and
# library calls add theirs when they register.
host_only_prims: set = set()


def register(impl: OpImpl) -> OpImpl:
    registry.append(impl)
    return impl
