"""Code generation: a fusion group becomes a kernel in the kernel IR.

Values are generated on demand: ``value(var, index)`` gives the expression for one element of
``var``, walking back through the group's equations. Elementwise equations become scalar
operations (``primitive_rules.scalar_rules``), index maps (broadcast, transpose, reshape, slice,
pad, concatenate, iota) become index arithmetic, and values from outside the group are loads. Each
computed element is bound once per scope (``Let``), so shared subexpressions are computed once.

The walk keeps its own stack: an equation's rule is a generator that yields the ``(var,
index)`` operands it needs and receives their expressions, so a chain of fused equations costs
no Python stack (fusion bounds a group's length, not its depth). Expressions stay shallow: every
value is let-bound, and index arithmetic deeper than ``MAX_INDEX_DEPTH`` (a long chain of
slices or pads) is let-bound too, so rendering, hashing and comparing expressions never recurse
far either.

Half-precision values are loaded into float32, computed in float32, and rounded when stored.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Generator

import numpy as np

from fx import dtypes
from fx.jaxpr import JaxprEqn, Literal, Var
from fx.lax import base
from fx.lax import structural as st
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.fusion.fusion import FusionGroup, GroupKind, reduction_prims
from fx.lowering.fusion.primitive_rules import compute_dtype, scalar_rules

_HALF = (dtypes.float16, dtypes.bfloat16)
# Index arithmetic deeper than this is bound to a local (see the module docstring).
MAX_INDEX_DEPTH = 24


class _Scope:
    def __init__(self, parent: _Scope | None):
        self.parent = parent
        self.stmts: list[ir.Stmt] = []
        self.memo: dict = {}

    def lookup(self, key):
        s = self
        while s is not None:
            if key in s.memo:
                return s.memo[key]
            s = s.parent
        return None


class KernelBuilder:
    """Builds one kernel for a group; ``params`` maps each buffer variable to its parameter."""

    def __init__(self, group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]):
        self.group = group
        self.name = name
        self.producer: dict[Var, JaxprEqn] = {}
        for e in group.eqns:
            for v in e.outvars:
                self.producer[v] = e
        self.inputs, self.outputs = inputs, outputs
        self.param_of: dict[Var, str] = {}
        for i, v in enumerate(inputs):
            self.param_of[v] = f"in{i}"
        for i, v in enumerate(outputs):
            self.param_of.setdefault(v, f"out{i}")
        self.out_param = {v: f"out{i}" for i, v in enumerate(outputs)}
        self.names = (f"t{i}" for i in itertools.count())
        self.scope = self.top = _Scope(None)
        # Loads of scalar buffers are loop invariant: bound once in front of the kernel's
        # loops (``top``), where they cannot alias the loop's stores (a C compiler that must
        # assume they might refuses to vectorize, as inside OpenMP's outlined loops).
        self.hoist_scalars = False
        self.externals: dict[tuple, ir.Expr] = {}  # (var, index) -> value provided by a stage
        # Flat mode: every operand has the iteration shape or is a scalar, and the single
        # index is the linear position in all of them.
        self.flat = False
        # Reduction kernels: lanes share each row (see reduction_kernel).
        self.cooperative = False

    # -- scopes ---------------------------------------------------------------------------------
    def push(self) -> _Scope:
        self.scope = _Scope(self.scope)
        return self.scope

    def pop(self) -> list[ir.Stmt]:
        s = self.scope
        self.scope = s.parent
        return s.stmts

    def emit(self, stmt: ir.Stmt) -> None:
        self.scope.stmts.append(stmt)

    def let(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, (ir.Const, ir.Sym)):
            return e
        name = next(self.names)
        self.emit(ir.Let(name, e))
        return ir.Sym(name, e.dtype)

    # -- values ---------------------------------------------------------------------------------
    def value(self, v, index: tuple[ir.Expr, ...]) -> ir.Expr:
        """The expression for ``v`` at ``index``, computing (and binding) what it needs."""
        result = self._known(v, index)
        if result is not None:
            return result
        stack = [self._start(v, index)]
        while stack:
            key, rule = stack[-1]
            try:
                operand, at = rule.send(result)
            except StopIteration as done:
                stack.pop()
                result = self.let(done.value)
                self.scope.memo[key] = result
                continue
            result = self._known(operand, at)
            if result is None:
                stack.append(self._start(operand, at))
        return result

    def _key(self, v: Var, index) -> tuple:
        # (An index stays the tuple it is: a Delinearized one remembers its flat index.)
        return (v, () if not v.aval.shape else
                index if isinstance(index, tuple) else tuple(index))

    def _known(self, v, index) -> ir.Expr | None:
        """``v`` at ``index`` when no equation of the group has to run for it: a literal, a
        value already bound in scope or provided by a stage, or a load (bound here)."""
        if isinstance(v, Literal):
            return ir.Const(v.value.item(), compute_dtype(v.aval.dtype))
        if v.aval.size == 0:
            # Never observed: a zero-size value only feeds untaken select branches (concatenate,
            # pad) or empty loops. Its buffer may be NULL, so it is not read.
            return ir.Const(0, compute_dtype(v.aval.dtype))
        key = self._key(v, index)
        provided = self.externals.get(key)
        if provided is not None:
            return provided
        found = self.scope.lookup(key)
        if found is not None:
            return found
        if v in self.producer:
            return None
        if self.hoist_scalars and v.aval.size == 1:
            name = next(self.names)
            self.top.stmts.append(ir.Let(name, self.load(v, tuple(ir.const_index(0)
                                                                  for _ in v.aval.shape))))
            out = ir.Sym(name, compute_dtype(v.aval.dtype))
            self.top.memo[key] = out
            return out
        out = self.let(self.load(v, key[1]))
        self.scope.memo[key] = out
        return out

    def _start(self, v: Var, index) -> tuple[tuple, Generator]:
        key = self._key(v, index)
        return key, self.compute(self.producer[v], v, key[1])

    def load(self, v: Var, index) -> ir.Expr:
        dt = v.aval.dtype
        e = ir.Load(self.param_of[v], self.linear(index, v.aval.shape), dt)
        if dt in _HALF:
            return ir.Op("load_half", (e,), dtypes.float32)
        return e

    def compute(self, eqn: JaxprEqn, v: Var, index) -> Generator:
        """A generator computing one element of ``v`` (produced by ``eqn``): it yields each
        operand ``(var, index)`` it needs, receives that operand's expression, and returns the
        expression for the element."""
        prim = eqn.primitive
        rule = scalar_rules.get(prim)
        out_dt = compute_dtype(v.aval.dtype)
        if rule is not None:
            args = []
            for a in eqn.invars:
                args.append((yield a, index if a.aval.shape else ()))
            return rule(args, eqn.params, out_dt)
        mapper = index_maps.get(prim)
        if mapper is None:
            raise NotImplementedError(f"codegen: '{prim.name}' cannot be generated in a kernel")
        # An index map is a generator like this one (yielding the operand index it reads), or
        # a function that asks ``value`` itself (the pooling maps, which emit loops).
        gen = mapper(self, eqn, index)
        if not isinstance(gen, Generator):
            return gen
        sent = None
        while True:
            try:
                operand, at = gen.send(sent)
            except StopIteration as done:
                return done.value
            sent = yield operand, self.shallow_index(at)

    def direct_load(self, v, index) -> ir.Expr | None:
        """``v`` at ``index`` as an unbound load when it is an input read through index maps
        only (a slice of a parameter, say); None otherwise. For a select's operand that only
        the chosen side reads: the index need not be in bounds where the select does not
        choose it, so it stays affine (a clamped index reads to a C compiler as a gather,
        which x86 compilers tuned generically will not vectorize; ``c ? a[i] : b[i - 1]`` is
        two masked loads)."""
        while isinstance(v, Var) and v.aval.size and self._key(v, index) not in self.externals:
            eqn = self.producer.get(v)
            if eqn is None:
                return self.load(v, index)
            mapper = index_maps.get(eqn.primitive)
            if mapper is None:
                return None
            gen = mapper(self, eqn, index)
            if not isinstance(gen, Generator):
                return None
            marker = ir.Sym("fx_direct", v.aval.dtype)  # a pure remap returns what it reads
            try:
                operand, at = next(gen)
                gen.send(marker)
            except StopIteration as done:
                if done.value is not marker:
                    return None
            else:
                return None
            v, index = operand, self.shallow_index(at)
        return None

    def shallow_index(self, index) -> tuple:
        out = tuple(self.shallow(i) for i in index)
        if isinstance(index, ir.Delinearized):
            out = ir.Delinearized(out)
            out.flat, out.shape = self.shallow(index.flat), index.shape
        return out

    def shallow(self, e: ir.Expr) -> ir.Expr:
        """``e``, or a local bound to it when it is deeper than ``MAX_INDEX_DEPTH``."""
        if isinstance(e, (ir.Const, ir.Sym)) or ir.depth(e) <= MAX_INDEX_DEPTH:
            return e
        return self.let(e)

    # -- stores ---------------------------------------------------------------------------------
    def store(self, v: Var, index, space_shape, leader_only: bool = False) -> None:
        self.store_all([v], index, leader_only)

    def store_all(self, vs, index, leader_only: bool = False) -> None:
        """Store each of ``vs`` at ``index``, after computing all of them: every load of the
        iteration precedes every store, so an output planned in place of an input of the same
        shape (an elementwise group) never overwrites an element the iteration still reads."""
        vals = []
        for v in vs:
            val = self.value(v, index)
            dt = v.aval.dtype
            if dt in _HALF:
                val = ir.Op("store_half", (val,), dt)
            elif val.dtype != dt:
                val = ir.Op("cast", (val,), dt)
            vals.append(val)
        for v, val in zip(vs, vals):
            self.emit(ir.Store(self.out_param[v], self.linear(index, v.aval.shape), val,
                               leader_only))

    def linear(self, index, shape) -> ir.Expr:
        if not shape:
            return ir.const_index(0)
        return index[0] if self.flat else ir.linearize(index, shape)

    def params(self) -> tuple[ir.Param, ...]:
        ps = [ir.Param(f"in{i}", v.aval.dtype, v.aval.size, False)
              for i, v in enumerate(self.inputs)]
        ps += [ir.Param(f"out{i}", v.aval.dtype, v.aval.size, True)
               for i, v in enumerate(self.outputs)]
        return tuple(ps)


# --- index maps ---------------------------------------------------------------------------------


def _broadcast_in_dim(b: KernelBuilder, eqn: JaxprEqn, index):
    (x,) = eqn.invars
    dims = eqn.params["broadcast_dimensions"]
    in_idx = tuple(index[d] if n != 1 else ir.const_index(0) for n, d in zip(x.aval.shape, dims))
    return (yield x, in_idx)


def _iota(b: KernelBuilder, eqn: JaxprEqn, index):
    dt = compute_dtype(eqn.params["dtype"])
    return ir.Op("cast", (index[eqn.params["dimension"]],), dt)


def _transpose(b: KernelBuilder, eqn: JaxprEqn, index):
    perm = eqn.params["permutation"]
    in_idx = [None] * len(perm)
    for k, p in enumerate(perm):
        in_idx[p] = index[k]
    return (yield eqn.invars[0], tuple(in_idx))


def _reshape(b: KernelBuilder, eqn: JaxprEqn, index):
    x = eqn.invars[0]
    in_shape, out_shape = x.aval.shape, eqn.params["new_sizes"]
    squeezed_in = [n for n in in_shape if n != 1]
    squeezed_out = [(i, n) for i, n in zip(index, out_shape) if n != 1]
    if squeezed_in == [n for _, n in squeezed_out]:  # only unit dimensions added or removed
        it = iter(i for i, _ in squeezed_out)
        in_idx = tuple(next(it) if n != 1 else ir.const_index(0) for n in in_shape)
    elif isinstance(index, ir.Delinearized) or 0 in in_shape:
        in_idx = ir.delinearize(ir.linearize(index, out_shape), in_shape)
    else:
        in_idx = ir.reshaped_index(index, in_shape, out_shape)
    return (yield x, in_idx)


def _slice(b: KernelBuilder, eqn: JaxprEqn, index):
    p = eqn.params
    strides = p["strides"] or (1,) * len(index)
    in_idx = tuple(ir.iadd(ir.const_index(s), ir.imul(i, ir.const_index(k)))
                   for i, s, k in zip(index, p["start_indices"], strides))
    return (yield eqn.invars[0], in_idx)


def _clamp_index(i: ir.Expr, n: int) -> ir.Expr:
    lo = ir.Op("max", (i, ir.const_index(0)), ir.INDEX)
    return ir.Op("min", (lo, ir.const_index(max(n - 1, 0))), ir.INDEX)


def _pad(b: KernelBuilder, eqn: JaxprEqn, index):
    x, pad_value = eqn.invars
    valid = None
    in_idx, direct_idx = [], []
    for i, n, (lo, _, interior) in zip(index, x.aval.shape, eqn.params["padding_config"]):
        j = ir.isub(i, ir.const_index(lo))
        step = interior + 1
        direct_idx.append(ir.idiv(j, step) if step > 1 else j)  # exact where valid
        conds = [ir.Op("ge", (j, ir.const_index(0)), dtypes.bool_),
                 ir.Op("lt", (j, ir.const_index((n - 1) * step + 1 if n else 0)), dtypes.bool_)]
        if step > 1:
            conds.append(ir.Op("eq", (ir.Op("rem", (ir.Op("max", (j, ir.const_index(0)),
                                                          ir.INDEX), ir.const_index(step)),
                                            ir.INDEX), ir.const_index(0)), dtypes.bool_))
        for c in conds:
            valid = c if valid is None else ir.Op("and", (valid, c), dtypes.bool_)
        in_idx.append(_clamp_index(ir.idiv(ir.Op("max", (j, ir.const_index(0)), ir.INDEX), step)
                                   if step > 1 else j, n))
    # Read straight from an input, the value is loaded only where it is valid (see
    # direct_load); otherwise computed everywhere, at a clamped index.
    inside = b.direct_load(x, tuple(direct_idx)) if valid is not None else None
    if inside is None:
        inside = yield x, tuple(in_idx)
    fill = yield pad_value, ()
    if valid is None:
        return inside
    return ir.Op("select", (valid, inside, fill), inside.dtype)


def _concatenate(b: KernelBuilder, eqn: JaxprEqn, index):
    d = eqn.params["dimension"]
    pieces, start = [], 0
    for x in eqn.invars:
        n = x.aval.shape[d]
        local = list(index)
        local[d] = ir.isub(index[d], ir.const_index(start))
        # A piece read straight from an input is loaded only where the select below picks it
        # (see direct_load); others are computed everywhere, at a clamped index. (A piece of
        # extent 1 is read at its only index: an invariant load, hoisted out of the loop.)
        val = b.direct_load(x, tuple(local)) if n > 1 and len(eqn.invars) > 1 else None
        if val is None:
            local[d] = _clamp_index(local[d], n) if n > 1 else ir.const_index(0)
            val = yield x, tuple(local)
        pieces.append((start + n, val))
        start += n
    out = pieces[-1][1]
    for limit, val in reversed(pieces[:-1]):
        cond = ir.Op("lt", (index[d], ir.const_index(limit)), dtypes.bool_)
        out = ir.Op("select", (cond, val, out), val.dtype)
    return out


def _squeeze(b: KernelBuilder, eqn: JaxprEqn, index):
    dims = eqn.params["dimensions"]
    it = iter(index)
    in_idx = tuple(ir.const_index(0) if d in dims else next(it)
                   for d in range(eqn.invars[0].aval.ndim))
    return (yield eqn.invars[0], in_idx)


def _rev(b: KernelBuilder, eqn: JaxprEqn, index):
    x = eqn.invars[0]
    dims = eqn.params["dimensions"]
    in_idx = tuple(ir.isub(ir.const_index(n - 1), i) if d in dims else i
                   for d, (i, n) in enumerate(zip(index, x.aval.shape)))
    return (yield x, in_idx)


index_maps: dict = {
    st.squeeze_p: _squeeze,
    st.rev_p: _rev,
    base.broadcast_in_dim_p: _broadcast_in_dim,
    st.iota_p: _iota,
    base.transpose_p: _transpose,
    base.reshape_p: _reshape,
    st.slice_p: _slice,
    st.pad_p: _pad,
    st.concatenate_p: _concatenate,
}


# --- kernels ------------------------------------------------------------------------------------


def _loops(shape: tuple[int, ...], body_fn: Callable, b: KernelBuilder) -> list[ir.Stmt]:
    """Nested loops over ``shape`` (the outermost one parallel) around ``body_fn(index)``."""
    if not shape:
        b.push()
        body_fn(())
        return b.pop()
    if len(shape) > 2 and shape[0] < 64:
        # Too few rows to share between threads: run the leading two dimensions as one.
        lead = shape[0] * shape[1]
        b.push()
        flat = ir.Sym("i0", ir.INDEX)
        i0, i1 = ir.idiv(flat, shape[1]), ir.imod(flat, shape[1])
        inner = _inner_loops(shape[2:], lambda rest: body_fn((i0, i1) + rest), b, start=2)
        for s in inner:
            b.emit(s)
        return [ir.Loop("i0", lead, tuple(b.pop()), parallel=True)]
    b.push()
    first = ir.Sym("i0", ir.INDEX)
    for s in _inner_loops(shape[1:], lambda rest: body_fn((first,) + rest), b, start=1):
        b.emit(s)
    return [ir.Loop("i0", shape[0], tuple(b.pop()), parallel=True)]


def _inner_loops(shape, body_fn, b: KernelBuilder, start: int) -> list[ir.Stmt]:
    if not shape:
        b.push()
        body_fn(())
        return b.pop()
    var = f"i{start}"
    b.push()
    for s in _inner_loops(shape[1:], lambda rest: body_fn((ir.Sym(var, ir.INDEX),) + rest), b,
                          start + 1):
        b.emit(s)
    return [ir.Loop(var, shape[0], tuple(b.pop()))]


VECTOR_WIDTH = 4
VECTOR_MIN_EXTENT = 4096


def elementwise_kernel(group: FusionGroup, name: str, inputs, outputs) -> ir.Kernel:
    """One pass over the group's iteration space storing every output."""
    b = KernelBuilder(group, name, inputs, outputs)
    b.hoist_scalars = True
    space = outputs[0].aval.shape
    if any(v.aval.shape != space for v in outputs):
        raise AssertionError(f"codegen: {group.label()} stores outputs of different shapes "
                             f"{[v.aval.shape for v in outputs]} from one iteration space")
    if is_flat(group, space):
        # Pure elementwise over same-shaped operands: one flat loop, contiguous and vectorizable.
        n = math.prod(space)
        b.flat = True
        b.push()
        b.store_all(outputs, (ir.Sym("i0", ir.INDEX),))
        # Wide (e.g. float4) accesses pay off on large flat loops; tiny ones stay compact.
        vector = VECTOR_WIDTH if n >= VECTOR_MIN_EXTENT else 1
        body = [ir.Loop("i0", n, tuple(b.pop()), parallel=True, vector=vector)]
    else:
        tail = _reshape_tail(group, outputs)
        if tail is None:
            body = _loops(space, lambda idx: b.store_all(outputs, idx), b)
        else:
            # The outputs are row-major reshapes (a flatten after a pooling window, say) of
            # values of one shape: iterate in that shape and store at the same linear
            # positions, so that the window's loads stay affine in the loop variables
            # (iterating the flat shape delinearized every load's index, with divisions).
            shape = next(iter(tail.values())).aval.shape
            body = _loops(shape, lambda idx: _store_reshaped(b, outputs, tail, idx, shape), b)
    return ir.Kernel(name, b.params(), tuple(b.top.stmts + body), work=math.prod(space))


