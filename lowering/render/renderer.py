"""The renderer: kernel IR as C, CUDA C or OpenCL C, one renderer and a dialect per target, and
``render_module``, a translation unit of kernels (the dialect's prelude, ``PRELUDE``, the
special functions the kernels call, the kernels).

The targets' differences are data (``fx.lowering.render.dialects``: a :class:`Dialect` record each,
and the operation spellings they share); the renderer never asks which target it renders
for. The dialects' names are re-exported here, where the rest of lowering imports them.
"""

from __future__ import annotations

import re

import numpy as np

from fx import dtypes
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.index_ranges import fold_ranges
from fx.lowering.render.dialects import (  # noqa: F401  (C, CUDA, Dialect, storage_type: re-exported)
    CUDA,
    F32,
    C,
    Dialect,
    _keys,
    _kind,
    _promoted,
    _template,
    compute_type,
    storage_type,
)
from fx.lowering.render.literals import literal
from fx.lowering.render.prelude import PRELUDE
from fx.lowering.render.prelude_special import needed_source


class Renderer:
    def __init__(self, dialect: Dialect):
        self.d = dialect
        self.work = 0  # the kernel being rendered: elements it touches
        self.it = dialect.index_type  # its index type
        self.params: dict[str, ir.Param] = {}  # its parameters by name
        self.accumulators: dict[str, np.dtype] = {}  # its declared locals' dtypes by name
        # Inside a vector loop: (the loop's index, the wide buffers, this lane's component).
        self.lane_of: tuple[ir.Sym, dict, int] | None = None

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Const):
            return self.const(e.value, e.dtype)
        if isinstance(e, ir.Sym):
            return e.name
        if isinstance(e, ir.Load):
            if self.lane_of is not None and e.buf in self.lane_of[1] and e.index == self.lane_of[0]:
                return f"{e.buf}_v.{_COMPONENTS[self.lane_of[2]]}"
            return f"{e.buf}[{self.expr(e.index)}]"
        if isinstance(e, ir.Op):
            return self.op(e)
        raise TypeError(f"cannot render {e!r}")

    def const(self, v, dt) -> str:
        """The literal ``v`` of dtype ``dt`` as an atom: any template may apply an operator to
        it (a negative value is parenthesized, so ``-`` before it never makes ``--``)."""
        return literal(v, dt, small_index=self.it != "int64_t")

    def op(self, e: ir.Op) -> str:
        args = [self.expr(a) for a in e.args]
        if e.op == "cast":
            return self.cast(e.args[0].dtype, e.dtype, args[0])
        if e.op == "cast_wide":  # a float32 -> narrow int conversion, left in int32
            return f"fx_f2{_kind(e.dtype)}w_f32({args[0]})"
        if e.op == "bitcast":
            return self.bitcast(e.args[0].dtype, e.dtype, args[0])
        if e.op == "load_half":
            fn = "fx_bf16_to_f32" if e.args[0].dtype == dtypes.bfloat16 else "fx_f16_to_f32"
            return f"{fn}({args[0]})"
        if e.op == "store_half":
            fn = "fx_f32_to_bf16" if e.dtype == dtypes.bfloat16 else "fx_f32_to_f16"
            return f"{fn}({args[0]})"
        if (e.op in ("div", "rem") and dtypes.is_int(e.dtype) and isinstance(e.args[1], ir.Const)
                and int(e.args[1].value) > 0):
            # By a positive constant C's / and % are defined for every dividend and truncate
            # as XLA does: no helper guarding zero and -1 divisors, which kept GCC from
            # vectorizing index arithmetic (delinearizing a flattened index) and values alike.
            text = f"({args[0]} {'/' if e.op == 'div' else '%'} {args[1]})"
            return f"(({compute_type(e.dtype)}){text})" if _promoted(e.dtype) else text
        if e.op in ("max", "min") and dtypes.is_float(e.dtype):
            # Against a constant that is neither zero nor NaN, jax's max/min is one compare:
            # a NaN operand fails it and comes through, and an equal operand has the
            # constant's bits (only zeros have two). fx_maxf's tie and NaN selects cost a
            # quantizer's clamp as much as the rest of its arithmetic.
            for i, c in enumerate(e.args):
                if isinstance(c, ir.Const) and float(c.value) != 0 and c.value == c.value:
                    text = (f"({args[i]} {'>' if e.op == 'max' else '<'} {args[1 - i]} ? "
                            f"{args[i]} : {args[1 - i]})")
                    return f"(({compute_type(e.dtype)}){text})" if _promoted(e.dtype) else text
        operand_dt = e.args[0].dtype if e.args and e.op not in ("select",) else e.dtype
        if e.op == "select":
            operand_dt = e.dtype
        if e.op in ("eq", "ne", "lt", "le", "gt", "ge"):
            operand_dt = e.args[0].dtype
        text = _template(self.d, e.op, np.dtype(operand_dt)).format(*args)
        return f"(({compute_type(e.dtype)}){text})" if _promoted(e.dtype) else text

    def cast(self, src: np.dtype, dst: np.dtype, x: str) -> str:
        src, dst = np.dtype(src), np.dtype(dst)
        if src == dst:
            return x
        if dtypes.is_complex(dst):  # from a real value (imaginary part 0) or the other width
            part = dtypes.real_dtype(dst)
            if dtypes.is_complex(src):
                re, im = (self.cast(dtypes.real_dtype(src), part, f"({x}).{p}")
                          for p in ("re", "im"))
                return f"fx_make_{_kind(dst)}({re}, {im})"
            return f"fx_make_{_kind(dst)}({self.cast(src, part, x)}, {self.const(0, part)})"
        if dtypes.is_complex(src):  # to bool: either part nonzero; otherwise the real part
            if dst == dtypes.bool_:
                return f"((uint8_t)(({x}).re != 0 || ({x}).im != 0))"
            return self.cast(dtypes.real_dtype(src), dst, f"({x}).re")
        if dst == dtypes.bool_:
            return f"((uint8_t)({x} != 0))"
        if dtypes.is_float(src) and dtypes.is_int(dst):
            if src == F32 and dst.itemsize <= 2:
                return f"fx_f2{_kind(dst)}_f32({x})"
            return f"fx_f2{_kind(dst)}((double)({x}))"
        return f"(({compute_type(dst)})({x}))"

    def bitcast(self, src: np.dtype, dst: np.dtype, x: str) -> str:
        """The bits of ``x`` (of dtype ``src``) as a ``dst`` of the same width (not a half:
        halves are computed in float, see primitive_rules.unsupported)."""
        src, dst = np.dtype(src), np.dtype(dst)
        if dtypes.is_float(src):
            x = f"fx_{_kind(src)}_to_bits({x})"
        if dtypes.is_float(dst):
            return f"fx_bits_to_{_kind(dst)}((uint{dst.itemsize * 8}_t)({x}))"
        return f"(({compute_type(dst)})({x}))"

    # -- statements -----------------------------------------------------------------------------
    def stmts(self, body, indent: int) -> list[str]:
        out = []
        pad = "  " * indent
        for s in body:
            if isinstance(s, ir.Let):
                out.append(f"{pad}const {compute_type(s.value.dtype)} {s.name} = "
                           f"{self.expr(s.value)};")
            elif isinstance(s, ir.Decl):
                self.accumulators[s.name] = np.dtype(s.dtype)
                out.append(f"{pad}{compute_type(s.dtype)} {s.name} = {self.expr(s.init)};")
            elif isinstance(s, ir.Array):
                out.append(f"{pad}{compute_type(s.dtype)} {s.name}[{s.size}];")
            elif isinstance(s, ir.Assign):
                out.append(f"{pad}{s.name} = {self.assigned(s.value)};")
            elif isinstance(s, ir.Store):
                guard = self.d.leader_guard if s.leader_only else ""
                lane = self.lane_of
                if lane is not None and s.buf in lane[1] and s.index == lane[0]:
                    target = f"{s.buf}_v.{_COMPONENTS[lane[2]]}"
                else:
                    target = f"{s.buf}[{self.expr(s.index)}]"
                out.append(f"{pad}{guard}{target} = {self.expr(s.value)};")
            elif isinstance(s, ir.Combine):
                line = self.combine(s)
                if line:
                    out.append(pad + line)
            elif isinstance(s, ir.Loop):
                wide = self.wide_buffers(s) if s.parallel and s.vector > 1 else {}
                if wide:
                    out.extend(self.vector_loop(s, wide, indent))
                    continue
                if s.parallel:
                    head = self.parallel_head(s.var, 0, s.extent, s.lanes,
                                              max(self.work, s.extent),
                                              _straight(s.body) or s.simd_iterations,
                                              s.simd_iterations)
                    out.extend(pad + line for line in head.split("\n"))
                    out[-1] += " {"
                elif s.cooperative:
                    ops = [(a, _reduction_op(self.d, op, self.accumulators[a]))
                           for a, op in s.reductions]
                    if (self.d.simd_reduction and s.extent >= self.d.simd_reduction_min
                            and ops and all(o for _, o in ops)):
                        clauses = " ".join(self.d.simd_reduction.format(op=o, acc=a)
                                           for a, o in ops)
                        out.append(f"{pad}#pragma omp simd {clauses}")
                    head = self.d.cooperative_for.format(it=self.it, v=s.var,
                                                         stop=s.extent)
                    out.append(f"{pad}{head} {{")
                else:
                    staged = self.staged_loop(s, indent)
                    if staged:
                        out.extend(staged)
                        continue
                    if self.d.simd_loop and _straight(s.body):
                        out.append(pad + self.d.simd_loop)
                    out.append(f"{pad}for ({self.it} {s.var} = 0; {s.var} < "
                               f"{s.extent}; {s.var}++) {{")
                out.extend(self.stmts(s.body, indent + 1))
                out.append(f"{pad}}}")
            else:
                raise TypeError(f"cannot render statement {s!r}")
        return out

    def staged_loop(self, s: ir.Loop, indent: int) -> list[str] | None:
        """``s`` as two loops where ``Dialect.stage_narrow_stores`` applies (a short straight
        loop whose only narrow values are float32 -> 8/16-bit conversions, each stored once,
        at an index of loop variables): the first computes in float and stores each value
        converted to int32 (the same clamping: prelude ``fx_f2i8w_f32`` ...) in a local
        array, the second narrows them into the buffer. The same values land in the same
        places; only the vector sizes change."""
        if not (self.d.stage_narrow_stores and self.d.simd_loop and s.extent <= 32
                and _straight(s.body)):
            return None
        lets = {st.name: st for st in s.body if isinstance(st, ir.Let)}
        local = set(lets) | {st.name for st in s.body if isinstance(st, ir.Decl)}
        reads: dict[str, int] = {}
        for st in s.body:
            for e in (st.index, st.value) if isinstance(st, ir.Store) else (
                    getattr(st, "value", None) or getattr(st, "init", None),):
                for name in _names(e):
                    reads[name] = reads.get(name, 0) + 1

        def conversion(v: ir.Expr) -> ir.Op | None:
            if isinstance(v, ir.Sym) and v.name in lets and reads.get(v.name) == 1:
                v = lets[v.name].value
            ok = (isinstance(v, ir.Op) and v.op == "cast" and v.args[0].dtype == F32
                  and dtypes.is_int(v.dtype) and np.dtype(v.dtype).itemsize <= 2)
            return v if ok else None

        staged, dropped = {}, set()
        for k, st in enumerate(s.body):
            if isinstance(st, ir.Store):
                conv = conversion(st.value)
                if conv is None or st.leader_only or _names(st.index) & local:
                    return None
                staged[k] = (f"fx_stage{k}", conv)
                if isinstance(st.value, ir.Sym):
                    dropped.add(st.value.name)
        if not staged or any(_narrow(st) for k, st in enumerate(s.body) if k not in staged
                             and not (isinstance(st, ir.Let) and st.name in dropped)):
            return None
        pad, it = "  " * indent, self.it
        head = f"for ({it} {s.var} = 0; {s.var} < {s.extent}; {s.var}++) {{"
        out = [f"{pad}int32_t {name}[{s.extent}];" for name, _ in staged.values()]
        first = [ir.Store(staged[k][0], ir.Sym(s.var, ir.INDEX),
                          ir.Op("cast_wide", staged[k][1].args, staged[k][1].dtype))
                 if k in staged else st for k, st in enumerate(s.body)
                 if not (isinstance(st, ir.Let) and st.name in dropped)]
        out += [pad + self.d.simd_loop, pad + head, *self.stmts(tuple(first), indent + 1),
                pad + "}", pad + self.d.simd_loop, pad + head]
        out += [f"{pad}  {s.body[k].buf}[{self.expr(s.body[k].index)}] = "
                f"({storage_type(conv.dtype)}){name}[{s.var}];"
                for k, (name, conv) in staged.items()]
        return out + [pad + "}"]

    def assigned(self, e: ir.Expr) -> str:
        """An accumulator's new value. A select of floats is the dialect's bitwise blend where
        it has one: GCC folds a later test of the accumulator (``best == best``) into the select
        and cannot vectorize the select of masks that makes (the max-pool gradient's window
        loop stayed scalar)."""
        if isinstance(e, ir.Op) and e.op == "select":
            blend = self.d.math.get(("blend", _kind(e.dtype)))
            if blend:
                return blend.format(*(self.expr(a) for a in e.args))
        return self.expr(e)

    def parallel_head(self, var: str, start, stop, lanes: int, work: int,
                      straight: bool = False, simd_outer: bool = False) -> str:
        """The head of a kernel's parallel loop (several lines where the dialect needs them).
        ``simd_outer``: the iterations are SIMD lanes even without threads (a column
        reduction's outputs, whose inner loops the compiler would not vectorize)."""
        if lanes > 1 and self.d.parallel_for_lanes:
            template = self.d.parallel_for_lanes
        elif work <= self.d.parallel_min_work:
            template = "for ({it} {v} = {start}; {v} < {stop}; {v}++)"
            if simd_outer and self.d.simd_loop:
                template = self.d.simd_loop + "\n" + template
        elif straight and self.d.parallel_for_simd:
            template = self.d.parallel_for_simd
        else:
            template = self.d.parallel_for
        return template.format(it=self.it, v=var, start=start, stop=stop, lanes=lanes)

    def wide_buffers(self, loop: ir.Loop) -> dict[str, str]:
        """The buffers a vector loop reads or writes with wide accesses: name -> vector type.
        A buffer qualifies when the dialect has a vector type for it and every access to it
        in the loop is at exactly the loop index."""
        var = ir.Sym(loop.var, ir.INDEX)
        seen: dict[str, bool] = {}

        def visit(e):
            if isinstance(e, ir.Load):
                seen[e.buf] = seen.get(e.buf, True) and e.index == var
                visit(e.index)
            elif isinstance(e, ir.Op):
                for a in e.args:
                    visit(a)

        def walk(body):
            for st in body:
                if isinstance(st, ir.Store):
                    seen[st.buf] = seen.get(st.buf, True) and st.index == var
                    visit(st.index)
                for field_name in ("value", "init", "index"):
                    if isinstance(getattr(st, field_name, None), ir.Expr):
                        visit(getattr(st, field_name))
                if isinstance(st, ir.Loop):
                    walk(st.body)

        walk(loop.body)
        wide = {}
        for buf, ok in seen.items():
            vt = self.d.vector_types.get((loop.vector, storage_type(self.params[buf].dtype)))
            if ok and vt:
                wide[buf] = vt
        return wide

    def vector_loop(self, loop: ir.Loop, wide: dict[str, str], indent: int) -> list[str]:
        """``loop`` with ``loop.vector`` iterations per lane and one wide access per buffer in
        ``wide``, when every pointer is aligned for it; then the remaining iterations (the
        tail, or all of them for misaligned pointers) one per lane."""
        pad, inner = "  " * indent, "  " * (indent + 1)
        w, var = loop.vector, loop.var
        vec_iters = loop.extent // w
        done = f"{var}_done"
        ptrs = " | ".join(self.d.vector_pointer.format(p=b) for b in wide)
        bytes_ = w * max(self.params[b].dtype.itemsize for b in wide)
        out = [f"{pad}{self.it} {done} = 0;",
               f"{pad}if ({self.d.vector_aligned.format(ptrs=ptrs, bytes=bytes_)}) {{"]
        head = self.parallel_head(f"{var}_v", 0, vec_iters, 1, max(self.work, loop.extent))
        out.extend(inner + line for line in head.split("\n"))
        out[-1] += " {"
        deep = "  " * (indent + 2)
        reads = [b for b in wide if not self.params[b].is_output]
        writes = [b for b in wide if self.params[b].is_output]
        for b in reads:
            out.append(deep + self.d.vector_load.format(vt=wide[b], name=f"{b}_v", buf=b,
                                                        i=f"{var}_v"))
        for b in writes:
            out.append(f"{deep}{wide[b]} {b}_v;")
        for c in range(w):
            self.lane_of = (ir.Sym(var, ir.INDEX), wide, c)
            try:
                lane = self.stmts(loop.body, indent + 3)
            finally:
                self.lane_of = None
            if re.search(rf"\b{var}\b", "\n".join(lane)):  # scalar accesses need the index
                lane.insert(0, f"{deep}  const {self.it} {var} = {var}_v * {w} + {c};")
            out += [f"{deep}{{", *lane, f"{deep}}}"]
        for b in writes:
            out.append(deep + self.d.vector_store.format(vt=wide[b], name=f"{b}_v", buf=b,
                                                         i=f"{var}_v"))
        out.append(f"{inner}}}")
        out.append(f"{inner}{done} = {vec_iters * w};")
        out.append(f"{pad}}}")
        head = self.parallel_head(var, done, loop.extent, 1, max(self.work, loop.extent))
        out.extend(pad + line for line in head.split("\n"))
        out[-1] += " {"
        out.extend(self.stmts(loop.body, indent + 1))
        out.append(f"{pad}}}")
        return out

    def combine(self, c: ir.Combine) -> str:
        """The lane combine of an accumulator (empty where lanes do not cooperate)."""
        if c.op in ("argmax", "argmin"):
            if not self.d.combine_arg:
                return ""
            best, idx = c.name, c.index
            cmp = ">" if c.op == "argmax" else "<"
            better = f"(fx_ob {cmp} {best})"
            tie = f"(fx_ob == {best})"
            if dtypes.is_float(c.dtype):
                better = f"(({better} && {best} == {best}) || (fx_ob != fx_ob && {best} == {best}))"
                tie = f"({tie} || (fx_ob != fx_ob && {best} != {best}))"
            cond = f"fx_oi >= 0 && ({idx} < 0 || {better} || ({tie} && fx_oi < {idx}))"
            return self.d.combine_arg.format(
                best=best, idx=idx, vtype=compute_type(c.dtype),
                itype=compute_type(c.index_dtype), better=cond,
                vshfl=_shfl_operand(best, c.dtype))
        if not self.d.combine:
            return ""
        other = f"fx_other_{c.name}"
        expr = _template(self.d, c.op, np.dtype(c.dtype)).format(c.name, other)
        return self.d.combine.format(acc=c.name, other=other, type=compute_type(c.dtype),
                                     expr=expr, shfl=_shfl_operand(c.name, c.dtype))

    def kernel(self, k: ir.Kernel) -> str:
        k = ir.hoist_invariants(fold_ranges(k))
        restrict = self.d.restrict if k.restrict else ""
        params = ", ".join(
            f"{self.d.pointer_space}{'' if p.is_output else 'const '}{storage_type(p.dtype)}* "
            f"{restrict} {p.name}"
            for p in k.params
        )
        self.work = k.work
        self.params = {p.name: p for p in k.params}
        self.accumulators = {}
        largest = max([k.work] + [p.size for p in k.params])
        small = self.d.small_index_type and largest < 2**31 - 1
        self.it = self.d.small_index_type if small else self.d.index_type
        wide = self.d.wide_vectors if getattr(k, "wide_vectors", False) else ""
        lines = [f"{wide}{self.d.kernel_prefix} {k.name}({params}) {{"]
        lines += self.stmts(k.body, 1)
        lines.append("}")
        return "\n".join(lines)


