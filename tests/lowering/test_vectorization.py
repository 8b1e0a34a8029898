"""GCC vectorizes the hot loops of the generated C kernels at every x86 ISA level.

Each program goes through the real pipeline (``fx.jit(f).lower(...)``); each of its translation
units is compiled (not run) with the project's flags (``fx.runtime.cc.FLAGS``, ``-march``
replaced by each level: x86-64-v2 (SSE4.2), -v3 (AVX2, FMA), -v4 (AVX-512), and armv8-a where
an aarch64 cross compiler is installed) plus ``-fopt-info-vec-optimized``, and every hot loop
must be reported vectorized. A hot loop is an innermost ``for`` of a kernel function (named by
the kernel IR) with at least ``HOT_EXTENT`` iterations; it counts as vectorized when GCC
reports "loop vectorized" at a source line between its ``for`` and its closing brace.
Compiling only, the test needs GCC targeting x86-64 but not a CPU that runs the code (an
AVX-512 machine checks its AVX2 code and the reverse). ``KNOWN_SCALAR`` lists the exceptions.

A kernel that stays scalar on a CPU without AVX-512 runs several times slower there than on
the machine its author measured (issue 12: every float32 transcendental loop on AVX2).
"""

from __future__ import annotations

import dataclasses
import platform
import re
import shutil
import subprocess

import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx.example_libraries import stax
from fx.lowering.render.renderer import C
from fx.runtime import cc

HOT_EXTENT = 8
X86_LEVELS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")
_X86 = platform.machine().lower() in ("x86_64", "amd64")


# --- the programs ------------------------------------------------------------------------------


def _elementwise(x):
    return (fnp.tanh(2 * x + 1) * fx.nn.sigmoid(x) - fnp.exp(-x * x)
            + fnp.log(fnp.abs(x) + 1) + 0.5 * x)


_pool_init, _pool_apply = stax.MaxPool((2, 2), (2, 2))


def _pool(x):
    return _pool_apply((), x)


def _fori(v):
    def body(i, x):
        return fnp.tanh(0.9 * x + 0.01 * fnp.roll(x, 1)) + 0.001 * i

    return fx.lax.fori_loop(0, 1000, body, v)


_RNG = np.random.default_rng(0)
_F32 = np.float32
PROGRAMS = {  # name -> (function, example arguments)
    # Large enough for threads ('parallel for simd') and small (a plain loop).
    "elementwise exp/log/tanh/logistic, threaded": (_elementwise, (np.ones(1 << 16, _F32),)),
    "elementwise exp/log/tanh/logistic, small": (_elementwise, (np.ones(4096, _F32),)),
    "sum over rows": (lambda a: fnp.sum(a, axis=1), (np.ones((256, 1024), _F32),)),
    "max over rows": (lambda a: fnp.max(a, axis=1), (np.ones((256, 1024), _F32),)),
    "min over rows": (lambda a: fnp.min(a, axis=1), (np.ones((256, 1024), _F32),)),
    "softmax over rows": (lambda a: fx.nn.softmax(a, axis=-1), (np.ones((256, 1024), _F32),)),
    # A bias gradient: columns summed over batch and positions (one SIMD lane per column).
    "sum over columns (NHWC bias gradient)": (lambda g: fnp.sum(g, axis=(0, 1, 2)),
                                              (np.ones((16, 28, 28, 16), _F32),)),
    "relu gradient summed over columns": (
        lambda x, g: fnp.sum(fnp.where(x > 0, g, 0.0), axis=0),
        (np.ones((512, 128), _F32), np.ones((512, 128), _F32))),
    "max-pool 2x2 (reduce_window)": (_pool, (np.ones((8, 28, 28, 16), _F32),)),
    # A CNN layer's tail: each window element a relu'd value, the window's max of them.
    "relu then max-pool 2x2": (lambda x: _pool(fnp.maximum(x, 0.0)),
                               (np.ones((8, 28, 28, 16), _F32),)),
    # fx.quant's requantization after a float layer: the window's max of relu'd values,
    # scaled, rounded, clamped and converted to int8 (float -> int8 in float lanes).
    "relu, max-pool, requantize to int8": (
        lambda x: fx.lax.convert_element_type(
            fnp.clip(fnp.round(_pool(fnp.maximum(x, 0.0)) * 63.2), -127.0, 127.0), np.int8),
        (np.ones((8, 28, 28, 16), _F32),)),
    # A CNN's pool then flatten: iterated in the pooled shape (loop_kernels._reshape_tail).
    "max-pool then flatten": (lambda x: fnp.reshape(_pool(x), (8, -1)),
                              (np.ones((8, 28, 28, 16), _F32),)),
    "max-pool gradient (select_and_scatter_add)": (
        fx.grad(lambda x: fnp.sum(_pool(x) ** 2)), (_RNG.standard_normal((8, 28, 28, 16))
                                                      .astype(_F32),)),
    # A first conv layer (3x3 taps of one channel: nine products, lower_convolutions'
    # unrolled form), its bias, relu and 2x2 pool in one kernel over the output features; the
    # taps' padding tests are per position (hoisted out of the loop over features).
    "3x3 conv of one channel, bias, relu, max-pool": (
        lambda x, w, b: _pool(fnp.maximum(fx.lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) + b, 0.0)),
        (np.ones((8, 8, 8, 1), _F32), np.ones((3, 3, 1, 16), _F32), np.ones(16, _F32))),
    "fori_loop body (roll, tanh)": (_fori, (np.ones(64, _F32),)),
    # Signed int32 arithmetic, rendered through uint32 so that it wraps (primitive_rules.WRAPPING).
    "int32 wrapping arithmetic": (lambda x, y: 3 * x + y * y - fnp.abs(x),
                                  (np.arange(1 << 12, dtype=np.int32),
                                   np.arange(1 << 12, dtype=np.int32))),
}