def _reshape_tail(group: FusionGroup, outputs) -> dict | None:
    """``{output: its reshape's operand}`` when every output is a plain reshape, consumed by
    nothing else in the group, of a value computed in the group, all of one other shape."""
    made = {o: e for e in group.eqns for o in e.outvars}
    read = {v for e in group.eqns for v in e.invars if isinstance(v, Var)}
    tail = {}
    for v in outputs:
        e = made.get(v)
        if (e is None or e.primitive is not base.reshape_p or e.params.get("dimensions")
                is not None or v in read or not isinstance(e.invars[0], Var)
                or e.invars[0] not in made):
            return None
        tail[v] = e.invars[0]
    shapes = {u.aval.shape for u in tail.values()}
    if len(shapes) != 1 or outputs[0].aval.shape in shapes:
        return None
    return tail


def _store_reshaped(b: KernelBuilder, outputs, tail: dict, index, shape) -> None:
    """Store each output's operand at ``index`` of ``shape``, the same linear position."""
    vals = []
    for v in outputs:
        val, dt = b.value(tail[v], index), v.aval.dtype
        if dt in _HALF:
            val = ir.Op("store_half", (val,), dt)
        elif val.dtype != dt:
            val = ir.Op("cast", (val,), dt)
        vals.append(val)
    for v, val in zip(outputs, vals, strict=True):
        b.emit(ir.Store(b.out_param[v], ir.linearize(index, shape), val))


