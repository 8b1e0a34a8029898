"""The C dialect's program-level code: entry points and native control flow, rendered from
the program IR (``lowering.program.operations``).

A segment becomes an entry point ``void fx_segN(void** p)`` calling its kernels over the
pointer table ``p`` (one slot per buffer). A native ``scan``/``while``/``cond`` becomes one
function ``fn(operands, outputs, scratch)``: it fills a pointer table per body on each
iteration (slices of ``xs``/``ys``, ping-pong carry buffers in the scratch area of the parent
arena) and calls the bodies' kernels directly, so the loop never returns to Python.
"""

from __future__ import annotations

import numpy as np

from fx.jaxpr import Literal
from fx.lax.control_flow.conditionals import cond_p
from fx.lax.control_flow.loops import while_p
from fx.lax.control_flow.scans import scan_p
from fx.lowering.program.operations import ControlFlow, Launch, Unit
from fx.lowering.render.renderer import storage_type

# Entry points only call kernels: compiled without optimization they cost gcc half the time (a
# program alternating kernels and BLAS calls has hundreds), and they inline no kernel (a kernel
# called from many entry points would be compiled again inside each).
_ENTRY = '__attribute__((optimize("O0"))) void'


def unit_code(unit: Unit) -> str:
    """The unit's control-flow functions and entry points (its kernels are rendered apart)."""
    parts = [function(cf) for cf in unit.functions]
    for seg in unit.segments:
        body = ["  " + _statement(op, "p", "") for op in seg.ops]
        parts.append(f"{_ENTRY} {seg.name}(void** p) {{\n" + "\n".join(body) + "\n}")
    return "\n\n".join(parts)


def _statement(op, table: str, prefix: str) -> str:
    """The C statement running ``op`` from code holding the pointer table ``table``; kernels
    are named with ``prefix`` (a loop body's kernels live beside the parent's)."""
    if isinstance(op, Launch):
        args = [f"({'' if p.is_output else 'const '}{storage_type(p.dtype)}*)"
                f"{table}[{b.slot}]" for p, b in zip(op.kernel.params, op.args)]
        return f"{prefix}{op.callee}({', '.join(args)});"
    assert isinstance(op, ControlFlow) and op.native, op
    # A literal operand gets a null pointer: the function has its own copy.
    ins = ["0" if b is None else f"{table}[{b.slot}]" for b in op.operands]
    outs = [f"{table}[{b.slot}]" for b in op.results]
    return (f"{{ void* in_[] = {{{', '.join(ins + ['0'])}}}; "
            f"void* out_[] = {{{', '.join(outs + ['0'])}}}; "
            f"{op.function}(in_, out_, (char*){table}[{op.scratch.slot}]); }}")


def function(cf: ControlFlow) -> str:
    """The C function of native control flow ``cf``."""
    eqn = cf.eqn
    lines = [f"void {cf.function}(void* const* operands, void* const* fx_out, char* scratch) {{"]
    for i, s in enumerate(cf.bodies):
        lines.append(f"  void* b{i}[{max(len(s.buffers), 1)}];")
        for b in s.buffers.values():
            if b.kind == "temp":
                lines.append(f"  b{i}[{b.slot}] = scratch + {cf.body_offsets[i] + b.offset};")
    # The operands as the caller passed them, but a literal: it lives in the function itself.
    lines.append(f"  void* fx_in[{len(eqn.invars) + 1}];")
    for j, v in enumerate(eqn.invars):
        if isinstance(v, Literal):
            ct = storage_type(v.aval.dtype)
            lines.append(f"  static const union {{ {ct} v; unsigned char b[sizeof({ct})]; }} "
                         f"fx_lit{j} = {{ .b = {{{_byte_list(v.value, v.aval.dtype)}}} }};")
            lines.append(f"  fx_in[{j}] = (void*)&fx_lit{j};")
        else:
            lines.append(f"  fx_in[{j}] = operands[{j}];")
    calls = [["    " + _statement(op, f"b{i}", cf.prefixes[i]) for op in s.ops]
             for i, s in enumerate(cf.bodies)]
    builder = {scan_p: _scan, while_p: _while, cond_p: _cond}[eqn.primitive]
    lines += builder(eqn, cf.bodies, calls, cf.carry_offsets)
    lines.append("}")
    return "\n".join(lines)


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
            after.append(f"    {{ static const unsigned char v[] = "
                         f"{{{_byte_list(src, aval.dtype)}}}; memcpy({dests[j]}, v, sizeof v); }}")
        elif src.kind == "output" and src.slot not in taken:
            taken.add(src.slot)
            before.append(f"    {table}[{src.slot}] = {dests[j]};")
        else:
            after.append(f"    memmove({dests[j]}, {table}[{src.slot}], {aval.nbytes});")
    return before, after


def _byte_list(value, dtype) -> str:
    """The bytes of ``value`` stored as ``dtype``, as a C initializer list: every value (NaN
    payloads, -0.0, halves, complex pairs, the most negative integers) exactly as eager holds
    it, with no literal syntax to get wrong."""
    data = np.asarray(value, dtype).tobytes()
    return ", ".join(f"{b:#04x}" for b in data)


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


def _scan(eqn, subs, calls, carry_off) -> list[str]:
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


def _while(eqn, subs, calls, carry_off) -> list[str]:
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


def _cond(eqn, subs, calls, carry_off) -> list[str]:
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
