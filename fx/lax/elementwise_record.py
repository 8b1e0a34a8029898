"""One record per elementwise primitive: :class:`Elementwise`, and the family helpers that turn
a record into a primitive.

A record holds everything fx knows about one elementwise primitive: its name, NumPy
implementation, accepted dtypes, derivative, how a generated kernel computes one element (a
:class:`Kernel`: C expression templates per dtype, a libm function, an operator, or a prelude
helper with its C text), its ONNX operator and its ``fx.numpy`` name. Everything else is
derived from :data:`RECORDS`, never listed again:

- the primitive itself (type rule, impl, batching, jvp) by :func:`elementwise`;
- the ``*_p`` names of ``fx.lax.primitives`` and the ``fx.lax`` functions (``fx.lax.__init__``);
- the fusion pattern, scalar rule, cheap and complex sets (``lowering/fusion/primitive_rules``);
- the spelling tables of every dialect, C, CUDA and OpenCL (``lowering/render/dialect_base``),
  OpenCL's libm name map included, and the prelude helpers records bring;
- the ONNX rules of one-operator records (``fx/export/onnx_rules_elementwise``);
- the ``fx.numpy`` functions of unary inexact records (``fx/numpy/ufuncs``);
- the tests' coverage lists (which primitives are exact, in ``tests/jit_rows.py``; the
  records checked by ``tests/lowering/test_dialect_coverage.py``).

To add an elementwise primitive (two files): declare it where its family lives, as
``foo_p = elementwise("foo", np.foo, FLOAT, jvp=..., kernel=libm("foo"), onnx="Foo",
numpy="foo", exact=...)`` (the module must be one ``fx.lax`` imports; ``fx.lax.foo`` exists
from then on, unless that module defines its own), and add its row to the op table of
``tests/fx/test_jit_ops.py``: ``elementwise("foo", transforms=True)`` compares fx.jit, eager and
jax, and jvp, vjp, finite differences and vmap with jax; ``tests/lowering/test_dialect_coverage``
then checks the record's spellings in every dialect and its consistency. Rules a record cannot
express (a transpose, a custom batching rule) are registered beside the declaration, keyed by
the primitive.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp
from fx.interpreters.jvp import Zero
from fx.lax.base import shape_error

# Which dtypes each primitive accepts.
FLOAT = frozenset(dtypes.FLOATING)
COMPLEX = frozenset(dtypes.COMPLEX)
INEXACT = FLOAT | COMPLEX
INT = frozenset(dtypes.INTEGER)
BOOL = frozenset([dtypes.bool_])
REAL = FLOAT | INT
NUMERIC = REAL | COMPLEX
INT_OR_BOOL = INT | BOOL
ORDERED = REAL | BOOL  # comparisons lt/le/gt/ge: no complex, as jax
ANY = NUMERIC | BOOL
_KIND_NAMES = {
    FLOAT: "real floating", INEXACT: "floating or complex", INT: "integer",
    REAL: "real numeric", NUMERIC: "numeric", INT_OR_BOOL: "integer or bool",
    ORDERED: "real numeric or bool",
}


def _check_kind(name: str, kinds, *avals: ShapedArray) -> None:
    for a in avals:
        if a.dtype not in kinds:
            what = _KIND_NAMES.get(kinds, "supported")
            raise TypeError(f"{name} requires {what} operands, got {a.dtype} ({a.str_short()})")


def _nary_shape(name: str, *avals: ShapedArray) -> tuple[int, ...]:
    shapes = {a.shape for a in avals if a.shape}
    if len(shapes) > 1:
        raise shape_error(
            name, "operands must have equal shapes (or be rank 0); use fx.numpy for broadcasting",
            *avals,
        )
    dts = {a.dtype for a in avals}
    if len(dts) > 1:
        raise shape_error(
            name, "operands must have the same dtype; use fx.lax.convert_element_type or "
            "fx.numpy (which promotes)", *avals,
        )
    return shapes.pop() if shapes else ()


# --- impl helpers -------------------------------------------------------------------------------


def _via_f32(fn: Callable) -> Callable:
    """Half-precision operands compute in float32 and round back (as XLA does); floating
    exceptions are silenced so NaN and Inf propagate as values."""

    @functools.wraps(fn)
    def impl(*args, **params):
        dt = args[0].dtype if hasattr(args[0], "dtype") else None
        with np.errstate(all="ignore"):
            if dt in (dtypes.float16, dtypes.bfloat16):
                out = fn(*(np.asarray(a).astype(np.float32) for a in args), **params)
                return np.asarray(out).astype(dt)
            return fn(*args, **params)

    return impl


def _via_f64(fn: Callable) -> Callable:
    """For the special functions computed in float64 here."""

    def impl(x):
        return np.asarray(fn(np.asarray(x, dtype=np.float64))).astype(x.dtype)

    return impl


# --- declaring primitives -----------------------------------------------------------------------


def unop(name: str, impl: Callable, kinds=FLOAT, out_dtype=None, half_via_f32=True) -> Primitive:
    """A unary elementwise primitive: type rule, impl and batching (no record: see
    :func:`elementwise` for one with its kernel, derivative and ONNX spelling)."""
    prim = Primitive(name)

    def abstract_eval(x, **params):
        _check_kind(name, kinds, x)
        return x.update(dtype=out_dtype) if out_dtype is not None else x

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_via_f32(impl) if half_via_f32 else impl)
    batching.vectorized_batcher(prim)
    return prim


def naryop(name: str, impl: Callable, kinds=NUMERIC, out_dtype=None, nargs=2,
           half_via_f32=True) -> Primitive:
    """An n-ary elementwise primitive whose operands have one dtype and equal shapes or rank 0
    (a scalar operand broadcasts)."""
    prim = Primitive(name)

    def abstract_eval(*avals):
        if len(avals) != nargs:
            raise TypeError(f"{name} takes {nargs} operands, got {len(avals)}")
        _check_kind(name, kinds, *avals)
        shape = _nary_shape(name, *avals)
        weak = all(a.weak_type for a in avals)
        return ShapedArray(shape, out_dtype or avals[0].dtype, weak and out_dtype is None)

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_via_f32(impl) if half_via_f32 else impl)
    batching.broadcasting_batcher(prim)
    return prim


# --- how a kernel computes one element ----------------------------------------------------------


@dataclass(frozen=True)
class Kernel:
    """The spelling of one element in generated kernels.

    ``templates`` maps a dtype key to a C expression whose operands are ``{0}``, ``{1}`` ...;
    the key is ``"f32"``, ``"f64"``, ``"c64"``, ``"c128"``, ``"bool"``, an integer's (``"i8"`` ...
    ``"u64"``), then ``"int"`` (any signed), ``"uint"`` (any unsigned) or ``"*"`` (any), the
    most specific winning. Half precision computes in float32 (``"f32"``). The templates are
    shared by every dialect; ``dialects`` overrides them for one (``{"c": {"f32": ...}}``: the C
    dialect's vectorizable float32 exp). ``libm`` names the C99 functions the templates call
    (``expf``/``exp``), which dialects without C99's names map (OpenCL). ``helpers`` are
    ``(name, C text)`` prelude functions the templates call that the prelude lacks, written with
    ``FX_FN`` and the dialect's bit casts only, so every dialect compiles them.

    ``formula`` instead of templates: the element as other operations, a nested tuple
    ``(op, operand, ...)`` where an operand is an argument's position or another tuple (``("mul",
    0, 0)`` is ``x * x``; a bare ``0`` is the argument itself). ``via_f64``: the kernel computes in
    float64 whatever the operand's type, as the impl does (special functions).
    """

    templates: Mapping[str, str] = field(default_factory=dict)
    dialects: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    libm: tuple[str, ...] = ()
    helpers: tuple[tuple[str, str], ...] = ()
    formula: tuple | int | None = None
    via_f64: bool = False

    def __or__(self, other: Kernel) -> Kernel:
        """Both spellings, ``other``'s winning where both have a key."""
        merged = {d: {**self.dialects.get(d, {}), **other.dialects.get(d, {})}
                  for d in (*self.dialects, *other.dialects)}
        return Kernel({**self.templates, **other.templates}, merged,
                      tuple(dict.fromkeys(self.libm + other.libm)), self.helpers + other.helpers,
                      other.formula if other.formula is not None else self.formula,
                      self.via_f64 or other.via_f64)


