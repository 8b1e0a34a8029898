"""The dependency graph of fusion groups, kept in a topological order while groups merge.

Fusion asks one question over and over: would merging these groups close a cycle through a
group outside them? Answered by a search over all ancestors, that costs the size of the
program per question, and a program of 10,000 equations asks it 10,000 times. Here every group
has a *key*, and keys are a topological order (a group's key is larger than the keys of the
groups it reads from). A cycle through the merged group leaves it from a member that some
group outside reads, and only visits keys above that member's, so a search stops at the
lowest such key: it visits only the groups created between the members (none at all when
nothing outside reads the earlier members, as for a forward-pass residual that only its
backward layer reads). A search that would visit more than ``SEARCH_LIMIT`` groups refuses the
merge (two groups that far apart gain little from one kernel), so each question costs at most
a constant.

A merge keeps the keys a topological order: the merged group takes that lowest key when all it
reads has lower keys; otherwise just the window between is reordered (the dynamic topological
sort of Pearce and Kelly, applied to contracting a set of nodes): the merged group's ancestors
in the window take the lowest of the window's affected keys, the merged group the next one,
its descendants in the window the rest, each side in its old order.

Invariants: ``deps[g]`` and ``users[g]`` are each other's reverse; ``key[d] < key[g]`` for every
``d`` in ``deps[g]``. ``checks`` counts the groups every search visited (tests use it to see
that fusion's work grows linearly with the program).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

# The most groups one cycle check visits (see GroupGraph.would_cycle).
SEARCH_LIMIT = 256


class CycleError(AssertionError):
    pass


class GroupGraph:
    def __init__(self):
        self.deps: dict = {}
        self.users: dict = {}
        self.key: dict = {}
        self._keys = itertools.count()
        self.checks = 0

    def __contains__(self, g) -> bool:
        return g in self.deps

    def add(self, g, deps: Iterable = ()) -> None:
        """A new group reading from existing ``deps`` (it takes the highest key)."""
        self.deps[g] = set(deps)
        self.users[g] = set()
        self.key[g] = next(self._keys)
        for d in self.deps[g]:
            self.users[d].add(g)

    def remove(self, g) -> None:
        for d in self.deps.pop(g):
            self.users[d].discard(g)
        for u in self.users.pop(g):
            self.deps[u].discard(g)
        del self.key[g]

    def keep_deps(self, g, deps: set) -> None:
        """Forget the edges into ``g`` from groups not in ``deps`` (fewer edges keep the
        order topological)."""
        for d in self.deps[g] - deps:
            self.users[d].discard(g)
        self.deps[g] &= deps

    def would_cycle(self, members: Iterable, reads: Iterable) -> bool:
        """Would one group made of ``members`` and reading from ``reads`` be on a cycle? (Some
        group it reads from outside ``members`` depends on one of them.) A search that would
        visit more than ``SEARCH_LIMIT`` groups answers yes: groups that far apart gain
        little from sharing a kernel, and a bounded answer keeps fusion linear."""
        members = set(members)
        lo = self._lowest_read(members)
        if lo is None:
            return False
        return self._ancestors(members, reads, lo, SEARCH_LIMIT) is None

    def _lowest_read(self, members: set) -> int | None:
        """The lowest key of a member read by a group outside ``members``: a cycle leaves
        the members from one of those, so every group on it has a higher key."""
        keys = [self.key[m] for m in members if not self.users[m] <= members]
        return min(keys) if keys else None

    def _ancestors(self, members: set, reads: Iterable, lo: int, limit: int = -1
                   ) -> set | None:
        """The ancestors of ``reads`` outside ``members`` with keys above ``lo``, or None when
        one of them depends on a member (a cycle) or when there are more than ``limit`` of
        them (``limit`` < 0: no limit)."""
        key = self.key
        seen: set = set()
        stack = [x for x in reads if x not in members and key[x] > lo]
        seen.update(stack)
        while stack:
            x = stack.pop()
            self.checks += 1
            if 0 <= limit < len(seen):
                return None
            for d in self.deps[x]:
                if d in members:
                    return None
                if d not in seen and key[d] > lo:
                    seen.add(d)
                    stack.append(d)
        return seen

    def merge(self, target, others: Iterable, new_deps: Iterable = ()) -> None:
        """Contract ``others`` into ``target`` and make it read from ``new_deps`` too; the
        result must be acyclic (checked: raises :class:`CycleError`)."""
        key = self.key
        members = {target, *others}
        reads = set(new_deps)
        users: set = set()
        for m in members:
            reads |= self.deps[m]
            users |= self.users[m]
        reads -= members
        users -= members
        lo = self._lowest_read(members)
        hi = max((key[d] for d in reads), default=-1)
        for m in members:
            if m is not target:
                self.remove(m)
        for d in self.deps[target]:
            self.users[d].discard(target)
        for u in self.users[target]:
            self.deps[u].discard(target)
        self.deps[target], self.users[target] = reads, users
        for d in reads:
            self.users[d].add(target)
        for u in users:
            self.deps[u].add(target)
        if lo is None:  # nothing reads the merged group yet: it may come last
            key[target] = next(self._keys)
            return
        if hi < lo:  # already in order: the merged group takes the lowest read member's key
            key[target] = lo
            return
        # Reorder the window (lo, hi): the merged group's ancestors in it, the merged group,
        # then its descendants in it, each side in its old order, on the same keys.
        before = self._ancestors({target}, reads, lo)
        if before is None:
            raise CycleError("fusion: merging these groups closes a cycle")
        after: set = set()
        stack = [u for u in users if key[u] < hi]
        after.update(stack)
        while stack:
            x = stack.pop()
            self.checks += 1
            for u in self.users[x]:
                if u not in after and key[u] < hi:
                    after.add(u)
                    stack.append(u)
        if before & after:
            raise CycleError("fusion: merging these groups closes a cycle")
        slots = sorted([key[g] for g in itertools.chain(before, after)] + [lo])
        ranked = sorted(before, key=key.__getitem__) + [target] + sorted(
            after, key=key.__getitem__)
        for g, k in zip(ranked, slots):
            key[g] = k

    def topological(self) -> list:
        """Every group, each after the groups it reads from."""
        return sorted(self.deps, key=self.key.__getitem__)

    @classmethod
    def build(cls, groups: list, deps: dict) -> GroupGraph:
        """The graph of ``groups`` (``deps[g]``: the groups ``g`` reads from, restricted to
        ``groups``), keyed in a topological order; raises :class:`CycleError` if cyclic."""
        graph = cls()
        alive = set(groups)
        pending = {g: {d for d in deps[g] if d in alive and d is not g} for g in groups}
        users: dict = {g: [] for g in groups}
        for g, ds in pending.items():
            for d in ds:
                users[d].append(g)
        ready = [g for g in groups if not pending[g]]
        count = {g: len(ds) for g, ds in pending.items()}
        placed = 0
        while ready:
            g = ready.pop()
            graph.deps[g], graph.users[g] = pending[g], set(users[g])
            graph.key[g] = next(graph._keys)
            placed += 1
            for u in users[g]:
                count[u] -= 1
                if count[u] == 0:
                    ready.append(u)
        if placed != len(groups):
            raise CycleError("fusion produced a cyclic group graph")
        return graph
