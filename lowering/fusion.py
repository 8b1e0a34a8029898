"""Fusion: partition a jaxpr's equations into kernels, following the op-pattern lattice.

Groups (each becomes one kernel, or one library call plus its epilogue):

- ELEMENTWISE: elementwise, broadcast and injective equations over one iteration space. Index
  maps (broadcast, transpose, reshape, slice, pad, concatenate) become index arithmetic.
- REDUCTION: reductions over the same input space and axes, with elementwise producers in the
  input space (a prologue), elementwise consumers in the output space (an epilogue), and
  input-space consumers of broadcast results — so softmax and logsumexp are one kernel.
- GEMM: a matmul (or convolution) and the elementwise consumers of its output (bias, activation).
- OPAQUE: one equation run on its own.

A value is fused into its consumer when it has no other consumer; cheap broadcasts (of scalars
and iota) are recomputed in every consumer instead of being materialized. Merges that would
make the group graph cyclic are refused. Values read outside their group (or returned) are the
group's outputs and get buffers.
"""

from __future__ import annotations

import enum
import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var, has_effects
from fx.lax import base
from fx.lowering.scalar_ops import Pattern, cheap_prims, pattern_of, reduction_combine


class GroupKind(enum.Enum):
    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    GEMM = "gemm"
    OPAQUE = "opaque"


@dataclass(eq=False)
class FusionGroup:
    kind: GroupKind
    eqns: list[JaxprEqn]
    id: int
    inputs: list[Var] = field(default_factory=list)
    outputs: list[Var] = field(default_factory=list)
    # REDUCTION groups: the input space, the reduced axes and the output space.
    in_shape: tuple[int, ...] = ()
    axes: tuple[int, ...] = ()

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(d for i, d in enumerate(self.in_shape) if i not in self.axes)

    @property
    def root(self) -> JaxprEqn:
        return self.eqns[-1]

    @property
    def anchor(self) -> JaxprEqn:
        """A GEMM group's matmul/convolution (reshape/transpose prologue before it, elementwise
        epilogue after it)."""
        return next(e for e in self.eqns if pattern_of(e.primitive) is
                    Pattern.OUT_ELEMENTWISE_FUSABLE)

    @property
    def prologue(self) -> list[JaxprEqn]:
        """The equations computing the anchor's operands (reshapes/transposes: views)."""
        anchor = self.anchor
        needed = {v for v in anchor.invars if isinstance(v, Var)}
        out = []
        for e in reversed(self.eqns[:self.eqns.index(anchor)]):
            if any(v in needed for v in e.outvars):
                out.append(e)
                needed.update(v for v in e.invars if isinstance(v, Var))
        return out[::-1]

    @property
    def epilogue(self) -> list[JaxprEqn]:
        """Everything else: elementwise work over the product (and values it combines with)."""
        skip = {id(e) for e in self.prologue} | {id(self.anchor)}
        return [e for e in self.eqns if id(e) not in skip]

    def produced(self) -> set[Var]:
        return {v for e in self.eqns for v in e.outvars}

    def label(self) -> str:
        names = [e.primitive.name for e in self.eqns]
        return f"{self.kind.value}[{', '.join(names)}]"


reduction_prims = reduction_combine  # the primitives that anchor a REDUCTION group


_MAX_RECOMPUTE = 8
_VIEW_PRIMS = {base.reshape_p, base.transpose_p}


def _is_cheap(eqn: JaxprEqn) -> bool:
    """Broadcasts of scalars and iotas: recomputing them beats reading them from memory."""
    if pattern_of(eqn.primitive) is not Pattern.BROADCAST:
        return False
    return all(isinstance(v, Literal) or not v.aval.shape for v in eqn.invars)


def _recomputable(g: FusionGroup) -> bool:
    """A small elementwise group of cheap operations: each consumer recomputes it."""
    return g.kind is GroupKind.ELEMENTWISE and len(g.eqns) <= _MAX_RECOMPUTE and all(
        e.primitive in cheap_prims or pattern_of(e.primitive) in (Pattern.BROADCAST,
                                                                    Pattern.INJECTIVE)
        for e in g.eqns
    )


