"""Tests of the ``fx.numpy`` products against jax.numpy: ``dot``, ``matmul``/``@``, ``vdot``,
``inner``, ``outer``, ``tensordot``, ``kron``, ``einsum`` and ``linalg.norm`` — values,
derivatives, vmap, dtypes and error messages."""

from __future__ import annotations

import jax
import jax.numpy as jnp
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
import fx.numpy as fnp


def _case(name, fx_fn, jax_fn, shapes, dtype=np.float64) -> OpCase:
    return OpCase(
        name=f"{name}{shapes}:{np.dtype(dtype).name}", fx_fn=fx_fn, jax_fn=jax_fn,
        args=lambda rng: [rng.uniform(-2, 2, s).astype(dtype) for s in shapes],
        diff_argnums=tuple(range(len(shapes))),
    )


def _run(case: OpCase, derivatives_vs_jax: bool, seed=0):
    """Values against jax in float32 and float64; derivatives numerically (order 2), and
    against jax when asked (jax compiles each derivative eagerly, which is slow)."""
    rng = np.random.default_rng(seed)
    args = case.args(rng)
    check_eval(case, [a.astype(np.float32) for a in args])
    check_eval(case, args)
    check_grads_f64(case, args)
    if derivatives_vs_jax:
        check_jvp(case, args, rng)
        check_vjp(case, args, rng)


MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 6)), ((1, 2, 3), (5, 3, 4)),
    ((5, 2, 3), (1, 3, 4)), ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((2, 1, 2, 3), (1, 5, 3, 4)),
    ((0, 2, 3), (3, 4)), ((2, 0), (0, 4)), ((3, 2, 3), (3, 3, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes):
    case = _case("matmul", fnp.matmul, jnp.matmul, shapes)
    _run(case, derivatives_vs_jax=shapes in MATMUL_SHAPES[5:8])


def test_matmul_operator_and_methods():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 2, 3)), rng.standard_normal((3, 5))
    fa, fb = to_fx([a, b])
    assert_allclose(fa @ fb, a @ b, what="@")
    assert_allclose(a @ fb, a @ b, what="numpy @ fx (reflected)")
    assert_allclose(fa.dot(fb), np.dot(a, b), what=".dot")


DOT_SHAPES = [((), ()), ((), (3,)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
              ((2, 3), (3, 4)), ((2, 3), (4, 3, 5)), ((2, 4, 3), (3,)), ((6, 2, 3), (4, 3, 5))]


@pytest.mark.parametrize("shapes", DOT_SHAPES, ids=str)
def test_dot(shapes):
    _run(_case("dot", fnp.dot, jnp.dot, shapes), derivatives_vs_jax=shapes == DOT_SHAPES[7])


OTHER_PRODUCTS = [
    ("vdot", fnp.vdot, jnp.vdot, [(2, 3), (6,)]),
    ("inner", fnp.inner, jnp.inner, [(2, 3), (4, 3)]),
    ("inner_scalar", fnp.inner, jnp.inner, [(), (4, 3)]),
    ("inner_vec", fnp.inner, jnp.inner, [(3,), (3,)]),
    ("outer", fnp.outer, jnp.outer, [(2, 3), (4,)]),
    ("kron", fnp.kron, jnp.kron, [(2, 3), (4,)]),
    ("kron_2d", fnp.kron, jnp.kron, [(2, 3), (2, 2)]),
    ("tensordot_0", lambda a, b: fnp.tensordot(a, b, 0),
     lambda a, b: jnp.tensordot(a, b, 0), [(2,), (3, 4)]),
    ("tensordot_1", lambda a, b: fnp.tensordot(a, b, 1),
     lambda a, b: jnp.tensordot(a, b, 1), [(2, 3), (3, 4)]),
    ("tensordot_2", fnp.tensordot, jnp.tensordot, [(2, 3, 4), (3, 4, 5)]),
    ("tensordot_pairs", lambda a, b: fnp.tensordot(a, b, ((0, 2), (1, 0))),
     lambda a, b: jnp.tensordot(a, b, ((0, 2), (1, 0))), [(2, 3, 4), (4, 2)]),
    ("tensordot_negative", lambda a, b: fnp.tensordot(a, b, (-1, 0)),
     lambda a, b: jnp.tensordot(a, b, (-1, 0)), [(2, 3), (3, 4)]),
    ("tensordot_int_axes", lambda a, b: fnp.tensordot(a, b, ([1], [1])),
     lambda a, b: jnp.tensordot(a, b, ([1], [1])), [(2, 3), (4, 3)]),
]


@pytest.mark.parametrize("name,f,g,shapes", OTHER_PRODUCTS, ids=[c[0] for c in OTHER_PRODUCTS])
def test_other_products(name, f, g, shapes):
    _run(_case(name, f, g, shapes), derivatives_vs_jax=name in ("inner", "tensordot_pairs",
                                                                 "kron"))


# --- einsum ------------------------------------------------------------------------------------

EINSUM_TABLE = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),          # matrix multiply
    ("ij,jk", [(2, 3), (3, 4)]),              # implicit output
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),  # batched
    ("ibj,jkb->bki", [(3, 2, 4), (4, 5, 2)]),  # batch dimension in the middle, output permuted
    ("ii", [(3, 3)]),                         # trace
    ("ii->i", [(3, 3)]),                      # diagonal
    ("iij->ji", [(3, 3, 2)]),                 # diagonal with a free dimension
    ("iii->i", [(2, 2, 2)]),                  # a label three times
    ("ij,ij->", [(2, 3), (2, 3)]),            # Frobenius inner product
    ("i,j", [(2,), (3,)]),                    # outer
    ("ij->ji", [(2, 3)]),                     # transpose
    ("ij->", [(2, 3)]),                       # total sum
    ("ijk->kj", [(2, 3, 4)]),                 # sum and transpose
    ("ba", [(2, 3)]),                         # implicit output sorts its labels
    ("Ab,bC", [(2, 3), (3, 4)]),              # upper case sorts before lower case
    ("...ij,...jk", [(2, 1, 2, 3), (5, 3, 4)]),  # ellipsis broadcasting
    ("...ij,...jk->...ik", [(4, 2, 3), (4, 3, 2)]),
    ("i...,i...->...", [(2, 3), (2, 1)]),     # leading ellipsis, size-1 broadcast
    ("...i->i", [(2, 3)]),                    # ellipsis dropped from the output is summed
    ("ij,jk", [(2, 1), (3, 4)]),              # a size-1 named dimension broadcasts
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),  # chain
    ("ijk,ikl,jl->k", [(2, 3, 4), (2, 4, 5), (3, 5)]),
    ("i,i,i->i", [(4,), (4,), (4,)]),         # a label in three operands
    ("a,b,c", [(2,), (3,), (1,)]),
    ("ij,ji", [(3, 3), (3, 3)]),              # trace of a product
    ("ii,i->i", [(3, 3), (3,)]),
    ("", [()]),                               # a scalar
    (",->", [(), ()]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),          # zero-size contraction
]


