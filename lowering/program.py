"""The program IR: a lowered program as data.

Lowering ends in a list of typed operations, one per step of the schedule, each naming the
buffers it reads and writes (and so where each value lives: an argument, an output, a
constant, or an offset in the arena):

- :class:`Launch`: one generated kernel over buffers, in its parameter order;
- :class:`LibraryCall`: a routine (BLAS matmul, LAPACK, FFT) writing its outputs in place;
- :class:`HostCall`: the primitives' NumPy implementations, op by op (on a backend whose
  buffers are not in host memory, with copies to the host and back);
- :class:`Loop` (``scan``, ``while``) and :class:`Conditional` (``cond``), each holding its
  bodies as lowered programs of their own. A *native* one is rendered into one function of
  the generated code; otherwise it runs on the host over its bodies' compiled executables.

The runtime sees the program as a sequence of :class:`Segment` s (consecutive native
operations: a C entry point over the pointer table, or a list of launches on a GPU) and the
other operations, each called with the buffers' arrays. Segments and the kernels they call are
split into translation units (:class:`Unit`) that a dialect renders (``backends.Backend``'s
``source``) and an executor loads; nothing edits source text after it is rendered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fx.avals import ShapedArray
from fx.jaxpr import Var
from fx.lowering import kernel_ir as ir


@dataclass(eq=False)
class Buffer:
    """Where one value lives while the program runs."""

    var: Var
    kind: str  # "input", "const", "output" or "temp"
    slot: int  # index in the runtime pointer table
    position: int = -1  # argument / output position, for inputs and outputs
    offset: int = -1  # arena offset, for temporaries
    donor: Buffer | None = None  # for outputs: the donated input whose storage it reuses

    @property
    def aval(self) -> ShapedArray:
        return self.var.aval


@dataclass(frozen=True, eq=False)
class Op:
    """One operation of the program: the step it runs and the buffers it reads and writes."""

    step: int  # index into ``Program.steps``
    reads: tuple[Buffer, ...]
    writes: tuple[Buffer, ...]

    native = False  # runs inside generated code (a segment), not called from Python

    @property
    def label(self) -> str:
        return type(self).__name__.lower()


@dataclass(frozen=True, eq=False)
class Launch(Op):
    """A generated kernel: ``callee`` is the function the unit defines for it (a kernel equal
    to an earlier one of its unit but for its name calls that one)."""

    kernel: ir.Kernel = None
    callee: str = ""

    native = True

    @property
    def args(self) -> tuple[Buffer, ...]:
        return self.reads + self.writes

    @property
    def label(self) -> str:
        return f"launch {self.callee}"


@dataclass(frozen=True, eq=False)
class LibraryCall(Op):
    routine: str = ""
    run: Callable | None = None  # run(views): views maps a value to its buffer's array

    @property
    def label(self) -> str:
        return f"library_call {self.routine}"


@dataclass(frozen=True, eq=False)
class HostCall(Op):
    run: Callable | None = None
    copies: bool = False  # the buffers live on a device: copy to the host and back

    @property
    def label(self) -> str:
        return "host_call (copies to the host and back)" if self.copies else "host_call"


@dataclass(frozen=True, eq=False)
class ControlFlow(Op):
    """``scan``/``while`` (:class:`Loop`) or ``cond`` (:class:`Conditional`).

    ``eqn`` is the control-flow equation (its parameters say how operands map to the bodies;
    literal operands are in it); ``bodies`` are the lowered body programs (while: cond, body;
    cond: the branches). A native one is the generated function ``function`` of the unit,
    whose kernels (the bodies', renamed to live beside the parent's, nested ones included)
    are ``kernels``; ``scratch`` is the parent temporary holding the bodies' arenas at
    ``body_offsets`` and the two ping-pong copies of the carry at ``carry_offsets``. Otherwise
    ``run(views)`` loops on the host."""

    eqn: object = None
    operands: tuple = ()  # per operand of ``eqn``: its Buffer, or None for a literal
    results: tuple[Buffer, ...] = ()  # per result of ``eqn``
    bodies: tuple = ()
    function: str = ""
    kernels: tuple[ir.Kernel, ...] = ()
    scratch: Buffer | None = None
    body_offsets: tuple[int, ...] = ()
    carry_offsets: tuple[tuple[int, ...], ...] = ()
    prefixes: tuple[str, ...] = ()  # per body: the prefix of its kernels' names
    run: Callable | None = None
    note: str = ""

    @property
    def native(self) -> bool:  # type: ignore[override]
        return bool(self.function)

    @property
    def label(self) -> str:
        where = f"native {self.function}" if self.native else "on the host"
        return f"{type(self).__name__.lower()} {self.eqn.primitive.name} ({where})"


class Loop(ControlFlow):
    pass


class Conditional(ControlFlow):
    pass


@dataclass(frozen=True, eq=False)
class Segment:
    """Consecutive native operations run as one call from the runtime."""

    name: str
    ops: tuple[Op, ...]

    native = True

    @property
    def label(self) -> str:
        return f"segment {self.name}"


@dataclass(frozen=True, eq=False)
class Unit:
    """One translation unit: the kernels it defines, the native control-flow functions (in
    definition order: nested ones first) and the segments' entry points."""

    kernels: tuple[ir.Kernel, ...]
    functions: tuple[ControlFlow, ...]
    segments: tuple[Segment, ...]