def fuse(jaxpr: Jaxpr) -> list[FusionGroup]:
    """Partition ``jaxpr``'s equations into fusion groups, in a valid execution order."""
    uses: dict[Var, int] = defaultdict(int)
    for eqn in jaxpr.eqns:
        for v in eqn.invars:
            if isinstance(v, Var):
                uses[v] += 1
    for v in jaxpr.outvars:
        if isinstance(v, Var):
            uses[v] += 1

    ids = itertools.count()
    group_of: dict[Var, FusionGroup] = {}
    deps: dict[FusionGroup, set[FusionGroup]] = {}
    alive: list[FusionGroup] = []

    def new_group(kind, eqns, **kw) -> FusionGroup:
        g = FusionGroup(kind, list(eqns), next(ids), **kw)
        deps[g] = set()
        alive.append(g)
        return g

    def ancestors(g: FusionGroup) -> set[FusionGroup]:
        seen, stack = set(), [g]
        while stack:
            for d in deps[stack.pop()]:
                if d not in seen:
                    seen.add(d)
                    stack.append(d)
        return seen

    def absorb(target: FusionGroup, src: FusionGroup):
        target.eqns = src.eqns + target.eqns
        for e in src.eqns:
            for v in e.outvars:
                if group_of.get(v) is src:  # not recomputed copies: they stay with their owner
                    group_of[v] = target
        deps[target] |= deps.pop(src) - {target}
        for d in deps.values():
            if src in d:
                d.discard(src)
                d.add(target)
        deps[target].discard(target)
        alive.remove(src)

    def creates_cycle(members: set[FusionGroup], reads: set[FusionGroup]) -> bool:
        """Would one group made of ``members`` and reading ``reads`` be on a cycle? (Some
        group it reads from outside depends on one of the members.)"""
        return any(x not in members and (ancestors(x) & members) for x in reads)

    def read_groups(eqn) -> set[FusionGroup]:
        return {group_of[v] for v in eqn.invars if isinstance(v, Var) and v in group_of}

    def space(g: FusionGroup) -> tuple[int, ...]:
        return g.root.outvars[0].aval.shape

    for eqn in jaxpr.eqns:
        pat = pattern_of(eqn.primitive)
        producers = read_groups(eqn)
        if pat <= Pattern.INJECTIVE and not eqn.primitive.multiple_results:
            out_shape = eqn.outvars[0].aval.shape
            merge, dup_groups = [], []
            for v in eqn.invars:
                if not isinstance(v, Var) or v not in group_of:
                    continue
                g = group_of[v]
                if g.kind is GroupKind.OPAQUE:
                    continue
                if uses[v] > 1 and ((len(g.eqns) == 1 and _is_cheap(g.eqns[0]))
                                    or _recomputable(g)):
                    if g not in dup_groups:
                        dup_groups.append(g)
                    continue
                if uses[v] != 1 or not _joinable(g, v, eqn, out_shape):
                    continue
                if g.kind is GroupKind.ELEMENTWISE and not _outputs_fit(g, v, uses, out_shape):
                    continue
                if g not in merge:
                    merge.append(g)
            # At most one non-elementwise group may absorb this equation.
            special = [g for g in merge if g.kind is not GroupKind.ELEMENTWISE]
            if len(special) > 1:
                merge = [g for g in merge if g.kind is GroupKind.ELEMENTWISE] + special[:1]
            host = next((g for g in merge if g.kind is not GroupKind.ELEMENTWISE), None)
            if host is None and merge:
                host = merge[0]
            # Grow the merged set one candidate at a time, refusing any candidate (merged or
            # recomputed) that would close a cycle through a group outside the set.
            members: set[FusionGroup] = {host} if host is not None else set()
            reads: set[FusionGroup] = set(producers)
            for g in merge:
                if g is not host and not _tied_reads_ok(host, g.eqns):
                    continue
                if g is host or not creates_cycle(members | {g}, reads | deps[g]):
                    members.add(g)
                    reads |= deps[g]
            dup = []
            for g in dup_groups:
                g_reads = {q for e in g.eqns for q in read_groups(e)}
                if host is not None and not _tied_reads_ok(host, g.eqns):
                    continue
                if not creates_cycle(members, reads | g_reads):
                    reads |= g_reads
                    dup.extend(e for e in g.eqns if e not in dup)
            if creates_cycle(members, reads):
                members, dup = set(), []  # nothing merges: a fresh group reads everything
            if host not in members:
                host = next(iter(members), None)
            if host is None:
                host = new_group(GroupKind.ELEMENTWISE, [])
            for g in [g for g in merge if g in members]:
                if g is not host:
                    absorb(host, g)
            host.eqns.extend(e for e in dup if e not in host.eqns)
            host.eqns.append(eqn)
            for v in eqn.outvars:
                group_of[v] = host
            for e in (*dup, eqn):
                deps[host] |= {g for g in read_groups(e) if g is not host}
            if host.kind is GroupKind.REDUCTION and out_shape not in (host.in_shape,
                                                                         host.out_shape):
                raise AssertionError("fusion put an equation outside its group's spaces")
        elif eqn.primitive in reduction_prims:
            (x,) = [v for v in eqn.invars][:1]
            in_shape, axes = x.aval.shape, tuple(eqn.params["axes"])
            g = group_of.get(x) if isinstance(x, Var) else None
            if g is not None and g.kind is GroupKind.REDUCTION and g.in_shape == in_shape \
                    and g.axes == axes and x in g.produced():
                host = g  # a further reduction over the same rows (softmax's sum after max)
            else:
                host = new_group(GroupKind.REDUCTION, [], in_shape=in_shape, axes=axes)
                if (g is not None and g.kind is GroupKind.ELEMENTWISE and uses[x] == 1
                        and space(g) == in_shape and all(space_ok(g, in_shape))):
                    absorb(host, g)  # the prologue
            host.eqns.append(eqn)
            for v in eqn.outvars:
                group_of[v] = host
            deps[host] |= {g for g in read_groups(eqn) if g is not host}
        else:
            kind = GroupKind.GEMM if pat is Pattern.OUT_ELEMENTWISE_FUSABLE else GroupKind.OPAQUE
            g = new_group(kind, [eqn])
            for v in eqn.outvars:
                group_of[v] = g
            deps[g] |= {p for p in producers}
            if kind is GroupKind.GEMM:
                # Reshapes/transposes of an operand become views the library call reads.
                for v in eqn.invars:
                    p = group_of.get(v) if isinstance(v, Var) else None
                    if (p is not None and p is not g and uses[v] == 1
                            and all(e.primitive in _VIEW_PRIMS for e in p.eqns)
                            and not creates_cycle({g, p}, deps[g] | deps[p])):
                        absorb(g, p)

    _prune_unread(alive, deps, jaxpr)
    _recompute_deps(alive, deps, group_of)
    _merge_single_consumer_producers(alive, deps, group_of, jaxpr, absorb, creates_cycle)
    _merge_siblings(alive, deps, group_of, jaxpr, absorb, creates_cycle)
    position = {id(e): i for i, e in enumerate(jaxpr.eqns)}
    for g in alive:  # merges prepend and recomputation copies: program order, each once
        g.eqns = sorted({id(e): e for e in g.eqns}.values(), key=lambda e: position[id(e)])
    groups = _order(alive, deps)
    _assign_io(groups, jaxpr, group_of)
    return [g for g in groups if g.outputs or any(_effectful(e) for e in g.eqns)]