@pytest.mark.parametrize("spec,shapes", EINSUM_TABLE, ids=[e[0] or "scalar" for e in EINSUM_TABLE])
def test_einsum_table(spec, shapes):
    case = _case(spec, lambda *xs: fnp.einsum(spec, *xs), lambda *xs: jnp.einsum(spec, *xs),
                 shapes)
    _run(case, derivatives_vs_jax=spec in ("iij->ji", "ijk,ikl,jl->k", "...ij,...jk"))


def test_einsum_interleaved_and_numpy_oracle():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    assert_allclose(fnp.einsum(*to_fx([a]), [0, 1], *to_fx([b]), [1], [0]),
                    np.einsum(a, [0, 1], b, [1], [0]), what="interleaved")
    assert_allclose(fnp.einsum(*to_fx([a]), [Ellipsis, 1], *to_fx([b]), [1]),
                    np.einsum(a, [Ellipsis, 1], b, [1]), what="interleaved ellipsis")


def test_einsum_dtypes():
    i32 = np.arange(6, dtype=np.int32).reshape(2, 3)
    f32 = np.ones(3, np.float32)
    assert_allclose(fnp.einsum("ij,j->i", *to_fx([i32, f32])),
                    jnp.einsum("ij,j->i", i32, f32), what="int32 x float32")
    b = np.array([[True, False], [False, False]])
    assert_allclose(fnp.einsum("ij->i", to_fx(b)), jnp.einsum("ij->i", b), what="bool")
    assert_allclose(fnp.einsum("ij,jk", *to_fx([b, b])), jnp.einsum("ij,jk", b, b), what="bool")
    h = np.full((4, 8), 0.1, np.float16)
    assert_allclose(fnp.einsum("ij,jk", *to_fx([h, h.T])), jnp.einsum("ij,jk", h, h.T),
                    what="float16")
    got = fnp.einsum("i,i", *to_fx([h[0], h[0]]), preferred_element_type=np.float32)
    assert_allclose(got, jnp.einsum("i,i", h[0], h[0], preferred_element_type=np.float32),
                    what="preferred_element_type")
    assert_allclose(fnp.einsum("ij->j", to_fx(i32)), np.array([3, 5, 7], np.int32), what="int")