# --- finding the hot loops and what GCC did with them -------------------------------------------


@dataclasses.dataclass(frozen=True)
class Loop:
    kernel: str
    first: int  # 1-based line of the 'for'
    last: int  # line of its closing brace
    extent: int | None
    innermost: bool


def kernel_loops(source: str, kernels: list[str]) -> list[Loop]:
    """The ``for`` loops of the named kernel functions in ``source``, found by the renderer's
    layout (a kernel ends at a line '}'; a loop's closing brace is indented like its 'for')."""
    lines = source.split("\n")
    heads = {f"{C.kernel_prefix} {k}(": k for k in kernels}
    found: list[tuple[str, int, int, int | None]] = []
    kernel, open_loops = None, []
    for n, line in enumerate(lines, 1):
        head = next((k for h, k in heads.items() if line.startswith(h)), None)
        if head is not None:
            kernel, open_loops = head, []
            continue
        if kernel is None:
            continue
        if line == "}":
            assert not open_loops, f"unclosed loop in {kernel}"
            kernel = None
            continue
        indent = len(line) - len(line.lstrip())
        m = re.match(r"\s*for \(.*<\s*(\d+)\s*;", line)
        if line.lstrip().startswith("for ("):
            open_loops.append((n, indent, int(m.group(1)) if m else None))
        elif line.strip() == "}" and open_loops and open_loops[-1][1] == indent:
            first, _, extent = open_loops.pop()
            found.append((kernel, first, n, extent))
    return [Loop(k, a, b, e, not any(a < a2 and b2 < b for _, a2, b2, _ in found))
            for k, a, b, e in sorted(found, key=lambda t: t[1])]


def hot_loops(source: str, kernels: list[str]) -> list[Loop]:
    return [lp for lp in kernel_loops(source, kernels)
            if lp.innermost and (lp.extent is None or lp.extent >= HOT_EXTENT)]


def vectorized_lines(compiler: list[str], source: str, march: str, tmp_path,
                     extra: tuple[str, ...] = ()) -> set[int]:
    """Compile ``source`` with the project's flags for ``march``; the source lines where GCC
    reports a vectorized loop, or a loop it replaced whole by library calls (a fill or a copy
    of a local array became memset or memcpy)."""
    flags = [f"-march={march}" if f.startswith("-march=") else f for f in cc.FLAGS]
    flags = [f for f in flags if f not in ("-shared", "-w")]
    src = tmp_path / f"kernels_{march}.c"
    src.write_text(source)
    proc = subprocess.run([*compiler, *flags, *extra, "-c", str(src), "-o",
                           str(tmp_path / "kernels.o"), "-fopt-info-vec-optimized",
                           "-fopt-info-loop-optimized"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    pattern = re.compile(rf"{re.escape(src.name)}:(\d+):\d+: optimized: (loop vectorized|Loop "
                         rf"\d+ distributed: split to 0 loops and \d+ library calls)")
    return {int(m.group(1)) for m in pattern.finditer(proc.stderr)}


def scalar_loops(loops: list[Loop], vectorized: set[int],
                 outer: list[Loop] = ()) -> list[Loop]:
    """The loops of ``loops`` (innermost ones) with no vectorized-loop report inside them, nor
    at the head of a loop of ``outer`` enclosing them (outer-loop vectorization: a column
    reduction vectorizes its loop over outputs, each lane running the inner loop)."""
    def enclosed(lp):  # (GCC reports a loop under an OpenMP pragma at the pragma's line)
        return any(n in (o.first - 1, o.first) and o.first < lp.first and lp.last < o.last
                   for o in outer for n in vectorized)

    return [lp for lp in loops
            if not any(lp.first <= n <= lp.last for n in vectorized) and not enclosed(lp)]


def _describe(source: str, loops: list[Loop]) -> str:
    lines = source.split("\n")
    return "; ".join(f"{lp.kernel} line {lp.first}: {lines[lp.first - 1].strip()}"
                     for lp in loops)


# --- compilers -----------------------------------------------------------------------------------


def _gcc(cmd: str | None) -> list[str] | None:
    if cmd is None or shutil.which(cmd) is None:
        return None
    out = subprocess.run([cmd, "--version"], capture_output=True, text=True).stdout
    return [cmd] if "Free Software Foundation" in out else None  # -fopt-info is GCC's


def _x86_gcc() -> list[str] | None:
    if _X86:
        return _gcc(cc.compiler())
    return _gcc("x86_64-linux-gnu-gcc")


TARGETS = (*X86_LEVELS, "armv8-a")
# (program, target) pairs known to stay scalar, with the reason; strict: each fails the run once
# it vectorizes, so that the entry is removed.
KNOWN_SCALAR = {
    ("fori_loop body (roll, tanh)", "x86-64-v2"):
        "SSE4.2 has no masked loads: the rolled operand's two pieces are each read only where "
        "selected, and without masking GCC can neither if-convert those reads nor gather",
}


def _cases():
    for name in PROGRAMS:
        for target in TARGETS:
            reason = KNOWN_SCALAR.get((name, target))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, target, marks=marks,
                               id=f"{name}-{'aarch64' if target == 'armv8-a' else target}")


def _compiler_for(target: str) -> list[str]:
    if target == "armv8-a":
        found = _gcc("aarch64-linux-gnu-gcc")
        if found is None:
            pytest.skip("no aarch64 cross compiler (aarch64-linux-gnu-gcc) installed")
        return found
    found = _x86_gcc()
    if found is None:
        pytest.skip("needs GCC targeting x86-64 (for -fopt-info-vec)")
    return found


@pytest.fixture(scope="module")
def lowered():
    """Per program: its translation units (a source may be split in several, each compiled
    on its own) and the names of its kernels."""
    out = {}
    for name, (fn, args) in PROGRAMS.items():
        program = fx.jit(fn).lower(*args).program
        units = tuple(getattr(program.source, "units", (program.source,)))
        out[name] = (units, [k.name for k in program.kernels])
    return out


@pytest.mark.parametrize("name,target", list(_cases()))
def test_hot_loops_are_vectorized(lowered, tmp_path, name, target):
    compiler = _compiler_for(target)
    units, kernels = lowered[name]
    n_loops, scalar = 0, []
    for source in units:
        loops = hot_loops(source, kernels)
        if loops:
            n_loops += len(loops)
            found = vectorized_lines(compiler, source, target, tmp_path)
            scalar.append(_describe(source, scalar_loops(loops, found,
                                                         kernel_loops(source, kernels))))
    assert n_loops, f"{name}: no hot loop found in the kernels {kernels}"
    scalar = [s for s in scalar if s]
    assert not scalar, f"{name}, -march={target}: scalar: {'; '.join(scalar)}"


def test_the_check_sees_scalar_loops(lowered, tmp_path):
    """With the vectorizer off, every hot loop is reported scalar (the check can fail). (A
    loop under '#pragma omp simd' is vectorized even then: this program has none.)"""
    compiler = _compiler_for("x86-64-v3")
    units, kernels = lowered["elementwise exp/log/tanh/logistic, small"]
    (source,) = [u for u in units if hot_loops(u, kernels)]
    loops = hot_loops(source, kernels)
    lines = source.split("\n")
    assert not any("#pragma" in lines[lp.first - 2] for lp in loops)
    assert scalar_loops(loops, vectorized_lines(compiler, source, "x86-64-v3", tmp_path)) == []
    off = vectorized_lines(compiler, source, "x86-64-v3", tmp_path, ("-fno-tree-vectorize",))
    assert scalar_loops(loops, off) == loops


def test_loops_are_found_by_nesting():
    source = "\n".join([
        f"{C.kernel_prefix} k0(const float* restrict in0, float* restrict out0) {{",
        "  for (int64_t i0 = 0; i0 < 4; i0++) {",
        "    for (int64_t i1 = 0; i1 < 100; i1++) {",
        "      out0[i0 * 100 + i1] = in0[i1];",
        "    }",
        "  }",
        "}",
        "void fx_seg0(void** p) {",
        "  for (int64_t k = 0; k < 100; k++) {",
        "  }",
        "}",
    ])
    loops = kernel_loops(source, ["k0"])
    assert [(lp.first, lp.last, lp.extent, lp.innermost) for lp in loops] == [
        (2, 6, 4, False), (3, 5, 100, True)]
    assert hot_loops(source, ["k0"]) == [loops[1]]
    assert scalar_loops(loops[1:], {4}) == []
    assert scalar_loops(loops[1:], {2, 6}) == loops[1:]
    assert scalar_loops(loops[1:], {2}, loops) == []  # the enclosing loop vectorized
    assert scalar_loops(loops[1:], {1}, loops) == []  # (at its pragma's line)
    assert scalar_loops(loops[1:], {9}, loops) == loops[1:]
