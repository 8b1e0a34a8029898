"""Shared checks for table-driven op tests: fx against jax (the oracle) and against itself.

An :class:`OpCase` names an fx function and its jax twin plus how to draw arguments. The
checks compare eval, jvp and vjp with jax, vmap with a Python loop (and jax.vmap), and run
``fx.test_util.check_grads`` at order 2 in float64.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

import fx
from fx import tree_util
from fx.test_util import check_grads

TOL = {
    np.dtype(np.float16): 2e-2,
    np.dtype("bfloat16"): 5e-2,
    np.dtype(np.float32): 2e-5,
    np.dtype(np.float64): 1e-11,
    np.dtype(np.complex64): 2e-5,
    np.dtype(np.complex128): 1e-11,
}


def tol_for(dtype) -> float:
    return TOL.get(np.dtype(dtype), 0)


def to_jax(tree):
    return tree_util.tree_map(lambda x: jnp.asarray(np.asarray(x)) if _is_arr(x) else x, tree)


def to_fx(tree):
    return tree_util.tree_map(lambda x: fx.numpy.asarray(np.asarray(x)) if _is_arr(x) else x, tree)


def _is_arr(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic, fx.Array, jax.Array))


def assert_allclose(got, want, rtol=None, atol=None, check_dtype=True, what=""):
    """Leafwise comparison of pytrees of arrays; NaNs must match, dtypes too (by default)."""
    g_leaves, g_tree = tree_util.tree_flatten(got)
    w_leaves, w_tree = tree_util.tree_flatten(
        tree_util.tree_map(lambda x: x, want) if not isinstance(want, jax.Array) else want
    )
    assert len(g_leaves) == len(w_leaves), f"{what}: {len(g_leaves)} vs {len(w_leaves)} leaves"
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: shape {g.shape} != expected {w.shape}"
        if check_dtype:
            assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != expected {w.dtype}"
        t = tol_for(w.dtype) if rtol is None else rtol
        a = t if atol is None else atol
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=what)
        else:
            wide = np.complex128 if "c" in (g.dtype.kind, w.dtype.kind) else np.float64
            np.testing.assert_allclose(
                g.astype(wide), w.astype(wide), rtol=t, atol=a, err_msg=what, equal_nan=True,
            )


def _bits(a: np.ndarray) -> np.ndarray:
    """The bytes of ``a``, with every NaN replaced by one canonical NaN (payloads and their
    signs are not part of the result: NumPy and C differ in which NaN they return)."""
    a = np.array(a)
    if a.dtype.kind == "c":  # each part on its own
        a = a.reshape(-1).view(a.real.dtype)
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        a[np.isnan(a)] = np.nan
    return a.reshape(-1).view(np.uint8)


def assert_bitwise(got, want, what=""):
    """Leafwise: the same shapes, dtypes and bits (``-0.0`` is not ``0.0``); NaNs must be in
    the same places, their payloads may differ."""
    g_leaves = tree_util.tree_leaves(got)
    w_leaves = tree_util.tree_leaves(want)
    assert len(g_leaves) == len(w_leaves), f"{what}: {len(g_leaves)} vs {len(w_leaves)} leaves"
    for i, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: shape {g.shape} != expected {w.shape}"
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != expected {w.dtype}"
        gb, wb = _bits(g), _bits(w)
        if not np.array_equal(gb, wb):
            differ = np.flatnonzero((gb != wb).reshape(g.size, -1).any(axis=1)) if g.size else []
            k = int(differ[0])
            raise AssertionError(
                f"{what}, output {i}: {len(differ)} of {g.size} elements differ in their bits; "
                f"first at flat index {k}: got {g.reshape(-1)[k]!r}, expected {w.reshape(-1)[k]!r}")


@dataclass
class OpCase:
    """One row of an op table: ``fx_fn(*args)`` must match ``jax_fn(*args)``."""

    name: str
    fx_fn: Callable
    jax_fn: Callable
    args: Callable[[np.random.Generator], Sequence]  # rng -> numpy arguments
    differentiable: bool = True
    diff_argnums: tuple[int, ...] = (0,)
    rtol: float | None = None
    atol: float | None = None
    grad_order: int = 2
    grad_tol: float | None = None
    tags: set = field(default_factory=set)

    def __repr__(self) -> str:
        return self.name


def jax_jit(fn: Callable) -> Callable:
    """``fn`` (a jax oracle) under ``jax.jit``, or run eagerly where it cannot be traced
    (value-dependent shapes, Python control flow on values).

    Eagerly, jax compiles each primitive of a composite function on its own (~60 ms each:
    ``jnp.insert``'s vjp took 11 s eagerly, 1.4 s jitted), and the table checks compare to
    tolerances, which cover the last-bit differences XLA's fusion may make."""
    jitted = jax.jit(fn)

    def call(*args):
        try:
            return jitted(*args)
        except Exception:  # not traceable: the eager oracle (its own error if it fails)
            return fn(*args)

    return call


def check_eval(case: OpCase, args) -> None:
    got = case.fx_fn(*to_fx(args))
    want = jax_jit(case.jax_fn)(*to_jax(args))
    assert_allclose(got, want, case.rtol, case.atol, what=f"{case.name} eval")


def _split(case: OpCase, args):
    diff = [a for i, a in enumerate(args) if i in case.diff_argnums]

    def rebuild(fn, full):
        def g(*d):
            it = iter(d)
            return fn(*[next(it) if i in case.diff_argnums else a for i, a in enumerate(full)])

        return g

    return diff, rebuild


def randn(rng, shape, dtype=np.float64) -> np.ndarray:
    """Standard normal values of ``shape`` in ``dtype`` (complex: both parts random)."""
    r = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        r = r + 1j * rng.standard_normal(shape)
    return r.astype(dtype)


def random_like(rng, a) -> np.ndarray:
    """Standard normal values shaped and typed like ``a`` (complex: both parts random)."""
    return randn(rng, np.shape(a), np.asarray(a).dtype)


def adjoint(a) -> np.ndarray:
    """The conjugate transpose of the last two axes."""
    return np.conj(np.swapaxes(a, -1, -2))


def check_jvp(case: OpCase, args, rng) -> None:
    diff, rebuild = _split(case, args)
    tangents = [random_like(rng, a) for a in diff]
    fx_out, fx_t = fx.jvp(rebuild(case.fx_fn, to_fx(args)), to_fx(diff), to_fx(tangents))
    jx_out, jx_t = jax.jvp(jax_jit(rebuild(case.jax_fn, to_jax(args))), to_jax(diff),
                           to_jax(tangents))
    assert_allclose(fx_out, jx_out, case.rtol, case.atol, what=f"{case.name} jvp primal")
    assert_allclose(fx_t, jx_t, case.rtol, case.atol, what=f"{case.name} jvp tangent")


def _jax_vjp(f: Callable, diff: list, rng):
    """``(ct, jax's cotangents)``: the pullback of ``f`` at ``diff`` of a random ``ct``, the
    forward and backward passes one ``jax.jit`` program (jax.vjp of a jitted function
    compiles the forward and the transposed program apart: two XLA compiles, a large share of
    the table tests' time). Where jax cannot trace it so, or an argument is not inexact
    (its cotangent a float0), the vjp of the jitted function, or jax's eager one."""
    if all(np.asarray(a).dtype.kind in "fc" for a in diff):
        try:
            shapes = jax.eval_shape(f, *diff)
        except Exception:  # noqa: BLE001  (not traceable: the eager path below)
            shapes = None
        if shapes is not None:
            ct = tree_util.tree_map(lambda o: randn(rng, o.shape, o.dtype), shapes)
            return ct, jax.jit(lambda d, c: jax.vjp(f, *d)[1](c))(diff, to_jax(ct))
    jx_out, jx_pull = jax.vjp(jax_jit(f), *diff)
    ct = tree_util.tree_map(lambda o: random_like(rng, o), jx_out)
    return ct, jx_pull(to_jax(ct))


def check_vjp(case: OpCase, args, rng) -> None:
    diff, rebuild = _split(case, args)
    fx_out, fx_pull = fx.vjp(rebuild(case.fx_fn, to_fx(args)), *to_fx(diff))
    ct, want = _jax_vjp(rebuild(case.jax_fn, to_jax(args)), to_jax(diff), rng)
    assert_allclose(fx_pull(to_fx(ct)), want, case.rtol, case.atol, what=f"{case.name} vjp")


def check_vmap(case: OpCase, batched_args, in_axes) -> None:
    """vmap over ``in_axes`` equals a loop over the batch and jax.vmap."""
    fx_out = fx.vmap(case.fx_fn, in_axes=in_axes)(*to_fx(batched_args))
    jx_out = jax_jit(jax.vmap(case.jax_fn, in_axes=in_axes))(*to_jax(batched_args))
    assert_allclose(fx_out, jx_out, case.rtol, case.atol, what=f"{case.name} vmap vs jax")
    size = next(np.shape(a)[ax] for a, ax in zip(batched_args, in_axes) if ax is not None)
    rows = []
    for i in range(size):
        row = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(batched_args, in_axes)]
        rows.append(case.fx_fn(*to_fx(row)))
    stacked = tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *rows)
    assert_allclose(fx_out, stacked, case.rtol, case.atol, what=f"{case.name} vmap vs loop")


