"""Scalar helpers every generated kernel may call, as C source shared by every dialect: the
text of ``prelude.h`` (its sections, in order, the templates filled once per type).

``FX_FN`` and the bit casts ``fx_bits_to_f32``/``fx_f32_to_bits`` are defined by the dialect
(``static inline`` and ``memcpy`` for C, ``__device__`` and the CUDA intrinsics for CUDA).
Everything here is branch-free arithmetic where it matters, so that gcc can
vectorize loops calling it without ``-ffast-math``: IEEE semantics are kept (NaN and Inf
propagate as in NumPy) and there is no errno. The float32 ``exp``/``log``/``tanh`` family are
our own polynomial implementations (libm calls would block vectorization); they are accurate
to a few ulp and handle the special values explicitly. float64 uses libm.
"""

from fx.lowering import resources

_SECTIONS = resources.sections(__package__, "prelude.h")

# ``fx_f2<name>w_f32``: a float clamped to ``[lo, hi]`` (NaN -> 0) in float, as int32.
_NARROW_FROM_F32 = (("i8", "-128.0f", "127.0f"), ("u8", "0.0f", "255.0f"),
                    ("i16", "-32768.0f", "32767.0f"), ("u16", "0.0f", "65535.0f"))

# The complex arithmetic of pair type ``fx_<k>`` with parts of C type ``t`` (``f``: the libm
# suffix): NumPy's formulas, Smith's algorithm for division (no overflow of ``|b|**2``; 0 / 0
# and x / 0 give NaN and Inf parts as NumPy's).
_COMPLEX = (("c64", "float", "f"), ("c128", "double", ""))


def _assemble() -> str:
    """The prelude's text: the one place it is put together."""
    narrow = resources.template(__package__, "prelude.h", "narrow_from_f32")
    complex_ = resources.template(__package__, "prelude.h", "complex")
    return "".join([
        _SECTIONS["conversions"],
        *(narrow.substitute(name=n, lo=lo, hi=hi) for n, lo, hi in _NARROW_FROM_F32),
        _SECTIONS["functions"],
        *(complex_.substitute(k=k, t=t, f=f) for k, t, f in _COMPLEX),
    ])


PRELUDE = _assemble()