def _prune_unread(alive, deps, jaxpr) -> None:
    """Drop groups none of whose values is read from them: everything they compute was
    recomputed by its consumers."""
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}
    while True:
        needed: set[Var] = set(returned)
        for g in alive:
            local = g.produced()
            needed.update(v for e in g.eqns for v in e.invars
                          if isinstance(v, Var) and v not in local)
        dead = [g for g in alive if not (g.produced() & needed)
                and not any(_effectful(e) for e in g.eqns)]
        if not dead:
            return
        for g in dead:
            alive.remove(g)
            deps.pop(g, None)
        for d in deps.values():
            d.difference_update(dead)


def _recompute_deps(alive, deps, group_of) -> None:
    """Group dependencies from what each group actually reads: a value computed outside a
    group comes from its producing group (``group_of``; recomputed copies are local)."""
    for g in alive:
        local = g.produced()
        deps[g] = {group_of[v] for e in g.eqns for v in e.invars
                   if isinstance(v, Var) and v not in local and v in group_of
                   and group_of[v] is not g}


def _merge_single_consumer_producers(alive, deps, group_of, jaxpr, absorb,
                                     creates_cycle) -> None:
    """Fuse an elementwise group into its consumer when that consumer is the only group that
    reads it (its values may be read several times there), if the merged group is acyclic
    (a recomputed copy can make two groups read each other's inputs)."""
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}
    changed = True
    while changed:
        changed = False
        readers: dict[FusionGroup, set] = defaultdict(set)
        for g in alive:
            local = g.produced()
            for e in g.eqns:
                for v in e.invars:
                    if isinstance(v, Var) and v not in local and v in group_of:
                        readers[group_of[v]].add((g, e))
        for p in list(alive):
            if p not in readers:
                continue
            consumers = {c for c, _ in readers[p]}
            if len(consumers) != 1:
                continue
            (c,) = consumers
            if creates_cycle({c, p}, deps[c] | deps[p]):
                continue
            if p.kind is GroupKind.REDUCTION:
                # Row kernels over the same rows chain into one (the consumer's stages follow).
                if (c.kind is GroupKind.REDUCTION and (c.in_shape, c.axes) == (p.in_shape, p.axes)
                        and _tied_reads_ok(p, c.eqns)):
                    absorb(c, p)
                    changed = True
                    break
                continue
            if p.kind is not GroupKind.ELEMENTWISE:
                continue
            pspace = p.root.outvars[0].aval.shape
            needed = [v for v in p.produced() if v in returned]
            if c.kind is GroupKind.ELEMENTWISE:
                cspace = c.root.outvars[0].aval.shape
                ok = all(v.aval.shape == cspace for v in needed)
            elif c.kind is GroupKind.REDUCTION:
                ok = not needed and all(space_ok(p, c.in_shape)) and pspace == c.in_shape
            elif c.kind is GroupKind.GEMM:
                gemm_out = c.anchor.outvars[0].aval.shape
                ok = (not needed and all(space_ok(p, gemm_out))
                      and all(e in c.epilogue for _, e in readers[p]))
            else:
                ok = False
            if ok:
                absorb(c, p)
                changed = True
                break


