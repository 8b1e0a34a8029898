"""Every operation a scalar rule can emit is spelled by every dialect, and every elementwise
record is consistent; no C compiler needed.

The operations are not listed here: each kernel rule of ``primitive_rules.scalar_rules`` is run
on symbolic operands of every dtype its primitive accepts (the primitive's own type rule says
which), and the expression it builds is rendered by each dialect (C, CUDA, OpenCL), which
raises on an operation it cannot spell.
"""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx import dtypes
from fx.avals import ShapedArray
from fx.export import (  # noqa: F401  (registers the ONNX rules)
    onnx_export,
    onnx_rules_arrays,
    onnx_rules_control,
    onnx_rules_elementwise,
    onnx_rules_nn,
)
from fx.interpreters import jvp
from fx.lax.elementwise_record import INEXACT, records
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.fusion import primitive_rules as rules
from fx.lowering.render import dialects
from fx.lowering.render.renderer import Renderer

DTYPES = [np.dtype(d) for d in (
    dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int16,
    dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64,
    dtypes.bool_, dtypes.complex64, dtypes.complex128)]

# The parameters of the elementwise primitives that take some (the rule's output depends on
# them); other primitives are tried with none.
PARAMS = {
    "integer_pow": [{"y": y} for y in (0, 1, 2, 3, -3)],
    "round": [{"rounding_method": 0}, {"rounding_method": 1}],
    "polygamma": [{"m": 2}],
    "convert_element_type": [{"new_dtype": d, "weak_type": False} for d in DTYPES],
    "bitcast_convert_type": [{"new_dtype": d} for d in DTYPES],
    "conj": [{"input_dtype": d} for d in DTYPES],
}
# Operations the renderer builds itself instead of looking up a spelling.
RENDERER_OPS = {"cast", "bitcast", "cast_wide", "load_half", "store_half"}


def _typings(prim):
    """(operand avals, params, output aval) for every way the primitive's type rule accepts
    rank-0 operands: one dtype for all operands (a bool or int32 selector first for
    select_n), one to three operands."""
    for params in PARAMS.get(prim.name, [{}]):
        for dt in DTYPES:
            for nargs in (1, 2, 3, 4):
                avals = [ShapedArray((), dt)] * nargs
                if prim.name == "select_n":
                    for which in (dtypes.bool_, dtypes.int32):
                        yield from _accepted(prim, [ShapedArray((), which), *avals], params)
                    continue
                yield from _accepted(prim, avals, params)


def _accepted(prim, avals, params):
    try:
        out = prim.abstract_eval(*avals, **params)
    except (TypeError, ValueError):
        return
    yield avals, params, out


def _ops(e: ir.Expr):
    if isinstance(e, ir.Op):
        yield e.op, e.dtype
        for a in e.args:
            yield from _ops(a)


ELEMENTWISE = sorted((p for p, pat in rules.patterns.items()
                      if pat is rules.Pattern.ELEMENTWISE and p in rules.scalar_rules),
                     key=lambda p: p.name)


def test_enough_rules_were_found():
    assert len(ELEMENTWISE) > 70, [p.name for p in ELEMENTWISE]


@pytest.mark.parametrize("prim", ELEMENTWISE, ids=lambda p: p.name)
def test_every_emitted_operation_is_spelled_in_every_dialect(prim):
    tried = 0
    for avals, params, out in _typings(prim):
        if any(dtypes.is_complex(a.dtype) for a in (*avals, out)) and (
                prim not in rules.complex_prims):
            continue  # complex values outside complex_prims run as a NumPy step
        args = [ir.Sym(f"x{i}", rules.compute_dtype(a.dtype)) for i, a in enumerate(avals)]
        expr = rules.scalar_rules[prim](args, params, rules.compute_dtype(out.dtype))
        tried += 1
        for dialect in dialects.DIALECTS:
            try:
                Renderer(dialect).expr(expr)
            except NotImplementedError as e:
                emitted = sorted({(op, str(dt)) for op, dt in _ops(expr) if op not in RENDERER_OPS})
                pytest.fail(f"{prim.name}{params} on {[str(a.dtype) for a in avals]}: {e} "
                            f"(the rule emits {emitted})")
    assert tried, f"{prim.name}: no operand dtype its type rule accepts"


def test_every_dialect_is_a_record_of_its_own_module():
    names = [d.name for d in dialects.DIALECTS]
    assert names == ["c", "cuda", "opencl"]
    for d in dialects.DIALECTS:
        assert set(d.math) >= set(dialects.record_math(d.name))