def _operands(n: int) -> str:
    return ", ".join(f"{{{i}}}" for i in range(n))


def libm(name: str, nargs: int = 1) -> Kernel:
    """C99's ``name``: ``namef`` on float32, ``name`` on float64."""
    ops = _operands(nargs)
    return Kernel({"f32": f"{name}f({ops})", "f64": f"{name}({ops})"}, libm=(name,))


def infix(op: str) -> Kernel:
    """A C operator on any real or integer dtype: ``({0} op {1})``."""
    return Kernel({"*": f"({{0}} {op} {{1}})"})


def compare(op: str) -> Kernel:
    """A C comparison, as a bool (a byte)."""
    return Kernel({"*": f"((uint8_t)({{0}} {op} {{1}}))"})


def call(name: str, nargs: int = 1, key: str = "*", helper: str = "") -> Kernel:
    """A call of the prelude function ``name`` on dtype key ``key`` (its C text ``helper`` when
    the prelude does not define it)."""
    return Kernel({key: f"{name}({_operands(nargs)})"},
                  helpers=((name, helper),) if helper else ())


def complex_call(op: str, nargs: int) -> Kernel:
    """The prelude's complex arithmetic ``fx_<op>_c64`` / ``fx_<op>_c128``."""
    return Kernel({c: f"fx_{op}_{c}({_operands(nargs)})" for c in ("c64", "c128")})