@dataclass(frozen=True, eq=False)
class Schedule:
    """What the runtime executes, in order, and the units the dialect renders."""

    calls: tuple[Segment | Op, ...]
    units: tuple[Unit, ...] = field(default=())


# The compile work at which a translation unit is closed, in about 0.1 ms of gcc -O3 time
# (``compile_work``): several times what a compiler process costs to start (~0.1 s for a
# unit holding only the prelude), so a large program compiles in parallel, in units whose
# boundaries do not move when an unrelated part of the program changes.
UNIT_WORK = 3000
_LOOP_WORK = 40  # what gcc spends on one loop (vectorized, with its scalar tail), in statements
_ENTRY_WORK = 5  # and on one entry point


def compile_work(kernels) -> int:
    work, stack = 0, [getattr(k, "body", ()) for k in kernels]
    while stack:
        for st in stack.pop():
            work += 1
            if isinstance(st, ir.Loop):
                work += _LOOP_WORK
                stack.append(st.body)
    return work


def schedule(ops: list[Op]) -> Schedule:
    """Group consecutive native operations into segments ``fx_segN``; every other operation
    is called on its own. Segments and the kernels they call are split into units of about
    ``UNIT_WORK``. Within a unit, kernels equal but for their name are compiled once (the
    layers of a deep network repeat): the later launches call the first one."""
    calls: list = []
    units: list[Unit] = []
    segment: list[Op] = []
    kernels: list = []
    functions: list = []
    segments: list[Segment] = []
    weight = 0
    same: dict = {}  # a kernel without its name -> the unit's kernel of that body

    def close():
        nonlocal weight
        if segment:
            weight += _ENTRY_WORK + len(segment)
            seg = Segment(f"fx_seg{len(calls)}", tuple(segment))
            calls.append(seg)
            segments.append(seg)
            segment.clear()

    def close_unit():
        nonlocal kernels, functions, segments, weight
        close()
        if kernels or segments:
            units.append(Unit(tuple(kernels), tuple(functions), tuple(segments)))
        kernels, functions, segments, weight = [], [], [], 0
        same.clear()

    for op in ops:
        if not op.native:
            close()
            calls.append(op)
            continue
        if isinstance(op, Launch):
            body = op.kernel.renamed("k")
            reused = body in same
            new = [] if reused else [op.kernel]
        else:
            body, reused, new = None, False, list(op.kernels)
        if weight and weight + compile_work(new) > UNIT_WORK:
            close_unit()
            reused = False
            new = [op.kernel] if isinstance(op, Launch) else list(op.kernels)
        weight += compile_work(new)
        kernels += new
        if isinstance(op, Launch):
            if reused:
                op = Launch(op.step, op.reads, op.writes, op.kernel, same[body].name)
            else:
                same[body] = op.kernel
        else:
            functions.extend(nested_functions(op))
        segment.append(op)
    close_unit()
    return Schedule(tuple(calls), tuple(units))


def nested_functions(op: ControlFlow) -> list[ControlFlow]:
    """``op`` and the native control flow inside its bodies, innermost first (the order C
    needs their definitions in)."""
    out: list[ControlFlow] = []
    stack = [(op, False)]
    while stack:
        cf, expanded = stack.pop()
        if expanded:
            out.append(cf)
            continue
        stack.append((cf, True))
        for body in cf.bodies:
            stack.extend((o, False) for o in body.ops if isinstance(o, ControlFlow))
    return out
