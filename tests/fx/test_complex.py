"""Complex numbers through every transformation, against jax: values and dtypes, jvp and
vjp (and finite differences), grad with jax's conjugate convention and ``holomorphic=True``,
jacfwd/jacrev, vmap against a loop, jit against eager bitwise."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.numpy as fnp
from tests.harness import (
    OpCase,
    assert_allclose,
    assert_bitwise,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    random_like,
    same_mode,
    to_fx,
    to_jax,
)

C64, C128 = np.complex64, np.complex128


def _z(rng, shape, dtype=C64, scale=1.0, shift=0.0):
    return ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale
            + shift).astype(dtype)


def _away_from_cuts(rng, shape, dtype=C64):
    # Points with |Re| and |Im| in [0.2, 0.8]: off the branch cuts of log, sqrt, arcsin, ...
    re = rng.uniform(0.2, 0.8, shape) * rng.choice([-1, 1], shape)
    im = rng.uniform(0.2, 0.8, shape) * rng.choice([-1, 1], shape)
    return (re + 1j * im).astype(dtype)


def _right_half(rng, shape, dtype=C64):
    # jax's arccosh derivative has the wrong sign in part of the left half-plane (at
    # -0.357-0.313j: jax 0.11-0.996j, finite differences and fx -0.11+0.996j); compare with
    # jax where both are right. The finite-difference test covers the whole set.
    return np.abs(np.real(_away_from_cuts(rng, shape, dtype))) + 1j * np.imag(
        _away_from_cuts(rng, shape, dtype))


# name, draw, holomorphic (its complex derivative exists: grad(holomorphic=True) applies)
UNARY = [
    ("exp", _z, True), ("log", _away_from_cuts, True), ("sqrt", _away_from_cuts, True),
    ("sin", _z, True), ("cos", _z, True), ("tan", _away_from_cuts, True),
    ("tanh", _away_from_cuts, True), ("sinh", _z, True), ("cosh", _z, True),
    ("arcsin", _away_from_cuts, True), ("arccos", _away_from_cuts, True),
    ("arctan", _away_from_cuts, True), ("arcsinh", _away_from_cuts, True),
    ("arccosh", _right_half, True), ("arctanh", _away_from_cuts, True),
    ("log1p", _away_from_cuts, True), ("expm1", _z, True), ("exp2", _z, True),
    ("log10", _away_from_cuts, True), ("square", _z, True), ("reciprocal", _away_from_cuts, True),
    ("negative", _z, True), ("conj", _z, False), ("real", _z, False), ("imag", _z, False),
    ("abs", _away_from_cuts, False), ("angle", _away_from_cuts, False),
]


def _case(name, draw, shape=(5,), dtype=C64):
    return OpCase(name, getattr(fnp, name), getattr(jnp, name),
                  lambda rng: [draw(rng, shape, dtype)])


@pytest.mark.parametrize("name,draw,holo", UNARY, ids=[u[0] for u in UNARY])
def test_unary_eval_jvp_vjp_against_jax(name, draw, holo):
    case = _case(name, draw)
    rng = np.random.default_rng(0)
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)


@pytest.mark.parametrize("name,draw,holo", UNARY, ids=[u[0] for u in UNARY])
def test_unary_derivatives_against_finite_differences(name, draw, holo):
    case = _case(name, _away_from_cuts if name == "arccosh" else draw, shape=(3,), dtype=C128)
    check_grads_f64(case, case.args(np.random.default_rng(1)))


@pytest.mark.parametrize("name,draw,holo", UNARY, ids=[u[0] for u in UNARY])
def test_unary_grad_conjugate_convention_and_holomorphic(name, draw, holo):
    z = draw(np.random.default_rng(2), (4,), C128)
    w = _z(np.random.default_rng(3), (4,), C128)

    def loss(mod):
        # A real-valued function of complex z (gradient: d/dx - i d/dy, as jax).
        f = getattr(mod, name)
        return lambda z: mod.real(mod.sum(f(z) * w)) + mod.sum(mod.abs(f(z)) ** 2)

    assert_allclose(fx.grad(loss(fnp))(z), jax.grad(loss(jnp))(z), what=f"grad {name}")
    if holo:
        def total(mod):
            return lambda z: mod.sum(getattr(mod, name)(z) * w)

        assert_allclose(fx.grad(total(fnp), holomorphic=True)(z),
                        jax.grad(total(jnp), holomorphic=True)(z),
                        what=f"holomorphic grad {name}")


@pytest.mark.parametrize("name,draw,_", UNARY, ids=[u[0] for u in UNARY])
def test_unary_vmap_and_jit(name, draw, _):
    case = _case(name, draw)
    x = draw(np.random.default_rng(4), (3, 4), C64)
    check_vmap(case, [x], (1,))
    f = getattr(fnp, name)
    if name in _ROUNDED_IN_KERNELS:  # generated kernels round otherwise: within ulps
        assert_allclose(fx.jit(f)(x), f(fnp.asarray(x)), what=f"jit {name}")
    else:  # exact on each part, or a NumPy step under jit: the same bits as eager
        assert_bitwise(fx.jit(f)(x), f(fnp.asarray(x)), what=f"jit {name}")


# Computed by generated kernels under jit with other roundings than NumPy's (products and
# quotients of pairs, moduli, atan2 of the parts): jit agrees with eager to within ulps.
_ROUNDED_IN_KERNELS = {"abs", "angle", "square", "reciprocal", "multiply", "divide"}


BINARY = ["add", "subtract", "multiply", "divide", "power", "matmul", "dot", "vdot", "inner",
          "outer", "maximum", "minimum"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_against_jax(name):
    rng = np.random.default_rng(5)
    shape = (3, 3) if name in ("matmul", "dot") else (4,)
    draw = _away_from_cuts if name == "power" else _z
    case = OpCase(name, getattr(fnp, name), getattr(jnp, name),
                  lambda r: [draw(r, shape), draw(r, shape)], diff_argnums=(0, 1))
    args = case.args(rng)
    check_eval(case, args)
    if name not in ("maximum", "minimum"):
        check_jvp(case, args, rng)
        check_vjp(case, args, rng)
        check_grads_f64(case, [np.asarray(a, C128) for a in args])
    check_vmap(case, [draw(rng, (2,) + shape), draw(rng, (2,) + shape)], (0, 0))
    f = getattr(fnp, name)
    check = assert_allclose if name in _ROUNDED_IN_KERNELS else assert_bitwise
    check(fx.jit(f)(*args), f(*to_fx(args)), what=f"jit {name}")


def test_mixed_real_and_complex_promote_as_jax():
    x = np.arange(3, dtype=np.float32)
    z = _z(np.random.default_rng(6), (3,))
    for a, b in [(x, z), (z, 2.5), (x, 1j), (z, 2), (np.float64(2.0), z)]:
        got = fnp.multiply(*(to_fx([a, b])))
        want = jnp.multiply(*to_jax([a, b]))
        assert_allclose(got, want, what=f"{a!r} * {b!r}")
        assert got.weak_type == want.weak_type
    arr = fnp.asarray(x)
    assert_allclose(2j * arr, 2j * jnp.asarray(x))
    assert_allclose((arr + 1j).imag, (jnp.asarray(x) + 1j).imag)


def test_lax_parts_and_conversions_against_jax():
    z = _z(np.random.default_rng(7), (2, 3), C128)
    x, y = np.real(z).astype(np.float32), np.imag(z).astype(np.float32)
    assert_allclose(lax.complex(x, y), jax.lax.complex(x, y))
    assert_allclose(lax.real(z), jax.lax.real(z))
    assert_allclose(lax.imag(z), jax.lax.imag(z))
    assert_allclose(lax.conj(x), jax.lax.conj(x))  # a real operand gives a complex result
    assert_allclose(lax.conj(z), jax.lax.conj(z))
    assert_allclose(lax.abs(z), jax.lax.abs(z))
    assert_allclose(lax.sign(z), jax.lax.sign(z))
    for dt in (np.float32, np.int32, np.bool_):
        with pytest.warns(np.exceptions.ComplexWarning):
            got = lax.convert_element_type(z, dt)
        with pytest.warns(np.exceptions.ComplexWarning):
            want = jax.lax.convert_element_type(z, dt)
        assert_allclose(got, want)
    assert_allclose(lax.convert_element_type(z, C64), jax.lax.convert_element_type(z, C64))
    # (inf, 0) stays (inf, 0): the parts are assigned, not added.
    inf = np.array([np.inf], np.float32)
    got = np.asarray(lax.complex(inf, np.zeros(1, np.float32)))
    assert got.real[0] == np.inf and got.imag[0] == 0


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # jax's transposes
def test_parts_transposes_follow_jax():
    z = _z(np.random.default_rng(8), (3,), C128)
    x, y = np.real(z), np.imag(z)
    for fx_f, jax_f, args in [
        (lambda a: lax.real(a), jax.lax.real, (z,)),
        (lambda a: lax.imag(a), jax.lax.imag, (z,)),
        (lambda a: lax.conj(a), jax.lax.conj, (z,)),
        (lambda a: lax.conj(a), jax.lax.conj, (x,)),
        (lambda a, b: lax.complex(a, b), jax.lax.complex, (x, y)),
        (lambda a: lax.convert_element_type(a, np.float64),
         lambda a: jax.lax.convert_element_type(a, np.float64), (z,)),
        (lambda a: lax.convert_element_type(a, C128),
         lambda a: jax.lax.convert_element_type(a, C128), (x,)),
    ]:
        fo, fp = fx.vjp(fx_f, *args)
        jo, jp = jax.vjp(jax_f, *args)
        ct = random_like(np.random.default_rng(9), np.asarray(jo))
        assert_allclose(fp(ct), jp(ct))
        fo, ft = fx.jvp(fx_f, args, tuple(random_like(np.random.default_rng(10), a)
                                          for a in args))
        jo, jt = jax.jvp(jax_f, args, tuple(random_like(np.random.default_rng(10), a)
                                            for a in args))
        assert_allclose(ft, jt)


def test_reductions_and_scans_of_complex():
    z = _z(np.random.default_rng(11), (3, 4), C64)
    for name in ("sum", "prod", "mean", "cumsum", "cumprod"):
        case = OpCase(name, lambda a, n=name: getattr(fnp, n)(a, axis=1),
                      lambda a, n=name: getattr(jnp, n)(a, axis=1), lambda r: [z])
        check_eval(case, [z])
        check_jvp(case, [z], np.random.default_rng(0))
        check_vjp(case, [z], np.random.default_rng(0))
        f = case.fx_fn
        assert_bitwise(fx.jit(f)(z), f(fnp.asarray(z)), what=f"jit {name}")
    assert_allclose(fnp.sort_complex(np.array([1 + 3j, 1 + 2j, 5j, -1], C64)),
                    jnp.sort_complex(np.array([1 + 3j, 1 + 2j, 5j, -1], C64)))
    assert_allclose(fnp.sort_complex(np.array([3, 1, 2], np.int32)),
                    jnp.sort_complex(np.array([3, 1, 2], np.int32)))
    w = np.array([1 + 1j, np.nan + 0j, 2 + np.inf * 1j, 0j], C64)
    for name in ("isnan", "isinf", "isfinite", "iscomplex", "isreal"):
        assert_allclose(getattr(fnp, name)(w), getattr(jnp, name)(w), what=name)
    assert fnp.iscomplexobj(w) and not fnp.isrealobj(w)


def test_jacobians_holomorphic_and_not():
    z = _away_from_cuts(np.random.default_rng(12), (3,), C128)

    def f(mod):
        return lambda z: mod.sin(z) * mod.exp(z[::-1])

    for jac in ("jacfwd", "jacrev"):
        assert_allclose(getattr(fx, jac)(f(fnp), holomorphic=True)(z),
                        getattr(jax, jac)(f(jnp), holomorphic=True)(z), what=jac)
    # jacrev of a real-valued function of complex inputs (jax allows it; jacfwd does not).
    g = lambda mod: (lambda z: mod.abs(f(mod)(z)))  # noqa: E731
    assert_allclose(fx.jacrev(g(fnp))(z), jax.jacrev(g(jnp))(z))
    assert_allclose(fx.hessian(lambda z: fnp.sum(z ** 3), holomorphic=True)(z),
                    jax.hessian(lambda z: jnp.sum(z ** 3), holomorphic=True)(z))


def test_derivative_errors_name_what_to_do():
    z = fnp.asarray(np.array(1 + 2j, C64))
    with pytest.raises(TypeError, match=r"grad requires real-valued floating-point outputs.*"
                                        r"holomorphic=True"):
        fx.grad(lambda z: z * z)(z)
    with pytest.raises(TypeError, match=r"holomorphic=True requires inputs with complex dtype"):
        fx.grad(lambda x: x * x, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match=r"holomorphic=True requires outputs with complex"):
        fx.grad(lambda z: lax.real(z), holomorphic=True)(z)
    with pytest.raises(TypeError, match=r"jacfwd requires real floating-point inputs"):
        fx.jacfwd(lambda z: z)(z)
    with pytest.raises(TypeError, match=r"jacrev requires real-valued floating-point outputs"):
        fx.jacrev(lambda z: z)(z)
    with pytest.raises(TypeError, match=r"lt requires real numeric or bool operands, got "
                                        r"complex64"):
        lax.lt(z, z)
    with pytest.raises(TypeError, match=r"complex requires float32 or float64 operands"):
        lax.complex(np.int32(1), np.int32(2))
    with pytest.raises(TypeError, match=r"real requires complex operands"):
        lax.real(np.float32(1))


@pytest.mark.default_mode
def test_default_mode_complex_is_complex64():
    with same_mode(False):
        z = fnp.asarray(np.array([1 + 2j], C128))
        assert z.dtype == C64
        assert (z * 1.5).dtype == jnp.asarray(np.array([1 + 2j], C128)).dtype
        assert fx.grad(lambda z: fnp.abs(z).sum())(z).dtype == C64


def test_autodiff_cookbook_complex_section():
    # jax's autodiff cookbook, "Complex numbers and differentiation", with its expected values.
    def f(z):
        x, y = fnp.real(z), fnp.imag(z)
        return x ** 2 + y ** 2

    z = 3. + 4j
    np.testing.assert_allclose(complex(fx.grad(f)(z)), 6 - 8j)
    # A holomorphic function: grad(holomorphic=True) is the complex derivative.
    np.testing.assert_allclose(complex(fx.grad(fnp.sin, holomorphic=True)(z)),
                               complex(np.cos(z)), rtol=1e-6)
    # |z|^2 through abs, and a complex matrix function's gradient against jax.
    A = _z(np.random.default_rng(13), (3, 3), C128)

    def loss(mod):
        return lambda A: mod.real(mod.trace(mod.conj(A).T @ A @ A))

    assert_allclose(fx.grad(loss(fnp))(A), jax.grad(loss(jnp))(A))
    assert_allclose(fx.jit(fx.grad(loss(fnp)))(A), jax.grad(loss(jnp))(A))
    # jvp and vjp of a non-holomorphic function agree with jax.
    g = lambda mod: (lambda z: mod.abs(z) * mod.exp(1j * mod.angle(z)))  # noqa: E731
    zs = _away_from_cuts(np.random.default_rng(14), (4,), C128)
    t = random_like(np.random.default_rng(15), zs)
    assert_allclose(fx.jvp(g(fnp), (zs,), (t,)), jax.jvp(g(jnp), (zs,), (t,)))


def test_jit_of_mixed_real_complex_program_matches_eager():
    # Kernels for the real and the complex arithmetic next to a NumPy step for exp.
    def f(z, x):
        m = fnp.abs(z) * x + 1.0
        return fnp.exp(1j * m) * z, fnp.sin(m).sum()

    z = _z(np.random.default_rng(16), (64,), C64)
    x = np.random.default_rng(17).standard_normal(64).astype(np.float32)
    assert_allclose(fx.jit(f)(z, x), f(*to_fx([z, x])), rtol=1e-6, atol=1e-6)
    assert_allclose(fx.jit(f)(z, x), jax.jit(_jax_f)(z, x),
                    rtol=2e-5, atol=2e-5)


def _jax_f(z, x):
    m = jnp.abs(z) * x + 1.0
    return jnp.exp(1j * m) * z, jnp.sin(m).sum()