def _merge_siblings(alive, deps, group_of, jaxpr, absorb, creates_cycle) -> None:
    """Multi-output fusion of elementwise groups over one iteration space. A group whose
    every needed value is only returned and also recomputed by another group is dropped:
    that group stores the values. Groups that read a common input, or one of which reads a
    value the other stores, become one pass that reads it once and stores both groups'
    outputs, if the merged group stays acyclic."""
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}

    def elementwise(g):
        return g.kind is GroupKind.ELEMENTWISE and not any(_effectful(e) for e in g.eqns)

    def external_reads(g) -> set[Var]:
        local = g.produced()
        return {v for e in g.eqns for v in e.invars if isinstance(v, Var) and v not in local}

    def read_elsewhere() -> set[Var]:
        out: set[Var] = set()
        for g in alive:
            out |= external_reads(g)
        return out

    def needed(g, elsewhere) -> set[Var]:
        return {v for v in g.produced() if group_of.get(v) is g
                and (v in returned or v in elsewhere)}

    def space(g):
        return g.root.outvars[0].aval.shape

    elsewhere = read_elsewhere()
    for p in [g for g in alive if elementwise(g)]:
        values = needed(p, elsewhere)
        if not values or values & elsewhere:
            continue
        c = next((c for c in alive if c is not p and elementwise(c)
                  and values <= c.produced() and all(_can_store(c, v) for v in values)), None)
        if c is not None:
            for v in values:
                group_of[v] = c
            alive.remove(p)
            deps.pop(p, None)
            elsewhere = read_elsewhere()

    changed = True
    while changed:
        changed = False
        readers: dict[Var, list[FusionGroup]] = defaultdict(list)
        for g in sorted((g for g in alive if elementwise(g)), key=lambda g: g.id):
            # A producer pairs with the readers of its stored values too: the merged pass
            # stores the value and uses it without reading it back.
            for v in external_reads(g) | needed(g, elsewhere):
                if v.aval.size > 1:  # sharing a scalar saves nothing
                    readers[v].append(g)
        for groups in readers.values():
            for a, b in itertools.combinations(groups, 2):
                shape = space(a)
                if space(b) != shape:
                    continue
                if any(v.aval.shape != shape for g in (a, b) for v in needed(g, elsewhere)):
                    continue
                if creates_cycle({a, b}, deps[a] | deps[b]):
                    continue
                absorb(a, b)
                elsewhere = read_elsewhere()
                changed = True
                break
            if changed:
                break


def space_ok(g: FusionGroup, shape) -> list[bool]:
    """Every value ``g`` must materialize lives in ``shape`` (one iteration space)."""
    return [v.aval.shape == shape for e in g.eqns for v in e.outvars]


def _outputs_fit(g: FusionGroup, v: Var, uses, shape) -> bool:
    """Values of ``g`` read outside it (other than ``v`` by the merging consumer) stay outputs
    after a merge: they must live in the merged group's iteration space."""
    internal: dict[Var, int] = defaultdict(int)
    for e in g.eqns:
        for x in e.invars:
            if isinstance(x, Var):
                internal[x] += 1
    return all(
        w.aval.shape == shape
        for e in g.eqns for w in e.outvars
        if uses[w] - internal[w] - (1 if w is v else 0) > 0
    )


