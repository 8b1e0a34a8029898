"""The compiler pipeline, as data: jaxpr → optimized jaxpr → fusion groups → chosen
implementations → memory plan → kernels. Each stage is a pure function and the
:class:`Compilation` ``lower`` returns keeps every intermediate result for ``as_text()``; its
``compile()`` hands it to the backend's executor, which builds the callable executable.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field

from fx.avals import ShapedArray
from fx.callback import pure_callback_p
from fx.debug import debug_print_p
from fx.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var, check_jaxpr, has_effects
from fx.lax.parallel import collective_prims
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen import window_maps as _window_maps  # noqa: F401  (pooling index maps)
from fx.lowering.codegen.loop_kernels import is_flat
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.fusion.partition import fuse
from fx.lowering.kernels.cpu import conv as _conv  # noqa: F401  (registers the convolution impls)
from fx.lowering.kernels.cpu import library_calls as _library_calls  # noqa: F401  (LAPACK, FFT)
from fx.lowering.kernels.cpu.library import eqns_step, host_step
from fx.lowering.kernels.sparse import sparse_gemm
from fx.lowering.passes.assign_layouts import assign_layouts
from fx.lowering.passes.eliminate_common_subexpressions import eliminate_common_subexpressions
from fx.lowering.passes.eliminate_dead_code import eliminate_dead_code
from fx.lowering.passes.expand_window_sums import expand_window_sums
from fx.lowering.passes.fold_constants import fold_constants
from fx.lowering.passes.inline_calls import inline_calls
from fx.lowering.passes.lower_convolutions import lower_convolutions
from fx.lowering.passes.merge_reduced_axes import merge_reduced_axes
from fx.lowering.passes.simplify_algebra import simplify_algebra
from fx.lowering.passes.sink_reshapes import sink_reshapes
from fx.lowering.passes.split_dilated_convolutions import split_dilated_convolutions
from fx.lowering.program import control_flow, operations
from fx.lowering.program.memory import BufferSpec, MemoryPlan, plan_memory
from fx.lowering.program.operations import Buffer
from fx.lowering.program.text import lowered_as_text
from fx.lowering.select import backends, fallbacks
from fx.lowering.select.cost import group_bytes, group_flops
from fx.lowering.select.op_impl import host_only_prims
from fx.lowering.select.op_info import Choice, select

# Primitives running the user's Python on the host (their steps are host callbacks).
CALLBACKS = frozenset([pure_callback_p, debug_print_p])

PASSES = (split_dilated_convolutions, lower_convolutions, assign_layouts, expand_window_sums,
          merge_reduced_axes, simplify_algebra, sink_reshapes, fold_constants,
          eliminate_common_subexpressions, eliminate_dead_code)

# Called with every Compilation ``lower`` makes (tests use this to compile every generated
# kernel for CUDA; debugging tools can dump programs).
observers: list = []


def optimize(jaxpr: Jaxpr, check: bool = False) -> Jaxpr:
    """Run the graph passes to a fixed point (at most a few rounds)."""
    for _ in range(4):
        before = len(jaxpr.eqns)
        for p in PASSES:
            jaxpr = p(jaxpr)
            if check:
                check_jaxpr(jaxpr)
        if len(jaxpr.eqns) == before:
            break
    return jaxpr


@dataclass(eq=False)
class Step:
    group: FusionGroup
    choice: Choice
    inputs: list[Var]
    outputs: list[Var]
    kernel: ir.Kernel | None = None
    placement: str = "device"  # "host": a CUDA program runs this step on the CPU
    loop: control_flow.LoopPlan | None = None  # for scan / while / cond steps
    cost: float = 0.0  # the chosen implementation's estimate (scheduling reads it)


@dataclass
class CompileStats:
    """Where lowering spent its time (seconds per stage) and how big the program was."""

    inline: float = 0.0
    optimize: float = 0.0
    fuse: float = 0.0
    select: float = 0.0  # operator selection (control-flow bodies lowered here included)
    plan: float = 0.0
    codegen: float = 0.0
    render: float = 0.0
    eqns: int = 0  # equations of the optimized jaxpr
    groups: int = 0
    kernels: int = 0
    units: int = 0  # C translation units
    fusion_graph_visits: int = 0  # groups fusion's cycle checks visited (see fusion.group_graph)


class _Clock:
    def __init__(self):
        self.last = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        elapsed, self.last = now - self.last, now
        return elapsed


@dataclass(eq=False)
class Compilation:
    """One function compiled for one backend: the optimized jaxpr, its steps (each a fused
    group with the chosen implementation and, where generated, its kernel), where every value
    lives (buffers and the arena plan), the program IR (``ops``, ``schedule``) and the source
    its backend's executor loads. ``as_text()`` shows it; ``compile()`` is the executable."""

    name: str
    backend: backends.Backend
    jaxpr: Jaxpr
    consts: list
    steps: list[Step]
    buffers: dict[Var, Buffer]
    plan: MemoryPlan
    out_sources: list  # per output: ("buffer", Buffer) | ("literal", ndarray)
    source: str = ""
    kernels: list[ir.Kernel] = field(default_factory=list)
    have_compiler: bool = True
    ops: list[operations.Op] = field(default_factory=list)  # one per step: the program IR
    schedule: operations.Schedule = operations.Schedule(())  # what the runtime calls, in order
    stats: CompileStats = field(default_factory=CompileStats)
    # Checks the executable runs once before its first call (``OpImpl.first_run``), in
    # program order, those of native loop bodies included.
    first_run: tuple = ()

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.jaxpr.invars]

    def as_text(self, stage: str | None = None) -> str:
        """The program, or one stage of it (see ``fx.lowering.program.text``)."""
        return lowered_as_text(self, stage)

    def compile(self):
        return self.backend.executor(self)

    def one_call_per_operation(self) -> Compilation:
        """This program with every native operation called from the runtime on its own
        (rather than consecutive ones in one generated function), sequentially: what a
        profile times call by call. The same kernels; the entry points differ."""
        low = copy.copy(self)
        low.schedule = operations.schedule(self.ops, concurrent=False, one_per_call=True)
        if self.kernels:
            low.source, _ = self.backend.source(list(low.schedule.units), self.kernels)
        return low

    def cost_analysis(self) -> dict:
        flops = sum(group_flops(s.group) for s in self.steps)
        moved = sum(group_bytes(s.group) for s in self.steps)
        return {"flops": flops, "bytes accessed": moved, "kernels": len(self.steps)}


