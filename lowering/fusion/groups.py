"""Fusion groups and the rules for what may join one (see ``partition``).

A :class:`FusionGroup` is a set of equations that becomes one kernel (or one library call and
its epilogue). The predicates here answer local questions for ``fuse``: may this equation join
that group, may the merged group store this value, would a reduction's result be read at
another index. Each costs the size of the groups it looks at, which fusion bounds
(``MAX_GROUP_EQNS``).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from dataclasses import dataclass, field

from fx.jaxpr import JaxprEqn, Var, has_effects
from fx.lax import base, structural
from fx.lowering.fusion.primitive_rules import (
    Pattern,
    pattern_of,
    reduction_combine,
    rereads,
)


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

    @property
    def size(self) -> int:
        return size(self.eqns)

    def produced(self) -> set[Var]:
        return {v for e in self.eqns for v in e.outvars}

    def label(self) -> str:
        names = [e.primitive.name for e in self.eqns]
        return f"{self.kind.value}[{', '.join(names)}]"


reduction_prims = reduction_combine  # the primitives that anchor a REDUCTION group

# The largest group (its ``size``): a long chain becomes several kernels (each stores its last
# value; the next one loads it, once per 64 operations). gcc -O3 is superlinear in a kernel's
# length on integer chains (3,000 chained x*3+c: 0.4 s of compile in kernels of 64, 2.3 s in
# kernels of 256), and more kernels spread over more translation units compile in parallel.
MAX_GROUP_EQNS = 64
VIEW_PRIMS = {base.reshape_p, base.transpose_p}
# Equations that are only an index map in a kernel (a load's index, no operation of their own)
# weigh a quarter of an operation in a group's size: a small convolution written as a sum of
# products (lower_convolutions) is a slice and a broadcast of each operand per product.
INDEX_MAPS = {base.reshape_p, base.transpose_p, base.broadcast_in_dim_p, structural.slice_p,
              structural.squeeze_p}


def size(eqns) -> int:
    """What ``eqns`` weigh against ``MAX_GROUP_EQNS``: their operations, plus a quarter of
    their index maps."""
    ops = sum(1 for e in eqns if e.primitive not in INDEX_MAPS)
    return ops + (len(eqns) - ops + 3) // 4


def space_ok(g: FusionGroup, shape) -> list[bool]:
    """Every value ``g`` must materialize lives in ``shape`` (one iteration space)."""
    return [v.aval.shape == shape for e in g.eqns for v in e.outvars]



def reads_outside(g: FusionGroup, uses) -> dict[Var, int]:
    """How often each value ``g`` computes is read outside ``g`` (values read only inside
    are left out)."""
    eqns = {id(e): e for e in g.eqns}.values()
    inside: dict[Var, int] = defaultdict(int)
    for e in eqns:
        for x in e.invars:
            if isinstance(x, Var):
                inside[x] += 1
    counts = {w: uses[w] - inside[w] for e in eqns for w in e.outvars}
    return {w: n for w, n in counts.items() if n > 0}



def outputs_fit(outside: dict[Var, int], v: Var, shape) -> bool:
    """Values of a group read outside it (``outside``; other than ``v`` by the merging
    consumer) stay outputs after a merge: they must live in the merged group's iteration
    space."""
    return all(w.aval.shape == shape for w, n in outside.items() if n - (w is v) > 0)



def joinable(g: FusionGroup, v: Var, eqn: JaxprEqn, out_shape) -> bool:
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



def tied_reads_ok(host: FusionGroup, eqns: list[JaxprEqn], position: dict) -> bool:
    """Can ``eqns`` join ``host``? A reduction's results (a GEMM's product) exist only at the
    output index a kernel iteration computes, so everything computed from them may be read
    only by elementwise work at that index (or a reduction's keepdims broadcast), never
    through an index map such as pad or a slice that would ask for another element.
    (One pass in program order: values are tied before their readers are seen.)"""
    if host.kind is GroupKind.REDUCTION:
        tied = {v for e in host.eqns if e.primitive in reduction_prims for v in e.outvars}
    elif host.kind is GroupKind.GEMM:
        tied = set(host.anchor.outvars)
    else:
        return True
    joining = {id(e) for e in eqns}
    everything = {id(e): e for e in host.eqns + eqns}.values()
    for e in sorted(everything, key=lambda e: position[id(e)]):
        read = [v for v in e.invars if isinstance(v, Var) and v in tied]
        if not read:
            continue
        if id(e) in joining and not (same_rows(host, e) or all(
                joinable(host, v, e, e.outvars[0].aval.shape) for v in read)):
            return False
        tied.update(e.outvars)
    return True



def same_rows(host: FusionGroup, eqn: JaxprEqn) -> bool:
    """A further reduction over the host's rows (softmax's sum after its max)."""
    return (host.kind is GroupKind.REDUCTION and eqn.primitive in reduction_prims
            and eqn.invars[0].aval.shape == host.in_shape
            and tuple(eqn.params["axes"]) == host.axes)



def effectful(eqn: JaxprEqn) -> bool:
    return has_effects(eqn)



def can_store(g: FusionGroup, v: Var) -> bool:
    if g.kind is GroupKind.REDUCTION:
        return v.aval.shape in (g.in_shape, g.out_shape)
    if g.kind is GroupKind.GEMM:
        return v.aval.shape == g.anchor.outvars[0].aval.shape
    if g.kind is GroupKind.ELEMENTWISE:
        return v.aval.shape == g.root.outvars[0].aval.shape
    return True



def external_reads(g: FusionGroup) -> set[Var]:
    local = g.produced()
    return {v for e in g.eqns for v in e.invars if isinstance(v, Var) and v not in local}



def gathers_from(c: FusionGroup, p: FusionGroup) -> bool:
    """Does an equation of ``c`` read a value of ``p`` through a gather (many times each)?"""
    produced = p.produced()
    return any(rereads(e) and any(v in produced for v in e.invars)
               for e in c.eqns)
