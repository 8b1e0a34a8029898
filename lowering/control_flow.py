"""Compiled control flow: ``scan``, ``while`` and ``cond`` inside a jitted program.

Each body (scan body; while cond and body; cond branches) is lowered as a program of its own.
When every step of every body is a generated kernel (the common case for small loop bodies),
the whole loop becomes one C function in the parent's translation unit: it fills a pointer
table for the body on each iteration (slices of ``xs``/``ys``, ping-pong carry buffers in a
scratch area of the parent arena) and calls the body's kernels directly, so the loop never
returns to Python. Otherwise (a body with a BLAS call, or the CUDA backend) the loop runs in
Python over the body's compiled executable: one dispatch per iteration, no retracing.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fx.avals import ShapedArray
from fx.jaxpr import ClosedJaxpr, Literal, Var
from fx.lax.control_flow.conditionals import cond_p
from fx.lax.control_flow.loops import while_p
from fx.lax.control_flow.scans import scan_p
from fx.lowering.render import storage_type

control_flow_prims = (scan_p, while_p, cond_p)
_ALIGN = 64


def _align(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


@dataclass(eq=False)
class LoopPlan:
    """How a control-flow step runs: C source (functions + body kernels) or a Python fn."""

    c_function: str = ""  # the C function ``fn(operands, outputs, scratch)`` (see ``call``)
    c_source: str = ""  # its source
    nested_sources: list = field(default_factory=list)  # the functions of loops in the bodies
    kernels: list = field(default_factory=list)  # the bodies' kernels, nested ones included
    python: Callable | None = None
    scratch: Var | None = None  # parent temporary holding the bodies' arenas and carries
    subs: list = field(default_factory=list)  # the bodies' lowered Programs
    note: str = ""


def sub_jaxprs(eqn) -> list[ClosedJaxpr]:
    p = eqn.params
    if eqn.primitive is scan_p:
        return [p["jaxpr"]]
    if eqn.primitive is while_p:
        return [p["cond_jaxpr"], p["body_jaxpr"]]
    return list(p["branches"])


def plan(eqn, tag: str, lower: Callable, backend, have_compiler: bool) -> LoopPlan:
    """How to run control-flow equation ``eqn`` on ``backend`` (a ``backends.Backend``);
    ``tag`` (a C identifier, unique within the whole program: the enclosing program's name
    plus the group) names its generated code."""
    subs = [lower(j, backend, f"{tag}_{i}", have_compiler=have_compiler)
            for i, j in enumerate(sub_jaxprs(eqn))]
    all_c = backend.native_loops and have_compiler and all(
        not s.consts and all(rs.kind == "c" for rs in s.run_steps) for s in subs)
    if all_c:
        return _c_plan(eqn, tag, subs)
    return LoopPlan(python=_python_loop(eqn, subs), subs=subs,
                    note="a host loop over the compiled body (one dispatch per iteration)")


# --- C loops --------------------------------------------------------------------------------------


def _renamed(low, prefix: str):
    """The body's kernels renamed so they can live in the parent's translation unit."""
    out = {}
    for s in low.steps:
        if s.kernel is not None:
            out[id(s)] = dataclasses.replace(s.kernel, name=f"{prefix}{s.kernel.name}")
    return out


def _body_calls(low, kernels: dict, table: str) -> list[str]:
    lines = []
    for s in low.steps:
        if s.loop is not None:  # a nested loop: its operands are in the body's own table
            lines.append("    " + call(s.loop, s.group.eqns[0],
                                       lambda v: low.buffers[v].slot, table))
            continue
        k = kernels[id(s)]
        args = [f"({'' if p.is_output else 'const '}{storage_type(p.dtype)}*)"
                f"{table}[{low.buffers[v].slot}]"
                for p, v in zip(k.params, s.inputs + s.outputs)]
        lines.append(f"    {k.name}({', '.join(args)});")
    return lines


def _c_plan(eqn, tag: str, subs) -> LoopPlan:
    fn = f"fx_loop_{tag}"
    # Scratch: each body's arena, then two copies of the carry (scan/while ping-pong).
    offsets, cursor = [], 0
    for s in subs:
        offsets.append(cursor)
        cursor += _align(s.plan.arena_bytes)
    carry_avals = _carry_avals(eqn)
    carry_off = []
    for _ in range(2):
        row = []
        for a in carry_avals:
            row.append(cursor)
            cursor += _align(max(a.nbytes, 1))
        carry_off.append(row)
    scratch = Var(ShapedArray((max(cursor, 1),), np.uint8))
    kernels, calls, nested = [], [], []
    for i, s in enumerate(subs):
        ks = _renamed(s, f"L_{tag}_{i}_")
        kernels += list(ks.values())
        calls.append(_body_calls(s, ks, f"b{i}"))
        for st in s.steps:
            if st.loop is not None:
                nested += st.loop.nested_sources + [st.loop.c_source]
                kernels += st.loop.kernels
    n_in = len(eqn.invars)
    lines = [f"void {fn}(void* const* operands, void* const* fx_out, char* scratch) {{"]
    for i, s in enumerate(subs):
        n = max(len(s.buffers), 1)
        lines.append(f"  void* b{i}[{n}];")
        for b in s.buffers.values():
            if b.kind == "temp":
                lines.append(f"  b{i}[{b.slot}] = scratch + {offsets[i] + b.offset};")
    # The operands as the caller passed them, but a literal: it lives in the function itself.
    lines.append(f"  void* fx_in[{n_in + 1}];")
    for j, v in enumerate(eqn.invars):
        if isinstance(v, Literal):
            ct = storage_type(v.aval.dtype)
            lines.append(f"  static const {ct} fx_lit{j} = ({ct}){_c_literal(v.value)};")
            lines.append(f"  fx_in[{j}] = (void*)&fx_lit{j};")
        else:
            lines.append(f"  fx_in[{j}] = operands[{j}];")
    builder = {scan_p: _scan_c, while_p: _while_c, cond_p: _cond_c}[eqn.primitive]
    lines += builder(eqn, subs, calls, carry_off)
    lines.append("}")
    source = "\n".join(lines)
    return LoopPlan(c_function=fn, c_source=source, nested_sources=nested, kernels=kernels,
                    scratch=scratch, subs=subs,
                    note="compiled loop: the body's kernels called from one C function")


def _carry_avals(eqn) -> list[ShapedArray]:
    if eqn.primitive is scan_p:
        n = eqn.params["num_carry"]
        return [v.aval for v in eqn.outvars[:n]]
    if eqn.primitive is while_p:
        return [v.aval for v in eqn.outvars]
    return []


def _inputs_of(low) -> list:
    """The body's argument slots in order (None for an argument nothing reads)."""
    slots = {b.position: b.slot for b in low.buffers.values() if b.kind == "input"}
    return [slots.get(i) for i in range(len(low.jaxpr.invars))]


