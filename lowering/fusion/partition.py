"""Fusion: partition a jaxpr's equations into kernels, following the op-pattern lattice.

Groups (each becomes one kernel, or one library call plus its epilogue):

- ELEMENTWISE: elementwise, broadcast and injective equations over one iteration space. Index
  maps (broadcast, transpose, reshape, slice, pad, concatenate) become index arithmetic.
- REDUCTION: reductions over the same input space and axes, with elementwise producers in the
  input space (a prologue), elementwise consumers in the output space (an epilogue), and
  input-space consumers of broadcast results — so softmax and logsumexp are one kernel.
- GEMM: a matmul (or convolution) and the elementwise consumers of its output (bias, activation).
- OPAQUE: one equation run on its own.

``fuse`` sweeps the equations once in program order, deciding each: a value is fused into its
consumer when it has no other consumer; cheap broadcasts (of scalars and iota) and small cheap
groups are recomputed in every consumer instead of being materialized (``recompute``). Merges
that would make the group graph cyclic, or make a kernel compute a dear value at several index
maps, are refused. Then the merge passes (``merges``) join whole groups, and the groups are
ordered. Values read outside their group (or returned) are the group's outputs and get buffers.

Scale: a group weighs at most ``MAX_GROUP_EQNS`` operations (an index map a quarter, see
``groups.size``: a long chain becomes several kernels), and what it recomputes is bounded
(``recompute``: its code is linear in its equations); cycle checks use the topological keys
of ``group_graph`` and stop after a bounded search; the merge passes after the first sweep
work from worklists (a merge revisits only the groups it may have affected) instead of
starting over, so fusion's work grows linearly with the program.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

from fx.jaxpr import Jaxpr, JaxprEqn, Var
from fx.lowering.fusion.group_graph import GroupGraph
from fx.lowering.fusion.groups import (
    MAX_GROUP_EQNS,
    VIEW_PRIMS,
    FusionGroup,
    GroupKind,
    can_store,
    effectful,
    gathers_from,
    joinable,
    outputs_fit,
    reads_outside,
    reduction_prims,
    space_ok,
    tied_reads_ok,
)
from fx.lowering.fusion.merges import (
    actual_deps,
    merge_siblings,
    merge_single_consumer_producers,
    prune_unread,
)
from fx.lowering.fusion.primitive_rules import Pattern, pattern_of, rereads
from fx.lowering.fusion.recompute import (
    DuplicationCheck,
    is_cheap,
    maps_index,
    recomputable,
)


def fuse(jaxpr: Jaxpr, stats: dict | None = None) -> list[FusionGroup]:
    """Partition ``jaxpr``'s equations into fusion groups, in a valid execution order.

    ``stats``, if given, receives ``graph_visits``: the groups the cycle checks visited (the
    fusion work that could grow faster than the program; tests check it grows linearly)."""
    position = {id(e): i for i, e in enumerate(jaxpr.eqns)}
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
    graph = GroupGraph()
    alive: dict[FusionGroup, None] = {}  # an ordered set: creation order

    def new_group(kind, eqns, **kw) -> FusionGroup:
        g = FusionGroup(kind, list(eqns), next(ids), **kw)
        graph.add(g)
        alive[g] = None
        return g

    def take_eqns(target: FusionGroup, srcs: list[FusionGroup]) -> None:
        """Move the equations of ``srcs`` into ``target`` (the graph is merged by the caller)."""
        if srcs:
            outside.pop(target, None)
        for src in srcs:
            outside.pop(src, None)
            target.eqns = src.eqns + target.eqns
            for e in src.eqns:
                for v in e.outvars:
                    if group_of.get(v) is src:  # not recomputed copies: they stay with their owner
                        group_of[v] = target
            del alive[src]

    def read_groups(eqn) -> set[FusionGroup]:
        return {group_of[v] for v in eqn.invars if isinstance(v, Var) and v in group_of}

    # Per group, the reads of its values from outside it (see outputs_fit), kept up to date
    # as a chain grows one equation at a time and recounted after other changes.
    outside: dict[FusionGroup, dict[Var, int]] = {}

    def outside_of(g: FusionGroup) -> dict[Var, int]:
        if g not in outside:
            outside[g] = reads_outside(g, uses)
        return outside[g]

    def appended(g: FusionGroup, eqn: JaxprEqn) -> None:
        counts = outside.get(g)
        if counts is None:
            return
        for x in eqn.invars:
            if x in counts:
                counts[x] -= 1
                if not counts[x]:
                    del counts[x]
        counts.update((w, uses[w]) for w in eqn.outvars if uses[w])

    def space(g: FusionGroup) -> tuple[int, ...]:
        return g.root.outvars[0].aval.shape

    dups = DuplicationCheck(uses, position, group_of)

    def expands(owners: set[FusionGroup], extra: list[JaxprEqn], eqn: JaxprEqn) -> bool:
        """Would one group of ``owners``' equations, recomputed copies ``extra`` and ``eqn``
        compute a value dearer than ``MAX_RECOMPUTE`` at several index maps (``recompute``)?
        An equation that joins one group at its own index adds no map: each value it reads
        was stored for it, and is now computed at that index for it."""
        if len(owners) <= 1 and not extra and not maps_index(eqn):
            return False
        return dups.expands(owners, [*extra, eqn], eqn.outvars)

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
                if rereads(eqn) and not (len(g.eqns) == 1 and is_cheap(g.eqns[0])):
                    continue  # read many times over: stored once, not recomputed per read
                if uses[v] > 1 and ((len(g.eqns) == 1 and is_cheap(g.eqns[0]))
                                    or recomputable(g)):
                    if g not in dup_groups:
                        dup_groups.append(g)
                    continue
                if uses[v] != 1 or g.size >= MAX_GROUP_EQNS or not joinable(
                        g, v, eqn, out_shape):
                    continue
                if g.kind is GroupKind.ELEMENTWISE and not outputs_fit(outside_of(g), v,
                                                                        out_shape):
                    continue
                if g not in merge:
                    merge.append(g)
            # At most one non-elementwise group may absorb this equation.
            special = [g for g in merge if g.kind is not GroupKind.ELEMENTWISE]
            if len(special) > 1:
                merge = [g for g in merge if g.kind is GroupKind.ELEMENTWISE] + special[:1]
            # A group in which this equation would recompute a dear value at another index map
            # stays apart and stores the value (the other candidates are checked as they join).
            merge = [g for g in merge if not expands({g}, [], eqn)]
            host = next((g for g in merge if g.kind is not GroupKind.ELEMENTWISE), None)
            if host is None and merge:
                host = merge[0]
            # Grow the merged set one candidate at a time, refusing any candidate (merged or
            # recomputed) that would close a cycle through a group outside the set, make the
            # group longer than a kernel should be, or recompute a dear value at several maps.
            members: set[FusionGroup] = {host} if host is not None else set()
            size = host.size + 1 if host is not None else 1
            reads: set[FusionGroup] = set(producers)
            if host is not None:
                reads |= graph.deps[host]
            for g in merge:
                if g is host:
                    continue
                if size + g.size > MAX_GROUP_EQNS or not tied_reads_ok(host, g.eqns,
                                                                             position):
                    continue
                if any(gathers_from(m, g) or gathers_from(g, m) for m in members):
                    continue  # a gather would recompute the other's values at every read
                if expands(members | {g}, [], eqn):
                    continue
                if not graph.would_cycle(members | {g}, reads | graph.deps[g]):
                    members.add(g)
                    reads |= graph.deps[g]
                    size += g.size
            dup = []
            for g in dup_groups:
                g_reads = {q for e in g.eqns for q in read_groups(e)}
                if size + g.size > MAX_GROUP_EQNS:
                    continue
                if host is not None and not tied_reads_ok(host, g.eqns, position):
                    continue
                if any(gathers_from(m, g) for m in members):
                    continue
                if expands(members, [*dup, *g.eqns], eqn):
                    continue
                if not graph.would_cycle(members, reads | g_reads):
                    reads |= g_reads
                    dup.extend(e for e in g.eqns if e not in dup)
                    size += g.size
            if graph.would_cycle(members, reads):
                members, dup = set(), []  # nothing merges: a fresh group reads everything
            if host not in members:  # (the first candidate that merged: set order is not stable)
                host = next((g for g in merge if g in members), None)
            if host is None:
                host = new_group(GroupKind.ELEMENTWISE, [])
            others = [g for g in merge if g in members and g is not host]
            take_eqns(host, others)
            if dup:
                have = {id(e) for e in host.eqns}
                host.eqns.extend(e for e in dup if id(e) not in have)
                outside.pop(host, None)
            host.eqns.append(eqn)
            appended(host, eqn)
            for v in eqn.outvars:
                group_of[v] = host
            new_deps = {g for e in (*dup, eqn) for g in read_groups(e) if g is not host}
            graph.merge(host, others, new_deps)
            if host.kind is GroupKind.REDUCTION and out_shape not in (host.in_shape,
                                                                         host.out_shape):
                raise AssertionError("fusion put an equation outside its group's spaces")
        elif eqn.primitive in reduction_prims:
            (x,) = [v for v in eqn.invars][:1]
            in_shape, axes = x.aval.shape, tuple(eqn.params["axes"])
            g = group_of.get(x) if isinstance(x, Var) else None
            if g is not None and g.kind is GroupKind.REDUCTION and g.in_shape == in_shape \
                    and g.axes == axes and x in g.produced() and g.size < MAX_GROUP_EQNS:
                host = g  # a further reduction over the same rows (softmax's sum after max)
                others = []
            else:
                host = new_group(GroupKind.REDUCTION, [], in_shape=in_shape, axes=axes)
                others = []
                if (g is not None and g.kind is GroupKind.ELEMENTWISE and uses[x] == 1
                        and space(g) == in_shape and all(space_ok(g, in_shape))
                        and g.size < MAX_GROUP_EQNS):
                    others = [g]  # the prologue
                    take_eqns(host, others)
            host.eqns.append(eqn)
            appended(host, eqn)
            for v in eqn.outvars:
                group_of[v] = host
            graph.merge(host, others, {g for g in read_groups(eqn) if g is not host})
        else:
            kind = GroupKind.GEMM if pat is Pattern.OUT_ELEMENTWISE_FUSABLE else GroupKind.OPAQUE
            g = new_group(kind, [eqn])
            for v in eqn.outvars:
                group_of[v] = g
            graph.merge(g, [], producers)
            if kind is GroupKind.GEMM:
                # Reshapes/transposes of an operand become views the library call reads.
                for v in eqn.invars:
                    p = group_of.get(v) if isinstance(v, Var) else None
                    if (p is not None and p is not g and uses[v] == 1
                            and all(e.primitive in VIEW_PRIMS for e in p.eqns)
                            and not graph.would_cycle({g, p}, graph.deps[g] | graph.deps[p])):
                        take_eqns(g, [p])
                        graph.merge(g, [p])

    visits = graph.checks
    prune_unread(alive, jaxpr)
    graph = GroupGraph.build(list(alive), actual_deps(alive, group_of))

    def absorb(target: FusionGroup, src: FusionGroup) -> None:
        take_eqns(target, [src])
        graph.merge(target, [src])
        # Recomputed copies can make a read of the merged group local: read only what it reads.
        graph.keep_deps(target, actual_deps({target: None}, group_of)[target])

    merge_single_consumer_producers(alive, graph, group_of, jaxpr, absorb, position, dups)
    merge_siblings(alive, graph, group_of, jaxpr, absorb, dups)
    for g in alive:  # merges prepend and recomputation copies: program order, each once
        g.eqns = sorted({id(e): e for e in g.eqns}.values(), key=lambda e: position[id(e)])
    groups = _order(graph)
    _assign_io(groups, jaxpr, group_of)
    if stats is not None:
        stats["graph_visits"] = visits + graph.checks
    return [g for g in groups if g.outputs or any(effectful(e) for e in g.eqns)]


def _order(graph: GroupGraph) -> list[FusionGroup]:
    """Topological order of the group graph by levels (a group's level is one more than its
    deepest producer's), earliest-created first within a level."""
    level: dict[FusionGroup, int] = {}
    for g in graph.topological():
        level[g] = 1 + max((level[d] for d in graph.deps[g]), default=-1)
    return sorted(level, key=lambda g: (level[g], g.id))


def _assign_io(groups: list[FusionGroup], jaxpr: Jaxpr, group_of) -> None:
    produced_by: dict[Var, list[FusionGroup]] = defaultdict(list)
    for g in groups:
        for v in g.produced():
            produced_by[v].append(g)
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}
    needed_from: dict[Var, FusionGroup] = {}
    for g in groups:
        local = g.produced()
        ins = list({v: None for e in g.eqns for v in e.invars
                    if isinstance(v, Var) and v not in local})
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
        elif not can_store(g, v):
            needed_from[v] = next((h for h in produced_by[v] if can_store(h, v)), g)
    for g in groups:
        g.outputs = [v for e in g.eqns for v in e.outvars if needed_from.get(v) is g]
