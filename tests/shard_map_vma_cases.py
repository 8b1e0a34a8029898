"""Derivatives inside ``shard_map`` with ``check_vma=True`` (jax's typed meaning), written
once for fx and for jax: each case takes a :class:`Lib` and returns a list of arrays.

``lib.lax``, ``lib.np``, ``lib.grad``, ``lib.value_and_grad``, ``lib.vjp``, ``lib.jit``,
``lib.shard_map``, ``lib.P`` and ``lib.mesh(shape, names)`` are the library's. Inputs are
float32 (small integers where the result is exact). ``shard_map_vma_jax_oracle.py`` runs
the cases under jax (8 CPU devices) in a subprocess; this module imports neither library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Lib:
    lax: Any
    np: Any
    grad: Any
    value_and_grad: Any
    vjp: Any
    jit: Any
    shard_map: Any
    P: Any
    mesh: Any


def _rng(seed):
    return np.random.default_rng(seed)


def _f32(a):
    return np.asarray(a, np.float32)


def dp_pmean(lib):
    """Data parallel: replicated params, a batch split over "x", a pmean'd loss, grads inside."""
    P, m = lib.P, lib.mesh((8,), ("x",))
    r = _rng(0)
    w, x, y = _f32(r.standard_normal((3, 2))), _f32(r.standard_normal((16, 3))), \
        _f32(r.standard_normal((16, 2)))

    def body(w, x, y):
        def loss(w):
            return lib.lax.pmean(lib.np.mean((lib.np.tanh(x @ w) - y) ** 2), "x")
        return lib.value_and_grad(loss)(w)

    f = lib.shard_map(body, mesh=m, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()))
    return list(f(w, x, y)) + list(lib.jit(f)(w, x, y))


def dp_unreduced_loss(lib):
    """The loss is not reduced: each device's own; the replicated param's gradient sums them."""
    P, m = lib.P, lib.mesh((2, 4), ("x", "y"))
    r = _rng(1)
    w, x = _f32(r.standard_normal((3,))), _f32(r.standard_normal((8, 3)))

    def body(w, x):
        return lib.grad(lambda w: lib.np.sum(lib.np.sin(x * w)))(w)

    f = lib.shard_map(body, mesh=m, in_specs=(P(), P(("x", "y"))), out_specs=P())
    return [f(w, x)]


def tensor_parallel_2d(lib):
    """Megatron MLP on a (data, model) mesh: w1 by columns, w2 by rows over "model", batch over
    "data"; the grads taken inside come out summed over "data" and split over "model"."""
    P, m = lib.P, lib.mesh((2, 4), ("data", "model"))
    r = _rng(2)
    w1, w2 = _f32(r.standard_normal((5, 8))), _f32(r.standard_normal((8, 3)))
    x, y = _f32(r.standard_normal((6, 5))), _f32(r.standard_normal((6, 3)))

    def body(w1, w2, x, y):
        def loss(w1, w2):
            out = lib.lax.psum(lib.np.tanh(x @ w1) @ w2, "model")
            return lib.lax.pmean(lib.np.mean((out - y) ** 2), "data")
        return lib.value_and_grad(loss, argnums=(0, 1))(w1, w2)

    f = lib.shard_map(body, mesh=m, in_specs=(P(None, "model"), P("model", None), P("data"),
                                              P("data")),
                      out_specs=(P(), (P(None, "model"), P("model", None))))
    v, (g1, g2) = f(w1, w2, x, y)
    return [v, g1, g2]


def psum_of_invariant(lib):
    """psum of a replicated value multiplies by the axis size; so does its derivative."""
    P, m = lib.P, lib.mesh((2, 4), ("x", "y"))
    w = _f32([1.0, 2.0, -3.0])

    def body(w):
        return lib.value_and_grad(lambda w: lib.np.sum(lib.lax.psum(w * w, "y")))(w)

    f = lib.shard_map(body, mesh=m, in_specs=P(), out_specs=(P(), P()))
    return list(f(w))


def psum_of_varying(lib):
    """psum of a varying value: its transpose is a broadcast (each device gets the cotangent);
    also through vjp with an explicit cotangent."""
    P, m = lib.P, lib.mesh((8,), ("x",))
    u = _f32(np.arange(16.0).reshape(8, 2))

    def body(u):
        g = lib.grad(lambda u: lib.lax.psum(lib.np.sum(u * u), "x"))(u)
        out, pull = lib.vjp(lambda u: lib.lax.psum(u * 3.0, "x"), u)
        (ct,) = pull(lib.np.ones_like(out) * 2.0)
        return g, ct

    f = lib.shard_map(body, mesh=m, in_specs=P("x"), out_specs=(P("x"), P("x")))
    return list(f(u))


def _weights(lib, shape):
    return lib.np.cos(lib.np.arange(int(np.prod(shape)), dtype=np.float32)).reshape(shape)