def _outputs_into(low, table: str, dests: list[str]) -> tuple[list[str], list[str]]:
    """Point the body's output buffers at ``dests`` (C pointer expressions); outputs that are
    inputs, literals or duplicates are copied after the body runs."""
    before, after = [], []
    taken = set()
    for j, (kind, src) in enumerate(low.out_sources):
        aval = low.jaxpr.outvars[j].aval
        if kind == "literal":
            ct = storage_type(aval.dtype)
            lit = np.asarray(src, aval.dtype)
            after.append(f"    {{ const {ct} v = ({ct}){_c_literal(lit)}; "
                         f"memcpy({dests[j]}, &v, sizeof v); }}")
        elif src.kind == "output" and src.slot not in taken:
            taken.add(src.slot)
            before.append(f"    {table}[{src.slot}] = {dests[j]};")
        else:
            after.append(f"    memmove({dests[j]}, {table}[{src.slot}], {aval.nbytes});")
    return before, after


def _c_literal(v: np.ndarray) -> str:
    x = v.item()
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, float):
        return repr(x) if np.isfinite(x) else ("NAN" if x != x else
                                                ("INFINITY" if x > 0 else "-INFINITY"))
    return f"{x}ull" if x > 2**63 - 1 else str(x)  # a uint64 beyond int64 is unsigned in C


