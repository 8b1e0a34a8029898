"""The kernel builder: the values of a fusion group, element by element, as kernel IR (the
loop nests around them are ``loop_kernels``'; hand-written kernel families build their
epilogues with it too).

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

import inspect
import itertools
from collections.abc import Generator

from fx import dtypes
from fx.jaxpr import JaxprEqn, Literal, Var
from fx.lax import base
from fx.lax import structural as st
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.fusion.groups import FusionGroup
from fx.lowering.fusion.primitive_rules import compute_dtype, scalar_rules

# Stored as 16 bits, computed in float32.
HALF = (dtypes.float16, dtypes.bfloat16)
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
        if dt in HALF:
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
            # Only a generator map can be a pure remap. The others (iota, the pooling maps)
            # compute their value when called, emitting its reads at ``index``: not
            # called here, where ``index`` may be out of bounds.
            if mapper is None or not inspect.isgeneratorfunction(mapper):
                return None
            gen = mapper(self, eqn, index)
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
            if dt in HALF:
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
