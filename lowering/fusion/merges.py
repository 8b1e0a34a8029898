"""The merge passes fusion runs after its sweep over the equations (see ``partition``).

The sweep decides each equation once, in program order; these passes then look at the groups
as a whole: ``prune_unread`` drops groups whose values every reader recomputes,
``merge_single_consumer_producers`` fuses a group into the only group that reads it, and
``merge_siblings`` makes groups over one iteration space one pass (multi-output fusion). Each
merge keeps the group graph acyclic (``GroupGraph.would_cycle``), the groups within
``MAX_GROUP_EQNS`` and what they recompute bounded (``recompute.overexpanded``); each pass
works from a worklist or a bounded number of sweeps, so its work grows linearly with the
program. ``actual_deps`` gives the group dependencies from what each group reads.
"""

from __future__ import annotations

import collections
from collections import defaultdict

from fx.jaxpr import Var
from fx.lowering.fusion.groups import (
    MAX_GROUP_EQNS,
    FusionGroup,
    GroupKind,
    can_store,
    effectful,
    external_reads,
    gathers_from,
    space_ok,
    tied_reads_ok,
)
from fx.lowering.fusion.recompute import DuplicationCheck


def prune_unread(alive: dict, jaxpr) -> None:
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


def actual_deps(groups, group_of) -> dict:
    """Group dependencies from what each group actually reads: a value computed outside a
    group comes from its producing group (``group_of``; recomputed copies are local)."""
    return {g: {group_of[v] for v in external_reads(g) if v in group_of
                and group_of[v] is not g} for g in groups}


def merge_single_consumer_producers(alive, graph, group_of, jaxpr, absorb, position,
                                    dups: DuplicationCheck) -> None:
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
        if ok and dups.expands({c, p}):
            ok = False  # c reads a dear value of p at several index maps: p stores it
        if ok:
            # The merged group may read less than its parts (recomputed copies become
            # local): the producers of both may now have a single consumer.
            # (in creation order: the graph's sets iterate in address order, which varies)
            revisit = [*sorted(graph.deps[p] | graph.deps[c], key=lambda g: g.id), c]
            absorb(c, p)
            for g in revisit:
                if g not in queued:
                    work.append(g)
                    queued.add(g)


_SIBLING_SWEEPS = 3  # a merge can enable one refused earlier; a few sweeps catch most


def merge_siblings(alive, graph, group_of, jaxpr, absorb, dups: DuplicationCheck) -> None:
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
        first = min(values, key=lambda v: v.id)  # (a set's order is the values' addresses)
        c = next((c for c in producing[first] if c is not p and c in alive
                  and values <= c.produced() and all(can_store(c, v) for v in values)
                  and not dups.expands({c}, owning=values)), None)
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
        if graph.would_cycle({a, b}, graph.deps[a] | graph.deps[b]):
            return False
        return not dups.expands({a, b})

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