def on(dialect: str, **templates: str) -> Kernel:
    """Templates of one dialect only, overriding the shared ones."""
    return Kernel(dialects={dialect: templates})


# --- the record ---------------------------------------------------------------------------------

ZERO = "zero"  # a piecewise-constant function: its tangent is zero everywhere


@dataclass(frozen=True)
class Elementwise:
    """Everything about one elementwise primitive (see the module docstring).

    ``jvp``: one function ``(t, ans, *operands) -> tangent`` per operand (a single function for a
    unary primitive; ``None`` for an operand it is not differentiable in), or :data:`ZERO`, or
    ``None`` when no jvp rule is registered here (not differentiable, or registered elsewhere).
    ``onnx``: the ONNX operator computing it from its operands, or a formula of ONNX operators
    as :attr:`Kernel.formula` (``("Mul", 0, 0)``), or ``None`` where the ONNX rule is written by
    hand in ``fx.export`` (or the primitive has none). ``numpy``: its ``fx.numpy`` name.
    ``cheap``: cheaper for a kernel to recompute in each consumer than to store and reload.
    ``exact``: its result is exactly determined (correctly rounded, or not rounded at all), so a
    kernel must give the impl's bits: ``True``, or ``"real"`` when only on real operands (complex
    products and quotients round more than once).
    ``lax_name``: the ``fx.lax`` function's name when it is not ``name`` (``not`` is
    ``bitwise_not``).
    """

    name: str
    impl: Callable
    kinds: frozenset
    nargs: int = 1
    out_dtype: np.dtype | None = None
    jvp: Callable | tuple | str | None = None
    kernel: Kernel | None = None
    onnx: str | tuple | None = None
    numpy: str | None = None
    cheap: bool = False
    exact: bool | str = False
    half_via_f32: bool = True
    lax_name: str | None = None
    primitive: Primitive = field(init=False, compare=False, repr=False)
    function: Callable = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if self.nargs == 1:
            prim = unop(self.name, self.impl, self.kinds, self.out_dtype, self.half_via_f32)
        else:
            prim = naryop(self.name, self.impl, self.kinds, self.out_dtype, self.nargs,
                          self.half_via_f32)
        object.__setattr__(self, "primitive", prim)
        object.__setattr__(self, "function", _function(prim, self.nargs))
        if self.jvp == ZERO:
            jvp.jvp_rules[prim] = _zero_jvp(prim)
        elif self.jvp is not None:
            jvp.defjvp(prim, *(self.jvp if isinstance(self.jvp, tuple) else (self.jvp,)))

    @property
    def function_name(self) -> str:
        return self.lax_name or self.name

    @property
    def computes_complex(self) -> bool:
        """Kernels compute it on complex operands (others run complex values as NumPy)."""
        k = self.kernel
        return bool(self.kinds & COMPLEX) and k is not None and (
            k.formula is not None or "c64" in k.templates)


def _zero_jvp(prim: Primitive) -> Callable:
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        return ans, Zero.like(ans)

    return rule


def _is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def _coerce(*args):
    """Python scalars take the dtype of the array operands (weakly typed)."""
    ref = next((a for a in args if not _is_python_scalar(a)), None)
    if ref is None:
        return args
    dt = get_aval(ref).dtype
    return tuple(
        Array(np.asarray(a, dtype=dt), weak_type=True) if _is_python_scalar(a) else a
        for a in args
    )


def _function(prim: Primitive, nargs: int) -> Callable:
    """The ``fx.lax`` function binding ``prim`` (Python scalars coerced for n-ary ones)."""
    if nargs == 1:
        def f(x):
            return prim.bind(x)
    elif nargs == 2:
        def f(x, y):
            return prim.bind(*_coerce(x, y))
    else:
        def f(*args):
            return prim.bind(*_coerce(*args))

    f.__name__ = prim.name
    f.__doc__ = f"Elementwise ``{prim.name}`` (the ``{prim.name}`` primitive)."
    return f


RECORDS: list[Elementwise] = []
_BY_PRIMITIVE: dict[Primitive, Elementwise] = {}


def elementwise(name: str, impl: Callable, kinds=FLOAT, nargs: int = 1, **fields) -> Primitive:
    """Declare the elementwise primitive ``name`` from its record (fields as
    :class:`Elementwise`'s) and return it."""
    record = Elementwise(name, impl, kinds, nargs, **fields)
    RECORDS.append(record)
    _BY_PRIMITIVE[record.primitive] = record
    return record.primitive


def record_of(prim: Primitive) -> Elementwise | None:
    return _BY_PRIMITIVE.get(prim)


def records() -> tuple[Elementwise, ...]:
    """Every record, once all of ``fx.lax`` (where they are declared) is imported."""
    import fx.lax  # noqa: F401  (declares them)

    return tuple(RECORDS)
