"""fx.lax.fft against jax.lax.fft: every FftType on 1-3 trailing dimensions, in both
precisions; jvp and vjp (jax's transposes, with their half-spectrum masks) against jax and
finite differences; vmap against a loop; jit against eager; jax's type and shape errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fx
from fx.lax import FftType
from tests.harness import (
    OpCase,
    assert_allclose,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    random_like,
)

RNG = np.random.default_rng(0)


def _draw(shape, dtype):
    return random_like(RNG, np.zeros(shape, dtype))


def _rfft_input(lengths, batch, dtype):
    """A half spectrum for IRFFT: the full-length transform of real data, cropped."""
    real = np.random.default_rng(1).standard_normal(batch + tuple(lengths))
    return np.fft.rfftn(real, axes=range(len(batch), len(batch) + len(lengths))).astype(dtype)


def _case(typ: FftType, lengths: tuple[int, ...], dtype, batch=(2,)) -> OpCase:
    if typ == FftType.IRFFT:
        def args(rng):
            return [_rfft_input(lengths, batch, dtype)]
    else:
        def args(rng):
            return [_draw(batch + lengths, dtype)]
    return OpCase(
        f"{typ.name}{lengths}-{np.dtype(dtype).name}",
        lambda x: fx.lax.fft(x, typ, lengths),
        lambda x: jax.lax.fft(x, typ.name, lengths),
        args,
        rtol=1e-4 if np.dtype(dtype).itemsize <= 8 else None,
        atol=1e-4 if np.dtype(dtype).itemsize <= 8 else None,
    )


CASES = [
    _case(typ, lengths, dtype)
    for typ, dtypes_ in [(FftType.FFT, (np.complex64, np.complex128)),
                         (FftType.IFFT, (np.complex64, np.complex128)),
                         (FftType.RFFT, (np.float32, np.float64)),
                         (FftType.IRFFT, (np.complex64, np.complex128))]
    for dtype in dtypes_
    for lengths in [(8,), (7,), (3, 4), (2, 3, 5)]
]
F64 = [c for c in CASES if c.name.endswith("128") or c.name.endswith("float64")]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eval_matches_jax(case):
    check_eval(case, case.args(RNG))


@pytest.mark.parametrize("case", F64, ids=repr)
def test_jvp_and_vjp_match_jax(case):
    args = case.args(RNG)
    check_jvp(case, args, np.random.default_rng(2))
    check_vjp(case, args, np.random.default_rng(3))


@pytest.mark.parametrize("case", [c for c in F64 if len(c.name.split(")")[0]) < 12], ids=repr)
def test_derivatives_match_finite_differences(case):
    check_grads_f64(case, case.args(RNG))


@pytest.mark.parametrize("case", [c for c in F64 if "(3, 4)" in c.name or "(7,)" in c.name],
                         ids=repr)
@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_matches_loop_and_jax(case, axis):
    x = np.stack([case.args(np.random.default_rng(i))[0] for i in range(3)], axis=axis)
    check_vmap(case, [x], (axis,))


@pytest.mark.parametrize("case", [c for c in F64 if "(3, 4)" in c.name], ids=repr)
def test_jit_matches_eager(case):
    x = fx.numpy.asarray(case.args(RNG)[0])
    assert_allclose(fx.jit(case.fx_fn)(x), case.fx_fn(x), rtol=0, atol=0, what=case.name)


def test_grad_of_jit_of_a_real_loss_matches_jax():
    x = RNG.standard_normal((3, 6))

    def loss(lib, v):
        y = lib.lax.fft(v, "rfft", (6,))
        z = lib.lax.fft(y * y, "irfft", (6,))
        return lib.numpy.sum(z * v)

    got = fx.jit(fx.grad(lambda v: loss(fx, v)))(fx.numpy.asarray(x))
    assert_allclose(got, jax.grad(lambda v: loss(jax, v))(jax.numpy.asarray(x)))


def test_transposes_of_rfft_and_irfft_are_adjoint_for_the_real_pairing():
    # <ct, A x> = <A^T ct, x> with <u, v> = Re(sum(u * v)): jax's convention, no conjugation.
    rng = np.random.default_rng(4)
    for typ, n, x in [(FftType.RFFT, 6, rng.standard_normal((2, 6))),
                      (FftType.RFFT, 7, rng.standard_normal((2, 7))),
                      (FftType.IRFFT, 6, _rfft_input((6,), (2,), np.complex128)),
                      (FftType.IRFFT, 7, _rfft_input((7,), (2,), np.complex128))]:
        f = lambda v, typ=typ, n=n: fx.lax.fft(v, typ, (n,))  # noqa: E731
        y, pull = fx.vjp(f, fx.numpy.asarray(x))
        ct = random_like(rng, np.asarray(y))
        (xt,) = pull(fx.numpy.asarray(ct))
        # a tangent in x's space: for IRFFT, any complex half spectrum
        t = random_like(rng, x)
        lhs = np.real(np.sum(ct * np.asarray(f(fx.numpy.asarray(t)))))
        rhs = np.real(np.sum(np.asarray(xt) * t))
        np.testing.assert_allclose(lhs, rhs, rtol=1e-12, err_msg=f"{typ.name} n={n}")


def test_names_and_dtype_conversions_are_jaxs():
    x = np.arange(8, dtype=np.float32)
    for name in ("fft", "FFT", "rfft", "RFFT"):
        got, want = fx.lax.fft(x, name, (8,)), jax.lax.fft(x, name, (8,))
        assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    # integers and real floats become complex for FFT/IFFT, inexact for RFFT
    got, want = fx.lax.fft(np.arange(4), FftType.FFT, (4,)), jax.lax.fft(np.arange(4), "fft", (4,))
    assert got.dtype == want.dtype
    assert fx.lax.fft(np.arange(4), "rfft", (4,)).dtype == jax.lax.fft(np.arange(4), "rfft",
                                                                        (4,)).dtype
    # no lengths: only the conversion
    assert fx.lax.fft(x, "fft", ()).dtype == jax.lax.fft(x, "fft", ()).dtype == np.complex64


def test_errors_are_jaxs():
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(ValueError, match="Unknown FFT type 'Fft'"):
        fx.lax.fft(x, "Fft", (4,))
    with pytest.raises(TypeError, match="Unknown FFT type value"):
        fx.lax.fft(x, 0, (4,))
    with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
        fx.lax.fft(x + 0j, FftType.RFFT, (4,))
    with pytest.raises(ValueError, match="minor dimensions must be equal to fft_lengths"):
        fx.lax.fft(x, FftType.FFT, (3,))
    with pytest.raises(ValueError, match="at least as many input dimensions"):
        fx.lax.fft(x, FftType.FFT, (1, 2, 4))
    with pytest.raises(ValueError, match="all except the last fft_length"):
        fx.lax.fft(x, FftType.IRFFT, (3, 6))
    with pytest.raises(ValueError, match="RFFT input must be float32 or float64"):
        fx.lax.fft_p.bind(fx.numpy.zeros(4, np.int32), fft_type=FftType.RFFT, fft_lengths=(4,))


def test_jaxpr_shows_one_fft_equation():
    text = str(fx.make_jaxpr(lambda v: fx.lax.fft(v, "rfft", (8,)))(np.zeros((3, 8))))
    assert "fft[" in text and "c128[3,5]" in text


def test_empty_batch_and_lengths_of_one():
    for typ, x, lengths in [(FftType.FFT, np.zeros((0, 4), np.complex64), (4,)),
                            (FftType.RFFT, np.ones((2, 1)), (1,)),
                            (FftType.IRFFT, np.ones((2, 1), np.complex128), (1,))]:
        got, want = fx.lax.fft(x, typ, lengths), jax.lax.fft(x, typ.name, lengths)
        assert_allclose(got, want)


def test_docstring_examples():
    import importlib  # noqa: PLC0415  (fx.lax.fft the attribute is the function)

    from tests.harness import run_doctests

    assert run_doctests(importlib.import_module("fx.lax.fft")) >= 1