@pytest.mark.parametrize("in_axes", [(0, None), (None, 1), (2, 0)])
def test_einsum_and_matmul_vmap(in_axes):
    rng = np.random.default_rng(3)
    shapes = [(2, 3), (3, 4)]
    args = []
    for s, ax in zip(shapes, in_axes):
        s = list(s)
        if ax is not None:
            s.insert(ax, 5)
        args.append(rng.standard_normal(s).astype(np.float32))
    for spec in ("ij,jk->ki", "ij,jk"):
        case = OpCase(spec, lambda a, b, spec=spec: fnp.einsum(spec, a, b),
                      lambda a, b, spec=spec: jnp.einsum(spec, a, b), None)
        check_vmap(case, args, in_axes)
    check_vmap(OpCase("matmul", fnp.matmul, jnp.matmul, None), args, in_axes)


def test_einsum_errors():
    x = to_fx(np.ones((2, 3)))
    y = to_fx(np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"fx.numpy.einsum: size of label 'j' for operand 1 "
                                         r"\(4\) does not match previous terms \(3\)"):
        fnp.einsum("ij,jk->ik", x, y)
    with pytest.raises(ValueError, match=r"has 2 operand terms, but 1 operands"):
        fnp.einsum("ij,jk", x)
    with pytest.raises(ValueError, match=r"invalid subscript '1'"):
        fnp.einsum("i1", x)
    with pytest.raises(ValueError, match=r"output subscript 'k' of 'ij->k' does not appear"):
        fnp.einsum("ij->k", x)
    with pytest.raises(ValueError, match=r"output subscript 'i' repeats"):
        fnp.einsum("ij->ii", x)
    with pytest.raises(ValueError, match=r"subscripts 'ijk' of 'ijk' do not match an operand "
                                         r"of rank 2"):
        fnp.einsum("ijk", x)
    with pytest.raises(ValueError, match=r"subscripts 'i' .* rank 2"):
        fnp.einsum("i", x)
    with pytest.raises(ValueError, match=r"malformed ellipsis"):
        fnp.einsum("..i", x)
    with pytest.raises(ValueError, match=r"more than one '->'"):
        fnp.einsum("ij->i->j", x)


# --- norm --------------------------------------------------------------------------------------

NORMS = [
    (None, None, (5,)), (2, None, (5,)), (1, None, (5,)), (np.inf, None, (5,)),
    (-np.inf, None, (5,)), (0, None, (5,)), (3, None, (5,)), (0.5, None, (5,)),
    (None, None, (3, 4)), ("fro", None, (3, 4)), (1, None, (3, 4)), (-1, None, (3, 4)),
    (np.inf, None, (3, 4)), (-np.inf, None, (3, 4)), (None, None, (2, 3, 4)),
    (2, 1, (3, 4)), (1, -1, (3, 4)), (None, (2, 0), (3, 4, 5)), (1, (2, 0), (3, 4, 5)),
    (np.inf, (0, 2), (3, 4, 5)), ("fro", (1, 2), (3, 4, 5)),
]