def is_flat(group: FusionGroup, space) -> bool:
    prims = {e.primitive for e in group.eqns}
    if any(p not in scalar_rules for p in prims):
        return False
    return all(
        not getattr(v, "aval", None) or v.aval.shape in ((), space)
        for e in group.eqns for v in (*e.invars, *e.outvars)
    )


def reduction_kernel(group: FusionGroup, name: str, inputs, outputs) -> ir.Kernel:
    """Per output row: each reduction as a loop over the reduced axes, then the row's
    input-space outputs; output-space values are scalars of the row."""
    b = KernelBuilder(group, name, inputs, outputs)
    b.hoist_scalars = True
    in_shape, axes, out_shape = group.in_shape, group.axes, group.out_shape
    red_shape = tuple(in_shape[a] for a in axes)
    n_out = math.prod(out_shape)

    def full_index(o_idx, r_idx):
        it_o, it_r = iter(o_idx), iter(r_idx)
        return tuple(next(it_r) if d in axes else next(it_o) for d in range(len(in_shape)))

    # When the innermost input axis is reduced, a row is contiguous: lanes can share it
    # (coalesced on GPUs). Otherwise adjacent outputs are adjacent in memory: one lane each.
    b.cooperative = bool(in_shape) and (len(in_shape) - 1) in axes
    b.push()
    o = ir.Sym("o", ir.INDEX)
    o_idx = ir.delinearize(o, out_shape) if out_shape else ()
    for k, eqn in enumerate(e for e in group.eqns if e.primitive in reduction_prims):
        _emit_reduction(b, eqn, k, o_idx, red_shape, full_index)
    for v in outputs:
        if v.aval.shape == out_shape:
            b.store(v, o_idx, out_shape, leader_only=b.cooperative)
    in_space = [v for v in outputs if v.aval.shape == in_shape and in_shape != out_shape]
    if in_space:
        for s in _reduce_loops(b, red_shape, lambda r: [b.store(v, full_index(o_idx, r),
                                                                in_shape) for v in in_space]):
            b.emit(s)
    body = b.pop()
    # A column reduction (the innermost input axis kept, as in a bias gradient): adjacent
    # outputs read adjacent memory, so the loop over outputs vectorizes with a lane per output
    # (each lane sums its column in the same order as before), where one output at a time
    # strode through the whole input.
    columns = not b.cooperative and bool(in_shape) and in_shape[-1] > 1
    loop = ir.Loop("o", n_out, tuple(body), parallel=True, lanes=32 if b.cooperative else 1,
                   simd_iterations=columns)
    return ir.Kernel(name, b.params(), (*b.top.stmts, loop), work=math.prod(in_shape))


