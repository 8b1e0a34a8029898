"""Prelude functions for the special functions of ``fx.lax.special_functions`` and
``fx.scipy.special`` (igamma, betainc, zeta, the scaled Bessel functions, erfcx, Dawson's
integral, the exponential, sine/cosine and Fresnel integrals, Spence's function, ndtri), as C
source shared by the C, CUDA and OpenCL dialects.

The C text is ``prelude_special.h``, a section per function; this module lists what each
function calls and fills the sections' placeholders from eager's tables. Each function is a
port of its eager NumPy algorithm (``fx.lax.special_functions_numerics``,
``fx.lax.scipy_special_numerics``) to one element: the same series and continued fractions, the
same coefficients (the tables below are read from those modules), branch points, iteration
caps and convergence tests, and the same order of the special-value overrides, so that a
kernel agrees with eager to a few ulps of float64. Everything computes in double, as eager does
for every dtype. Where eager masks an element out of a loop once it has converged, the C loop
stops (the masked element no longer changes).

They are long and most programs never call them, so they are not in ``PRELUDE``: a translation
unit gets only those its kernels call, with what they call (:func:`needed_source`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fx.lax import scipy_special_numerics as scipy_numerics
from fx.lax import special_functions_numerics as lax_numerics
from fx.lowering import resources


@dataclass(frozen=True)
class PreludeFunction:
    """C source defining ``name`` (and nothing else callable), and the prelude functions of
    this table it calls."""

    name: str
    source: str
    needs: tuple[str, ...] = ()


def _doubles(values) -> str:
    return ", ".join(repr(float(v)) for v in values)


# The tables the functions read, as eager has them (see the header of prelude_special.h).
_VALUES = dict(LOG_MAX=repr(float(lax_numerics._LOG_MAX)),
               EM=_doubles(lax_numerics._EM_DENOMINATORS),
               RYBICKI=_doubles(scipy_numerics._RYBICKI_C))


def _source(section: str, **values: str) -> str:
    """Section ``section`` of prelude_special.h with its placeholders filled."""
    return resources.template(__package__, "prelude_special.h", section).substitute(
        _VALUES, **values)


def _lentz(a_step: str) -> str:
    """The modified Lentz loop whose step makes ``an`` by ``a_step``."""
    return _source("lentz", A_STEP=a_step).strip()


_FRESNEL_C = dict(NAME="c", FIRST="t", PART="re",
                  RATIO="(4 * k - 3) / (double)((2 * k - 1) * (2 * k) * (4 * k + 1))")
_FRESNEL_S = dict(NAME="s", FIRST="p * t / 3", PART="im",
                  RATIO="(4 * k - 1) / (double)((2 * k) * (2 * k + 1) * (4 * k + 3))")
_IGAMMA_PARTS = ("fx_igamma_series", "fx_igammac_fraction")

# In dependency order: a function's needs come before it.
FUNCTIONS: tuple[PreludeFunction, ...] = (
    PreludeFunction("fx_igamma_series", _source("fx_igamma_series")),
    PreludeFunction("fx_igammac_fraction", _source("fx_igammac_fraction")),
    PreludeFunction("fx_igamma", _source("fx_igamma"), _IGAMMA_PARTS),
    PreludeFunction("fx_igammac", _source("fx_igammac"), _IGAMMA_PARTS),
    PreludeFunction("fx_igamma_grad_a", _source("fx_igamma_grad_a"), _IGAMMA_PARTS),
    PreludeFunction("fx_betainc", _source("fx_betainc")),
    PreludeFunction("fx_zeta", _source("fx_zeta")),
    PreludeFunction("fx_bessel_ie", _source("fx_bessel_ie")),
    PreludeFunction("fx_bessel_i0e", _source("fx_bessel_i0e"), ("fx_bessel_ie",)),
    PreludeFunction("fx_bessel_i1e", _source("fx_bessel_i1e"), ("fx_bessel_ie",)),
    PreludeFunction("fx_erfcx", _source("fx_erfcx")),
    PreludeFunction("fx_dawsn", _source("fx_dawsn")),
    PreludeFunction("fx_expn", _source("fx_expn")),
    PreludeFunction("fx_expi", _source("fx_expi"), ("fx_expn",)),
    PreludeFunction("fx_dilog_series", _source("fx_dilog_series")),
    PreludeFunction("fx_spence", _source("fx_spence"), ("fx_dilog_series",)),
    PreludeFunction("fx_sici_fraction", _source("fx_sici_fraction", LENTZ=_lentz(
        "double an = -(double)((i - 1) * (i - 1));\n    b.re += 2.0;"))),
    PreludeFunction("fx_sici_si", _source("fx_sici_si"), ("fx_sici_fraction",)),
    PreludeFunction("fx_sici_ci", _source("fx_sici_ci"), ("fx_sici_fraction",)),
    PreludeFunction("fx_fresnel_fraction", _source("fx_fresnel_fraction", LENTZ=_lentz(
        "n += 2.0;\n    b.re += 4.0;\n    double an = -n * (n + 1.0);"))),
    PreludeFunction("fx_fresnel_c", _source("fresnel", **_FRESNEL_C), ("fx_fresnel_fraction",)),
    PreludeFunction("fx_fresnel_s", _source("fresnel", **_FRESNEL_S), ("fx_fresnel_fraction",)),
    PreludeFunction("fx_ndtri", _source("fx_ndtri")),
)
_BY_NAME = {f.name: f for f in FUNCTIONS}
_CALL = re.compile(r"\b(fx_\w+)\(")


def needed_source(text: str) -> str:
    """The source of the functions of this table that ``text`` (rendered kernels) calls, and
    of those they call, in dependency order; "" when it calls none."""
    wanted = {n for n in _CALL.findall(text) if n in _BY_NAME}
    stack = list(wanted)
    while stack:
        for dep in _BY_NAME[stack.pop()].needs:
            if dep not in wanted:
                wanted.add(dep)
                stack.append(dep)
    return "".join(f.source for f in FUNCTIONS if f.name in wanted).strip("\n")

