"""A sparse × dense matmul for constant sparse weights: CSR storage, a generated kernel.

Takes the closed jaxpr ``lower`` is given; returns it with each ``dot_general`` whose weight
operand is a compile-time constant (a constvar: a closed-over or frozen weight, see
``fx.export.freeze``) sparser than :data:`DENSITY_THRESHOLD` replaced by ``csr_dot``, whose
weight operands are the weight's nonzeros in CSR form (new constvars). Only the plain layer
product qualifies: ``x @ W`` with ``x`` 2-D ``(M, K)`` (either layout), ``W`` 2-D stored
``(K, N)`` or ``(N, K)``, one contracting dimension, no batch dimensions, one dtype (float32,
float64, int32 or int64) and no other ``preferred_element_type``.

The CSR matrix is ``W`` transposed, ``(N, K)``: row ``n`` lists the nonzero ``W[k, n]`` by
increasing ``k`` (``indptr`` int32 ``(N + 1,)``, ``indices`` int32 and ``data`` of the dtype,
both padded with ``max_row`` zeros so that a row's last iterations read in bounds). The kernel
(loop IR, rendered by every dialect) computes ``y[m, n] = sum_j data[p + j] * x[m,
indices[p + j]]`` over the ``j < indptr[n+1] - indptr[n]`` nonzeros of row ``n`` in tiles of
MR rows of ``x``: one output column per parallel iteration, or, from 16 rows of ``x`` on, one
tile of up to 8 rows per parallel iteration over every column (the tile's rows of ``x`` stay
in cache while the nonzeros stream past). A row runs ``min_row`` iterations (the shortest
row's count) unguarded, then up to ``max_row`` guarded ones, whose iterations past its end add
nothing: a select, not a multiply by zero, so a non-finite ``x`` next to a pruned weight stays
out, where the dense product would give NaN. Both counts are constants of the kernel. The
group's elementwise epilogue (bias, activation) is generated after each tile.

Summation order: each output sums only its nonzero products, in increasing ``k``, one at a
time; the dense product sums all ``K`` products in BLAS's blocked order. Float results agree
to rounding (about ``nnz_row * eps * max|w x|``), not bitwise; integer results are exact
(wrapping arithmetic is associative, and the skipped products are zero).
"""

from __future__ import annotations

import os

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, Tracer
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from fx.lax import linalg
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.kernel_builder import KernelBuilder
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.fusion.primitive_rules import Pattern, patterns
from fx.lowering.select.cost import flops_rules

# A constant weight with at most this fraction of its elements nonzero (rounded to a count)
# is multiplied in CSR form (FX_SPARSE_DENSITY overrides it; 0 turns the rewrite off). At 10%
# density the kernel beats BLAS on one core; see bench/README.md, "Sparsity".
DENSITY_THRESHOLD = float(os.environ.get("FX_SPARSE_DENSITY", "0.1"))
MR = 4  # rows of x per tile (independent accumulators per column)
# From WIDE_M rows of x on, the parallel loop runs over tiles of up to MR_WIDE rows.
WIDE_M, MR_WIDE = 16, 8
SPARSE_DTYPES = frozenset([dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64])

# csr_dot(x, data, indices, indptr): x (M, K) times the CSR (N, K) matrix's transpose, (M, N).
# params: n (N), max_row and min_row (the longest and shortest rows' nonzeros), x_contract
# (x's contracting dimension),
# density (of the original weight, for as_text). It exists only inside lowered programs:
# sparsify makes it after every transformation ran, so it has no jvp, transpose or batching
# rules (fx.lowering is not part of the traced API).
csr_dot_p = Primitive("csr_dot")


@csr_dot_p.def_abstract_eval
def _csr_dot_abstract_eval(x, data, indices, indptr, *, n, max_row, min_row, x_contract,
                            density):
    if x.ndim != 2 or data.dtype != x.dtype or indices.dtype != dtypes.int32 \
            or indptr.shape != (n + 1,):
        raise TypeError(f"csr_dot: needs x (M, K) with data of its dtype, int32 indices and "
                        f"indptr of N+1 = {n + 1} entries; got x {x.str_short()}, data "
                        f"{data.str_short()}, indices {indices.str_short()}, indptr "
                        f"{indptr.str_short()}")
    return ShapedArray((x.shape[1 - x_contract], n), x.dtype)


@csr_dot_p.def_impl
def _csr_dot_impl(x, data, indices, indptr, *, n, max_row, min_row, x_contract, density):
    import scipy.sparse

    x = np.asarray(x)
    x = x if x_contract == 1 else x.T
    nnz = int(indptr[-1])
    wt = scipy.sparse.csr_matrix((data[:nnz], indices[:nnz], indptr), shape=(n, x.shape[1]))
    return np.ascontiguousarray((wt @ x.T).T).astype(x.dtype, copy=False)