def _joinable(g: FusionGroup, v: Var, eqn: JaxprEqn, out_shape) -> bool:
    if g.kind is GroupKind.ELEMENTWISE:
        return True
    if g.kind is GroupKind.GEMM:
        gemm_out = g.anchor.outvars[0].aval.shape
        return out_shape == gemm_out and pattern_of(eqn.primitive) is Pattern.ELEMENTWISE
    if g.kind is GroupKind.REDUCTION:
        if pattern_of(eqn.primitive) is Pattern.ELEMENTWISE:
            return out_shape in (g.in_shape, g.out_shape) and v.aval.shape == out_shape
        if eqn.primitive is base.broadcast_in_dim_p:
            # The "keepdims" broadcast of a reduction result back over the reduced axes.
            kept = tuple(i for i in range(len(g.in_shape)) if i not in g.axes)
            return (v.aval.shape == g.out_shape and out_shape == g.in_shape
                    and tuple(eqn.params["broadcast_dimensions"]) == kept)
    return False


def _tied_reads_ok(host: FusionGroup, eqns: list[JaxprEqn]) -> bool:
    """Can ``eqns`` join ``host``? A reduction's results (a GEMM's product) exist only at the
    output index a kernel iteration computes, so everything computed from them may be read
    only by elementwise work at that index (or a reduction's keepdims broadcast), never
    through an index map such as pad or a slice that would ask for another element."""
    if host.kind is GroupKind.REDUCTION:
        tied = {v for e in host.eqns if e.primitive in reduction_prims for v in e.outvars}
    elif host.kind is GroupKind.GEMM:
        tied = set(host.anchor.outvars)
    else:
        return True
    everything = host.eqns + [e for e in eqns if e not in host.eqns]
    changed = True
    while changed:
        changed = False
        for e in everything:
            read = [v for v in e.invars if isinstance(v, Var) and v in tied]
            if not read:
                continue
            if e in eqns and not (_same_rows(host, e) or all(
                    _joinable(host, v, e, e.outvars[0].aval.shape) for v in read)):
                return False
            new = [v for v in e.outvars if v not in tied]
            if new:
                tied.update(new)
                changed = True
    return True


def _same_rows(host: FusionGroup, eqn: JaxprEqn) -> bool:
    """A further reduction over the host's rows (softmax's sum after its max)."""
    return (host.kind is GroupKind.REDUCTION and eqn.primitive in reduction_prims
            and eqn.invars[0].aval.shape == host.in_shape
            and tuple(eqn.params["axes"]) == host.axes)


def _effectful(eqn: JaxprEqn) -> bool:
    return has_effects(eqn)


def _order(groups: list[FusionGroup], deps) -> list[FusionGroup]:
    """Topological order of the group graph, earliest-created first among ready groups."""
    remaining = {g: set(deps[g]) & set(groups) for g in groups}
    order = []
    while remaining:
        ready = sorted((g for g, d in remaining.items() if not d), key=lambda g: g.id)
        if not ready:
            raise AssertionError("fusion produced a cyclic group graph")
        for g in ready:
            order.append(g)
            del remaining[g]
        for d in remaining.values():
            d.difference_update(ready)
    return order


def _can_store(g: FusionGroup, v: Var) -> bool:
    if g.kind is GroupKind.REDUCTION:
        return v.aval.shape in (g.in_shape, g.out_shape)
    if g.kind is GroupKind.GEMM:
        return v.aval.shape == g.anchor.outvars[0].aval.shape
    if g.kind is GroupKind.ELEMENTWISE:
        return v.aval.shape == g.root.outvars[0].aval.shape
    return True


def _assign_io(groups: list[FusionGroup], jaxpr: Jaxpr, group_of) -> None:
    produced_by: dict[Var, list[FusionGroup]] = defaultdict(list)
    for g in groups:
        for v in g.produced():
            produced_by[v].append(g)
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}
    needed_from: dict[Var, FusionGroup] = {}
    for g in groups:
        local = g.produced()
        ins = []
        for e in g.eqns:
            for v in e.invars:
                if isinstance(v, Var) and v not in local and v not in ins:
                    ins.append(v)
        g.inputs = ins
        for v in ins:
            if v in produced_by:
                needed_from.setdefault(v, produced_by[v][0])
    for v in returned:
        if v in produced_by:
            needed_from.setdefault(v, produced_by[v][0])
    for v, g in needed_from.items():
        # A recomputed copy may come first: the value is stored by its own group, or by one
        # whose iteration space it lives in.
        owner = group_of.get(v)
        if owner in produced_by[v]:
            needed_from[v] = owner
        elif not _can_store(g, v):
            needed_from[v] = next((h for h in produced_by[v] if _can_store(h, v)), g)
    for g in groups:
        g.outputs = [v for e in g.eqns for v in e.outvars if needed_from.get(v) is g]