@pytest.mark.parametrize("ord,axis,shape", NORMS, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm(ord, axis, shape, keepdims):  # noqa: A002
    case = _case("norm", lambda x: fnp.linalg.norm(x, ord, axis, keepdims),
                 lambda x: jnp.linalg.norm(x, ord, axis, keepdims), [shape])
    rng = np.random.default_rng(4)
    args = case.args(rng)
    check_eval(case, args)
    if ord != 0 and not keepdims:  # ord=0 counts nonzeros: piecewise constant
        check_grads_f64(case, args)


def test_norm_of_ints_and_errors():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_allclose(fnp.linalg.norm(to_fx(x)), jnp.linalg.norm(x), what="int input")
    for ord in (2, -2, "nuc"):  # from singular values
        assert_allclose(fnp.linalg.norm(to_fx(x), ord), jnp.linalg.norm(x, ord), rtol=1e-6,
                        what=f"int input, ord={ord!r}")
    with pytest.raises(ValueError, match=r"invalid norm order 'fro' for vectors"):
        fnp.linalg.norm(to_fx(x[0]), "fro")
    with pytest.raises(ValueError, match=r"ord=1 needs a 1-D or 2-D input"):
        fnp.linalg.norm(to_fx(np.ones((2, 2, 2))), 1)
    with pytest.raises(ValueError, match=r"axis must name 1 or 2 dimensions"):
        fnp.linalg.norm(to_fx(np.ones((2, 2, 2))), axis=(0, 1, 2))
    assert getattr(fnp, "norm", None) is None  # only fx.numpy.linalg.norm, as in numpy


# --- errors, dtypes, shapes ---------------------------------------------------------------------


def test_product_errors():
    a, b = to_fx(np.ones((2, 3))), to_fx(np.ones((4, 5)))
    # Error types as jax's (tests/fx/test_error_types.py checks them against jax).
    with pytest.raises(TypeError, match=r"fx.numpy.matmul: the contracted dimensions differ: "
                                         r"\(2, 3\) @ \(4, 5\) \(3 != 4\)"):
        fnp.matmul(a, b)
    with pytest.raises(ValueError, match=r"fx.numpy.matmul: operands must be at least 1-D"):
        fnp.matmul(a, 2.0)
    with pytest.raises(ValueError, match=r"fx.numpy.matmul \(batch dimensions\): operands "
                                         r"could not be broadcast"):
        fnp.matmul(to_fx(np.ones((2, 2, 3))), to_fx(np.ones((3, 3, 4))))
    with pytest.raises(TypeError, match=r"fx.numpy.dot: shapes \(2, 3\) and \(4, 5\) are not "
                                         r"aligned: dimension 1 of the first \(size 3\)"):
        fnp.dot(a, b)
    with pytest.raises(TypeError, match=r"fx.numpy.inner: shapes .* not aligned"):
        fnp.inner(a, b)
    with pytest.raises(TypeError, match=r"fx.numpy.vdot: the operands have different sizes"):
        fnp.vdot(a, b)
    with pytest.raises(TypeError, match=r"fx.numpy.tensordot: axes=3 exceeds"):
        fnp.tensordot(a, b, 3)
    with pytest.raises(TypeError, match=r"fx.numpy.tensordot: shapes .* not aligned"):
        fnp.tensordot(a, b, 1)
    with pytest.raises(TypeError, match=r"2 axes of a paired with 1 axes of b"):
        fnp.tensordot(a, b, ((0, 1), (0,)))
    with pytest.raises(TypeError, match=r"axes must be an int or a pair"):
        fnp.tensordot(a, b, "x")


def test_product_dtypes():
    i32 = np.arange(6, dtype=np.int32).reshape(2, 3)
    f32 = np.ones((3, 2), np.float32)
    assert_allclose(fnp.matmul(*to_fx([i32, f32])), jnp.matmul(i32, f32), what="promotion")
    assert_allclose(fnp.matmul(*to_fx([i32, i32.T])), jnp.matmul(i32, i32.T), what="int")
    assert fnp.dot(to_fx(i32), 2).dtype == np.int32  # a weak Python scalar keeps int32
    assert_allclose(fnp.dot(*to_fx([i32, i32.T]), preferred_element_type=np.int64),
                    jnp.dot(i32, i32.T, preferred_element_type=np.int64), what="pet")
    h = np.full((2, 64), 0.1, np.float16)
    assert_allclose(fnp.matmul(*to_fx([h, h.T])), jnp.matmul(h, h.T), what="float16")


@given(st.lists(st.integers(1, 3), max_size=3), st.lists(st.integers(1, 3), max_size=3),
       st.data())
def test_matmul_broadcasting_hypothesis(a_batch, b_batch, data):
    # Make the batch shapes broadcastable by putting 1s where they clash.
    a_batch, b_batch = list(a_batch), list(b_batch)
    for k in range(1, min(len(a_batch), len(b_batch)) + 1):
        if a_batch[-k] != b_batch[-k] and data.draw(st.booleans()):
            a_batch[-k] = 1
        elif a_batch[-k] != b_batch[-k]:
            b_batch[-k] = 1
    m, k, n = (data.draw(st.integers(0, 3)) for _ in range(3))
    # A 1-D operand has no batch dimensions.
    a_shape = tuple(a_batch) + (m, k) if data.draw(st.booleans()) else (k,)
    b_shape = tuple(b_batch) + (k, n) if data.draw(st.booleans()) else (k,)
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    # numpy is the oracle (jax would compile every shape).
    assert_allclose(fnp.matmul(*to_fx([a, b])), np.asarray(np.matmul(a, b)),
                    what=f"{a_shape} @ {b_shape}")


def test_grad_through_chain_of_products():
    rng = np.random.default_rng(5)
    w1, w2, x = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(
        (5, 3))

    def loss(np_, w1, w2):
        h = np_.tanh(np_.einsum("bi,ij->bj", x, w1))
        return np_.sum(np_.linalg.norm(h @ w2, axis=1))

    got = fx.grad(lambda a, b: loss(fnp, a, b), argnums=(0, 1))(*to_fx([w1, w2]))
    want = jax.grad(lambda a, b: loss(jnp, a, b), argnums=(0, 1))(w1, w2)
    assert_allclose(got, want, what="grad of an MLP-like chain")
