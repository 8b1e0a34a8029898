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

Scale: a group weighs at most ``MAX_GROUP_EQNS`` operations (an index map a quarter, see
``fusion_groups.size``: a long chain becomes several kernels); cycle checks use the
topological keys of ``fusion_graph`` and stop after a bounded search; the merge passes after
the first sweep work from worklists (a merge revisits only the groups it may have affected)
instead of starting over, so fusion's work grows linearly with the program.
"""

from __future__ import annotations

import collections
import itertools
from collections import defaultdict

from fx.jaxpr import Jaxpr, JaxprEqn, Var
from fx.lowering.fusion.fusion_graph import GroupGraph
from fx.lowering.fusion.fusion_groups import (  # noqa: F401  (FusionGroup and GroupKind re-exported)
    MAX_GROUP_EQNS,
    VIEW_PRIMS,
    FusionGroup,
    GroupKind,
    can_store,
    effectful,
    external_reads,
    gathers_from,
    is_cheap,
    joinable,
    outputs_fit,
    reads_outside,
    recomputable,
    reduction_prims,
    same_rows,
    space_ok,
    tied_reads_ok,
)
from fx.lowering.fusion.primitive_rules import Pattern, pattern_of, rereads


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
            host = next((g for g in merge if g.kind is not GroupKind.ELEMENTWISE), None)
            if host is None and merge:
                host = merge[0]
            # Grow the merged set one candidate at a time, refusing any candidate (merged or
            # recomputed) that would close a cycle through a group outside the set, or make
            # the group longer than a kernel should be.
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
                if not graph.would_cycle(members, reads | g_reads):
                    reads |= g_reads
                    dup.extend(e for e in g.eqns if e not in dup)
                    size += g.size
            if graph.would_cycle(members, reads):
                members, dup = set(), []  # nothing merges: a fresh group reads everything
            if host not in members:
                host = next(iter(members), None)
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
    _prune_unread(alive, jaxpr)
    graph = GroupGraph.build(list(alive), _actual_deps(alive, group_of))

    def absorb(target: FusionGroup, src: FusionGroup) -> None:
        take_eqns(target, [src])
        graph.merge(target, [src])
        # Recomputed copies can make a read of the merged group local: read only what it reads.
        graph.keep_deps(target, _actual_deps({target: None}, group_of)[target])

    _merge_single_consumer_producers(alive, graph, group_of, jaxpr, absorb, position)
    _merge_siblings(alive, graph, group_of, jaxpr, absorb)
    for g in alive:  # merges prepend and recomputation copies: program order, each once
        g.eqns = sorted({id(e): e for e in g.eqns}.values(), key=lambda e: position[id(e)])
    groups = _order(graph)
    _assign_io(groups, jaxpr, group_of)
    if stats is not None:
        stats["graph_visits"] = visits + graph.checks
    return [g for g in groups if g.outputs or any(effectful(e) for e in g.eqns)]


def _prune_unread(alive: dict, jaxpr) -> None:
    """Drop groups none of whose values is read from them: everything they compute was
    recomputed by its consumers. (A worklist: dropping a group may leave its producers
    unread.)"""
    readers: dict[Var, int] = defaultdict(int)  # groups reading the value, +1 if returned
    producing: dict[Var, list[FusionGroup]] = defaultdict(list)  # groups computing it
    reads = {}
    for g in alive:
        reads[g] = external_reads(g)
        for v in reads[g]:
            readers[v] += 1
        for v in g.produced():
            producing[v].append(g)
    for v in jaxpr.outvars:
        if isinstance(v, Var):
            readers[v] += 1

    def unread(g):
        return not any(readers[v] for v in g.produced()) and not any(
            effectful(e) for e in g.eqns)

    work = [g for g in alive if unread(g)]
    while work:
        g = work.pop()
        if g not in alive or not unread(g):
            continue
        del alive[g]
        for v in reads[g]:
            readers[v] -= 1
            if readers[v] == 0:
                work.extend(p for p in producing[v] if p in alive)


def _actual_deps(groups, group_of) -> dict:
    """Group dependencies from what each group actually reads: a value computed outside a
    group comes from its producing group (``group_of``; recomputed copies are local)."""
    return {g: {group_of[v] for v in external_reads(g) if v in group_of
                and group_of[v] is not g} for g in groups}


def _merge_single_consumer_producers(alive, graph, group_of, jaxpr, absorb, position) -> None:
    """Fuse an elementwise group into its consumer when that consumer is the only group that
    reads it (its values may be read several times there), if the merged group is acyclic
    (a recomputed copy can make two groups read each other's inputs). A worklist: a merge
    revisits the groups it may have made mergeable (the producers of both groups and the
    merged group itself)."""
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}
    work = collections.deque(alive)
    queued = set(work)
    while work:
        p = work.popleft()
        queued.discard(p)
        if p not in alive or len(graph.users[p]) != 1:
            continue
        (c,) = graph.users[p]
        if c.size + p.size > MAX_GROUP_EQNS:
            continue
        if graph.would_cycle({c, p}, graph.deps[c] | graph.deps[p]):
            continue
        ok = False
        if gathers_from(c, p):
            pass  # each value of p would be recomputed at every read
        elif p.kind is GroupKind.REDUCTION:
            # Row kernels over the same rows chain into one (the consumer's stages follow).
            ok = (c.kind is GroupKind.REDUCTION and (c.in_shape, c.axes) == (p.in_shape, p.axes)
                  and tied_reads_ok(p, c.eqns, position))
        elif p.kind is GroupKind.ELEMENTWISE:
            pspace = p.root.outvars[0].aval.shape
            needed = [v for v in p.produced() if v in returned]
            if c.kind is GroupKind.ELEMENTWISE:
                cspace = c.root.outvars[0].aval.shape
                ok = all(v.aval.shape == cspace for v in needed)
            elif c.kind is GroupKind.REDUCTION:
                ok = not needed and all(space_ok(p, c.in_shape)) and pspace == c.in_shape
            elif c.kind is GroupKind.GEMM:
                gemm_out = c.anchor.outvars[0].aval.shape
                local = c.produced()
                reading = [e for e in c.eqns if any(
                    isinstance(v, Var) and v not in local and group_of.get(v) is p
                    for v in e.invars)]
                epilogue = {id(e) for e in c.epilogue}
                ok = (not needed and all(space_ok(p, gemm_out))
                      and all(id(e) in epilogue for e in reading))
        if ok:
            # The merged group may read less than its parts (recomputed copies become
            # local): the producers of both may now have a single consumer.
            revisit = [*graph.deps[p], *graph.deps[c], c]
            absorb(c, p)
            for g in revisit:
                if g not in queued:
                    work.append(g)
                    queued.add(g)


_SIBLING_SWEEPS = 3  # a merge can enable one refused earlier; a few sweeps catch most


def _merge_siblings(alive, graph, group_of, jaxpr, absorb) -> None:
    """Multi-output fusion of elementwise groups over one iteration space. A group whose
    every needed value is only returned and also recomputed by another group is dropped:
    that group stores the values. Groups that read a common input, or one of which reads a
    value the other stores, become one pass that reads it once and stores both groups'
    outputs, if the merged group stays acyclic.

    The values read from outside each group are counted (not recomputed after every merge),
    and each value's readers are tried in a few sweeps instead of restarting after a merge."""
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}

    def elementwise(g):
        return g.kind is GroupKind.ELEMENTWISE and not any(effectful(e) for e in g.eqns)

    ext = {g: external_reads(g) for g in alive}
    read_count: dict[Var, int] = defaultdict(int)  # alive groups reading the value
    for g in alive:
        for v in ext[g]:
            read_count[v] += 1

    def stores(g, v) -> bool:
        return group_of.get(v) is g and (v in returned or read_count[v] > 0)

    def needed(g) -> set[Var]:
        return {v for v in g.produced() if stores(g, v)}

    def space(g):
        return g.root.outvars[0].aval.shape

    def drop(g):
        for v in ext.pop(g):
            read_count[v] -= 1
        del alive[g]
        graph.remove(g)

    producing: dict[Var, list[FusionGroup]] = defaultdict(list)
    for g in alive:
        if elementwise(g):
            for v in g.produced():
                producing[v].append(g)
    for p in [g for g in alive if elementwise(g)]:
        values = needed(p)
        if not values or any(read_count[v] for v in values):
            continue
        first = next(iter(values))
        c = next((c for c in producing[first] if c is not p and c in alive
                  and values <= c.produced() and all(can_store(c, v) for v in values)), None)
        if c is not None:
            for v in values:
                group_of[v] = c
            drop(p)

    merged_into: dict[FusionGroup, FusionGroup] = {}

    def find(g):
        while g in merged_into:
            g = merged_into[g]
        return g

    # Whether every value a group stores lives in its own space, per group: forgotten when
    # the group changes or a count of a value it stores does.
    fits: dict[FusionGroup, bool] = {}

    def stores_in_space(g) -> bool:
        if g not in fits:
            shape = space(g)
            fits[g] = all(v.aval.shape == shape for v in needed(g))
        return fits[g]

    def merge(a, b) -> None:
        changed = ext.pop(a) | ext.pop(b)
        for v in changed:
            read_count[v] -= 1
        absorb(a, b)
        merged_into[b] = a
        ext[a] = external_reads(a)
        for v in ext[a]:
            read_count[v] += 1
        for v in changed | ext[a]:
            fits.pop(group_of.get(v), None)
        fits.pop(a, None)

    def mergeable(a, b) -> bool:
        if space(b) != space(a) or a.size + b.size > MAX_GROUP_EQNS:
            return False
        if not (stores_in_space(a) and stores_in_space(b)):
            return False
        if gathers_from(a, b) or gathers_from(b, a):
            return False
        return not graph.would_cycle({a, b}, graph.deps[a] | graph.deps[b])

    readers: dict[Var, list[FusionGroup]] = defaultdict(list)
    for g in sorted((g for g in alive if elementwise(g)), key=lambda g: g.id):
        # A producer pairs with the readers of its stored values too: the merged pass
        # stores the value and uses it without reading it back.
        for v in sorted(ext[g] | needed(g), key=lambda v: v.id):
            if v.aval.size > 1:  # sharing a scalar saves nothing
                readers[v].append(g)
    for _ in range(_SIBLING_SWEEPS):
        changed = False
        for v, groups in readers.items():
            live = []
            for g in map(find, groups):
                if g not in live and (v in ext[g] or stores(g, v)):
                    live.append(g)
            i = 0
            while i < len(live):
                a, j = live[i], i + 1
                while j < len(live):
                    if mergeable(a, live[j]):
                        merge(a, live.pop(j))
                        changed = True
                    else:
                        j += 1
                i += 1
        if not changed:
            return


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