def lower(closed: ClosedJaxpr, backend: str | backends.Backend = "cpu", name: str = "f",
          donated: tuple[bool, ...] = (), have_compiler: bool = True,
          check: bool | None = None, const_values: tuple = ()) -> Compilation:
    """``const_values``: the values of the leading inputs that are trace-time constants (a
    jit's hoisted closed-over arrays); passes may specialize on them (``sparse_gemm``)."""
    backend = backends.get(backend)
    if check is None:
        check = bool(os.environ.get("FX_CHECK_PASSES"))
    stats, clock = CompileStats(), _Clock()
    closed = sparse_gemm.sparsify(inline_calls(closed), const_values)  # sparse weights: CSR
    stats.inline = clock.lap()
    # Constants become leading inputs of the optimized program (their values travel along).
    j = closed.jaxpr
    jaxpr = optimize(Jaxpr([], list(j.constvars) + list(j.invars), j.outvars, j.eqns), check)
    consts = list(closed.consts)
    for specialize in backend.constant_passes:  # e.g. int8 weights packed once, here
        jaxpr, consts = specialize(jaxpr, consts, const_values)
        if check:
            check_jaxpr(jaxpr)
    stats.optimize = clock.lap()
    n_consts = len(consts)
    fusion_stats: dict = {}
    groups = fuse(jaxpr, fusion_stats)
    stats.fuse = clock.lap()
    steps = _steps(groups, backend, have_compiler, name)
    effects = any(has_effects(e) for e in jaxpr.eqns)
    steps, times = (steps, None) if effects else _wave_order(steps, backend.concurrent_cost)
    stats.select = clock.lap()
    buffers, plan = _plan(jaxpr, steps, n_consts, backend, donated, times)
    stats.plan = clock.lap()
    steps = _generate(steps, buffers, plan, have_compiler)
    stats.codegen = clock.lap()
    out_sources = []
    for v in jaxpr.outvars:
        if isinstance(v, Literal):
            out_sources.append(("literal", v.value))
        else:
            out_sources.append(("buffer", buffers[v]))
    low = Compilation(name, backend, jaxpr, consts, steps, buffers, plan, out_sources,
                      have_compiler=have_compiler)
    low.ops = [_op(t, s, buffers, backend) for t, s in enumerate(steps)]
    low.schedule = operations.schedule(low.ops, concurrent=not effects,
                                    concurrent_cost=backend.concurrent_cost)
    low.first_run = tuple(_first_run(steps, low.ops))
    low.kernels = [s.kernel for s in steps if s.kernel is not None]
    low.kernels += [k for op in low.ops if isinstance(op, operations.ControlFlow)
                    and (op.native or op.device) for k in op.kernels]
    if low.kernels:
        low.source, stats.units = backend.source(list(low.schedule.units), low.kernels)
    stats.render = clock.lap()
    stats.eqns, stats.groups, stats.kernels = len(jaxpr.eqns), len(groups), len(low.kernels)
    stats.fusion_graph_visits = fusion_stats["graph_visits"]
    low.stats = stats
    for observe in observers:
        observe(low)
    return low