patterns[csr_dot_p] = Pattern.OUT_ELEMENTWISE_FUSABLE  # its epilogue fuses like a GEMM's
flops_rules[csr_dot_p] = lambda e: 2.0 * e.invars[0].aval.shape[1 - e.params["x_contract"]] \
    * int(e.invars[1].aval.size - e.params["max_row"])


def _weight_operand(eqn: JaxprEqn, consts: dict) -> tuple[int, np.ndarray] | None:
    """``(rc, W)`` when ``eqn`` is a layer product ``x @ W`` with ``W`` a sparse constant."""
    if eqn.primitive is not linalg.dot_general_p:
        return None
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    x, w = eqn.invars
    if not isinstance(w, Var) or w not in consts or not isinstance(x, Var):
        return None
    pet = eqn.params.get("preferred_element_type")
    if (x.aval.ndim != 2 or w.aval.ndim != 2 or len(lc) != 1 or lb
            or x.aval.dtype != w.aval.dtype or x.aval.dtype not in SPARSE_DTYPES
            or (pet is not None and np.dtype(pet) != x.aval.dtype) or not w.aval.size):
        return None
    value = np.asarray(consts[w])
    if np.count_nonzero(value) > round(DENSITY_THRESHOLD * value.size):
        return None
    return rc[0], value