def test_the_records_libm_names_reach_opencl():
    prelude = dialects.OPENCL.file_prelude
    for name in dialects.record_libm():
        assert f"#define {name}f " in prelude or f"fx_cl_{name}f" in prelude, name


# --- the records ----------------------------------------------------------------------------------

# Records whose ONNX rule is written by hand in fx/export/onnx_rules_elementwise.py (several
# operators, or semantics ONNX's one operator lacks), and those with none, with the reason.
NO_ONNX_OPERATOR = {
    "exp2", "log1p", "expm1", "rsqrt", "cbrt", "is_finite", "not", "rem", "atan2", "and", "or",
    "xor", "shift_left", "shift_right_logical", "ne", "lt", "le", "gt", "ge", "clamp", "erfc",
}
_NO_ONNX_SPECIAL = "ONNX has no such special function"
NO_ONNX = {
    "nextafter": "ONNX has no operator stepping to the next float",
    **dict.fromkeys(["erf_inv", "lgamma", "digamma", "igamma", "igammac", "igamma_grad_a",
                     "regularized_incomplete_beta", "zeta", "bessel_i0e", "bessel_i1e"],
                    _NO_ONNX_SPECIAL),
}
# Records with no fx.numpy function of their own, with the reason.
NO_NUMPY = {
    "rsqrt": "NumPy has no rsqrt (fx.lax.rsqrt)",
    "logistic": "NumPy has no logistic (fx.scipy.special.expit)",
    "stop_gradient": "a transformation's business (fx.lax.stop_gradient)",
    "shift_right_logical": "NumPy's right_shift is arithmetic on signed integers",
    "erf": "fx.scipy.special.erf", "erfc": "fx.scipy.special.erfc",
    "erf_inv": "fx.scipy.special.erfinv", "lgamma": "fx.scipy.special.gammaln",
    "digamma": "fx.scipy.special.digamma", "igamma": "fx.scipy.special.gammainc",
    "igammac": "fx.scipy.special.gammaincc", "igamma_grad_a": "a derivative of gammainc",
    "regularized_incomplete_beta": "fx.scipy.special.betainc", "zeta": "fx.scipy.special.zeta",
    "bessel_i0e": "fx.scipy.special.i0e", "bessel_i1e": "fx.scipy.special.i1e",
}

# Records whose fx.lax function is written beside the record, with the reason.
LAX_FUNCTION_BY_HAND = {
    "clamp": "jax's signature, clamp(min, x, max), and its docstring",
    "regularized_incomplete_beta": "jax's signature, betainc(a, b, x), and its docstring",
}

RECORDS = records()


def test_record_names_are_unique():
    names = [r.name for r in RECORDS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.name)
def test_record_is_consistent(record):
    prim = record.primitive
    assert getattr(fx.lax, f"{record.name}_p") is prim
    assert getattr(fx.lax, record.function_name) is record.function or (
        record.name in LAX_FUNCTION_BY_HAND)
    # A kernel: from the record, or a rule written in primitive_rules.
    assert prim in rules.scalar_rules, f"{record.name}: no kernel rule"
    k = record.kernel
    if k is not None:
        assert bool(k.templates) + (k.formula is not None) == 1 or k.via_f64, \
            f"{record.name}: a kernel is templates or a formula"
        for name, text in k.helpers:
            assert f" {name}(" in text, f"{record.name}: helper {name}'s text does not define it"
    # ONNX: its one operator, a rule written by hand, or a reason.
    has_rule = prim in onnx_export.onnx_rules
    if record.onnx is not None:
        assert record.name not in NO_ONNX_OPERATOR | set(NO_ONNX)
        assert has_rule
    elif record.name in NO_ONNX_OPERATOR:
        assert has_rule, f"{record.name}: listed as hand-written, but has no ONNX rule"
    else:
        assert record.name in NO_ONNX, f"{record.name}: no ONNX operator, rule or reason"
        assert not has_rule, f"{record.name}: has an ONNX rule now: drop it from NO_ONNX"
    # NumPy: its fx.numpy function, or a reason.
    if record.numpy is not None:
        assert hasattr(fnp, record.numpy), f"fx.numpy.{record.numpy} is missing"
    else:
        assert record.name in NO_NUMPY, f"{record.name}: no fx.numpy name and no reason"
    # Derivatives: a rule from the record, or one registered beside it (abs's, in
    # fx.lax.complex_parts), or none where the output is never differentiable.
    if record.jvp is not None:
        assert prim in jvp.jvp_rules
    elif prim not in jvp.jvp_rules:
        assert record.out_dtype == dtypes.bool_ or not (record.kinds & INEXACT), \
            f"{record.name}: differentiable, but no jvp"