def _carry_slot(carry_off, j: int) -> str:
    """Carry ``j``'s buffer for this step: the two scratch copies alternate (``w`` is the
    step's parity), so a step reads one and writes the other."""
    return f"(scratch + (w ? {carry_off[1][j]} : {carry_off[0][j]}))"


def _next_step_and_results(eqn, nk: int, carry_off) -> list[str]:
    """End of a loop step (the carries written become the current ones), then the final
    carries copied to the outputs."""
    lines = [f"    cur[{j}] = {_carry_slot(carry_off, j)};" for j in range(nk)]
    lines.append("  }")
    lines += [f"  memmove(fx_out[{j}], cur[{j}], {eqn.outvars[j].aval.nbytes});"
              for j in range(nk)]
    return lines


def _scan_c(eqn, subs, calls, carry_off) -> list[str]:
    (body,) = subs
    p = eqn.params
    nc, nk, length, reverse = p["num_consts"], p["num_carry"], p["length"], p["reverse"]
    ins = _inputs_of(body)
    lines = [f"  const void* cur[{max(nk, 1)}];"]
    for j in range(nc):  # loop constants
        if ins[j] is not None:
            lines.append(f"  b0[{ins[j]}] = fx_in[{j}];")
    for j in range(nk):
        lines.append(f"  cur[{j}] = fx_in[{nc + j}];")
    lines.append(f"  for (int64_t k = 0; k < {length}; k++) {{")
    lines.append(f"    const int64_t i = {'(' + str(length) + ' - 1 - k)' if reverse else 'k'};")
    lines.append("    const int w = (int)(k & 1);")
    for j in range(nk):
        if ins[nc + j] is not None:
            lines.append(f"    b0[{ins[nc + j]}] = (void*)cur[{j}];")
    xs = eqn.invars[nc + nk:]
    for j, x in enumerate(xs):
        slot = ins[nc + nk + j]
        if slot is not None:
            step = x.aval.nbytes // length if length else 0
            lines.append(f"    b0[{slot}] = (char*)fx_in[{nc + nk + j}] + i * {step};")
    dests = [_carry_slot(carry_off, j) for j in range(nk)]
    for j, y in enumerate(eqn.outvars[nk:]):
        step = y.aval.nbytes // length if length else 0
        dests.append(f"((char*)fx_out[{nk + j}] + i * {step})")
    before, after = _outputs_into(body, "b0", dests)
    lines += before + calls[0] + after
    return lines + _next_step_and_results(eqn, nk, carry_off)


def _while_c(eqn, subs, calls, carry_off) -> list[str]:
    cond, body = subs
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    nk = len(eqn.outvars)
    cins, bins = _inputs_of(cond), _inputs_of(body)
    lines = [f"  const void* cur[{max(nk, 1)}];", "  uint8_t keep_going = 0;"]
    for j in range(ncc):
        if cins[j] is not None:
            lines.append(f"  b0[{cins[j]}] = fx_in[{j}];")
    for j in range(nbc):
        if bins[j] is not None:
            lines.append(f"  b1[{bins[j]}] = fx_in[{ncc + j}];")
    for j in range(nk):
        lines.append(f"  cur[{j}] = fx_in[{ncc + nbc + j}];")
    lines.append("  for (int64_t k = 0;; k++) {")
    lines.append("    const int w = (int)(k & 1);")
    for j in range(nk):
        if cins[ncc + j] is not None:
            lines.append(f"    b0[{cins[ncc + j]}] = (void*)cur[{j}];")
    before, after = _outputs_into(cond, "b0", ["&keep_going"])
    lines += before + calls[0] + after
    lines.append("    if (!keep_going) break;")
    for j in range(nk):
        if bins[nbc + j] is not None:
            lines.append(f"    b1[{bins[nbc + j]}] = (void*)cur[{j}];")
    dests = [_carry_slot(carry_off, j) for j in range(nk)]
    before, after = _outputs_into(body, "b1", dests)
    lines += before + calls[1] + after
    return lines + _next_step_and_results(eqn, nk, carry_off)