def _first_run(steps: list[Step], ops: list[operations.Op]):
    """The program's once-before-the-first-call checks, in step order: a native loop's
    bodies never run as executables of their own, so theirs are the parent's."""
    for st, op in zip(steps, ops):
        if st.choice.impl.first_run is not None:
            yield st.choice.impl.first_run(st.group)
        if isinstance(op, operations.ControlFlow) and op.native:
            for body in op.bodies:
                yield from body.first_run


def _op(t: int, st: Step, buffers, backend: backends.Backend) -> operations.Op:
    """Step ``t`` as an operation of the program IR. On a backend whose arrays NumPy cannot
    read, a NumPy step copies its operands to the host and its results back."""
    op = _ir_op(t, st, buffers)
    if op.native or op.device or op.copies or not backend.numpy_steps_copy or isinstance(
            op, operations.Collective):  # a transport takes device or host arrays itself
        return op
    return dataclasses.replace(op, copies=True, run=host_step(op.run, st.inputs, st.outputs))


def _ir_op(t: int, st: Step, buffers) -> operations.Op:
    reads = tuple(buffers[v] for v in st.inputs)
    writes = tuple(buffers[v] for v in st.outputs)
    cost = st.cost
    if st.kernel is not None:
        return operations.Launch(t, reads, writes, cost, kernel=st.kernel, callee=st.kernel.name)
    if st.loop is not None:
        loop, eqn = st.loop, st.group.eqns[0]
        kind = operations.Conditional if eqn.primitive is control_flow.cond_p else operations.Loop
        return kind(t, reads, writes, cost, eqn=eqn,
                    operands=tuple(buffers[v] if isinstance(v, Var) else None
                                   for v in eqn.invars),
                    results=tuple(buffers[v] for v in eqn.outvars), bodies=tuple(loop.subs),
                    function=loop.function, kernels=tuple(loop.kernels),
                    scratch=buffers[loop.scratch] if loop.scratch is not None else None,
                    body_offsets=loop.body_offsets, carry_offsets=loop.carry_offsets,
                    prefixes=loop.prefixes, device=loop.device,
                    staging_offsets=loop.staging_offsets, run=loop.python, note=loop.note)
    impl = st.choice.impl
    if st.placement == "host":
        run = host_step(eqns_step(st.group.eqns, st.outputs), st.inputs, st.outputs)
        return operations.HostCall(t, reads, writes, cost, run=run, copies=True)
    run = impl.library(st) if impl.library is not None else eqns_step(st.group.eqns,
                                                                       st.outputs)
    if impl.library is not None or impl.describe is not None:
        routine = impl.describe(st.group) if impl.describe is not None else impl.name
        kind = operations.Collective if any(e.primitive in collective_prims
                                         for e in st.group.eqns) else operations.LibraryCall
        return kind(t, reads, writes, cost, routine=routine, run=run)
    kind = operations.HostCallback if any(e.primitive in CALLBACKS for e in st.group.eqns) \
        else operations.HostCall
    return kind(t, reads, writes, cost, run=run)