def check_grads_f64(case: OpCase, args) -> None:
    wide = {"f": np.float64, "c": np.complex128}
    args64 = [np.asarray(a, wide[np.asarray(a).dtype.kind])
              if np.asarray(a).dtype.kind in wide else a for a in args]
    diff, rebuild = _split(case, args64)
    check_grads(rebuild(case.fx_fn, to_fx(args64)), to_fx(diff), order=case.grad_order,
                atol=case.grad_tol, rtol=case.grad_tol)


def run_doctests(*modules) -> int:
    """Run the docstring examples of ``modules`` (with ``fx`` in scope); fail on any failure
    and return how many examples ran."""
    import doctest

    attempted = 0
    for module in modules:
        result = doctest.testmod(module, extraglobs={"fx": fx},
                                 optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, f"{result.failed} docstring examples failed in {module}"
        attempted += result.attempted
    return attempted


@contextlib.contextmanager
def same_mode(x64: bool):
    """fx and the jax oracle in the same mode: jax's default mode, or x64."""
    import jax

    import fx

    old = fx.config.enable_x64
    fx.config.update("enable_x64", x64)
    try:
        with jax.enable_x64(x64):
            yield
    finally:
        fx.config.update("enable_x64", old)


def python_calls(fn) -> int:
    """How many Python functions ``fn()`` calls: a compiler's work, deterministically (unlike
    its time)."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls
