"""The special functions' prelude table (lowering/render/prelude_special.py): a unit gets the
functions its kernels call and what they call, in dependency order, and nothing when it calls
none; every function compiles as C without warnings. (Their values against eager: the
special-function rows and the edge-value test in tests/fx/test_jit_ops_scientific.py, on CPU
and OpenCL.)"""

from __future__ import annotations

import re
import subprocess

import pytest

from fx.lowering.render.prelude import PRELUDE
from fx.lowering.render.prelude_special import FUNCTIONS, needed_source
from fx.lowering.render.renderer import CUDA, C, render_module
from fx.runtime import cc


def _defined(source: str) -> list[str]:
    return re.findall(r"^FX_FN \w+ (fx_\w+)\(", source, re.M)


def test_each_entry_defines_its_name_and_its_needs_come_first():
    seen = set()
    for f in FUNCTIONS:
        assert _defined(f.source) == [f.name]
        assert set(f.needs) <= seen, f.name
        seen.add(f.name)


def test_a_unit_gets_what_its_kernels_call_and_nothing_else():
    assert needed_source("y = fx_digamma(x) + fx_expf(x);") == ""
    assert _defined(needed_source("t = fx_expi(x);")) == ["fx_expn", "fx_expi"]
    assert _defined(needed_source("fx_igammac(a, x) + fx_ndtri(p)")) == [
        "fx_igamma_series", "fx_igammac_fraction", "fx_igammac", "fx_ndtri"]
    # No special function: the module is the dialect's prelude and PRELUDE, as before.
    assert render_module([], CUDA) == "\n\n".join([CUDA.file_prelude, PRELUDE]) + "\n"


def test_every_function_compiles_as_c_without_warnings(tmp_path):
    if cc.compiler() is None:
        pytest.skip("no C compiler")
    everything = needed_source(" ".join(f"{f.name}(" for f in FUNCTIONS))
    assert _defined(everything) == [f.name for f in FUNCTIONS]
    src = tmp_path / "special.c"
    src.write_text(C.file_prelude + PRELUDE + everything + "\n")
    flags = [f for f in cc.FLAGS if f not in ("-w", "-shared")]
    proc = subprocess.run([cc.compiler(), *flags, "-Wall", "-Wno-unused-function", "-c",
                           str(src), "-o", str(tmp_path / "special.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
