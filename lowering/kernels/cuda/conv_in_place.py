"""Float32 convolutions reading their input in place, on CUDA: ``conv_in_place``'s kernel.

The CPU's constant pass (:func:`fx.lowering.kernels.cpu.conv_in_place.convs_in_place`) runs
for CUDA too (:func:`convs_in_place` below, a C compiler not needed): each float32 product of
patches becomes ``conv_in_place(x, w)`` of the (padded) input. Its kernel here
(``conv_in_place.cu``) is the product ``C[m, n] = sum_k A[m, k] B[k, n]`` with the geometry
the CPU kernel uses (``cpu.conv_in_place._geometry``, operands read through the group's
prologue by ``_source``): ``A[m, k]`` is ``x[row(m) + kx(k)]`` and ``B[k, n]`` is
``w[kw(k) + col(n)]``, each offset a sum of the index's digits (over the product's free
dimensions, the contracted ones, the kernel's free ones) times their strides, computed in the
kernel. Each 256-thread block computes a tile of ``C`` (128, 64 or 32 rows by 32, 64 or 128
columns, by the sizes) from slices of A and B staged through double-buffered shared memory,
as ``cuda_gemm`` does, and applies the group's epilogue (bias, activation) in its store. There
is no patch buffer: the forward convolution, the input gradient and the weight gradient (the
swapped form) each read the input where it lies.

Where the kernel has no spelling for a group, it runs as the primitive's NumPy form on the
host (``conv_in_place_p`` is host-only on devices), with copies around it.
"""

from __future__ import annotations

from fx import dtypes
from fx.jaxpr import Jaxpr, Var
from fx.lowering import resources
from fx.lowering.fusion.groups import FusionGroup
from fx.lowering.kernels.cpu import conv_in_place as cpu
from fx.lowering.kernels.cuda.cuda_gemm import RawKernel
from fx.lowering.kernels.int8.int8_epilogue import epilogue_function
from fx.lowering.render.renderer import CUDA
from fx.lowering.select.op_impl import host_only_prims

THREADS = 256
SMS = 132  # an H100's or H200's multiprocessors (see ``tile``)

# The NumPy form (conv_patches then dot_general) has no CuPy implementation.
host_only_prims.add(cpu.conv_in_place_p)


def available(dtype) -> bool:
    """Whether a convolution computing in ``dtype`` runs in place on CUDA (float32; the
    kernels compile with the runtime's NVRTC)."""
    return dtype == dtypes.float32


def convs_in_place(jaxpr: Jaxpr, consts: list, hoisted: tuple = ()) -> tuple[Jaxpr, list]:
    """The CPU's pass (``cpu.conv_in_place.convs_in_place``) for the CUDA backend."""
    return cpu.convs_in_place(jaxpr, consts, hoisted, available=available)


def cost(flops: float) -> float:
    """Nanoseconds for ``flops``: a launch, then the tiled GEMM's rate less the offsets'
    arithmetic (``cuda_gemm``'s ~35 TFLOP/s taken as 25)."""
    return 5000.0 + flops / 25000.0


def applies(g: FusionGroup) -> bool:
    return cpu.applies(g)


def tile(M: int, N: int) -> tuple[int, int]:
    """(rows, columns) of a block's tile: columns the fewest of 32, 64, 128 covering N (or
    128); rows 128 where that makes two blocks per multiprocessor, else 64 where that makes
    one, else 32 (a weight gradient: few outputs, a long contraction)."""
    tn = 32 if N <= 32 else 64 if N <= 64 else 128
    blocks = -(-N // tn)
    if -(-M // 128) * blocks >= 2 * SMS:
        return 128, tn
    return (64 if -(-M // 64) * blocks >= SMS else 32), tn


def _digits(index: str, dims, strides: dict[str, list[int]]) -> str:
    """C statements adding to each variable of ``strides`` the digits of ``index`` (row-major
    over ``dims``) times its strides: the last digit by modulo, the first as what is left."""
    lines = []
    for j in range(len(dims) - 1, -1, -1):
        digit = f"{index} % {dims[j]}LL" if j else index
        lines.append(f"  i = {digit};" + (f" {index} /= {dims[j]}LL;" if j else ""))
        lines += [f"  {v} += i * {s[j]}LL;" for v, s in strides.items() if s[j]]
    return "\n".join(lines)


def describe(g: FusionGroup) -> str:
    d = cpu._geometry(g)
    tm, tn = tile(d["M"], d["N"])
    return (f"float32 convolution reading its input in place, {tm}x{tn} block tiles, "
            f"M={d['M']} N={d['N']} K={d['K']}")


def conv_kernel(group: FusionGroup, name: str, inputs: list[Var], outputs: list[Var]
                ) -> RawKernel:
    d = cpu._geometry(group)
    M, N, K = d["M"], d["N"], d["K"]
    fields = epilogue_function(group, name, inputs, outputs, CUDA,
                               free=(d["lhs_free"], d["rhs_free"]), acc_dtype=dtypes.float32)
    params = fields.pop("params")
    names = {v: q.name for v, q in zip(inputs, params, strict=False)}
    fields["A"], fields["B"] = (names[cpu._source(group, v)[0]] for v in group.anchor.invars)
    # The rows' dimensions in the product's row-major order (by their flat strides; those of
    # one row dropped), each with its stride in x: the geometry splits them into the CPU
    # tile's dimension (LM, SM, FM) and the others.
    rows = sorted(((f, n, s) for n, s, f in zip([*d["mdims"], d["LM"]], [*d["mxs"], d["SM"]],
                                                 [*d["mfs"], d["FM"]]) if n > 1), reverse=True)
    kdims, kxs = d["kdims"], d["kxs"]
    tm, tn = tile(M, N)
    fields.update(
        M=M, N=N, K=K, TM=tm, TN=tn,
        AKF=int(kdims[-1] > 1 and kxs[-1] == 1),
        row=_digits("u", [n for _, n, _ in rows], {"off": [s for _, _, s in rows]}),
        col=_digits("n", d["ndims"], {"off": d["nws"]}),
        kofs=_digits("k", kdims, {"x": kxs, "w": d["kws"]}))
    grid = (-(-M // tm) * -(-N // tn), 1, 1)
    template = resources.text(__package__, "conv_in_place.cu")
    return RawKernel(name, params, template, tuple(fields.items()), grid, (THREADS, 1, 1),
                     work=M * N * K)
