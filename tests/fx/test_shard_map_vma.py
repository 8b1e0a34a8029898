"""Derivatives inside ``fx.shard_map`` with ``check_vma=True`` give jax's typed meaning:
every ``shard_map_vma_cases`` case (data and tensor parallel training steps, psum of varying
and invariant values, all_gather/psum_scatter/ppermute/all_to_all of varying and replicated
values, partial ``axis_names``, pvary/pcast, jit and scan inside, grad outside) against
``jax.shard_map(..., check_vma=True)`` run with 8 CPU devices in a subprocess; the errors jax
gives; and jit's cache keeping the checked and unchecked programs apart.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import shard_map_vma_cases as cases

import fx
import fx.lax as flax
import fx.numpy as fnp
from fx.sharding import Mesh
from fx.sharding import PartitionSpec as P

HERE = os.path.dirname(os.path.dirname(__file__))  # tests/, where the cases live
DEVICES = np.array([fx.Device("cpu", i) for i in range(8)], dtype=object)


def mesh(shape, names):
    return Mesh(DEVICES[:int(np.prod(shape))].reshape(shape), names)


LIB = cases.Lib(flax, fnp, fx.grad, fx.value_and_grad, fx.vjp, fx.jit, fx.shard_map, P, mesh)


@pytest.fixture(scope="module")
def jax_results():
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "shard_map_vma_jax_oracle.py")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(np.load(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("name", list(cases.CASES))
def test_matches_jax_check_vma(name, jax_results):
    got = cases.CASES[name](LIB)
    want = [jax_results[f"{name}/{i}"] for i in range(len(got))]
    assert f"{name}/{len(got)}" not in jax_results
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (name, i, g.shape, w.shape, g.dtype)
        if w.dtype.kind == "i":
            np.testing.assert_array_equal(g, w, err_msg=f"{name} output {i}")
        else:
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=f"{name} output {i}")


M = mesh((8,), ("x",))
X = np.arange(16.0, dtype=np.float32)


def test_grad_of_psum_inside_is_a_broadcast_and_unchecked_is_pmaps():
    body = lambda v: fx.grad(lambda u: flax.psum(fnp.sum(u), "x"))(v)  # noqa: E731
    checked = fx.shard_map(body, mesh=M, in_specs=P("x"), out_specs=P("x"))
    unchecked = fx.shard_map(body, mesh=M, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    np.testing.assert_array_equal(checked(X), np.ones(16))
    np.testing.assert_array_equal(unchecked(X), np.full(16, 8.0))


def test_jit_inside_does_not_reuse_a_program_of_the_other_mode():
    # The same jitted gradient inside a checked and an unchecked shard_map: the program
    # traced under one must not serve the other (jit's key has the bound axes' check flags).
    g = fx.jit(fx.grad(lambda u: flax.psum(fnp.sum(u * u), "x")))

    def run(check):
        return np.asarray(fx.shard_map(lambda v: g(v), mesh=M, in_specs=P("x"),
                                       out_specs=P("x"), check_vma=check)(X))

    np.testing.assert_array_equal(run(False), 16 * X)
    np.testing.assert_array_equal(run(True), 2 * X)
    np.testing.assert_array_equal(run(False), 16 * X)


def test_jit_of_a_function_calling_both_modes():
    def step(check):
        return fx.jit(lambda v: fx.shard_map(
            lambda u: fx.grad(lambda w: flax.psum(fnp.sum(w), "x"))(u), mesh=M,
            in_specs=P("x"), out_specs=P("x"), check_vma=check)(v))

    np.testing.assert_array_equal(step(True)(X), np.ones(16))
    np.testing.assert_array_equal(step(False)(X), np.full(16, 8.0))


def test_gradient_of_a_varying_value_claimed_replicated_is_refused():
    # As jax: the cotangent of a varying input varies, so out_specs P() is an error.
    f = fx.shard_map(lambda v: fx.grad(lambda u: flax.psum(fnp.sum(u), "x"))(v), mesh=M,
                     in_specs=P("x"), out_specs=P())
    with pytest.raises(ValueError, match="out_specs which require replication"):
        f(X)
    g = fx.shard_map(lambda w, v: fx.grad(lambda w: fnp.sum(w * v))(w), mesh=M,
                     in_specs=(P(), P("x")), out_specs=P())
    np.testing.assert_allclose(g(np.float32(2.0), X), X.sum())  # invariant: summed


def test_pvary_makes_a_value_varying_for_out_specs():
    f = fx.shard_map(lambda w: flax.pvary(w, "x"), mesh=M, in_specs=P(), out_specs=P())
    with pytest.raises(ValueError, match="vary"):
        f(np.float32(1.0))


def test_pcast_to_other_types_and_unbound_names():
    f = fx.shard_map(lambda w: flax.pcast(w, "x", to="reduced"), mesh=M, in_specs=P(),
                     out_specs=P())
    with pytest.raises(NotImplementedError, match="reduced"):
        f(np.float32(1.0))
    with pytest.raises(ValueError, match="unexpected to"):
        flax.pcast(1.0, "x", to="sideways")
    with pytest.raises(NameError, match="unbound axis name 'x'"):
        flax.pvary(1.0, "x")


def test_pvary_outside_a_checked_map_is_the_identity():
    got = fx.vmap(lambda v: flax.pvary(v, "i") * 2, axis_name="i")(X)
    np.testing.assert_array_equal(got, 2 * X)
    f = fx.shard_map(lambda v: fx.grad(lambda u: fnp.sum(flax.pvary(u, "x")))(v), mesh=M,
                     in_specs=P(), out_specs=P(), check_vma=False)
    np.testing.assert_array_equal(f(X[:2]), np.ones(2))


def test_nested_grad_inside():
    # d2/dw2 of a replicated parameter's pmean'd loss: the second derivative is summed too.
    def body(w, x):
        loss = lambda w: flax.pmean(fnp.sum(fnp.sin(w * x)), "x")  # noqa: E731
        return fx.grad(fx.grad(loss))(w)

    f = fx.shard_map(body, mesh=M, in_specs=(P(), P("x")), out_specs=P())
    x = np.linspace(-1, 1, 16).astype(np.float32)
    w = np.float32(0.7)
    np.testing.assert_allclose(f(w, x), np.sum(-x * x * np.sin(w * x)) / 8, rtol=1e-5)
