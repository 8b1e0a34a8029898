"""fx.debug: ``print`` inside jit/vmap/grad/control flow (the printed lines are compared with
``jax.debug.print`` on the same program), ``disable_jit``, the ``debug_nans`` re-run
(``check_nans``) and source locations for error messages.
"""

from __future__ import annotations

import contextlib
import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.debug
import fx.numpy as fnp
from fx import lax
from fx.jaxpr import check_jaxpr, dce_jaxpr

F32 = np.float32


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def _jax_lines(fn, *args) -> list[str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args)
        jax.effects_barrier()
    return buf.getvalue().splitlines()


# --- the same programs printing in fx and jax ---------------------------------------------------


def programs(api, L, np_, dbg):
    def eager_and_format(x):
        dbg.print("x={x} sum={:.3f} tag={t}", x.sum(), x=x, t="s")
        return x

    def nested_vmap(x, y):
        dbg.print("x={x} y={}", y, x=x)
        return x * y

    def in_grad(x):
        dbg.print("primal {}", x)
        return (x ** 2).sum()

    def branches(p, x):
        return L.cond(p, lambda: dbg.print("T {}", x), lambda: dbg.print("F {}", x))

    def loop(x):
        def body(c, a):
            dbg.print("c={} a={}", c, a)
            return c + a, c

        return L.scan(body, x[0] * 0.0, x)[0]

    return {
        "eager": (eager_and_format, [np.array([0.5, 1.25])]),
        "jit": (api.jit(eager_and_format), [np.array([0.5, 1.25])]),
        "vmap": (api.vmap(eager_and_format), [np.array([[1.0, 2.0], [3.0, 4.0]])]),
        "nested vmap": (api.vmap(api.vmap(nested_vmap, in_axes=(0, None)), in_axes=(None, 0)),
                        [np.arange(2.0), np.arange(3.0)]),
        "grad": (api.grad(in_grad), [np.array([1.5, -2.0])]),
        "jit grad": (api.jit(api.grad(in_grad)), [np.array([1.5, -2.0])]),
        "cond": (branches, [np.bool_(True), np.float64(2.5)]),
        "vmap cond": (api.vmap(branches), [np.array([True, False]), np.arange(2.0)]),
        "scan": (loop, [np.arange(3.0)]),
        "grad scan": (api.grad(loop), [np.arange(3.0)]),
        "jit fori": (api.jit(lambda x: L.fori_loop(
            0, 3, lambda i, c: (dbg.print("i={} c={}", i, c), c * 2.0)[1], x)),
            [np.float64(1.0)]),
    }


FX = programs(fx, fx.lax, fnp, fx.debug)
JX = programs(jax, jax.lax, jnp, jax.debug)

@pytest.mark.parametrize("name", list(FX))
def test_prints_the_same_lines_as_jax(name, capsys):
    fn, args = FX[name]
    fn(*[fnp.asarray(a) for a in args])
    got = _lines(capsys)
    want = _jax_lines(JX[name][0], *[jnp.asarray(a) for a in args])
    assert got == want


def test_jitted_function_prints_on_every_call(capsys):
    @fx.jit
    def f(x):
        fx.debug.print("called with {}", x)
        return x + 1.0

    f(F32(1))
    f(F32(2))
    assert _lines(capsys) == ["called with 1.0", "called with 2.0"]
    assert f.cache_size() == 1


def _prints_unused_value(x):
    fx.debug.print("unused {}", x * 2.0)  # nothing else reads x * 2
    return x


def test_print_survives_dead_code_elimination():
    closed = fx.make_jaxpr(_prints_unused_value)(F32(3))
    check_jaxpr(closed)
    pruned, _ = dce_jaxpr(closed.jaxpr)
    assert [e.primitive.name for e in pruned.eqns] == ["mul", "debug_print"]


def test_print_survives_the_compiler(capsys):
    fx.jit(_prints_unused_value)(F32(3))
    assert _lines(capsys) == ["unused 6.0"]


def test_print_in_jaxpr_and_under_jvp(capsys):
    text = str(fx.make_jaxpr(lambda x: fx.debug.print("v {}", x))(F32(1)))
    assert "() = debug_print[fmt='v {}'" in text
    _, t = fx.jvp(lambda x: (fx.debug.print("p {}", x), x * 3.0)[1], (F32(2),), (F32(1),))
    assert float(t) == 3.0 and _lines(capsys) == ["p 2.0"]


def test_print_argument_errors():
    with pytest.raises(TypeError, match="the format must be a str"):
        fx.debug.print(3, 1.0)


def test_print_in_jit_of_a_python_scalar(capsys):
    fx.jit(lambda x: fx.debug.print("{:.2f}", x))(1.5)
    assert _lines(capsys) == ["1.50"]