def _cond_c(eqn, subs, calls, carry_off) -> list[str]:
    index = eqn.invars[0]
    ct = storage_type(index.aval.dtype)
    n = len(subs)
    lines = [f"  int64_t sel = (int64_t)*(const {ct}*)fx_in[0];",
             f"  sel = sel < 0 ? 0 : (sel > {n - 1} ? {n - 1} : sel);", "  switch (sel) {"]
    for i, s in enumerate(subs):
        lines.append(f"  case {i}: {{")
        for j, slot in enumerate(_inputs_of(s)):
            if slot is not None:
                lines.append(f"    b{i}[{slot}] = fx_in[{j + 1}];")
        dests = [f"fx_out[{j}]" for j in range(len(eqn.outvars))]
        before, after = _outputs_into(s, f"b{i}", dests)
        lines += before + calls[i] + after
        lines.append("    break;")
        lines.append("  }")
    lines.append("  }")
    return lines


def call(loop: LoopPlan, eqn, slot_of: Callable, table: str) -> str:
    """The C statement calling ``loop``'s function from code holding the pointer table
    ``table``, where ``slot_of(v)`` is the slot of a value of ``eqn`` (a literal operand gets
    a null pointer: the function has its own copy)."""
    ins = [("0" if isinstance(v, Literal) else f"{table}[{slot_of(v)}]") for v in eqn.invars]
    outs = [f"{table}[{slot_of(v)}]" for v in eqn.outvars]
    return (f"{{ void* in_[] = {{{', '.join(ins + ['0'])}}}; "
            f"void* out_[] = {{{', '.join(outs + ['0'])}}}; "
            f"{loop.c_function}(in_, out_, (char*){table}[{slot_of(loop.scratch)}]); }}")


# --- Python loops over compiled bodies ------------------------------------------------------------


def _python_loop(eqn, subs) -> Callable:
    exes: list = []  # built on first use, once, whichever thread calls first
    lock = threading.Lock()

    def executables():
        if not exes:
            with lock:
                if not exes:
                    exes.extend([s.compile() for s in subs])
        return exes

    p = eqn.params

    def run(views):
        args = [v.value if not isinstance(v, Var) else views[v] for v in eqn.invars]
        e = executables()
        if eqn.primitive is scan_p:
            nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
            consts, carry, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
            for k in range(length):
                i = length - 1 - k if p["reverse"] else k
                out = e[0]([*consts, *carry, *(x[i] for x in xs)])
                carry = out[:nk]
                for y, val in zip(eqn.outvars[nk:], out[nk:]):
                    if y in views:
                        views[y][i] = val
            outs = carry
        elif eqn.primitive is while_p:
            ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
            cconsts, bconsts, carry = args[:ncc], args[ncc:ncc + nbc], args[ncc + nbc:]
            while bool(np.asarray(e[0]([*cconsts, *carry])[0])):
                carry = e[1]([*bconsts, *carry])
            outs = carry
        else:
            i = int(min(max(int(np.asarray(args[0])), 0), len(e) - 1))
            outs = e[i](list(args[1:]))
        for v, val in zip(eqn.outvars, outs):
            if v in views:  # outputs nothing reads have no buffer
                views[v][...] = val

    return run
