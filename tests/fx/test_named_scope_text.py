"""``fx.named_scope`` / ``fx.named_call`` names in the two texts a user reads: after each
equation of ``fx.make_jaxpr`` (``# outer/inner``, also inside the jaxprs of jit and cond and
under vmap) and in ``fx.jit(f).lower(...).as_text()`` (the optimized jaxpr, and each schedule
step lists the scopes of its equations). The set of scope paths is checked against the
locations jax writes into its own lowered text (``jit(f)/outer/inner/mul``)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp

X = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)


def _program(m, api):
    """The same program over jax or fx: nested scopes, a named call (explicit and default
    name) inside and outside a scope, and an unnamed tail."""

    def double(a):
        return a * 2.0

    def f(x):
        with api.named_scope("outer"):
            y = m.sin(x)
            with api.named_scope("inner"):
                y = y * 3.0
            y = api.named_call(double)(y)
        y = api.named_call(lambda a: m.exp(a) + 1.0, name="mycall")(y)
        return m.tanh(y)

    return f


SCOPES = {"outer", "outer/inner", "outer/double", "mycall"}


def _comment_scopes(text: str) -> set[str]:
    found = set()
    for line in text.splitlines():
        if "  # " in line:
            found.update(s.strip() for s in line.rsplit("  # ", 1)[1].split(","))
    return found


def _jax_scopes(text: str) -> set[str]:
    # loc("jit(f)/outer/inner/mul"(...)): drop the jit(f) root and the primitive at the end.
    paths = re.findall(r'loc\("jit\(f\)/([^"]+)"', text)
    return {p.rsplit("/", 1)[0] for p in paths if "/" in p}


def test_make_jaxpr_lines():
    text = str(fx.make_jaxpr(_program(fnp, fx))(X))
    lines = [ln.strip() for ln in text.splitlines()]
    assert "b:f32[2,3] = sin a  # outer" in lines, text
    assert "c:f32[2,3] = mul b 3.0:f32[]  # outer/inner" in lines, text
    assert "d:f32[2,3] = mul c 2.0:f32[]  # outer/double" in lines, text
    assert any(ln.startswith("e:f32[2,3] = exp d  # mycall") for ln in lines), text
    assert "g:f32[2,3] = tanh f" in lines, text  # outside every scope: no comment
    assert _comment_scopes(text) == SCOPES


def test_lowered_text_matches_jax_locations():
    want = _jax_scopes(jax.jit(_program(jnp, jax)).lower(X).as_text(debug_info=True))
    assert want == SCOPES
    text = fx.jit(_program(fnp, fx)).lower(X).as_text()
    jaxpr_part, schedule = text.split("# schedule:")
    assert _comment_scopes(jaxpr_part) == want
    steps = [ln for ln in schedule.splitlines() if ln.lstrip().startswith("step ")]
    assert _comment_scopes("\n".join(steps)) == want, schedule


def test_lowered_schedule_names_the_scopes_of_each_step():
    def f(x, w):
        with fx.named_scope("encoder"):
            with fx.named_scope("proj"):
                h = x @ w
            h = fnp.tanh(h)
        return h.sum()

    w = np.ones((3, 4), np.float32)
    text = fx.jit(f).lower(X, w).as_text()
    # the product and the tanh after it in its store: one step, both scopes
    gemm = next(ln for ln in text.splitlines() if "gemm[dot_general, tanh]" in ln)
    assert gemm.endswith("# encoder/proj, encoder"), text
    assert "encoder/proj" in text.split("# schedule:")[0]


def test_scopes_inside_nested_jaxprs_and_vmap():
    inner = fx.jit(fx.named_call(lambda a: fnp.cos(a), name="inner_jit"))

    def f(x):
        with fx.named_scope("outer"):
            y = inner(x)
            return fx.lax.cond(y.sum() > 0,
                               fx.named_call(lambda a: fnp.sin(a), name="branch"),
                               lambda a: a, y)

    text = str(fx.make_jaxpr(f)(X))
    assert "cos" in text and "# outer/inner_jit" in text, text
    assert "# outer/branch" in text, text
    lowered = fx.jit(f).lower(X).as_text()
    assert "# outer/inner_jit" in lowered and "# outer/branch" in lowered, lowered
    batched = str(fx.make_jaxpr(fx.vmap(_program(fnp, fx)))(np.stack([X, X])))
    assert _comment_scopes(batched) == SCOPES, batched


def test_transposed_equations_are_labelled():
    def f(x):
        with fx.named_scope("outer"):
            with fx.named_scope("inner"):
                return fnp.sin(x).sum()

    text = str(fx.make_jaxpr(fx.grad(f))(X))
    assert "# outer/inner" in text and "# transpose(outer/inner)" in text, text


@pytest.mark.parametrize("bad", [3, None, b"x"])
def test_named_scope_needs_a_string(bad):
    with pytest.raises(TypeError):
        with jax.named_scope(bad):
            pass
    with pytest.raises(TypeError, match="must be a str"):
        with fx.named_scope(bad):
            pass
