"""What a fused kernel recomputes instead of storing, and the bound that keeps it linear.

A kernel computes the elements it needs on demand (``codegen``: ``value(var, index)``): one
element of a value at one index is computed once and let-bound, but a value read at two
different index maps (two slices of it, a pad and the value itself, the two halves of a
concatenation) is computed once per map, with all of the group's work it depends on. Two
readers through elementwise operations ask for the same index and share the element; a read
of a 0-d value is always at the one index ``()``.

Recomputation is what makes fusion pay (a broadcast or a cheap operation is cheaper to redo
than to store and load), but it compounds: a chain whose every level reads the previous one at
two maps (the product tree of ``prod``'s gradient) computes its first level ``2**depth`` times,
and the kernel's source grows as fast. So a group may compute a value at several index maps
only while one element of it costs at most ``MAX_RECOMPUTE`` operations of the group (its
*expanded cone*: every equation it depends on in the group, once per distinct map at which one
element of it needs that equation; index maps weigh a quarter, as in ``groups.size``); a
dearer value is stored by one group and loaded by its readers. Every value computed at several
maps then costs a constant per read, so a group's code is linear in its equations.

``overexpanded`` answers the question for a candidate group; fusion asks it before every merge
that could add a read. ``is_cheap`` and ``recomputable`` say which small groups every consumer
recomputes (copies of their equations join each consumer's group).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from fx.jaxpr import JaxprEqn, Literal, Var
from fx.lax import structural
from fx.lowering.fusion.groups import INDEX_MAPS, FusionGroup, GroupKind
from fx.lowering.fusion.primitive_rules import (
    Pattern,
    cheap_prims,
    pattern_of,
    rereads,
    scalar_rules,
)

# The most operations one element of a value may cost when a kernel computes it at several
# index maps; also the most equations of a group every consumer recomputes.
MAX_RECOMPUTE = 8


def is_cheap(eqn: JaxprEqn) -> bool:
    """Broadcasts of scalars and iotas: recomputing them beats reading them from memory."""
    if pattern_of(eqn.primitive) is not Pattern.BROADCAST:
        return False
    return all(isinstance(v, Literal) or not v.aval.shape for v in eqn.invars)


def recomputable(g: FusionGroup) -> bool:
    """A small elementwise group of cheap operations: each consumer recomputes it."""
    return g.kind is GroupKind.ELEMENTWISE and len(g.eqns) <= MAX_RECOMPUTE and all(
        e.primitive in cheap_prims or (pattern_of(e.primitive) in (Pattern.BROADCAST,
                                                                     Pattern.INJECTIVE)
                                       and not rereads(e))
        for e in g.eqns
    )


def maps_index(eqn: JaxprEqn) -> bool:
    """Does ``eqn`` read its operands at another index than the one it computes?"""
    return eqn.primitive not in scalar_rules and pattern_of(eqn.primitive) in (
        Pattern.BROADCAST, Pattern.INJECTIVE)


def _reads_per_element(eqn: JaxprEqn) -> bool:
    """Does a kernel compute ``eqn``'s operands element by element? (A GEMM's product or an
    opaque equation reads whole operands, which the group stores.)"""
    return pattern_of(eqn.primitive) <= Pattern.REDUCTION


def _weight(eqn: JaxprEqn) -> float:
    return 0.25 if eqn.primitive in INDEX_MAPS else 1.0


def _read_key(eqn: JaxprEqn, k: int) -> tuple | None:
    """What index map ``eqn`` reads its operand ``k`` through: equal keys are equal maps (the
    operand's index is the same function of the result's), None is the identity (a slice from
    the origin with unit strides: the same index)."""
    p = eqn.params
    if eqn.primitive is structural.slice_p and not any(p["start_indices"]) and all(
            s == 1 for s in p["strides"] or ()):
        return None
    simple = tuple((name, value) for name, value in sorted(p.items())
                   if isinstance(value, (bool, int, str, tuple, type(None))))
    if len(simple) < len(p):
        return (id(eqn), k)  # parameters that do not compare: a map of its own
    return (eqn.primitive, k, eqn.invars[k].aval.shape, eqn.outvars[0].aval.shape, simple)


class _Maps:
    """Index maps, interned: map 0 is the kernel's own index; ``then(m, eqn, k)`` is the map
    at which ``eqn``'s operand ``k`` is read when ``eqn`` is computed at map ``m``. Maps made
    of the same index maps in the same order are one map (a kernel shares their elements);
    others count as different, even where their composition happens to agree."""

    def __init__(self):
        self._ids: dict[tuple, int] = {}

    def then(self, m: int, eqn: JaxprEqn, k: int) -> int:
        key = _read_key(eqn, k)
        if key is None:
            return m
        return self._ids.setdefault((m, key), len(self._ids) + 1)


def _operand_map(maps: _Maps, eqn: JaxprEqn, k: int, u: Var, m: int) -> int:
    if not u.aval.shape:
        return 0  # a 0-d value has one element, read at index ()
    return maps.then(m, eqn, k) if maps_index(eqn) else m


def _cone_cost(eqn: JaxprEqn, producer: dict, maps: _Maps, limit: float) -> float:
    """What one element of ``eqn``'s result costs in the group: the weight of every
    (equation, map) pair it needs, counted up to just above ``limit``."""
    seen: set[tuple[int, int]] = set()
    cost = 0.0
    stack = [(eqn, 0)]
    while stack:
        e, m = stack.pop()
        if (id(e), m) in seen:
            continue
        seen.add((id(e), m))
        cost += _weight(e)
        if cost > limit:
            break
        if not _reads_per_element(e):
            continue
        for k, u in enumerate(e.invars):
            if isinstance(u, Var) and u in producer:
                stack.append((producer[u], _operand_map(maps, e, k, u, m)))
    return cost


def overexpanded(eqns: Iterable[JaxprEqn], owned: Callable[[Var], bool],
                 uses: Mapping[Var, int], position: Mapping[int, int]) -> Var | None:
    """A value that one group of ``eqns`` would compute at several index maps although one
    element of it costs more than ``MAX_RECOMPUTE`` (see the module docstring), or None.

    The group stores (computes at the kernel's own index) the values it owns (``owned``) that
    are read outside it (``uses``: each value's reads in the program, plus one if returned),
    and the values none of its equations reads; recomputed copies of other groups' equations
    are computed only where the group reads them. ``position``: each equation's place in the
    program (by ``id``), a topological order. Costs about the group's size: at most two maps
    are kept per value, and a cone is walked only up to ``MAX_RECOMPUTE``."""
    unique = {id(e): e for e in eqns}
    if not any(maps_index(e) for e in unique.values()):
        return None  # every read is at the kernel's own index
    order = sorted(unique.values(), key=lambda e: position[id(e)])
    producer: dict[Var, JaxprEqn] = {v: e for e in order for v in e.outvars}
    reads: dict[Var, int] = defaultdict(int)
    for e in order:
        for u in e.invars:
            if isinstance(u, Var):
                reads[u] += 1
    at: dict[Var, set[int]] = defaultdict(set)  # the maps each value is computed at (<= 2)
    maps = _Maps()
    for e in reversed(order):  # every reader before its producer
        mine: set[int] = set()
        for v in e.outvars:
            if not reads[v] or (owned(v) and uses[v] > reads[v]):
                mine.add(0)
            mine |= at.get(v, set())
        if not mine:
            continue  # not needed here: a recomputed copy whose readers left
        if len(mine) > 1 and _cone_cost(e, producer, maps, MAX_RECOMPUTE) > MAX_RECOMPUTE:
            return e.outvars[0]
        if not _reads_per_element(e):
            continue
        for k, u in enumerate(e.invars):
            if isinstance(u, Var) and u in producer:
                into = at[u]
                for m in mine:
                    if len(into) > 1:
                        break
                    into.add(_operand_map(maps, e, k, u, m))
    return None


class DuplicationCheck:
    """``overexpanded`` for fusion's merges: ``uses`` and ``position`` as there, ``group_of``
    each value's owning group."""

    def __init__(self, uses: Mapping[Var, int], position: Mapping[int, int],
                 group_of: Mapping[Var, FusionGroup]):
        self.uses, self.position, self.group_of = uses, position, group_of

    def expands(self, owners: set[FusionGroup], extra: Iterable[JaxprEqn] = (),
                owning: Iterable[Var] = ()) -> bool:
        """Would one group of ``owners``' equations and ``extra`` (recomputed copies, or a
        joining equation whose results ``owning`` it owns) compute a value dearer than
        ``MAX_RECOMPUTE`` at several index maps?"""
        owning = set(owning)
        eqns = [e for g in owners for e in g.eqns]
        eqns.extend(extra)
        return overexpanded(eqns, lambda v: self.group_of.get(v) in owners or v in owning,
                            self.uses, self.position) is not None
