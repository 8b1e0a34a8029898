"""``Compilation.as_text()``: the optimized program as a compiler engineer wants to read it.

Shows the optimized jaxpr, then the schedule: one line per step with its fusion group and the
``fx.named_scope`` names its equations were traced under (jax carries these as locations in
its lowered text), the implementation operator selection chose (and why), and where each
buffer lives (argument, output, constant, or an arena offset; in-place reuse marked), then the
program the runtime calls (``lowering.program.operations``: segments of launches, library and host
calls, loops; with the concurrent waves of the dependency schedule, where there are any), then the
memory summary.

``as_text(stage)`` shows one stage of the pipeline alone, as Triton's stages: ``"jaxpr"`` (the
optimized jaxpr), ``"groups"`` (the fusion groups), ``"selection"`` (each group's chosen
implementation and why, with a ``fallback:`` line where it runs as NumPy for want of another,
see ``fallbacks``), ``"plan"`` (the schedule with every buffer's place, the program and
the memory summary) and ``"source"`` (the kernels in the backend's dialect).
"""

from __future__ import annotations

from fx.jaxpr import _Namer, pp_jaxpr
from fx.lowering.program.operations import Segment


def _mib(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.2f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} B"


def _scopes(group) -> str:
    """The distinct name stacks (``outer/inner``) of ``group``'s equations, in program order,
    as a trailing comment; empty when none was traced under a named scope."""
    names = dict.fromkeys(e.source_info.name_stack for e in group.eqns
                          if e.source_info is not None and e.source_info.name_stack)
    return f"  # {', '.join(names)}" if names else ""


STAGES = ("jaxpr", "groups", "selection", "plan", "source")


def _step_line(t: int, s) -> str:
    return f"step {t:<3} {s.group.label()}{_scopes(s.group)}"


def _impl_lines(s, indent: str) -> list[str]:
    """The chosen implementation and, where the group runs as NumPy for want of another, why
    (``fallbacks``)."""
    k = f" -> {s.kernel.name}" if s.kernel is not None else ""
    lines = [f"{indent}impl: {s.choice.impl.name}{k} ({s.choice.reason})"]
    if s.choice.fallback is not None:
        lines.append(f"{indent}fallback: {s.choice.fallback}")
    return lines


def _fallbacks(low) -> int:
    """The program's NumPy fallbacks, its control-flow bodies' included."""
    return sum(1 for s in low.steps if s.choice.fallback is not None) + sum(
        _fallbacks(sub) for s in low.steps if s.loop is not None for sub in s.loop.subs)


def _call_name(call) -> str:
    return call.name if isinstance(call, Segment) else f"step {call.step}"


def lowered_as_text(low, stage: str | None = None) -> str:
    if stage is not None and stage not in STAGES:
        raise ValueError(f"as_text: unknown stage {stage!r}; the stages are "
                         f"{', '.join(repr(s) for s in STAGES)} (or None for all but source)")
    if stage == "source":
        return str(low.source) if low.source else "// no generated kernels"
    namer = _Namer()
    if stage == "jaxpr":
        return pp_jaxpr(low.jaxpr, 0, namer)
    if stage in ("groups", "selection"):
        lines = []
        for t, s in enumerate(low.steps):
            lines.append(_step_line(t, s))
            if stage == "selection":
                lines += _impl_lines(s, "    ")
        return "\n".join(lines)
    if stage == "plan":
        pp_jaxpr(low.jaxpr, 2, namer)  # (names the values as the full text does)
    return _full_text(low, namer, with_jaxpr=stage is None)


def _full_text(low, namer, with_jaxpr: bool) -> str:
    jaxpr_text = pp_jaxpr(low.jaxpr, 2, namer)
    plan = low.plan
    n_kernels = sum(1 for s in low.steps if s.kernel is not None)
    n_fallbacks = _fallbacks(low)
    lines = [
        f"# fx program '{low.name}' for {low.backend}: {len(low.steps)} steps, "
        f"{n_kernels} generated kernels, {len(low.schedule.calls)} runtime calls"
        + (f", {n_fallbacks} NumPy fallback{'s' * (n_fallbacks != 1)}" if n_fallbacks
           else ""),
        "# optimized jaxpr (the first inputs are hoisted constants):" if low.consts else
        "# optimized jaxpr:",
        "  " + jaxpr_text,
        "# schedule:",
    ]
    if not with_jaxpr:
        del lines[1:3]
    inplace_of = {int(k): int(v) for k, v in plan.inplace.items()}
    by_slot = {b.slot: b for b in low.buffers.values()}

    def where(v) -> str:
        b = low.buffers.get(v)
        if b is None:
            return namer(v)
        if b.kind == "temp":
            loc = f"arena+{b.offset}"
            if b.slot in inplace_of:
                loc += f" (in place of {namer(by_slot[inplace_of[b.slot]].var)})"
        elif b.kind == "input":
            loc = f"arg {b.position - len(low.consts)}"
        elif b.kind == "const":
            loc = "const"
        else:
            loc = f"out {b.position}"
            if b.donor is not None:
                loc += f" (in donated {namer(b.donor.var)})"
        return f"{namer(v)}:{v.aval.str_short()}@{loc}"

    for t, s in enumerate(low.steps):
        lines.append("  " + _step_line(t, s))
        if s.placement == "host":
            ins = ", ".join(namer(v) for v in s.inputs) or "-"
            outs = ", ".join(namer(v) for v in s.outputs) or "-"
            lines.append(f"      on host (no GPU implementation): copy_to_host[{ins}] -> "
                         f"numpy -> copy_to_device[{outs}]")
        lines += _impl_lines(s, "      ")
        if s.loop is not None:
            lines.append(f"      loop: {s.loop.note}")
            for sub in s.loop.subs:
                kinds = [st.choice.impl.name for st in sub.steps]
                n = _fallbacks(sub)
                marks = f"; {n} NumPy fallback{'s' * (n != 1)}" if n else ""
                lines.append(f"        {sub.name}: {len(sub.steps)} steps ({', '.join(kinds)})"
                             f"{marks}")
        lines.append(f"      in:   {', '.join(where(v) for v in s.inputs) or '-'}")
        lines.append(f"      out:  {', '.join(where(v) for v in s.outputs) or '-'}")
    lines.append(f"# program: {len(low.schedule.calls)} runtime calls")
    for call in low.schedule.calls:
        if isinstance(call, Segment):
            lines.append(f"  {call.label}: " + ", ".join(
                f"{op.label} (step {op.step})" for op in call.ops))
        else:
            lines.append(f"  {call.label} (step {call.step})")
    if low.schedule.waves:
        lines.append("# concurrency: calls of one wave are independent; those after '||' run "
                     f"{low.backend.apart}")
        for w, (here, there) in enumerate(low.schedule.waves):
            if there:
                name = [_call_name(low.schedule.calls[i]) for i in here + there]
                lines.append(f"  wave {w}: {', '.join(name[:len(here)])} || "
                             f"{', '.join(name[len(here):])}")
    lines.append(
        f"# memory: arena {_mib(plan.arena_bytes)}, lower bound {_mib(plan.lower_bound)}, "
        f"naive {_mib(plan.naive_bytes)}; {len(plan.inplace)} in-place reuses"
    )
    return "\n".join(lines)