# --- disable_jit --------------------------------------------------------------------------------


def test_disable_jit_restores_the_flag_and_nests():
    assert not fx.config.disable_jit
    with fx.debug.disable_jit():
        assert fx.config.disable_jit
        with fx.debug.disable_jit(False):
            assert not fx.config.disable_jit
        assert fx.config.disable_jit
    with pytest.raises(RuntimeError), fx.debug.disable_jit():
        raise RuntimeError
    assert not fx.config.disable_jit


def test_disable_jit_runs_jitted_functions_without_compiling():
    f = fx.jit(lambda x: fnp.sin(x) * 2.0)
    with fx.debug.disable_jit():
        out = f(np.float64(0.5))
    assert np.isclose(float(out), 2 * np.sin(0.5))


# --- NaN checking -------------------------------------------------------------------------------


def _nan_program(x):
    y = fnp.log(x)  # fine for x > 0
    z = fnp.sqrt(y - 10.0)  # NaN: the line check_nans must report
    return z * 2.0


def _line_of(fn, text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _run_check(fn, *args):
    closed = fx.make_jaxpr(fn)(*args)
    outs = fx.core.EVAL_TRACE and fx.interpreters.eval.eval_jaxpr(
        closed.jaxpr, closed.consts, *[fnp.asarray(a) for a in args])
    fx.debug.check_nans(closed, [np.asarray(a) for a in args], outs, name=fn.__name__)


def test_check_nans_names_the_first_nan_primitive_and_its_line():
    with pytest.raises(FloatingPointError) as info:
        _run_check(_nan_program, F32(2))
    msg = str(info.value)
    line = _line_of(_nan_program, "fnp.sqrt(y - 10.0)")
    assert msg.startswith("invalid value (nan) encountered in sqrt at ")
    assert f"test_debug.py:{line} (_nan_program)" in msg
    assert "Its operands already held NaN" not in msg


def test_check_nans_descends_into_loops_branches_and_calls():
    def in_loop(x):
        def body(i, c):
            return fnp.log(c - 1.5)  # NaN once c - 1.5 < 0

        return lax.fori_loop(0, 3, body, x)

    def in_branch(x):
        return lax.cond(x > 0, lambda v: fx.jit(lambda u: fnp.arcsin(u))(v), lambda v: v, x)

    def in_while(x):
        return lax.while_loop(lambda c: c < 100.0, lambda c: c * fnp.sqrt(c - 3.0), x)

    for fn, arg, prim, text in [(in_loop, F32(4), "log", "fnp.log(c - 1.5)"),
                                (in_branch, F32(2), "asin", "fnp.arcsin(u)"),
                                (in_while, F32(2), "sqrt", "fnp.sqrt(c - 3.0)")]:
        with pytest.raises(FloatingPointError, match=f"encountered in {prim} at ") as info:
            _run_check(fn, arg)
        assert f"test_debug.py:{_line_of(fn, text)}" in str(info.value)


def test_check_nans_reports_nan_inputs_and_passes_clean_outputs():
    with pytest.raises(FloatingPointError, match="operands already held NaN"):
        _run_check(lambda x: x * 2.0, F32(np.nan))
    assert fx.debug.check_nans(fx.make_jaxpr(lambda x: x)(F32(1)), [F32(1)], [F32(1)]) is None


def test_check_nans_when_the_rerun_finds_none():
    closed = fx.make_jaxpr(lambda x: x + 1.0)(F32(1))
    with pytest.raises(FloatingPointError, match="running it op by op produced none"):
        fx.debug.check_nans(closed, [F32(1)], [np.float32(np.nan)])


def test_debug_nans_makes_jit_raise():
    f = fx.jit(_nan_program)
    assert np.isnan(float(f(F32(2))))
    with fx.debug.debug_nans(), pytest.raises(FloatingPointError, match="in sqrt at"):
        f(F32(2))
    assert np.isnan(float(f(F32(2))))


# --- source locations ---------------------------------------------------------------------------


def test_source_location_of_equations():
    def f(x):
        return fnp.sin(x)

    (eqn,) = fx.make_jaxpr(f)(F32(1)).eqns
    assert fx.debug.source_location(eqn) == \
        f"{__file__}:{f.__code__.co_firstlineno + 1} (f)"
    assert fx.debug.source_location(None) == "an unknown location"
    body = fx.make_jaxpr(lambda x: lax.scan(lambda c, a: (c * a, c), x, np.ones(2, F32)))(
        F32(1)).eqns[0].params["jaxpr"]
    assert "test_debug.py" in fx.debug.source_location(body.eqns[0])
