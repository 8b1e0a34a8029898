"""jit's ahead-of-time stages (``trace`` → ``Traced`` → ``Lowered`` → ``Compiled``) and
``fx.fwd_and_bwd``, against jax's (``jax.stages``, ``jax.fwd_and_bwd``) in x64 mode."""

from __future__ import annotations

import doctest
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx import stages

# --- the functions: each written once over a NumPy namespace, jitted by fx and by jax -------


def _pytree(m):
    def f(params, x):
        y = x @ params["w"] + params["b"]
        return {"y": y, "stats": (m.sum(x, axis=0), m.max(y))}
    return f


def _static(m):
    def f(x, n, *, mode="add"):
        return x + n if mode == "add" else x * n
    return f


def _kwargs(m):
    def f(x, *, scale, shift=1.0):
        return x * scale + shift, m.abs(x).astype(m.int32)
    return f


def _closure(m):
    w = m.asarray(np.arange(4.0))

    def f(x):
        return x + w * np.arange(4.0), m.zeros(2, m.int8)
    return f


def _integers(m):
    def f(i, j):
        return (i * j - i) // 3, m.maximum(i, j).astype(m.float32)
    return f


def _rng_floats(shape, seed=0):
    # Small integers as floats: sums and products of them are exact in every order.
    return np.random.default_rng(seed).integers(-4, 5, shape).astype(np.float64)


@dataclass(frozen=True)
class Case:
    name: str
    make: Any
    args: tuple  # dynamic and static, positionally
    kwargs: dict = field(default_factory=dict)
    jit_kw: dict = field(default_factory=dict)
    dyn: tuple = ()  # positions of the dynamic positional arguments
    dyn_kw: tuple = ()  # names of the dynamic keyword arguments

    def dyn_args(self):
        return tuple(self.args[i] for i in self.dyn)

    def dyn_kwargs(self):
        return {k: self.kwargs[k] for k in self.dyn_kw}


CASES = [
    Case("pytree", _pytree, ({"w": _rng_floats((4, 3)), "b": _rng_floats(3, 1)},
                             _rng_floats((5, 4), 2)), dyn=(0, 1)),
    Case("static", _static, (_rng_floats((2, 3)), 3), {"mode": "mul"},
         {"static_argnums": 1, "static_argnames": "mode"}, dyn=(0,)),
    Case("kwargs", _kwargs, (_rng_floats(6),), {"scale": np.float32(2.0), "shift": 0.5},
         dyn=(0,), dyn_kw=("scale", "shift")),
    Case("closure", _closure, (_rng_floats(4),), dyn=(0,)),
    Case("integers", _integers, (np.arange(-6, 6, dtype=np.int32),
                                 np.arange(12, dtype=np.int32)[::-1].copy()), dyn=(0, 1)),
]
IDS = [c.name for c in CASES]


def _fx(case):
    return fx.jit(case.make(fnp), **case.jit_kw)


def _jax(case):
    return jax.jit(case.make(jnp), **case.jit_kw)


def _paths(tree, tu):
    leaves = tu.tree_flatten_with_path(tree)[0]
    return [(tu.keystr(p), leaf) for p, leaf in leaves]


def _types(tree, tu):
    return [(p, tuple(x.shape), np.dtype(x.dtype)) for p, x in _paths(tree, tu)]


def _bits(x):
    a = np.asarray(x)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a