def to_csr(wt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """``(data, indices, indptr, max_row, min_row)`` of a 2-D array, rows in order, columns
    ascending; data and indices padded with ``max_row`` zeros (the kernel's last iterations
    read them); the longest and shortest rows' nonzeros."""
    rows, cols = np.nonzero(wt)
    counts = np.bincount(rows, minlength=wt.shape[0])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    max_row = max(int(counts.max(initial=0)), 1)
    data = np.concatenate([wt[rows, cols], np.zeros(max_row, wt.dtype)])
    indices = np.concatenate([cols, np.zeros(max_row, cols.dtype)]).astype(np.int32)
    return data, indices, indptr, max_row, int(counts.min(initial=0))


def sparsify(closed: ClosedJaxpr, const_values: tuple = ()) -> ClosedJaxpr:
    """``closed`` with its products by sparse constant weights as ``csr_dot`` (see the module
    docstring): the weights are its constvars and its first ``len(const_values)`` inputs,
    whose values those are (a jit's hoisted constants, which its caller keeps passing). The
    CSR arrays become constvars; dense constvars no other equation reads are dropped."""
    j = closed.jaxpr
    consts = {v: c for v, c in zip(j.constvars, closed.consts) if not isinstance(c, Tracer)}
    consts.update((v, c) for v, c in zip(j.invars, const_values) if not isinstance(c, Tracer))
    if not consts or DENSITY_THRESHOLD <= 0:
        return closed
    constvars, values, eqns = list(j.constvars), list(closed.consts), []
    changed = False
    for eqn in j.eqns:
        found = _weight_operand(eqn, consts)
        if found is None:
            eqns.append(eqn)
            continue
        rc, w = found
        wt = w.T if rc == 0 else w
        data, indices, indptr, max_row, min_row = to_csr(wt)
        new = [Var(ShapedArray(a.shape, a.dtype)) for a in (data, indices, indptr)]
        constvars += new
        values += [data, indices, indptr]
        (lc, _), _ = eqn.params["dimension_numbers"]
        params = dict(n=wt.shape[0], max_row=max_row, min_row=min_row, x_contract=lc[0],
                      density=round(float(np.count_nonzero(w)) / w.size, 4))
        eqns.append(eqn.replace(primitive=csr_dot_p, invars=[eqn.invars[0], *new],
                                params=params))
        changed = True
    if not changed:
        return closed
    read = {v for e in eqns for v in e.invars if isinstance(v, Var)} | {
        v for v in j.outvars if isinstance(v, Var)}
    keep = [i for i, v in enumerate(constvars) if v in read]
    return ClosedJaxpr(Jaxpr([constvars[i] for i in keep], j.invars, j.outvars, eqns),
                       [values[i] for i in keep])


def applies(g: FusionGroup) -> bool:
    return g.kind is GroupKind.GEMM and not g.prologue and g.anchor.primitive is csr_dot_p


def describe(g: FusionGroup) -> str:
    e = g.anchor
    m = e.outvars[0].aval.shape[0]
    nnz = e.invars[1].aval.size - e.params["max_row"]
    return (f"CSR x dense (constant weight {e.params['density']:.1%} dense <= "
            f"{DENSITY_THRESHOLD:.0%}), M={m} N={e.params['n']} nnz={nnz} "
            f"rows<={e.params['max_row']}")


def cost(g: FusionGroup) -> float:
    # ~1 ns per guarded multiply-add on one core (measured in bench_sparsity), a call's overhead.
    e = g.anchor
    m = e.outvars[0].aval.shape[0]
    return 2000.0 + m * e.params["n"] * e.params["max_row"] + e.outvars[0].aval.size


def gemm_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]) -> ir.Kernel:
    dot = group.anchor
    x, data, indices, indptr = dot.invars
    n_out, max_row, xc = dot.params["n"], dot.params["max_row"], dot.params["x_contract"]
    M, K = x.aval.shape[1 - xc], x.aval.shape[xc]
    x_sm, x_sk = (K, 1) if xc == 1 else (1, M)
    dt = x.aval.dtype

    epi = FusionGroup(GroupKind.ELEMENTWISE, group.epilogue, group.id)
    b = KernelBuilder(epi, name, inputs, outputs)
    xb, db, ib, pb = (b.param_of[v] for v in (x, data, indices, indptr))
    nv, j = ir.Sym("n", ir.INDEX), ir.Sym("j", ir.INDEX)
    row_start = ir.Op("cast", (ir.Load(pb, nv, dtypes.int32),), ir.INDEX)
    row_end = ir.Op("cast", (ir.Load(pb, ir.iadd(nv, ir.const_index(1)), dtypes.int32),),
                    ir.INDEX)
    zero = ir.Const(0, dt)
    body: list[ir.Stmt] = [ir.Let("p0", row_start),
                           ir.Let("len", ir.isub(row_end, ir.Sym("p0", ir.INDEX)))]
    min_row = dot.params["min_row"]

    def steps(m0: ir.Expr, acc: list[str], first: int, count: int, guarded: bool) -> ir.Loop:
        """The loop over nonzeros ``first .. first + count`` of the row (guarded: the row may
        end before ``count``)."""
        jj = ir.iadd(j, ir.const_index(first))
        e = ir.iadd(ir.Sym("p0", ir.INDEX), jj)
        inner: list[ir.Stmt] = [
            ir.Let("v", ir.Load(db, e, dt)),
            ir.Let("c", ir.Op("cast", (ir.Load(ib, e, dtypes.int32),), ir.INDEX))]
        if guarded:
            inner.append(ir.Let("ok", ir.Op("lt", (jj, ir.Sym("len", ir.INDEX)), ir.BOOL)))
        for i, a in enumerate(acc):
            at = ir.iadd(ir.imul(ir.iadd(m0, ir.const_index(i)), ir.const_index(x_sm)),
                         ir.imul(ir.Sym("c", ir.INDEX), ir.const_index(x_sk)))
            prod = ir.Op("mul", (ir.Sym("v", dt), ir.Load(xb, at, dt)), dt)
            if guarded:
                prod = ir.Op("select", (ir.Sym("ok", ir.BOOL), prod, zero), dt)
            inner.append(ir.Assign(a, ir.Op("add", (ir.Sym(a, dt), prod), dt)))
        return ir.Loop("j", count, tuple(inner))

    def tile(m0: ir.Expr, mr: int) -> list[ir.Stmt]:
        acc = [f"s{i}" for i in range(mr)]
        stmts: list[ir.Stmt] = [ir.Decl(a, dt, zero) for a in acc]
        # Every row has min_row nonzeros: those iterations need no guard.
        if min_row:
            stmts.append(steps(m0, acc, 0, min_row, False))
        if max_row > min_row:
            stmts.append(steps(m0, acc, min_row, max_row - min_row, True))
        b.push()
        for i, a in enumerate(acc):
            at = (ir.iadd(m0, ir.const_index(i)), nv)
            b.externals[(dot.outvars[0], at)] = ir.Sym(a, dt)
            b.store_all(outputs, at)
        return stmts + b.pop()

    mt = ir.Sym("mt", ir.INDEX)
    mr = next(d for d in (MR_WIDE, MR, 2, 1) if M % d == 0)
    if M >= WIDE_M:
        # Row tiles outside, columns inside: a tile's rows of x stay in cache while every
        # column's nonzeros stream past (by columns, x would be read from memory per column).
        body.extend(tile(ir.imul(mt, ir.const_index(mr)), mr))
        inner = ir.Loop("n", n_out, tuple(body))
        loop = ir.Loop("mt", M // mr, (inner,), parallel=True)
    else:
        if M >= MR:
            body.append(ir.Loop("mt", M // MR, tuple(tile(ir.imul(mt, ir.const_index(MR)),
                                                          MR))))
        if M % MR:
            body += tile(ir.const_index(M - M % MR), M % MR)
        loop = ir.Loop("n", n_out, tuple(body), parallel=True)
    nnz = data.aval.size - max_row
    return ir.Kernel(name, b.params(), (loop,), work=max(M, 1) * max(nnz, 1))

