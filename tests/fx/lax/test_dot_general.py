"""Tests of ``dot_general`` and ``dot`` against jax.lax: eval, jvp, vjp, vmap over every operand
axis, second-order gradients, dtype rules and error messages."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
)
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.lax as lax
from fx.test_util import check_grads


def _dn(lc, rc, lb=(), rb=()):
    return ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))


# (name, lhs shape, rhs shape, dimension numbers): every layout of batch and contracting
# dimensions, including batch dimensions in non-leading positions and pairings out of order.
CASES = [
    ("matmul", (2, 3), (3, 4), _dn((1,), (0,))),
    ("matvec", (2, 3), (3,), _dn((1,), (0,))),
    ("vecmat", (3,), (3, 4), _dn((0,), (0,))),
    ("inner", (3,), (3,), _dn((0,), (0,))),
    ("outer", (2,), (3,), _dn((), ())),
    ("scalars", (), (), _dn((), ())),
    ("scalar_lhs", (), (2, 3), _dn((), ())),
    ("lhs_transposed", (3, 2), (3, 4), _dn((0,), (0,))),
    ("rhs_transposed", (2, 3), (4, 3), _dn((1,), (1,))),
    ("both_transposed", (3, 2), (4, 3), _dn((0,), (1,))),
    ("batched_leading", (5, 2, 3), (5, 3, 4), _dn((2,), (1,), (0,), (0,))),
    ("batch_middle_last", (2, 5, 3), (3, 4, 5), _dn((2,), (0,), (1,), (2,))),
    ("batch_last", (2, 3, 5), (3, 5), _dn((1,), (0,), (2,), (1,))),
    ("two_contract_reversed", (2, 3, 4), (4, 3, 5), _dn((1, 2), (1, 0))),
    ("two_batch_out_of_order", (2, 3, 4, 5), (4, 2, 5, 6), _dn((3,), (2,), (0, 2), (1, 0))),
    ("full_contraction", (2, 3), (2, 3), _dn((0, 1), (0, 1))),
    ("full_contraction_crossed", (2, 3), (3, 2), _dn((0, 1), (1, 0))),
    ("batch_only", (2, 3), (2, 3), _dn((), (), (0, 1), (0, 1))),
    ("batch_only_crossed", (2, 3), (3, 2), _dn((), (), (1, 0), (0, 1))),
    ("batch_no_contract", (4, 2), (3, 4), _dn((), (), (0,), (1,))),
    ("rank4_mixed", (2, 3, 4, 5), (5, 2, 6, 3), _dn((3, 1), (0, 3), (0,), (1,))),
    ("empty_contract", (2, 0), (0, 4), _dn((1,), (0,))),
    ("empty_free", (0, 3), (3, 4), _dn((1,), (0,))),
    ("empty_batch", (0, 2, 3), (0, 3, 4), _dn((2,), (1,), (0,), (0,))),
]

# Derivatives are checked for every case numerically and by forward/reverse agreement (which
# pins down the transpose rules: test_check_grads_order2), and against jax for these (jax
# compiles each derivative eagerly, which is slow).
VS_JAX = {"matmul", "matvec", "outer", "lhs_transposed", "both_transposed", "batch_middle_last",
          "two_contract_reversed", "two_batch_out_of_order", "batch_only_crossed", "rank4_mixed",
          "empty_contract"}


def _case(name, ls, rs, dn, dtype=np.float32, **kw) -> OpCase:
    return OpCase(
        name=f"{name}:{np.dtype(dtype).name}",
        fx_fn=lambda a, b: lax.dot_general(a, b, dn, **kw),
        jax_fn=lambda a, b: jax.lax.dot_general(a, b, dn, **kw),
        args=lambda rng: [rng.uniform(-2, 2, ls).astype(dtype),
                          rng.uniform(-2, 2, rs).astype(dtype)],
        diff_argnums=(0, 1),
    )


@pytest.mark.parametrize("name,ls,rs,dn", CASES, ids=[c[0] for c in CASES])
def test_eval_jvp_vjp(name, ls, rs, dn):
    rng = np.random.default_rng(0)
    check_eval(_case(name, ls, rs, dn, np.float32), _case(name, ls, rs, dn).args(rng))
    case = _case(name, ls, rs, dn, np.float64)
    args = case.args(rng)
    check_eval(case, args)
    if name in VS_JAX:
        check_vjp(case, args, rng)  # the transpose rules, against jax
        check_jvp(case, args, rng)


@pytest.mark.parametrize("name,ls,rs,dn", CASES, ids=[c[0] for c in CASES])
def test_check_grads_order2(name, ls, rs, dn):
    case = _case(name, ls, rs, dn, np.float64)
    check_grads_f64(case, case.args(np.random.default_rng(1)))


def _vmap_axes(case_row):
    """Every (lhs axis, rhs axis) placement of a batch of 3, plus one-sided batching."""
    _, ls, rs, _ = case_row
    out = [(a, None) for a in range(len(ls) + 1)] + [(None, b) for b in range(len(rs) + 1)]
    out += [(a, b) for a in range(len(ls) + 1) for b in range(len(rs) + 1)]
    return out


VMAP_ROWS = [c for c in CASES if c[0] in (
    "matmul", "matvec", "outer", "scalars", "batch_middle_last", "two_contract_reversed",
    "batch_only_crossed", "rank4_mixed", "empty_contract")]


def _vmap_vs_loop(fn, args, in_axes):
    got = fx.vmap(fn, in_axes=in_axes)(*to_fx(args))
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = [fn(*to_fx([a if ax is None else np.take(a, i, ax) for a, ax in zip(args, in_axes)]))
            for i in range(size)]
    assert_allclose(got, np.stack([np.asarray(r) for r in rows]), what=f"vmap {in_axes}")


@pytest.mark.parametrize("row", VMAP_ROWS, ids=[c[0] for c in VMAP_ROWS])
def test_vmap_every_axis(row):
    # Every placement against a loop; the last one (both batched) against jax.vmap too.
    name, ls, rs, dn = row
    rng = np.random.default_rng(2)
    case = _case(name, ls, rs, dn)
    for in_axes in _vmap_axes(row):
        args = []
        for shape, ax in zip((ls, rs), in_axes):
            s = list(shape)
            if ax is not None:
                s.insert(ax, 3)
            args.append(rng.uniform(-2, 2, s).astype(np.float32))
        _vmap_vs_loop(case.fx_fn, args, in_axes)
    check_vmap(case, args, in_axes)


def test_vmap_of_grad_and_grad_of_vmap():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 2, 3))
    b = rng.standard_normal((3, 5))
    dn = _dn((1,), (0,))

    def loss(f, x, y):
        return (f.lax.dot_general(x, y, dn) ** 2).sum() if f is jax else \
            lax.reduce_sum(lax.dot_general(x, y, dn) ** 2, (0, 1))

    got = fx.vmap(fx.grad(lambda x, y: loss(fx, x, y), argnums=(0, 1)), in_axes=(0, None))(
        *to_fx([a, b]))
    want = jax.vmap(jax.grad(lambda x, y: loss(jax, x, y), argnums=(0, 1)), in_axes=(0, None))(
        a, b)
    assert_allclose(got, want, what="vmap(grad(dot_general))")


def test_unbatched_operand_stays_unbatched():
    # A batched lhs against an unbatched rhs: the batch becomes a free lhs dimension, with no
    # broadcast (or any other op) of the rhs.
    f = fx.vmap(lambda a, b: lax.dot(a, b), in_axes=(0, None))
    jaxpr = fx.make_jaxpr(f)(np.ones((5, 2, 3), np.float32), np.ones((3, 4), np.float32))
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["dot_general"]
    g = fx.vmap(lambda a, b: lax.dot(a, b), in_axes=(None, 1))
    jaxpr = fx.make_jaxpr(g)(np.ones((2, 3), np.float32), np.ones((3, 5, 4), np.float32))
    names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert "broadcast_in_dim" not in names and names.count("dot_general") == 1


def _einsum_reference(a, b, dn):
    """``dot_general`` spelled as an ``np.einsum``."""
    (lc, rc), (lb, rb) = dn
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    la = [next(letters) for _ in range(a.ndim)]
    lr = [next(letters) for _ in range(b.ndim)]
    for x, y in zip(lc + lb, rc + rb):
        lr[y] = la[x]
    out = ([la[d] for d in lb] + [la[d] for d in range(a.ndim) if d not in lc + lb]
           + [lr[d] for d in range(b.ndim) if d not in rc + rb])
    return np.einsum(f"{''.join(la)},{''.join(lr)}->{''.join(out)}", a, b)


def _random_config(rng: np.random.Generator):
    """Random ranks, dimension pairings (in any positions and order) and sizes."""
    lr, rr = int(rng.integers(0, 5)), int(rng.integers(0, 5))
    npairs = int(rng.integers(0, min(lr, rr) + 1))
    nb = int(rng.integers(0, npairs + 1))
    lpaired = list(rng.permutation(lr)[:npairs])
    rpaired = list(rng.permutation(rr)[:npairs])
    lshape = list(rng.integers(0, 4, lr))
    rshape = list(rng.integers(0, 4, rr))
    for ld, rd in zip(lpaired, rpaired):
        rshape[rd] = lshape[ld]
    dn = _dn(lpaired[nb:], rpaired[nb:], lpaired[:nb], rpaired[:nb])
    return tuple(int(s) for s in lshape), tuple(int(s) for s in rshape), dn


@given(st.integers(0, 2**32 - 1))
def test_random_dimension_numbers(seed):
    # np.einsum is the oracle here (jax would compile every random shape); the transpose
    # rules are checked by forward/reverse agreement.
    rng = np.random.default_rng(seed)
    ls, rs, dn = _random_config(rng)
    case = _case(f"random{ls}{rs}{dn}", ls, rs, dn, np.float64)
    args = case.args(rng)
    assert_allclose(case.fx_fn(*to_fx(args)), _einsum_reference(*args, dn), what="eval")
    check_grads(case.fx_fn, to_fx(args), order=1)
    axes = (int(rng.integers(0, len(ls) + 1)), int(rng.integers(0, len(rs) + 1)))
    batched = [np.stack([args[0], -args[0]], axes[0]), np.stack([args[1], 2 * args[1]], axes[1])]
    _vmap_vs_loop(case.fx_fn, batched, axes)
    _vmap_vs_loop(case.fx_fn, [batched[0], args[1]], (axes[0], None))


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
@pytest.mark.parametrize("row", [CASES[0], CASES[10], CASES[14]], ids=lambda r: r[0])
def test_half_precision(dtype, row):
    name, ls, rs, dn = row
    rng = np.random.default_rng(4)
    case = _case(name, ls, rs, dn, np.dtype(dtype))
    args = case.args(rng)
    check_eval(case, args)
    # The pullback in half precision against fx's own in float64.
    ct = rng.standard_normal(np.shape(case.fx_fn(*to_fx(args)))).astype(dtype)
    got = fx.vjp(case.fx_fn, *to_fx(args))[1](to_fx(ct))
    want = fx.vjp(case.fx_fn, *to_fx([a.astype(np.float64) for a in args]))[1](
        to_fx(ct.astype(np.float64)))
    for g, w, a in zip(got, want, args):
        assert g.dtype == a.dtype
        assert_allclose(g, np.asarray(w).astype(dtype), what="half-precision vjp")


@pytest.mark.parametrize("in_dtype,pet", [
    (np.float16, np.float32), ("bfloat16", np.float32), (np.float32, np.float64),
    (np.int32, np.int64), (np.int32, np.float32), (np.bool_, np.int32), (np.int32, None),
    (np.uint32, None),
])
def test_preferred_element_type(in_dtype, pet):
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (2, 3, 4)).astype(in_dtype)
    b = rng.integers(-3, 4, (2, 4, 5)).astype(in_dtype)
    dn = _dn((2,), (1,), (0,), (0,))
    got = lax.dot_general(*to_fx([a, b]), dn, preferred_element_type=pet)
    want = jax.lax.dot_general(a, b, dn, preferred_element_type=pet)
    assert_allclose(got, want, what=f"dot_general {in_dtype}->{pet}")


def test_preferred_element_type_gradient_keeps_operand_dtype():
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 3)).astype(np.float16), rng.standard_normal(3).astype(
        np.float16)
    f = lambda a, b: lax.dot_general(a, b, _dn((1,), (0,)), preferred_element_type=np.float32)
    g = fx.grad(lambda a, b: lax.reduce_sum(f(a, b), (0,)), argnums=(0, 1))(*to_fx([a, b]))
    jg = jax.grad(lambda a, b: jax.numpy.sum(
        jax.lax.dot_general(a, b, _dn((1,), (0,)), preferred_element_type=np.float32)),
        argnums=(0, 1))(a, b)
    assert_allclose(g, jg, what="grad with preferred_element_type")


def test_int_matmul_wraps_like_xla():
    a = np.full((1, 2), 2**30, np.int32)
    b = np.full((2, 1), 2, np.int32)
    got = lax.dot(*to_fx([a, b]))
    assert_allclose(got, jax.lax.dot(a, b), what="int32 overflow")


@pytest.mark.parametrize("ls,rs", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                   ((2, 3), (3, 4))])
def test_lax_dot(ls, rs):
    rng = np.random.default_rng(7)
    case = OpCase("dot", lax.dot, jax.lax.dot,
                  lambda rng: [rng.standard_normal(ls), rng.standard_normal(rs)],
                  diff_argnums=(0, 1))
    args = case.args(rng)
    check_eval(case, args)
    check_vjp(case, args, rng)


def test_errors():
    f32 = lambda *s: fx.numpy.ones(s, np.float32)  # noqa: E731
    with pytest.raises(TypeError, match=r"dot_general: contracting dimensions must have equal "
                                        r"sizes, got \(3,\).*\(4,\).*f32\[2,3\], f32\[4,5\]"):
        lax.dot_general(f32(2, 3), f32(4, 5), _dn((1,), (0,)))
    with pytest.raises(TypeError, match=r"dot_general: batch dimensions must have equal sizes"):
        lax.dot_general(f32(2, 3), f32(4, 3), _dn((1,), (1,), (0,), (0,)))
    # The primitive takes one dtype (dot_general converts mixed operands, as jax's rule).
    with pytest.raises(TypeError, match=r"dot_general: operands must have the same dtype.*"
                                        r"f32\[2,3\], f64\[3\]"):
        fx.lax.linalg.dot_general_p.bind(
            f32(2, 3), fx.numpy.ones(3, np.float64), dimension_numbers=_dn((1,), (0,)),
            precision=None, preferred_element_type=None)
    with pytest.raises(TypeError, match=r"out of range for rank 2"):
        lax.dot_general(f32(2, 3), f32(3), _dn((2,), (0,)))
    with pytest.raises(TypeError, match=r"repeat"):
        lax.dot_general(f32(3, 3), f32(3, 3), _dn((0,), (0,), (0,), (1,)))
    with pytest.raises(TypeError, match=r"as many lhs as rhs"):
        lax.dot_general(f32(3, 3), f32(3, 3), _dn((0, 1), (0,)))
    with pytest.raises(TypeError, match=r"dimension_numbers must be"):
        lax.dot_general(f32(3), f32(3), (0, 0))
    with pytest.raises(TypeError, match=r"narrower"):
        lax.dot_general(fx.numpy.ones(3, np.int64), fx.numpy.ones(3, np.int64), _dn((0,), (0,)),
                        preferred_element_type=np.int32)
    with pytest.raises(ValueError, match=r"dot: incompatible shapes.*\(2, 3\).*\(4,\)"):
        lax.dot(f32(2, 3), f32(4))


def test_float_to_int_preferred_type_is_rejected():
    # Deliberate difference: jax accepts preferred_element_type=int32 for float operands; fx
    # refuses to compute a float product in an integer type.
    with pytest.raises(TypeError, match=r"not floating point"):
        lax.dot_general(fx.numpy.ones(3), fx.numpy.ones(3), _dn((0,), (0,)),
                        preferred_element_type=np.int32)