# --- Traced --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_traced_jaxpr_avals_and_name_match_jax(case):
    got = _fx(case).trace(*case.args, **case.kwargs)
    want = _jax(case).trace(*case.args, **case.kwargs)
    assert isinstance(got, stages.Traced) and isinstance(got.jaxpr, fx.jaxpr.ClosedJaxpr)
    assert [(a.shape, a.dtype, a.weak_type) for a in got.jaxpr.out_avals] == \
        [(a.shape, np.dtype(a.dtype), a.weak_type) for a in want.jaxpr.out_avals]
    assert [(a.shape, a.dtype) for a in got.jaxpr.in_avals] == \
        [(a.shape, np.dtype(a.dtype)) for a in want.jaxpr.in_avals]
    assert len(got.jaxpr.consts) == len(got.jaxpr.jaxpr.constvars)
    assert got.fun_name == want.fun_name == "f"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_out_info_and_args_info_of_every_stage_match_jax(case):
    traced = _fx(case).trace(*case.args, **case.kwargs)
    lowered = traced.lower()
    compiled = lowered.compile()
    jt = _jax(case).trace(*case.args, **case.kwargs)
    want_out = _types(jt.out_info, jax.tree_util)
    want_weak = [x.weak_type for x in jax.tree_util.tree_leaves(jt.out_info)]
    want_args = [(p, tuple(a.shape), np.dtype(a.dtype), a.donated)
                 for p, a in _paths(jt.args_info, jax.tree_util)]
    for stage in (traced, lowered, compiled):
        assert _types(stage.out_info, fx.tree_util) == want_out
        assert [x.weak_type for x in fx.tree_util.tree_leaves(stage.out_info)] == want_weak
        assert [(p, a.shape, a.dtype, a.donated)
                for p, a in _paths(stage.args_info, fx.tree_util)] == want_args
        assert str(stage.in_tree).replace("PyTreeDef", "") == \
            str(jt.in_tree).replace("PyTreeDef", "")


# --- Compiled ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compiled_is_bitwise_the_jitted_function_and_jax(case):
    compiled = _fx(case).lower(*case.args, **case.kwargs).compile()
    got = compiled(*case.dyn_args(), **case.dyn_kwargs())
    jitted = _fx(case)(*case.args, **case.kwargs)
    want = _jax(case).lower(*case.args, **case.kwargs).compile()(
        *case.dyn_args(), **case.dyn_kwargs())
    assert fx.tree_util.tree_structure(got) == fx.tree_util.tree_structure(jitted)
    for (p, g), (_, j), (_, w) in zip(_paths(got, fx.tree_util), _paths(jitted, fx.tree_util),
                                      _paths(want, jax.tree_util)):
        assert g.dtype == j.dtype == w.dtype and g.aval.weak_type == w.weak_type, p
        np.testing.assert_array_equal(_bits(g), _bits(j), err_msg=p)
        np.testing.assert_array_equal(_bits(g), _bits(w), err_msg=p)


def _wrong_calls(case):
    """Calls a Compiled refuses: a changed shape, a changed dtype, a missing argument."""
    args, kwargs = list(case.dyn_args()), case.dyn_kwargs()
    first = np.asarray(fx.tree_util.tree_leaves(args)[0])
    reshaped = np.zeros(first.shape + (2,), first.dtype)
    retyped = first.astype(np.complex64)
    for bad in (reshaped, retyped):
        leaves, tree = fx.tree_util.tree_flatten(args)
        yield fx.tree_util.tree_unflatten(tree, [bad] + leaves[1:]), kwargs
    yield args[:-1], kwargs


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compiled_refuses_other_types_with_jax_error_type(case):
    compiled = _fx(case).lower(*case.args, **case.kwargs).compile()
    jcompiled = _jax(case).lower(*case.args, **case.kwargs).compile()
    for args, kwargs in _wrong_calls(case):
        with pytest.raises(Exception) as want:
            jcompiled(*args, **kwargs)
        with pytest.raises(want.type) as got:
            compiled(*args, **kwargs)
        assert want.type is TypeError
        assert "compiled" in str(got.value)


def test_compiled_type_error_names_the_argument_and_both_types():
    compiled = fx.jit(lambda x, y: x @ y).lower(np.ones((3, 4)), np.ones((4, 5))).compile()
    with pytest.raises(TypeError, match=r"argument 'y' compiled with f64\[4,5\] and called "
                                        r"with f64\[4,6\]"):
        compiled(np.ones((3, 4)), np.ones((4, 6)))
    with pytest.raises(TypeError, match="static arguments are bound at tracing"):
        fx.jit(lambda x, n: x * n, static_argnums=1).lower(np.ones(2), 3).compile()(
            np.ones(2), 3)