_COMPONENTS = "xyzw"


def _reduction_op(d: Dialect, op: str, dt: np.dtype) -> str | None:
    """The dialect's SIMD reduction identifier for ``op`` on ``dt`` (None: no pragma)."""
    return next((d.simd_reduction_ops[k] for k in _keys(op, dt) if k in d.simd_reduction_ops),
                None)


def _names(e: ir.Expr) -> set[str]:
    """The symbols ``e`` reads."""
    if isinstance(e, ir.Sym):
        return {e.name}
    if isinstance(e, ir.Load):
        return _names(e.index)
    if isinstance(e, ir.Op):
        return set().union(*(_names(a) for a in e.args))
    return set()


def _narrow(st: ir.Stmt) -> bool:
    """Whether a statement loads, stores or computes an integer narrower than 32 bits
    (bools, which GCC keeps as masks, aside)."""
    def narrow(e: ir.Expr) -> bool:
        dt = np.dtype(e.dtype)
        if dtypes.is_int(dt) and dt.itemsize < 4:
            return True
        if isinstance(e, ir.Load):
            return narrow(e.index)
        return isinstance(e, ir.Op) and any(narrow(a) for a in e.args)

    if isinstance(st, ir.Store):
        return narrow(st.value) or narrow(st.index)
    value = getattr(st, "value", None) if not isinstance(st, ir.Decl) else st.init
    return value is not None and narrow(value)


