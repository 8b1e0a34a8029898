"""The program IR: a lowered program as data.

Lowering ends in a list of typed operations, one per step of the schedule, each naming the
buffers it reads and writes (and so where each value lives: an argument, an output, a
constant, or an offset in the arena):

- :class:`Launch`: one generated kernel over buffers, in its parameter order;
- :class:`LibraryCall`: a routine (BLAS matmul, LAPACK, FFT) writing its outputs in place;
- :class:`HostCall`: the primitives' NumPy implementations, op by op (on a backend whose
  buffers are not in host memory, with copies to the host and back); a
  :class:`HostCallback` when it runs the user's Python;
- :class:`Collective`: a collective between processes, run by the process group's transport;
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

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from fx.avals import ShapedArray
from fx.jaxpr import Var
from fx.lowering.codegen import kernel_ir as ir


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

    step: int  # index into ``Compilation.steps``
    reads: tuple[Buffer, ...]
    writes: tuple[Buffer, ...]
    cost: float = 0.0  # operator selection's estimate, in about nanoseconds of one core
    copies: bool = False  # a NumPy step of a device program: operands copied to the host and
    # results back around ``run``

    native = False  # runs inside generated code (a segment), not called from Python
    device = False  # a loop the device executor runs itself (see ControlFlow)

    @property
    def label(self) -> str:
        return type(self).__name__.lower()


def _copied(op: Op) -> str:
    return " (copies to the host and back)" if op.copies else ""


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
        return f"library_call {self.routine}" + _copied(self)


@dataclass(frozen=True, eq=False)
class HostCall(Op):
    run: Callable | None = None

    @property
    def label(self) -> str:
        return "host_call" + _copied(self)


class Collective(LibraryCall):
    """A collective between processes (``psum``, ``all_gather``, ... over a ``pmap`` axis):
    ``routine`` names it and its transport (MPI, NCCL), ``run(views)`` calls the transport on
    the buffers as they are (it moves host/device memory itself). Collectives are effects:
    a program holding one runs its calls serially and in order, on every process alike."""

    @property
    def label(self) -> str:
        return f"collective {self.routine}"


class HostCallback(HostCall):
    """A host call running the user's Python (``pure_callback``, ``debug.print``)."""

    @property
    def label(self) -> str:
        return "host_callback" + _copied(self)


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
    # A device loop: the executor launches the bodies' kernels in sequence itself
    # (``fx.runtime.device_loops``), with one slice of each scanned input and output (scan)
    # or the predicate (while) staged in the scratch area at ``staging_offsets``.
    device: bool = False
    staging_offsets: tuple[int, ...] = ()
    run: Callable | None = None
    note: str = ""

    @property
    def native(self) -> bool:  # type: ignore[override]
        return bool(self.function)

    @property
    def label(self) -> str:
        where = (f"native {self.function}" if self.native else
                 "launched on the device" if self.device else "on the host")
        return f"{type(self).__name__.lower()} {self.eqn.primitive.name} ({where})" + _copied(
            self)


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
    device = False

    @property
    def label(self) -> str:
        return f"segment {self.name}"

    @property
    def reads(self) -> tuple[Buffer, ...]:
        return tuple(b for op in self.ops for b in op.reads)

    @property
    def writes(self) -> tuple[Buffer, ...]:
        return tuple(b for op in self.ops for b in _writes(op))

    @property
    def cost(self) -> float:
        return sum(op.cost for op in self.ops)


@dataclass(frozen=True, eq=False)
class Unit:
    """One translation unit: the kernels it defines, the native control-flow functions (in
    definition order: nested ones first) and the segments' entry points."""

    kernels: tuple[ir.Kernel, ...]
    functions: tuple[ControlFlow, ...]
    segments: tuple[Segment, ...]