def test_compiled_deletes_donated_arrays_as_jax():
    compiled = fx.jit(lambda x: x * 2.0, donate_argnums=0).lower(np.ones(4)).compile()
    x = fnp.arange(4.0)
    np.testing.assert_array_equal(np.asarray(compiled(x)), [0.0, 2.0, 4.0, 6.0])
    assert x.is_deleted()
    assert compiled.args_info[0][0].donated and compiled.donate_argnums == (0,)


@pytest.mark.parametrize("m,n,k", [(3, 4, 5), (16, 1, 7), (32, 64, 8)])
def test_cost_analysis_flops_of_a_matmul(m, n, k):
    a, b = _rng_floats((m, k)), _rng_floats((k, n), 1)
    lowered = fx.jit(lambda a, b: a @ b).lower(a, b)
    costs = (lowered.cost_analysis(), lowered.compile().cost_analysis())
    for cost in costs:
        assert cost["flops"] == 2 * m * n * k
        assert cost["bytes accessed"] >= a.nbytes + b.nbytes + m * n * 8
    assert costs[0].keys() == costs[1].keys()
    want = jax.jit(lambda a, b: a @ b).lower(a, b).cost_analysis()
    assert {"flops", "bytes accessed"} <= want.keys() & costs[0].keys()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_memory_analysis_sizes(case):
    compiled = _fx(case).lower(*case.args, **case.kwargs).compile()
    mem = compiled.memory_analysis()
    names = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
             "temp_size_in_bytes", "generated_code_size_in_bytes", "peak_memory_in_bytes")
    for name in names:
        value = getattr(mem, name)
        assert type(value) is int and value >= 0, name
    dyn = fx.tree_util.tree_leaves((case.dyn_args(), case.dyn_kwargs()))
    assert mem.argument_size_in_bytes == sum(np.asarray(x).nbytes for x in dyn)
    assert mem.output_size_in_bytes == sum(
        x.size * x.dtype.itemsize for x in fx.tree_util.tree_leaves(compiled.out_info))
    want = _jax(case).lower(*case.args, **case.kwargs).compile().memory_analysis()
    # (jax's output size of several outputs adds XLA's tuple of pointers to them)
    assert (mem.argument_size_in_bytes, mem.alias_size_in_bytes) == \
        (want.argument_size_in_bytes, want.alias_size_in_bytes)
    # fx's own plan, as before the jax attributes
    assert mem["lower_bound_bytes"] <= mem["arena_bytes"] <= mem["naive_bytes"]
    assert mem.temp_size_in_bytes == mem["arena_bytes"]


def test_memory_analysis_counts_donated_outputs_as_aliases_as_jax():
    x = np.linspace(-1, 1, 24)
    got = fx.jit(lambda x: fnp.sin(x) + 1, donate_argnums=0).lower(x).compile()
    want = jax.jit(lambda x: jnp.sin(x) + 1, donate_argnums=0).lower(x).compile()
    got, want = got.memory_analysis(), want.memory_analysis()
    for name in ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes"):
        assert getattr(got, name) == getattr(want, name) == x.nbytes, name
    assert got.peak_memory_in_bytes == x.nbytes + got.temp_size_in_bytes


def test_memory_analysis_keys_are_fx_plan_entries():
    mem = fx.jit(fnp.tanh).lower(np.ones(8)).compile().memory_analysis()
    assert set(mem.keys()) == {"arena_bytes", "lower_bound_bytes", "naive_bytes",
                               "inplace_reuses"}
    with pytest.raises(KeyError, match="temp_size_in_bytes"):
        mem["temp_size_in_bytes"]


# --- fwd_and_bwd ---------------------------------------------------------------------------


def _loss(m):
    def f(x, w, b):
        return m.tanh(x @ w["k"] + b) * w["s"]
    return f


def _loss_aux(m):
    def f(x, w, b):
        y = m.tanh(x @ w["k"] + b) * w["s"]
        return y, {"norm": m.sum(y * y), "count": m.int32(3)}
    return f


FWD_BWD = [
    ("argnums=0", _loss, 0, False),
    ("argnums=1 pytree", _loss, 1, False),
    ("argnums=(0,2)", _loss, (0, 2), False),
    ("argnums=(2,0,1) aux", _loss_aux, (2, 0, 1), True),
    ("argnums=-1 aux", _loss_aux, -1, True),
]