def _steps(groups: list[FusionGroup], backend: backends.Backend, have_compiler: bool, name: str
           ) -> list[Step]:
    steps = []

    def choose(g: FusionGroup):
        return fallbacks.mark(g, select(g, backend, have_compiler), backend, have_compiler,
                              name)

    for g in groups:
        choice = choose(g)
        if g.kind is GroupKind.GEMM and g.epilogue and not choice.impl.fuses_epilogue:
            # The library call writes the product; the epilogue runs over it as a kernel.
            dot, epilogue = g.anchor, g.epilogue
            prod = dot.outvars[0]
            head = FusionGroup(GroupKind.GEMM, g.prologue + [dot], g.id, outputs=[prod])
            local = head.produced()
            head.inputs = _unique([v for e in head.eqns for v in e.invars
                                   if isinstance(v, Var) and v not in local])
            tail = FusionGroup(GroupKind.ELEMENTWISE, _with_prologue_reads(g, epilogue), g.id)
            local = tail.produced()
            tail.inputs = _unique([v for e in tail.eqns for v in e.invars
                                   if isinstance(v, Var) and v not in local])
            tail.outputs = list(g.outputs)
            tail_choice = choose(tail)
            steps.append(Step(head, choice, head.inputs, [prod],
                              cost=choice.impl.cost(head)))
            steps.append(Step(tail, tail_choice, tail.inputs, tail.outputs,
                              cost=tail_choice.impl.cost(tail)))
        elif choice.impl.control_flow:
            tag = re.sub(r"\W", "_", f"{name}_{g.id}")
            loop = control_flow.plan(g.eqns[0], tag, lower, backend, have_compiler)
            # Every result gets a buffer (the loop writes them all, read later or not).
            outs = list(g.eqns[0].outvars) + (
                [loop.scratch] if loop.scratch is not None else [])
            steps.append(Step(g, choice, list(g.inputs), outs, loop=loop,
                              cost=choice.impl.cost(g)))
        else:
            placement = "device"
            if backend.host_steps_need_copies and choice.impl.op_by_op and any(
                    e.primitive in host_only_prims for e in g.eqns):
                placement = "host"  # no GPU implementation: split the graph here
            steps.append(Step(g, choice, list(g.inputs), list(g.outputs), placement=placement,
                              cost=choice.impl.cost(g)))
    return steps


def _with_prologue_reads(g: FusionGroup, epilogue: list) -> list:
    """The epilogue plus the prologue equations computing what it reads of them (or what the
    group returns of them): the library call writes only the product, so the epilogue's
    kernel recomputes those operand values (views and broadcasts) itself."""
    prologue = g.prologue
    made = {v: e for e in prologue for v in e.outvars}
    wanted = [v for e in epilogue for v in e.invars if isinstance(v, Var) and v in made]
    wanted += [v for v in g.outputs if v in made]
    keep: set[int] = set()
    while wanted:
        e = made[wanted.pop()]
        if id(e) not in keep:
            keep.add(id(e))
            wanted.extend(v for v in e.invars if isinstance(v, Var) and v in made)
    keep.update(id(e) for e in epilogue)
    return [e for e in g.eqns if id(e) in keep]


def _unique(xs):
    out = []
    for x in xs:
        if x not in out:
            out.append(x)
    return out


def _wave_order(steps: list[Step], concurrent_cost: float
                ) -> tuple[list[Step], list[int] | None]:
    """Where independent large steps may run at the same time (two GEMM towers), the steps
    in dependency-level order (by their data: a step's level is one past its inputs'
    producers') and each one's level, the time memory planning then reads, so that steps of
    one level never share storage and the runtime finds them independent. Elsewhere the
    steps as they are (and None: planning reads the step index)."""
    level, producer = [], {}
    for t, s in enumerate(steps):
        level.append(max((level[producer[v]] + 1 for v in s.inputs if v in producer),
                         default=0))
        for v in s.outputs:
            producer[v] = t
    big = Counter(lv for lv, s in zip(level, steps)
                  if s.cost >= concurrent_cost)
    if max(big.values(), default=0) < 2:
        return steps, None
    order = sorted(range(len(steps)), key=lambda t: (level[t], t))
    return [steps[t] for t in order], [level[t] for t in order]


