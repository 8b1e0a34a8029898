"""Fallbacks are never silent: a group that runs as NumPy for want of a kernel says why in
``as_text()``, no C compiler warns once, and ``FX_STRICT=1`` makes an unexpected fallback an
error (``fx.lowering.select.fallbacks``)."""

import warnings

import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx.lowering.select import fallbacks
from fx.runtime import cc


def _mlp(params, x):
    for w, b in params:
        x = fnp.tanh(x @ w + b)
    return fnp.sum(x)


def _mlp_args():
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((8, 16)).astype(np.float32), np.zeros(16, np.float32)),
              (rng.standard_normal((16, 4)).astype(np.float32), np.zeros(4, np.float32))]
    return params, rng.standard_normal((3, 8)).astype(np.float32)


@pytest.fixture
def no_compiler(monkeypatch):
    """As on a machine without a C compiler; the once-per-process warning not yet given, and
    FX_STRICT unset (a test that wants it sets it)."""
    monkeypatch.setattr(cc, "compiler", lambda: None)
    monkeypatch.delenv("FX_STRICT", raising=False)
    monkeypatch.setattr(fallbacks, "_warned_no_compiler", False)


@pytest.mark.parametrize("fun", [_mlp, fx.grad(_mlp)], ids=["mlp", "grad_mlp"])
def test_compiled_programs_have_no_fallback(fun, monkeypatch):
    monkeypatch.setenv("FX_STRICT", "1")
    low = fx.jit(fun).lower(*_mlp_args())
    assert "fallback" not in low.as_text() and "fallback" not in low.as_text("selection")
    assert all(s.choice.fallback is None for s in low.program.steps)


def test_no_kernel_dtype_is_marked_and_expected(monkeypatch):
    monkeypatch.setenv("FX_STRICT", "1")  # an expected fallback: strict lets it through
    x = np.ones(4, np.float32).astype(fnp.float8_e4m3fn)
    low = fx.jit(lambda x: x.astype(fnp.float32)).lower(x)
    text = low.as_text("selection")
    assert ("fallback: runs as NumPy (expected, dtype without kernels): convert_element_type "
            "on f8e4m3fn[4]: generated kernels do not handle float8_e4m3fn") in text
    assert "1 NumPy fallback" in low.as_text().splitlines()[0]


def test_host_operation_is_marked_and_expected():
    text = fx.jit(fnp.sort).lower(np.ones(5, np.float32)).as_text("selection")
    assert "fallback: runs as NumPy (expected, host operation): sort has no kernel" in text


def test_no_compiler_marks_the_groups_and_warns_once(no_compiler):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        low = fx.jit(lambda x: fnp.exp(x) + 1.0).lower(np.ones(4, np.float32))
        fx.jit(lambda x: fnp.sin(x) * 2.0).lower(np.ones(4, np.float32))
    text = low.as_text()
    assert ("fallback: runs as NumPy (UNEXPECTED, no C compiler): no C compiler, so not "
            "cpu.fused_elementwise") in text
    ours = [w for w in caught if "no C compiler" in str(w.message)]
    assert len(ours) == 1 and issubclass(ours[0].category, RuntimeWarning)
    assert "install gcc or clang" in str(ours[0].message) and "set CC" in str(ours[0].message)


def test_no_compiler_still_computes(no_compiler):
    x = np.arange(4, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = fx.jit(lambda x: fnp.exp(x) + 1.0)(x)
    np.testing.assert_allclose(np.asarray(got), np.exp(x) + 1.0, rtol=1e-6)


def test_strict_raises_for_an_unexpected_fallback(no_compiler, monkeypatch):
    monkeypatch.setenv("FX_STRICT", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(fallbacks.FallbackError) as info:
            fx.jit(lambda x: fnp.exp(x) + 1.0).lower(np.ones(4, np.float32))
    message = str(info.value)
    assert "FX_STRICT=1" in message and "elementwise[exp, add]" in message
    assert "no C compiler" in message and "install gcc or clang" in message


@pytest.mark.parametrize("value", ["", "0"])
def test_strict_off_lets_it_through(no_compiler, monkeypatch, value):
    monkeypatch.setenv("FX_STRICT", value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low = fx.jit(lambda x: fnp.exp(x) + 1.0).lower(np.ones(4, np.float32))
    assert "UNEXPECTED" in low.as_text("selection")


def test_the_lowering_tests_run_strict():
    assert fallbacks.strict(), "tests/lowering/conftest.py should set FX_STRICT=1"