@dataclass(frozen=True, eq=False)
class Schedule:
    """What the runtime executes, in order, and the units the dialect renders.

    ``waves`` is the dependency schedule: per wave (see :func:`waves`), the ``calls``
    indices the calling thread runs and those a runtime may hand to worker threads (all but
    the first of the wave's calls that pay for running apart: the backend's
    ``concurrent_cost``). It is empty
    when no wave holds two such calls; the runtime then calls them in order."""

    calls: tuple[Segment | Op, ...]
    units: tuple[Unit, ...] = field(default=())
    waves: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()


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


def schedule(ops: list[Op], concurrent: bool = True,
             concurrent_cost: float = 200_000.0, one_per_call: bool = False) -> Schedule:
    """Group consecutive native operations into segments ``fx_segN``; every other operation
    is called on its own. Segments and the kernels they call are split into units of about
    ``UNIT_WORK``. Within a unit, kernels equal but for their name are compiled once (the
    layers of a deep network repeat): the later launches call the first one. With
    ``concurrent`` (a program without effects), the dependency waves are computed too, and
    calls estimated at ``concurrent_cost`` or more may run apart from the others. With
    ``one_per_call`` every native operation is a segment of its own (a profile times each
    call)."""
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
                op = dataclasses.replace(op, callee=same[body].name)
            else:
                same[body] = op.kernel
        else:
            functions.extend(nested_functions(op))
        segment.append(op)
        if one_per_call:
            close()
    close_unit()
    split = []
    for wave in waves(calls) if concurrent else ():
        big = [i for i in wave if calls[i].cost >= concurrent_cost]
        split.append((tuple(i for i in wave if i not in big[1:]), tuple(big[1:])))
    concurrent = any(there for _, there in split)
    return Schedule(tuple(calls), tuple(units), tuple(split) if concurrent else ())


def _writes(op: Op) -> tuple[Buffer, ...]:
    if isinstance(op, ControlFlow) and op.scratch is not None and op.scratch not in op.writes:
        return op.writes + (op.scratch,)
    return op.writes


def _memory(b: Buffer):
    """What ``b``'s storage is: ("arena", start, stop) for a temporary, ("slot", n) for an
    argument, constant or output (an output written into a donated argument is that
    argument's storage)."""
    if b.kind == "temp":
        return ("arena", b.offset, b.offset + b.aval.nbytes)
    if b.donor is not None:
        return ("slot", b.donor.slot)
    return ("slot", b.slot)


def waves(calls) -> tuple[tuple[int, ...], ...]:
    """The calls by dependency level: a call's wave is one past the latest wave of an earlier
    call it conflicts with (it reads what that one writes, writes what it reads, or writes
    the same storage; arena ranges conflict where they overlap, since the memory planner
    reuses storage), so the calls of one wave are independent and may run at the same time,
    and running the waves in order gives the serial results. Linear in the number of
    buffer references times the arena pieces each covers."""
    refs = []  # per call: [(memory, is_write)]
    cuts = set()
    for c in calls:
        mine = [(_memory(b), False) for b in c.reads if b.aval.nbytes]
        mine += [(_memory(b), True) for b in c.writes if b.aval.nbytes]
        refs.append(mine)
        for m, _ in mine:
            if m[0] == "arena":
                cuts.update(m[1:])
    edges = sorted(cuts)
    piece = {x: i for i, x in enumerate(edges)}
    written: dict = {}  # storage key -> the latest wave writing it
    read: dict = {}  # storage key -> the latest wave reading it
    level = []
    for mine in refs:
        keys = []
        for m, is_write in mine:
            if m[0] == "arena":
                keys += [(("arena", k), is_write) for k in range(piece[m[1]], piece[m[2]])]
            else:
                keys.append((m, is_write))
        wave = 0
        for k, is_write in keys:
            wave = max(wave, written.get(k, -1) + 1)
            if is_write:
                wave = max(wave, read.get(k, -1) + 1)
        for k, is_write in keys:
            table = written if is_write else read
            table[k] = max(table.get(k, -1), wave)
        level.append(wave)
    out: list[list[int]] = [[] for _ in range(max(level, default=-1) + 1)]
    for i, w in enumerate(level):
        out[w].append(i)
    return tuple(tuple(w) for w in out)


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