def _plan(jaxpr: Jaxpr, steps: list[Step], n_consts: int, backend: backends.Backend,
          donated, times: list[int] | None = None):
    """Buffers for every value and the arena plan. Lifetimes are in step indices, or in
    ``times`` (levels of steps that may run at the same time): then an output takes over an
    input's storage only where no other step of its level reads that input."""
    buffers: dict[Var, Buffer] = {}
    slot = 0

    def add(v, kind, **kw):
        nonlocal slot
        buffers[v] = Buffer(v, kind, slot, **kw)
        slot += 1

    for i, v in enumerate(jaxpr.invars):
        if v not in buffers:
            add(v, "const" if i < n_consts else "input", position=i)
    for i, v in enumerate(jaxpr.outvars):
        if isinstance(v, Var) and v not in buffers:
            add(v, "output", position=i)
    first, last = {}, {}
    readers: Counter = Counter()  # (value, time) -> steps reading it then
    for t, s in enumerate(steps):
        at = t if times is None else times[t]
        for v in s.outputs:
            if v not in buffers:
                add(v, "temp")
            first.setdefault(v, at)
            last[v] = max(last.get(v, at), at)
        for v in s.inputs:
            last[v] = max(last.get(v, at), at)
            readers[v, at] += 1
    temps = [b for b in buffers.values() if b.kind == "temp"]
    specs = [BufferSpec(str(b.slot), b.aval.nbytes, first[b.var], last[b.var]) for b in temps]
    pairs = []
    for t, s in enumerate(steps):
        if s.choice.impl.in_place_safe and _is_flat_group(s):
            for out in s.outputs:
                for inp in s.inputs:
                    if times is not None and readers[inp, times[t]] > 1:
                        continue
                    bi, bo = buffers.get(inp), buffers[out]
                    if bi is not None and bi.kind == "temp" and bo.kind == "temp" and \
                            inp.aval.shape == out.aval.shape and inp.aval.dtype == out.aval.dtype:
                        pairs.append((str(bo.slot), str(bi.slot)))
    plan = plan_memory(specs, backend.alignment, pairs)
    for b in temps:
        b.offset = plan.offsets[str(b.slot)]
    _assign_donors(jaxpr, steps, buffers, n_consts, donated, first, last, times is None)
    return buffers, plan


def _assign_donors(jaxpr, steps, buffers, n_consts, donated, first, last,
                   serial: bool = True) -> None:
    """Outputs write into donated inputs of the same type once nothing reads the input any
    more (or, in a serial program, for an in-place-safe elementwise step, at the step that
    reads it last)."""
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}
    donors = [v for i, v in enumerate(jaxpr.invars[n_consts:])
              if i < len(donated) and donated[i] and v not in returned]
    for b in (b for b in buffers.values() if b.kind == "output"):
        t = first.get(b.var)
        if t is None:
            continue
        for v in donors:
            if v.aval.shape != b.aval.shape or v.aval.dtype != b.aval.dtype:
                continue
            read_last = last.get(v, -1)
            if read_last < t or (serial and read_last == t and _is_flat_group(steps[t])
                                 and steps[t].choice.impl.in_place_safe):
                b.donor = buffers[v]
                donors.remove(v)
                break


def _is_flat_group(s: Step) -> bool:
    return bool(s.outputs) and is_flat(s.group, s.outputs[0].aval.shape)


def _generate(steps: list[Step], buffers, plan: MemoryPlan, have_compiler: bool) -> list[Step]:
    """The steps with their kernels built (new Step records; the inputs are unchanged)."""
    out = []
    for t, s in enumerate(steps):
        out.append(dataclasses.replace(s, kernel=_kernel(t, s, buffers)))
    return out


def _kernel(t: int, s: Step, buffers) -> ir.Kernel | None:
    build = s.choice.impl.kernel
    if build is None or not s.outputs:
        return s.kernel
    k = build(s.group, f"k{t}", s.inputs, s.outputs)
    if not isinstance(k, ir.Kernel):  # a kernel with its source made whole (the CUDA GEMM)
        return k
    slots = [buffers[v] for v in s.inputs + s.outputs]
    offsets = [(b.offset, b.aval.nbytes) for b in slots if b.kind == "temp"]
    donors = {id(b.donor) for b in slots if b.donor is not None}
    if _overlap(offsets) or any(id(b) in donors for b in slots):
        k = dataclasses.replace(k, restrict=False)
    return k


def _overlap(ranges) -> bool:
    ranges = sorted(ranges)
    return any(a[0] + a[1] > b[0] for a, b in zip(ranges, ranges[1:]))
