"""Control flow on a device: ``scan``, ``while`` and ``cond`` whose bodies are all generated
kernels, run by a device executor as launch sequences over one scratch area.

The host never waits inside a scan, or a cond's branch: each iteration copies the slices of
the scanned inputs into staging buffers, launches the body's kernels on buffers fixed for the
whole loop (the body's arena and two ping-pong copies of the carry, all in the loop's scratch
area of the parent arena), and copies the scanned outputs' slices out — device-to-device
copies and launches queued in order. A ``while`` reads its predicate back once per iteration
(one byte); a ``cond`` reads its index once. The layout is planned by
``fx.lowering.program.control_flow`` (``_device_plan``); the operation is an
``operations.ControlFlow`` with ``device`` set.

What differs between targets is a small memory interface, ``mem``, that the executor makes for
one call:

- ``mem.scratch(offset, (shape, dtype))``: a view of that shape and dtype at ``offset`` bytes
  into the loop's scratch area;
- ``mem.copy(dst, src, nbytes, dst_offset=0, src_offset=0)``: an ordered device copy of bytes;
- ``mem.read(view)``: the value of a one-element view (waits for the queue);
- ``mem.constant(value, (shape, dtype))``: a view holding a literal;
- ``mem.launch(name, kernel, views)``: launch the module's kernel ``name`` (``kernel`` is its
  IR, for the launch shape) with ``views`` bound to its parameters in order.
"""

from __future__ import annotations

import numpy as np


class _Body:
    """One body program bound to the loop's scratch area: its temporaries' views, and where
    each argument and result goes."""

    def __init__(self, low, prefix: str, base: int, mem):
        self.low, self.prefix, self.mem = low, prefix, mem
        self.bound = {b.var: mem.scratch(base + b.offset, (b.aval.shape, b.aval.dtype))
                      for b in low.buffers.values() if b.kind == "temp"}
        by_position = {b.position: b.var for b in low.buffers.values() if b.kind == "input"}
        self.inputs = [by_position.get(i) for i in range(len(low.jaxpr.invars))]
        self.literals: dict = {}  # result position -> the literal's device copy (made once)

    def run(self, inputs: list, dests: list) -> None:
        """Run the body with argument views ``inputs`` writing its results into ``dests``."""
        bound, mem = self.bound, self.mem
        for var, view in zip(self.inputs, inputs):
            if var is not None:
                bound[var] = view
        after, taken = [], set()
        for j, (dest, (kind, src)) in enumerate(zip(dests, self.low.out_sources)):
            if kind == "literal":
                if j not in self.literals:
                    self.literals[j] = mem.constant(src, _aval(dest))
                after.append((dest, None, self.literals[j]))
            elif src.kind == "output" and src.var not in taken:
                taken.add(src.var)
                bound[src.var] = dest
            else:  # an argument returned as it is, or a result returned twice
                after.append((dest, src.var, None))
        for op in self.low.ops:
            mem.launch(self.prefix + op.kernel.name, op.kernel, [bound[b.var] for b in op.args])
        for dest, var, literal in after:
            mem.copy(dest, bound[var] if var is not None else literal, _nbytes(dest))


def _aval(view):
    return view.shape, np.dtype(view.dtype)


def _nbytes(view) -> int:
    return int(np.prod(view.shape, dtype=np.int64)) * np.dtype(view.dtype).itemsize


def run(cf, mem, views: dict) -> None:
    """Run device control flow ``cf`` (a ``operations.ControlFlow``) over the parent's ``views``
    (value -> device array) with the executor's memory interface ``mem``."""
    eqn = cf.eqn
    operands = [views[v] if b is not None else mem.constant(v.value, (v.aval.shape,
                                                                       v.aval.dtype))
                for v, b in zip(eqn.invars, cf.operands)]
    results = [views[b.var] for b in cf.results]
    bodies = [_Body(low, prefix, base, mem)
              for low, prefix, base in zip(cf.bodies, cf.prefixes, cf.body_offsets)]
    kind = eqn.primitive.name
    if kind == "cond":
        n = len(bodies)
        index = int(np.clip(int(mem.read(operands[0])), 0, n - 1))
        bodies[index].run(operands[1:], results)
        return
    p = eqn.params
    carries = [[mem.scratch(off, (v.aval.shape, v.aval.dtype))
                for off, v in zip(row, cf.results)] for row in cf.carry_offsets]
    if kind == "scan":
        nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
        consts, cur, xs = operands[:nc], operands[nc:nc + nk], operands[nc + nk:]
        ys = results[nk:]
        slices = [(v.aval.shape[1:], v.aval.dtype)
                  for v in (*eqn.invars[nc + nk:], *eqn.outvars[nk:])]
        staged = [mem.scratch(off, aval) for off, aval in zip(cf.staging_offsets, slices)]
        sx, sy = staged[:len(xs)], staged[len(xs):]
        for k in range(length):
            i = length - 1 - k if p["reverse"] else k
            for stage, x in zip(sx, xs):
                n = _nbytes(stage)
                mem.copy(stage, x, n, src_offset=i * n)
            nxt = carries[k & 1][:nk]
            bodies[0].run([*consts, *cur, *sx], [*nxt, *sy])
            for y, stage in zip(ys, sy):
                n = _nbytes(stage)
                mem.copy(y, stage, n, dst_offset=i * n)
            cur = nxt
    else:  # while
        ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, cur = operands[:ncc], operands[ncc:ncc + nbc], operands[ncc + nbc:]
        flag = mem.scratch(cf.staging_offsets[0], ((), np.dtype(np.bool_)))
        k = 0
        while True:
            bodies[0].run([*cconsts, *cur], [flag])
            if not bool(mem.read(flag)):
                break
            nxt = carries[k & 1]
            bodies[1].run([*bconsts, *cur], nxt)
            cur, k = nxt, k + 1
        nk = len(cur)
    for dst, src in zip(results[:nk], cur):
        if dst is not src:
            mem.copy(dst, src, _nbytes(dst))


def capturable(cf) -> bool:
    """Whether ``cf`` runs without the host: a scan (no predicate or index is read back) with
    no literal to upload (a CUDA graph can then capture the whole loop)."""
    return cf.eqn.primitive.name == "scan" and all(b is not None for b in cf.operands) and all(
        kind != "literal" for low in cf.bodies for kind, _ in low.out_sources)