def _straight(body) -> bool:
    """Straight-line code: lets, stores and variables of the iteration's own (declared in the
    body before they are assigned: a pooling window's unrolled max), so nothing is carried
    between iterations, and no nested loop."""
    local: set[str] = set()
    for s in body:
        if isinstance(s, ir.Decl):
            local.add(s.name)
        elif isinstance(s, ir.Assign):
            if s.name not in local:
                return False
        elif not isinstance(s, (ir.Let, ir.Store)):
            return False
    return True


def _shfl_operand(name: str, dt) -> str:
    """Warp shuffles move 32/64-bit values: widen bools and 8/16-bit integers to int."""
    return f"(int){name}" if np.dtype(dt) == dtypes.bool_ or _promoted(dt) else name


def render_module(kernels: list[ir.Kernel], dialect: Dialect, extra: str = "") -> str:
    """One translation unit holding every kernel (plus ``extra``, e.g. C entry points): the
    dialect's prelude, ``PRELUDE``, the special functions the kernels call (only those: they
    are long), the kernels."""
    r = Renderer(dialect)
    bodies = [k.render(r) for k in kernels]
    parts = [dialect.file_prelude, PRELUDE]
    special = needed_source("\n".join(bodies))
    if special:
        parts.append(special)
    parts += bodies
    if extra:
        parts.append(extra)
    return "\n\n".join(parts) + "\n"
