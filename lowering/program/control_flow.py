"""Compiled control flow: ``scan``, ``while`` and ``cond`` inside a jitted program.

Each body (scan body; while cond and body; cond branches) is lowered as a program of its own.
When every step of every body is a generated kernel (the common case for small loop bodies)
and the backend compiles loops natively, the whole loop becomes one function in the parent's
translation unit (``c_program`` renders it from the layout planned here), so the loop never
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
from fx.jaxpr import ClosedJaxpr, Var
from fx.lax.control_flow.conditionals import cond_p
from fx.lax.control_flow.loops import while_p
from fx.lax.control_flow.scans import scan_p
from fx.lowering.program.operations import Launch

control_flow_prims = (scan_p, while_p, cond_p)
@dataclass(eq=False)
class LoopPlan:
    """How a control-flow step runs: natively (a function of the generated code, rendered
    from this layout by the dialect; see ``operations.ControlFlow``) or by a Python fn."""

    function: str = ""  # the generated function ``fn(operands, outputs, scratch)``
    kernels: list = field(default_factory=list)  # the bodies' kernels, nested ones included
    python: Callable | None = None
    scratch: Var | None = None  # parent temporary holding the bodies' arenas and carries
    subs: list = field(default_factory=list)  # the bodies' lowered Programs
    body_offsets: tuple = ()  # each body's arena in the scratch area
    carry_offsets: tuple = ()  # the two copies of the carries in the scratch area
    prefixes: tuple = ()  # each body's kernel-name prefix
    device: bool = False  # a loop of launches the device executor runs (see _device_plan)
    staging_offsets: tuple = ()  # its staging buffers in the scratch area
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
        not s.consts and all(op.native for op in s.ops) for s in subs)
    if all_c:
        return _c_plan(eqn, tag, subs, backend.alignment)
    if backend.device_loops and have_compiler and all(
            not s.consts and all(isinstance(op, Launch) for op in s.ops) for s in subs):
        return _device_plan(eqn, tag, subs, backend.alignment)
    return LoopPlan(python=_python_loop(eqn, subs), subs=subs,
                    note="a host loop over the compiled body (one dispatch per iteration)")


# --- native loops --------------------------------------------------------------------------------


def _layout(eqn, subs, alignment: int, staged: list[int] = ()):
    """Offsets in a loop's scratch area: each body's arena, two copies of the carry (the
    scan/while ping-pong), then ``staged`` buffers of those sizes; and the scratch value."""
    def take(n: int) -> int:
        nonlocal cursor
        at = cursor
        cursor += (max(n, 1) + alignment - 1) // alignment * alignment
        return at

    cursor = 0
    offsets = tuple(take(s.plan.arena_bytes) for s in subs)
    carry_off = tuple(tuple(take(a.nbytes) for a in _carry_avals(eqn)) for _ in range(2))
    staging = tuple(take(n) for n in staged)
    return offsets, carry_off, staging, Var(ShapedArray((max(cursor, 1),), np.uint8))


def _renamed_kernels(subs, prefixes) -> list:
    kernels = []
    for prefix, s in zip(prefixes, subs):
        for op in s.ops:
            if isinstance(op, Launch):
                kernels.append(dataclasses.replace(op.kernel, name=prefix + op.kernel.name))
            else:
                kernels += op.kernels  # a nested native loop's own (already renamed) kernels
    return kernels


def _device_plan(eqn, tag: str, subs, alignment: int) -> LoopPlan:
    """A loop a device executor runs as launch sequences (``fx.runtime.device_loops``): the
    scratch layout of the native loop plus staging buffers for one slice of each scanned
    input and output (scan) or the predicate (while), and the bodies' kernels renamed to
    live in the parent's module."""
    staged: list[int] = []
    if eqn.primitive is scan_p:
        p = eqn.params
        length, skip = p["length"], p["num_consts"] + p["num_carry"]
        staged = [v.aval.nbytes // length if length else 0
                  for v in (*eqn.invars[skip:], *eqn.outvars[p["num_carry"]:])]
    elif eqn.primitive is while_p:
        staged = [1]
    offsets, carry_off, staging, scratch = _layout(eqn, subs, alignment, staged)
    prefixes = tuple(f"D_{tag}_{i}_" for i in range(len(subs)))
    return LoopPlan(kernels=_renamed_kernels(subs, prefixes), scratch=scratch, subs=subs,
                    body_offsets=offsets, carry_offsets=carry_off, prefixes=prefixes,
                    device=True, staging_offsets=staging,
                    note="a device loop: the body's kernels launched in sequence, no host "
                         "round trip but the while predicate's, read once per iteration")


def _c_plan(eqn, tag: str, subs, alignment: int) -> LoopPlan:
    """The layout of a native loop's scratch area (each body's arena, then two copies of the
    carry for the scan/while ping-pong) and its bodies' kernels, renamed to live beside the
    parent's; ``c_program`` renders the function from this."""
    offsets, carry_off, _, scratch = _layout(eqn, subs, alignment)
    prefixes = tuple(f"L_{tag}_{i}_" for i in range(len(subs)))
    return LoopPlan(function=f"fx_loop_{tag}", kernels=_renamed_kernels(subs, prefixes),
                    scratch=scratch, subs=subs, body_offsets=offsets, carry_offsets=carry_off,
                    prefixes=prefixes,
                    note="compiled loop: the body's kernels called from one C function")


def _carry_avals(eqn) -> list[ShapedArray]:
    if eqn.primitive is scan_p:
        n = eqn.params["num_carry"]
        return [v.aval for v in eqn.outvars[:n]]
    if eqn.primitive is while_p:
        return [v.aval for v in eqn.outvars]
    return []


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