def _reduce_loops(b: KernelBuilder, red_shape, body_fn, reductions=()) -> list[ir.Stmt]:
    def rec(k, idx):
        if k == len(red_shape):
            body_fn(tuple(idx))
            return
        var = f"r{k}"
        b.push()
        rec(k + 1, idx + [ir.Sym(var, ir.INDEX)])
        inner = b.pop()
        innermost = k == len(red_shape) - 1
        coop = b.cooperative and innermost
        b.emit(ir.Loop(var, red_shape[k], tuple(inner), cooperative=coop,
                       reductions=tuple(reductions) if coop else ()))

    b.push()
    rec(0, [])
    return b.pop()


def _all_ones(dt):
    dt = np.dtype(dt)
    if dt == dtypes.bool_:
        return 1
    return int(np.iinfo(dt).max) if dt.kind == "u" else -1


_INIT = {
    "add": lambda dt: 0, "mul": lambda dt: 1,
    "max": lambda dt: -np.inf if dtypes.is_float(dt) else (0 if dt == dtypes.bool_ else
                                                            np.iinfo(dt).min),
    "min": lambda dt: np.inf if dtypes.is_float(dt) else (1 if dt == dtypes.bool_ else
                                                           np.iinfo(dt).max),
    "and": _all_ones, "or": lambda dt: 0,
}