def _fwd_bwd_args():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3))
    w = {"k": rng.standard_normal((3, 2)), "s": rng.standard_normal(2)}
    b = rng.standard_normal(2)
    ct = rng.standard_normal((4, 2))
    return (x, w, b), ct


@pytest.mark.parametrize("jitted", [True, False], ids=["jitted", "eager"])
@pytest.mark.parametrize("name,make,argnums,has_aux", FWD_BWD, ids=[r[0] for r in FWD_BWD])
def test_fwd_and_bwd_match_jax(name, make, argnums, has_aux, jitted):
    args, ct = _fwd_bwd_args()
    fwd, bwd = fx.fwd_and_bwd(make(fnp), argnums=argnums, has_aux=has_aux, jitted=jitted)
    jfwd, jbwd = jax.fwd_and_bwd(make(jnp), argnums=argnums, has_aux=has_aux, jitted=jitted)
    got, want = fwd(*args), jfwd(*args)
    assert len(got) == len(want) == (3 if has_aux else 2)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-12)
    if has_aux:
        assert fx.tree_util.tree_structure(got[2]) == \
            fx.tree_util.tree_structure({"norm": 0, "count": 0})
        for key in ("norm", "count"):
            np.testing.assert_allclose(np.asarray(got[2][key]), np.asarray(want[2][key]),
                                       rtol=1e-12)
    g, w = bwd(got[1], ct), jbwd(want[1], ct)
    g_paths, w_paths = _paths(g, fx.tree_util), _paths(w, jax.tree_util)
    assert [p for p, _ in g_paths] == [p for p, _ in w_paths]
    for (p, gl), (_, wl) in zip(g_paths, w_paths):
        assert gl.shape == wl.shape and gl.dtype == wl.dtype, p
        np.testing.assert_allclose(np.asarray(gl), np.asarray(wl), rtol=1e-12, atol=1e-15,
                                   err_msg=p)


def test_fwd_and_bwd_compile_once_across_iterations():
    fwd, bwd = fx.fwd_and_bwd(lambda x, w: x @ w, argnums=(0, 1))
    jfwd, jbwd = jax.fwd_and_bwd(lambda x, w: x @ w, argnums=(0, 1))
    x, w, ct = _rng_floats((4, 4)), _rng_floats((4, 4), 1), _rng_floats((4, 4), 2)
    for _ in range(3):
        (y, res), (jy, jres) = fwd(x, w), jfwd(x, w)
        (gx, gw), (jgx, jgw) = bwd(res, ct), jbwd(jres, ct)
        for g, j in ((y, jy), (gx, jgx), (gw, jgw)):  # exact: small integers
            np.testing.assert_array_equal(_bits(g), _bits(j))
        x = x - np.asarray(gx)
    assert fwd.cache_size() == bwd.cache_size() == 1


def test_fwd_and_bwd_bad_argnums():
    with pytest.raises(TypeError, match="fwd_and_bwd: argnums"):
        fx.fwd_and_bwd(lambda x: x, argnums=(0.5,))
    fwd, _ = fx.fwd_and_bwd(lambda x: x, argnums=1)
    with pytest.raises(ValueError, match="fwd_and_bwd: argnums 1 is out of range"):
        fwd(np.ones(2))


# --- docstrings ----------------------------------------------------------------------------


def test_docstring_examples_run():
    globs = {"fx": fx, "fnp": fnp}
    with fx.enable_x64(False):
        result = doctest.testmod(stages, extraglobs=globs,
                                 optionflags=doctest.NORMALIZE_WHITESPACE)
        finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
            optionflags=doctest.NORMALIZE_WHITESPACE)
        for obj in (fx.fwd_and_bwd, fx.jit_function.JitFunction.trace):
            for test in finder.find(obj, globs=dict(globs)):
                runner.run(test)
    assert result.failed == 0 and result.attempted >= 8
    assert runner.failures == 0 and runner.tries >= 4
