"""Compiling CUDA source with NVRTC (through ``cuda-bindings``) the way CuPy does, without a
GPU: used to check that every generated kernel compiles, with CuPy's options."""

from __future__ import annotations

from fx.runtime.cuda import NVRTC_OPTIONS

CUPY_EXTRA_OPTIONS = ("-ftz=true",)  # CuPy appends this for RawModule sources


def available() -> bool:
    try:
        from cuda.bindings import nvrtc  # noqa: F401

        return True
    except (ImportError, OSError, RuntimeError):  # not installed, or libnvrtc is missing
        return False


def compile_source(source: str, arch: str = "sm_90") -> tuple[bool, str, int]:
    """``(ok, log, cubin_bytes)`` for ``source`` compiled to a cubin for ``arch``."""
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"fx_kernels.cu", 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return False, f"nvrtcCreateProgram failed: {err}", 0
    opts = [f"--gpu-architecture={arch}".encode()]
    opts += [o.encode() for o in NVRTC_OPTIONS + CUPY_EXTRA_OPTIONS]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    ok = err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    cubin = 0
    if ok:
        _, cubin = nvrtc.nvrtcGetCUBINSize(prog)
    nvrtc.nvrtcDestroyProgram(prog)
    return ok, log.decode(errors="replace").strip("\x00 "), cubin
