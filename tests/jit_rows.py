"""The row format of the jit-vs-eager-vs-jax op tables (test_jit_ops.py and
test_jit_ops_scientific.py): a :class:`Row`, the tolerances, which primitives are exact, and
:func:`check_row`, which runs all of a row's argument sets through one ``fx.jit`` program and
one ``jax.jit`` program."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import jax
import numpy as np
from harness import assert_allclose, assert_bitwise, to_fx

import fx
from fx.lax.elementwise_record import records

F16, BF16, F32, F64 = (np.dtype(d) for d in ("float16", "bfloat16", "float32", "float64"))
I32, I64, U32, BOOL = (np.dtype(d) for d in ("int32", "int64", "uint32", "bool"))
FLOATS = (F32, F64)
HALF = (F32, F64, F16, BF16)
INTS = (I32, I64, U32)
ALL = (*HALF, *INTS, BOOL)

JIT_TOL = {F16: 1e-3, BF16: 8e-3, F32: 2e-6, F64: 1e-12}

@dataclass(frozen=True)
class Row:
    """``fx_fn(*args)`` under fx.jit == eagerly == ``jax_fn(*args)`` under jax.jit, for every
    argument tuple ``make(rng, dtype)`` returns for every dtype in ``dtypes``."""

    name: str
    fx_fn: Callable
    jax_fn: Callable
    make: Callable[[np.random.Generator, np.dtype], list[tuple]]
    dtypes: tuple = FLOATS
    slack: float = 1.0  # multiplies JIT_TOL (sums in another order, chains of ops)
    jax_tol: float | None = None  # rtol = atol of jit vs jax, instead of harness.TOL
    xfail: str | None = None  # a known bug: the row is expected to fail (strictly)
    # Dtypes after the first run only these of their argument sets (the first dtype runs all
    # shapes), which keeps compile time down; None: all of them.
    sample: tuple[int, ...] | None = (1, -1)
    # Primitives the row exercises that a transformation removes before lowering (collectives
    # become reductions under their vmap), so they are not in its traced jaxpr.
    covers: tuple[str, ...] = ()
    # Also compare jvp, vjp, float64 finite differences and vmap with jax
    # (test_jit_ops.test_transformations_match_jax): for a row of differentiable primitives.
    transforms: bool = False

    def __repr__(self) -> str:
        return self.name

    def argument_sets(self) -> list[tuple[np.dtype, tuple]]:
        out = []
        for dt in self.dtypes:
            rng = np.random.default_rng(zlib.crc32(f"{self.name}{dt}".encode()))
            sets = self.make(rng, np.dtype(dt))
            if dt != self.dtypes[0] and self.sample is not None:
                sets = [sets[i] for i in sorted({i % len(sets) for i in self.sample})]
            out += [(dt, s) for s in sets]
        return out


def assert_jit_close(got, want, what: str, slack: float = 1.0) -> None:
    """Leafwise: equal shapes and dtypes, equal ints and bools, NaNs in the same places, floats
    within ``slack * JIT_TOL`` (relative and absolute)."""
    got_leaves, want_leaves = fx.tree_util.tree_leaves(got), fx.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves), f"{what}: {len(got_leaves)} outputs"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        t = slack * JIT_TOL.get(np.asarray(w).dtype, 0)
        assert_allclose(g, w, rtol=t, atol=t, what=f"{what}, output {i}")


# Primitives whose result is exactly determined (IEEE-correctly rounded or no rounding at all):
# under jit they must give eager's bits, signed zeros included (NaN payloads aside). Any
# primitive on integers and bools only is exact too. The elementwise records say it themselves
# (their ``exact``); the other primitives are listed here.
EXACT = frozenset("""
    add_any argmax argmin bitcast_convert_type broadcast_in_dim concatenate cond
    convert_element_type cummax cummin dynamic_slice dynamic_update_slice gather iota pad
    reduce_and reduce_max reduce_min reduce_or reduce_window_max reduce_window_min reduce_xor
    reshape rev round scan scatter scatter_max scatter_min select_and_gather_add select_n slice
    sort squeeze transpose while""".split()) | {r.name for r in records() if r.exact}


# Exact on real operands, rounded more than once on complex ones (a product is a sum of two
# rounded products; a quotient or modulus more).
INEXACT_ON_COMPLEX = frozenset(r.name for r in records() if r.exact == "real")


def _is_exact(closed) -> bool:
    """Every equation of the jaxpr (sub-jaxprs included) is exact."""
    stack = [closed.jaxpr]
    while stack:
        for e in stack.pop().eqns:
            avals = [v.aval for v in (*e.invars, *e.outvars)]
            if e.primitive.name not in EXACT and not all(
                    a.dtype.kind in "biu" for a in avals):
                return False
            if e.primitive.name in INEXACT_ON_COMPLEX and any(a.dtype.kind == "c" for a in avals):
                return False
            for p in e.params.values():
                for sub in p if isinstance(p, tuple) else (p,):
                    if hasattr(sub, "jaxpr") and hasattr(sub.jaxpr, "eqns"):
                        stack.append(sub.jaxpr)
    return True


def check_row(row: Row) -> None:
    """One fx.jit program (and one jax.jit program) runs every argument set of the row;
    where the row's operations are exact, jit must give eager's bits."""
    sets = [s for _, s in row.argument_sets()]
    eager = [row.fx_fn(*to_fx(list(s))) for s in sets]
    exact = [_is_exact(fx.make_jaxpr(row.fx_fn)(*s)) for s in sets]
    got = fx.jit(lambda sets: [row.fx_fn(*s) for s in sets])(sets)
    # NumPy arguments: jnp.asarray would compile a staging program per shape and dtype.
    # XLA at optimization level 0 compiles these many small outputs ~30% faster.
    want = jax.jit(lambda sets: [row.jax_fn(*s) for s in sets]).lower(sets).compile(
        compiler_options={"xla_backend_optimization_level": 0})(sets)
    assert len(got) == len(sets)
    for s, g, e, w, ex in zip(sets, got, eager, want, exact):
        where = f"{row.name} args {[f'{a.dtype}{list(np.shape(a))}' for a in s]}"
        if ex:
            assert_bitwise(g, e, f"{where}: jit vs eager (exact)")
        else:
            assert_jit_close(g, e, f"{where}: jit vs eager", row.slack)
        assert_allclose(g, w, rtol=row.jax_tol, atol=row.jax_tol, what=f"{where}: jit vs jax")


def draw(rng, shape, dtype, lo=-3.0, hi=3.0) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        lo = max(lo, 0) if dtype.kind == "u" else lo
        return np.asarray(rng.integers(int(np.floor(lo)), int(np.ceil(hi)) + 1, shape), dtype)
    return np.asarray(rng.uniform(lo, hi, shape)).astype(dtype)