def _moves(lib, invariant):
    P, m = lib.P, lib.mesh((2, 4), ("x", "y"))
    r = _rng(3)
    u = _f32(r.standard_normal((32, 4)) if not invariant else r.standard_normal((4, 4)))
    perm = [(i, (i + 1) % 4) for i in range(4)]
    ops = {  # the collective and the axes it runs over
        "all_gather": (lambda v: lib.lax.all_gather(v, "y"), "y"),
        "all_gather_tiled": (lambda v: lib.lax.all_gather(v, ("x", "y"), tiled=True),
                             ("x", "y")),
        "psum_scatter": (lambda v: lib.lax.psum_scatter(v, "y", tiled=True), "y"),
        "ppermute": (lambda v: lib.lax.ppermute(v, "y", perm), "y"),
        "all_to_all": (lambda v: lib.lax.all_to_all(v, "y", 0, 1, tiled=True), "y"),
    }
    outs = []
    spec = P() if invariant else P(("x", "y"))
    for op, axes in ops.values():
        def body(v, op=op, axes=axes):
            def loss(v):
                out = op(v)
                return lib.np.sum(_weights(lib, out.shape) * out)
            # a loss per device, and one summed over the collective's axes
            g1 = lib.grad(loss)(v)
            g2 = lib.grad(lambda v: lib.lax.psum(loss(v), axes))(v)
            return g1, g2

        f = lib.shard_map(body, mesh=m, in_specs=spec, out_specs=(spec, spec))
        outs += list(f(u))
    return outs


def moves_varying(lib):
    """all_gather, psum_scatter, ppermute, all_to_all of a varying value, differentiated."""
    return _moves(lib, False)


def moves_invariant(lib):
    """The same of a replicated value: jax pvary's it, so its cotangent is psum'd."""
    return _moves(lib, True)


def partial_axis_names(lib):
    """A shard_map over "x" only of a (2, 4) mesh: the grads are typed over "x" alone."""
    P, m = lib.P, lib.mesh((2, 4), ("x", "y"))
    r = _rng(4)
    w, x = _f32(r.standard_normal((3,))), _f32(r.standard_normal((4, 3)))

    def body(w, x):
        return lib.value_and_grad(
            lambda w: lib.lax.pmean(lib.np.sum(lib.np.cos(x * w)), "x"))(w)

    f = lib.jit(lib.shard_map(body, mesh=m, in_specs=(P(), P("x")), out_specs=(P(), P()),
                              axis_names={"x"}))
    return list(f(w, x))


def pvary_and_pcast(lib):
    """pvary makes a replicated value varying: summing it per device and differentiating sums
    over the devices; integers through pcast are exact."""
    P, m = lib.P, lib.mesh((2, 4), ("x", "y"))
    w = _f32([1.0, -2.0])
    k = np.asarray([3, 5], np.int32)

    def body(w, k):
        g = lib.grad(lambda w: lib.np.sum(lib.lax.pcast(w, "y", to="varying") ** 2))(w)
        total = lib.lax.psum(lib.lax.pcast(k, ("x", "y"), to="varying"), ("x", "y"))
        return g, total

    f = lib.shard_map(body, mesh=m, in_specs=(P(), P()), out_specs=(P(), P()))
    return list(f(w, k))


def scan_and_jit_inside(lib):
    """Derivatives inside a jit and through a scan whose steps psum, inside the body."""
    P, m = lib.P, lib.mesh((8,), ("x",))
    r = _rng(5)
    w, xs = _f32(r.standard_normal((2,))), _f32(r.standard_normal((3, 8, 2)))

    def body(w, xs):
        def loss(w):
            def step(c, x):
                return c + lib.lax.psum(lib.np.sum(lib.np.sin(x * w)), "x"), None
            return lib.lax.scan(step, lib.np.zeros((), np.float32), xs)[0]
        return lib.jit(lib.grad(loss))(w), lib.grad(loss)(w)

    f = lib.shard_map(body, mesh=m, in_specs=(P(), P(None, "x")), out_specs=(P(), P()))
    return list(f(w, xs))


def grad_outside(lib):
    """grad of the whole shard_map (a pvary and a psum of a replicated value inside)."""
    P, m = lib.P, lib.mesh((2, 4), ("x", "y"))
    r = _rng(6)
    w, x = _f32(r.standard_normal((3,))), _f32(r.standard_normal((8, 3)))

    def body(w, x):
        return lib.lax.psum(lib.np.sum(lib.np.tanh(x * w)), ("x", "y")) + \
            lib.np.sum(lib.lax.psum(w, "x"))

    f = lib.shard_map(body, mesh=m, in_specs=(P(), P(("x", "y"))), out_specs=P())
    return list(lib.grad(f, argnums=(0, 1))(w, x))


CASES = {f.__name__: f for f in [dp_pmean, dp_unreduced_loss, tensor_parallel_2d,
                                  psum_of_invariant, psum_of_varying, moves_varying,
                                  moves_invariant, partial_axis_names, pvary_and_pcast,
                                  scan_and_jit_inside, grad_outside]}
