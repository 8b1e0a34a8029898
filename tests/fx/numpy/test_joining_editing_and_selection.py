"""Tests of fx.numpy's joining and editing functions (fx/numpy/joining_and_editing.py: append,
insert, delete, block, concat, h/v/dsplit, unstack, resize, trim_zeros), its selection
functions (fx/numpy/selection.py: select, choose, piecewise, place, put, put_along_axis,
fill_diagonal), and copy, rollaxis, rot90, ediff1d, diagflat, vander, partition, argpartition,
apply_along_axis and apply_over_axes (in creation, manipulation, sorting, diagonals,
polynomial and vectorization) against jax.numpy in both of jax's
modes: values bitwise, dtypes and shapes; vjp against jax and vmap against a loop where they
differentiate and batch; jit against eager; error messages."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    assert_bitwise,
    check_vjp,
    check_vmap,
    run_doctests,
    same_mode,
)

import fx
import fx.numpy as fnp


def _f(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).round(2).astype(dtype)


X23 = _f((2, 3))
X234 = _f((2, 3, 4), 1)
V3 = _f((3,), 2)
I6 = np.array([0, 0, 3, 0, 5, 0], np.int32)
IDX = np.array([[0, 2, 1]], np.int32)

# (id, f(module, *args), args, differentiable argnums): values are checked for every row,
# vjp (float64, x64 mode) for the differentiable ones, vmap (over a new leading axis of the
# first argument) for all but the rows marked with no_vmap.
NO_VMAP = {"trim_zeros", "trim_zeros-b", "trim_zeros-axis", "apply_over_axes",
           "rollaxis", "unstack", "hsplit", "vsplit", "dsplit", "block", "fill_diagonal-3d",
           "partition", "argpartition"}
CASES = [
    ("append", lambda m, x, y: m.append(x, y), [X23, V3], (0, 1)),
    ("append-axis", lambda m, x, y: m.append(x, y[None], axis=0), [X23, V3], (0, 1)),
    ("append-promote", lambda m, x: m.append(x, np.arange(2, dtype=np.int32)), [V3], (0,)),
    ("insert-scalar", lambda m, x: m.insert(x, 1, 9.5), [V3], (0,)),
    ("insert-axis-vector", lambda m, x, v: m.insert(x, 1, v[:2], axis=1), [X23, V3], (0, 1)),
    ("insert-many", lambda m, x: m.insert(x, np.array([0, 2, 2]), np.array([7.0, 8.0, 9.0])),
     [V3], (0,)),
    ("insert-slice", lambda m, x: m.insert(x, slice(0, 3, 2), -1.0, axis=2), [X234], (0,)),
    ("insert-flat", lambda m, x: m.insert(x, 4, np.array([1.0, 2.0])), [X23], (0,)),
    ("insert-int-values-to-float", lambda m, x: m.insert(x, 0, np.int32(3)), [V3], (0,)),
    ("delete-int", lambda m, x: m.delete(x, 1, axis=1), [X23], (0,)),
    ("delete-array", lambda m, x: m.delete(x, np.array([0, 2, 2])), [X234], (0,)),
    ("delete-slice", lambda m, x: m.delete(x, slice(1, None, 2), axis=2), [X234], (0,)),
    ("delete-mask", lambda m, x: m.delete(x, np.array([True, False, True]), axis=0), [V3], (0,)),
    ("concat", lambda m, x, y: m.concat([x, y[None, :]], axis=0), [X23, V3], (0, 1)),
    ("concat-none", lambda m, x, y: m.concat([x, y], axis=None), [X23, V3], (0, 1)),
    ("copy", lambda m, x: m.copy(x), [X23], (0,)),
    ("block", lambda m, x, y: m.block([[x, x[:, :1]], [y[None], y[None, :1]]]), [X23, V3],
     (0, 1)),
    ("block-1d", lambda m, x: m.block([x, 1.0, x]), [V3], (0,)),
    ("hsplit", lambda m, x: m.hsplit(x, 3), [X234], (0,)),
    ("vsplit", lambda m, x: m.vsplit(x, [1]), [X234], (0,)),
    ("dsplit", lambda m, x: m.dsplit(x, 2), [X234], (0,)),
    ("hsplit-1d", lambda m, x: m.hsplit(x, 3), [V3], (0,)),
    ("unstack", lambda m, x: m.unstack(x, axis=1), [X234], (0,)),
    ("resize", lambda m, x: m.resize(x, (4, 2)), [V3], (0,)),
    ("resize-shrink", lambda m, x: m.resize(x, 5), [X23], (0,)),
    ("rollaxis", lambda m, x: m.rollaxis(x, 2, 0), [X234], (0,)),
    ("rollaxis-start-after", lambda m, x: m.rollaxis(x, 0, 3), [X234], (0,)),
    ("rot90", lambda m, x: m.rot90(x), [X23], (0,)),
    ("rot90-k2", lambda m, x: m.rot90(x, 2, axes=(1, 2)), [X234], (0,)),
    ("rot90-k3", lambda m, x: m.rot90(x, -1, axes=(2, 0)), [X234], (0,)),
    ("ediff1d", lambda m, x: m.ediff1d(x), [X23], (0,)),
    ("ediff1d-ends", lambda m, x: m.ediff1d(x, to_end=np.array([1.5, 2.0]), to_begin=-3.0),
     [V3], (0,)),
    ("ediff1d-int", lambda m, x: m.ediff1d(x, to_begin=np.int32(-1)), [I6], ()),
    ("diagflat", lambda m, x: m.diagflat(x, 1), [X23], (0,)),
    ("vander", lambda m, x: m.vander(x), [V3], (0,)),
    ("vander-N-increasing", lambda m, x: m.vander(x, 5, increasing=True), [V3], (0,)),
    ("vander-int", lambda m, x: m.vander(x, 3), [I6], ()),
    ("trim_zeros", lambda m, x: m.trim_zeros(x), [I6], ()),
    ("trim_zeros-b", lambda m, x: m.trim_zeros(x, "b"), [I6], ()),
    ("trim_zeros-axis", lambda m, x: m.trim_zeros(x, axis=1),
     [np.array([[0, 1, 0, 0], [0, 2, 0, 0]], np.int32)], ()),
    ("partition", lambda m, x: m.partition(x, 2)[..., 2], [X234], (0,)),
    ("argpartition", lambda m, x: m.take_along_axis(
        x, m.argpartition(x, 1, axis=1), axis=1)[:, 1], [X234], ()),
    ("apply_along_axis", lambda m, x: m.apply_along_axis(lambda v: v * v.sum(), 1, x), [X234],
     (0,)),
    ("apply_along_axis-scalar", lambda m, x: m.apply_along_axis(m.max, 0, x), [X234], (0,)),
    ("apply_along_axis-grow", lambda m, x: m.apply_along_axis(
        lambda v: m.outer(v, v), -1, x), [X23], (0,)),
    ("apply_over_axes", lambda m, x: m.apply_over_axes(m.sum, x, [0, 2]), [X234], (0,)),
    ("select", lambda m, x, y: m.select([x > 0, y > 0], [x, y], -1.0), [X23, X23[::-1]], (0, 1)),
    ("select-broadcast", lambda m, x, y: m.select([x > 0.5, x < 0], [y, 2.0]), [X23, V3],
     (0, 1)),
    ("choose", lambda m, x, y: m.choose(np.array([0, 1, 1]), [x, y]), [X23, V3], (0, 1)),
    ("choose-wrap", lambda m, x, y: m.choose(np.array([[0, 3, -1]]), [x, y, 7.0], mode="wrap"),
     [X23, V3], (0, 1)),
    ("choose-clip", lambda m, x, y: m.choose(np.array([0, 5, -2]), [x, y], mode="clip"),
     [X23, V3], (0, 1)),
    ("piecewise", lambda m, x: m.piecewise(x, [x < 0, x > 1], [lambda v: -v, 7.0]), [X23], (0,)),
    ("piecewise-default", lambda m, x: m.piecewise(
        x, [x < 0, x > 0.5], [lambda v: v * 3, 2.0, lambda v: v * v]), [X23], (0,)),
    ("piecewise-int", lambda m, x: m.piecewise(x, [x > 2], [lambda v: v * 2, -1]), [I6], ()),
    ("place", lambda m, x: m.place(x, x > 0, np.array([10.0, 20.0]), inplace=False), [X23], ()),
    ("put", lambda m, x, v: m.put(x, np.array([0, 4, 9]), v[:2], inplace=False), [X23, V3],
     (0, 1)),
    ("put-wrap", lambda m, x: m.put(x, np.array([-1, 7]), 5.0, mode="wrap", inplace=False),
     [X23], (0,)),
    ("put_along_axis", lambda m, x, v: m.put_along_axis(x, np.array([[0], [2]]), v[:2, None],
                                                        axis=1, inplace=False), [X23, V3],
     (0, 1)),
    ("put_along_axis-3d", lambda m, x: m.put_along_axis(
        x, np.zeros((2, 1, 4), np.int32), -1.0, axis=1, inplace=False), [X234], (0,)),
    ("fill_diagonal", lambda m, x: m.fill_diagonal(x, 4.0, inplace=False), [X23], (0,)),
    ("fill_diagonal-tall", lambda m, x: m.fill_diagonal(x, np.array([1.0, 2.0]),
                                                        inplace=False), [X23.T], (0,)),
    ("fill_diagonal-3d", lambda m, x: m.fill_diagonal(x, -2.0, inplace=False),
     [_f((3, 3, 3))], (0,)),
]


# jax's vander uses pow, fx multiplies: the same to rounding.
CLOSE = {"vander", "vander-N-increasing"}


# Pure data movement, which eagerly costs jax a compile per primitive (jnp.insert's took 5.8 s,
# jitted 0.5 s): its oracle runs jitted, the same bits. Rows that reduce stay eager (XLA fuses
# jitted reductions and may sum in another order).
JIT_ORACLE = ("insert", "delete", "put")


def _jax(name, f, args):
    jx = [jnp.asarray(a) for a in args]
    if name.startswith(JIT_ORACLE):
        return jax.jit(lambda *a: f(jnp, *a))(*jx)
    return f(jnp, *jx)


def _check(name, f, args):
    got = f(fnp, *args)
    want = _jax(name, f, args)
    if name in CLOSE:
        assert_allclose(got, want, what=name)
        return
    assert_bitwise(list(got) if isinstance(got, (tuple, list)) else got,
                   list(want) if isinstance(want, (tuple, list)) else want, what=name)


@pytest.mark.parametrize("name,f,args,diff", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(name, f, args, diff):
    with same_mode(False):
        _check(name, f, args)


# With 32-bit inputs only index results and weak scalars could depend on the mode: a sample.
SAMPLE = [c for i, c in enumerate(CASES)
          if (i % 4 == 0 and "insert" not in c[0]) or c[0] == "argpartition"]


@pytest.mark.parametrize("name,f,args,diff", SAMPLE, ids=[c[0] for c in SAMPLE])
def test_matches_jax_x64(name, f, args, diff):
    with same_mode(True):
        _check(name, f, args)


# jax's vjps of insert are slow to run eagerly: two of them (insert shares delete's gather).
DIFF = [c for c in CASES if c[3] and c[0] not in ("insert-slice", "insert-flat", "insert-many")]


@pytest.mark.parametrize("name,f,args,diff", DIFF, ids=[c[0] for c in DIFF])
def test_vjp_matches_jax(name, f, args, diff):
    with same_mode(True):
        args = [np.asarray(a, np.float64) if a.dtype.kind == "f" else a for a in args]
        case = OpCase(name, lambda *a: f(fnp, *a), lambda *a: f(jnp, *a), None,
                      diff_argnums=diff)
        check_vjp(case, args, np.random.default_rng(3))


VMAP = [c for c in CASES if c[0] not in NO_VMAP]


@pytest.mark.parametrize("name,f,args,diff", VMAP, ids=[c[0] for c in VMAP])
def test_vmap_and_jit(name, f, args, diff):
    with same_mode(False):
        batched = [np.stack([a, a[::-1] if a.ndim else a]) for a in args[:1]] + list(args[1:])
        case = OpCase(name, lambda *a: f(fnp, *a), lambda *a: f(jnp, *a), None)
        check_vmap(case, batched, (0,) + (None,) * (len(args) - 1))
        # Compiled reductions may sum in another order: close, not bitwise, for those.
        assert_allclose(fx.jit(lambda *a: f(fnp, *a))(*args), f(fnp, *args), what=f"{name} jit")


def test_fill_diagonal_wrap_matches_numpy():
    # jax does not implement wrap=True; NumPy is the oracle.
    x = np.zeros((7, 3), np.float32)
    want = x.copy()
    np.fill_diagonal(want, [1.0, 2.0], wrap=True)
    assert_bitwise(fnp.fill_diagonal(x, np.array([1.0, 2.0], np.float32), wrap=True,
                                     inplace=False), want)


def test_partition_contract():
    x = _f((4, 7), 5)
    for k in (0, 3, -1):
        got = np.asarray(fnp.partition(x, k, axis=1))
        kk = k % 7
        np.testing.assert_array_equal(got[:, kk], np.sort(x, 1)[:, kk])
        pivot = got[:, kk:kk + 1]
        assert (got[:, :kk] <= pivot).all() and (got[:, kk + 1:] >= pivot).all()
        idx = np.asarray(fnp.argpartition(x, k, axis=1))
        np.testing.assert_array_equal(np.take_along_axis(x, idx, 1)[:, kk], got[:, kk])


@pytest.mark.slow  # ~15 s with a cold cache; the insert/delete rows above cover the values
def test_traced_insert_and_delete_positions():
    x, v = X23, np.array([7.0, 8.0], np.float32)
    for o in (-9, -1, 0, 2, 3, 7):
        assert_bitwise(fx.jit(lambda o: fnp.insert(x, o, v, axis=1))(np.int32(o)),
                       jnp.insert(jnp.asarray(x), o, jnp.asarray(v), axis=1), what=f"insert {o}")
    objs = np.array([0, 2, -1, 5], np.int32)
    assert_bitwise(fx.vmap(lambda o: fnp.insert(x, o, 5.0))(objs),
                   np.stack([np.asarray(fnp.insert(x, int(o), 5.0)) for o in objs]),
                   what="vmap insert")
    drop = np.array([2, 0], np.int32)
    assert_bitwise(fx.jit(lambda o: fnp.delete(x, o, axis=1, assume_unique_indices=True))(drop),
                   jnp.delete(jnp.asarray(x), jnp.asarray(drop), axis=1,
                              assume_unique_indices=True), what="delete traced")
    with same_mode(True):
        w = np.arange(7.0)
        x64 = x.astype(np.float64)

        def loss(m):
            return lambda a, o: (m.insert(a, o, a[0, :1] * 3) * w).sum()

        assert_allclose(fx.grad(loss(fnp))(x64, np.int32(1)),
                        jax.grad(loss(jnp))(jnp.asarray(x64), 1))


def test_trim_zeros_all_zero_and_traced():
    z = np.zeros(4, np.int32)
    for trim in ("fb", "f", "b"):
        assert_bitwise(fnp.trim_zeros(z, trim), jnp.trim_zeros(jnp.asarray(z), trim))
    with pytest.raises(fx.ConcretizationTypeError, match=r"trim_zeros: the length of the result"):
        fx.jit(fnp.trim_zeros)(I6)


def test_place_under_jit_and_grad():
    x = np.array([1.0, -2.0, 3.0, -4.0])

    def f(m):
        return lambda v: m.place(v, v < 0, v[:1] * 10, inplace=False)

    with same_mode(True):
        assert_bitwise(fx.jit(f(fnp))(x), f(jnp)(jnp.asarray(x)))
        w = np.arange(1.0, 5.0)
        assert_allclose(fx.grad(lambda v: (f(fnp)(v) * w).sum())(x),
                        jax.grad(lambda v: (f(jnp)(v) * w).sum())(jnp.asarray(x)))


def test_errors():
    x = fnp.ones((2, 3), np.float32)
    cases = [
        (ValueError, r"fill_diagonal cannot modify arrays in place.*inplace=False",
         lambda: fnp.fill_diagonal(x, 1.0)),
        (ValueError, r"put cannot modify arrays in place", lambda: fnp.put(x, 0, 1.0)),
        (ValueError, r"place cannot modify arrays in place", lambda: fnp.place(x, x > 0, 1.0)),
        (ValueError, r"put_along_axis cannot modify arrays in place",
         lambda: fnp.put_along_axis(x, IDX, 1.0, 1)),
        (fx.ConcretizationTypeError, r"delete: the positions \(obj\) must be static",
         lambda: fx.jit(lambda i: fnp.delete(x, i))(np.int32(1))),
        (IndexError, r"delete: .*out of bounds.*\(array of shape \(6,\)\)",
         lambda: fnp.delete(x, 9)),
        (TypeError, r"insert: obj must be an int, a slice, or an integer or boolean array",
         lambda: fnp.insert(x, 1.5, 0.0)),
        (ValueError, r"block: list depths are mismatched", lambda: fnp.block([[x], x])),
        (TypeError, r"block: arrays must be nested lists, not tuples", lambda: fnp.block((x,))),
        (ValueError, r"dsplit: needs an array of at least 3 dimensions, got shape \(2, 3\)",
         lambda: fnp.dsplit(x, 2)),
        (ValueError, r"rot90: axes must be different", lambda: fnp.rot90(x, axes=(1, 1))),
        (ValueError, r"vander: x must be 1-D", lambda: fnp.vander(x)),
        (ValueError, r"resize: all elements of new_shape must be non-negative",
         lambda: fnp.resize(x, (-1, 2))),
        (ValueError, r"rollaxis: start 5 is out of bounds", lambda: fnp.rollaxis(x, 0, 5)),
        (ValueError, r"partition: kth 3 is out of bounds for an axis of length 3",
         lambda: fnp.partition(x, 3)),
        (ValueError, r"select: condlist and choicelist must have the same length",
         lambda: fnp.select([x > 0], [x, x])),
        (TypeError, r"select: condlist\[0\] must be boolean", lambda: fnp.select([x], [x])),
        (ValueError, r"choose: index array entries must be in \[0, 2\)",
         lambda: fnp.choose(np.array([0, 2]), [x, x])),
        (fx.ConcretizationTypeError, r"choose: mode='raise' checks the indices",
         lambda: fx.jit(lambda i: fnp.choose(i, [x, x]))(np.array([0, 1, 0]))),
        (ValueError, r"piecewise: with 2 conditions, funclist must have 2 or 3 entries, got 1",
         lambda: fnp.piecewise(x, [x > 0, x < 0], [1.0])),
        (ValueError, r"place: mask of shape \(3,\) must match the array's shape \(2, 3\)",
         lambda: fnp.place(x, np.ones(3, bool), 1.0, inplace=False)),
        (ValueError, r"put: mode must be None, 'clip', 'wrap'",
         lambda: fnp.put(x, 0, 1.0, mode="raise", inplace=False)),
        (ValueError, r"fill_diagonal: all dimensions of an array of rank > 2 must be equal",
         lambda: fnp.fill_diagonal(fnp.ones((2, 3, 3)), 1.0, inplace=False)),
        (ValueError, r"apply_over_axes: func must keep the rank 2 or drop one dimension",
         lambda: fnp.apply_over_axes(lambda a, ax: a.sum(), x, [0])),
        (ValueError, r"trim_zeros: trim must contain only 'f' and 'b'",
         lambda: fnp.trim_zeros(I6, "x")),
    ]
    for exc, pattern, thunk in cases:
        with pytest.raises(exc, match=pattern):
            thunk()


def test_docstring_examples():
    import doctest

    import fx.numpy.joining_and_editing
    import fx.numpy.selection

    with same_mode(False):
        assert run_doctests(fx.numpy.joining_and_editing, fx.numpy.selection) >= 13
        # The examples of the functions this file tests that live in other modules.
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        for f in (fnp.copy, fnp.rot90, fnp.ediff1d, fnp.vander, fnp.partition, fnp.argpartition,
                  fnp.apply_along_axis, fnp.apply_over_axes):
            for test in doctest.DocTestFinder().find(f, globs={"fx": fx}):
                runner.run(test)
        assert runner.summarize(verbose=False).failed == 0
        assert runner.summarize(verbose=False).attempted >= 7