def _emit_reduction(b: KernelBuilder, eqn: JaxprEqn, k: int, o_idx, red_shape, full_index):
    combine = reduction_prims[eqn.primitive]
    x = eqn.invars[0]
    out = eqn.outvars[0]
    acc = f"acc{k}"
    if combine in ("argmax", "argmin"):
        val_dt = compute_dtype(x.aval.dtype)
        best = f"best{k}"
        init = -np.inf if combine == "argmax" else np.inf
        if not dtypes.is_float(x.aval.dtype):
            info = np.iinfo(x.aval.dtype) if x.aval.dtype != dtypes.bool_ else None
            init = (info.min if combine == "argmax" else info.max) if info else (
                0 if combine == "argmax" else 1)
        idx_dt = np.dtype(eqn.params["index_dtype"])
        b.emit(ir.Decl(best, val_dt, ir.Const(init, val_dt)))
        b.emit(ir.Decl(acc, idx_dt, ir.Const(-1, idx_dt)))

        def body(r_idx):
            v = b.value(x, full_index(o_idx, r_idx))
            pos = ir.linearize(r_idx, red_shape)
            better = ir.Op("gt" if combine == "argmax" else "lt", (v, ir.Sym(best, val_dt)),
                           dtypes.bool_)
            first = ir.Op("lt", (ir.Sym(acc, idx_dt), ir.Const(0, idx_dt)), dtypes.bool_)
            if dtypes.is_float(x.aval.dtype):
                is_nan = ir.Op("ne", (v, v), dtypes.bool_)
                best_nan = ir.Op("ne", (ir.Sym(best, val_dt), ir.Sym(best, val_dt)), dtypes.bool_)
                better = ir.Op("or", (ir.Op("and", (better, ir.Op("not", (best_nan,),
                                                                   dtypes.bool_)), dtypes.bool_),
                                      ir.Op("and", (is_nan, ir.Op("not", (best_nan,),
                                                                  dtypes.bool_)), dtypes.bool_)),
                               dtypes.bool_)
            take = ir.Op("or", (better, first), dtypes.bool_)
            t = b.let(take)
            b.emit(ir.Assign(best, ir.Op("select", (t, v, ir.Sym(best, val_dt)), val_dt)))
            b.emit(ir.Assign(acc, ir.Op("select", (t, ir.Op("cast", (pos,), idx_dt),
                                                   ir.Sym(acc, idx_dt)), idx_dt)))

        for s in _reduce_loops(b, red_shape, body):
            b.emit(s)
        if b.cooperative:
            b.emit(ir.Combine(best, combine, val_dt, acc, idx_dt))
        b.externals[(out, o_idx)] = ir.Op("max", (ir.Sym(acc, idx_dt), ir.Const(0, idx_dt)),
                                          idx_dt)
        return
    dt = compute_dtype(out.aval.dtype)
    acc_dt = dtypes.float64 if dt == dtypes.float32 and combine == "add" else dt
    b.emit(ir.Decl(acc, acc_dt, ir.Const(_INIT[combine](out.aval.dtype), acc_dt)))

    def body(r_idx):
        v = b.value(x, full_index(o_idx, r_idx))
        if acc_dt != v.dtype:
            v = ir.Op("cast", (v,), acc_dt)
        b.emit(ir.Assign(acc, ir.Op(combine, (ir.Sym(acc, acc_dt), v), acc_dt)))

    for s in _reduce_loops(b, red_shape, body, [(acc, combine)]):
        b.emit(s)
    if b.cooperative:
        b.emit(ir.Combine(acc, combine, acc_dt))
    result = ir.Sym(acc, acc_dt)
    if acc_dt != dt:
        result = ir.Op("cast", (result,), dt)
    b.externals[(out, o_idx)] = b.let(result)


KERNEL_BUILDERS = {
    GroupKind.ELEMENTWISE: elementwise_kernel,
    GroupKind.REDUCTION: reduction_kernel,
}
