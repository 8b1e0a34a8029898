"""Testing utilities for users of fx: a gradient checker and hypothesis strategies.

``check_grads(f, args, order)`` verifies forward mode against central finite differences along
random directions, and reverse mode against them through the inner-product identity
``<ct, J t> = <J^T ct, t>``, recursing to the requested order. Run it in float64, which needs
x64 mode (``with fx.enable_x64():``); in the default mode float64 data becomes float32 and the
checks use float32's step and tolerances.

The strategies (``shapes``, ``arrays``, ``broadcastable_shapes``) need hypothesis, which is
imported only when they are used. Example of a property-based gradient check::

    from hypothesis import given
    import fx, fx.numpy as fnp
    from fx.test_util import arrays, check_grads

    @given(arrays(shape=(3,), dtype="float64", min_value=-2, max_value=2))
    def test_softplus_grads(x):
        check_grads(lambda v: fnp.logaddexp(v, 0.0), (x,), order=2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fx import tree_util
from fx.autodiff import jvp, vjp
from fx.core import get_aval
from fx.numpy._promote import to_array

_DEFAULT_TOL = {
    np.dtype(np.float16): 1e-1,
    np.dtype("bfloat16"): 1e-1,
    np.dtype(np.float32): 2e-2,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 2e-2,
    np.dtype(np.complex128): 1e-5,
}
_DEFAULT_EPS = {np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-4,
                np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-4}


def _tol(dtype, given):
    if given is not None:
        return given
    return _DEFAULT_TOL.get(np.dtype(dtype), 1e-5)


def _leaves(tree):
    return [np.asarray(x) for x in tree_util.tree_leaves(tree)]


def _random_like(rng: np.random.Generator, tree):
    leaves, treedef = tree_util.tree_flatten(tree)
    out = []
    for x in leaves:
        aval = get_aval(to_array(x))
        r = rng.standard_normal(aval.shape)
        if aval.dtype.kind == "c":
            r = r + 1j * rng.standard_normal(aval.shape)
        out.append(to_array(r.astype(aval.dtype)))
    return tree_util.tree_unflatten(treedef, out)


def _axpy(a: float, xs, ys):
    def one(x, y):
        y = np.asarray(y)
        return to_array((np.asarray(x) * a + y).astype(y.dtype))

    return tree_util.tree_map(one, xs, ys)


def _wide(x) -> np.ndarray:
    """``x`` in float64, or complex128 for complex data."""
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _inner(xs, ys) -> float:
    # The real bilinear pairing Re(sum(x * y)) that fx's transposes are taken for (no
    # conjugation; for real data the dot product).
    return float(sum(np.real(np.sum(_wide(x) * _wide(y)))
                     for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys))))


def _assert_close(what: str, expected, got, atol, rtol, context: str):
    for e, g in zip(_leaves(expected), _leaves(got)):
        e64, g64 = _wide(e), _wide(g)
        if not np.allclose(g64, e64, atol=atol, rtol=rtol, equal_nan=True):
            err = np.max(np.abs(g64 - e64)) if e64.size else 0.0
            raise AssertionError(
                f"check_grads: {what} mismatch (max abs error {err:.3g}, atol={atol}, "
                f"rtol={rtol}){context}\nexpected:\n{e64}\ngot:\n{g64}"
            )


def check_jvp(f: Callable, args: Sequence, atol=None, rtol=None, eps=None, rng=None) -> None:
    """Forward mode against central finite differences along a random direction."""
    rng = rng or np.random.default_rng(0)
    args = tuple(args)
    dt = get_aval(to_array(tree_util.tree_leaves(args)[0])).dtype
    eps = eps or _DEFAULT_EPS.get(dt, 1e-3)
    tangent = _random_like(rng, args)
    y, y_dot = jvp(f, args, tangent)
    numeric = _numerical_jvp(f, args, tangent, eps)
    context = f"\ndirection: {[np.asarray(t) for t in tree_util.tree_leaves(tangent)]}"
    _assert_close("jvp vs finite differences", numeric, y_dot, _tol(dt, atol), _tol(dt, rtol),
                  context)


def _numerical_jvp(f, args, tangent, eps):
    f_plus = f(*_axpy(eps, tangent, args))
    f_minus = f(*_axpy(-eps, tangent, args))
    return tree_util.tree_map(
        lambda p, m: (_wide(p) - _wide(m)) / (2 * eps),
        f_plus, f_minus,
    )


def check_vjp(f: Callable, args: Sequence, atol=None, rtol=None, rng=None, eps=None) -> None:
    """Reverse mode against a numerical jvp: ``<ct, J t> == <J^T ct, t>`` (finite differences
    on the left, so functions with only a reverse-mode rule, like custom_vjp, are checked too).
    """
    rng = rng or np.random.default_rng(1)
    args = tuple(args)
    dt = get_aval(to_array(tree_util.tree_leaves(args)[0])).dtype
    eps = eps or _DEFAULT_EPS.get(dt, 1e-3)
    tangent = _random_like(rng, args)
    y, pullback = vjp(f, *args)
    ct = _random_like(rng, y)
    lhs = _inner(ct, _numerical_jvp(f, args, tangent, eps))
    rhs = _inner(pullback(ct), tangent)
    tol = _tol(dt, atol) * (1 + abs(lhs))
    if not abs(lhs - rhs) <= tol:
        raise AssertionError(
            f"check_grads: vjp inconsistent with finite differences: expected <J^T ct, t> = "
            f"<ct, J t> = {lhs!r} (finite differences), got {rhs!r} (tolerance {tol:.3g})"
            f"\ndirection t: {[np.asarray(t) for t in tree_util.tree_leaves(tangent)]}"
        )


def check_grads(f: Callable, args: Sequence, order: int, modes=("fwd", "rev"), atol=None,
                rtol=None, eps=None) -> None:
    """Check derivatives of ``f`` at ``args`` up to ``order``, in forward and/or reverse mode.

    Order ``k`` checks the derivatives of the order-``k-1`` derivative maps (the jvp and vjp
    functions), like ``jax.test_util.check_grads``. Raises ``AssertionError`` showing expected
    and actual values and the random direction used.
    """
    args = tuple(args)
    rng = np.random.default_rng(0)

    def rec(fun, fargs, k):
        if "fwd" in modes:
            check_jvp(fun, fargs, atol, rtol, eps, rng)
            if k > 1:
                t = _random_like(rng, fargs)
                rec(lambda *a: jvp(fun, a, t)[1], fargs, k - 1)
        if "rev" in modes:
            check_vjp(fun, fargs, atol, rtol, rng, eps)
            if k > 1:
                y = fun(*fargs)
                ct = _random_like(rng, y)
                rec(lambda *a: vjp(fun, *a)[1](ct), fargs, k - 1)

    rec(f, args, order)


# --- hypothesis strategies ----------------------------------------------------------------------


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4):
    """A hypothesis strategy for array shapes (zero-size dimensions included by default)."""
    from hypothesis.extra import numpy as hnp  # noqa: PLC0415  (hypothesis is optional)

    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcastable_shapes(shape, min_dims: int = 0, max_dims: int = 3):
    """Shapes that broadcast against ``shape``."""
    from hypothesis.extra import numpy as hnp  # noqa: PLC0415

    return hnp.broadcastable_shapes(shape, min_dims=min_dims, max_dims=max_dims)


def arrays(shape=None, dtype="float32", min_value=-3.0, max_value=3.0, allow_nan=False,
           allow_infinity=False, elements=None):
    """A hypothesis strategy for fx arrays of ``dtype`` (a shape strategy by default)."""
    from hypothesis import strategies as st  # noqa: PLC0415
    from hypothesis.extra import numpy as hnp  # noqa: PLC0415

    dt = np.dtype(dtype)
    if elements is None:
        if dt.kind == "f":
            elements = st.floats(min_value, max_value, allow_nan=allow_nan,
                                 allow_infinity=allow_infinity, width=min(dt.itemsize * 8, 64)
                                 if dt.itemsize in (2, 4, 8) and dt.name != "bfloat16" else 32)
        elif dt.kind in "iu":
            elements = st.integers(int(min_value), int(max_value))
        else:
            elements = st.booleans()
    draw_dtype = np.float32 if dt.name == "bfloat16" else dt
    base = hnp.arrays(draw_dtype, shape if shape is not None else shapes(), elements=elements)
    return base.map(lambda a: to_array(a.astype(dt)))
