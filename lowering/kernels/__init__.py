"""Hand-written kernel families and library steps that operator selection chooses among:
``cpu`` (NumPy/BLAS steps, LAPACK and FFT calls, convolutions), ``int8`` (int8 GEMM and
convolution, VNNI microkernels, weight packing), ``nf4`` (NF4 dequantize-in-GEMM), ``sparse``
(CSR x dense for sparse constant weights), ``cuda`` (tiled and int8 GEMMs, cuSOLVER/cuBLAS/cuFFT
calls).

How a family registers: its sub-package holds the kernels and an ``impls`` module that
registers the family's ``OpImpl``s (``fx.lowering.select.op_impl.register``) with their cost
and ``applies`` functions when imported. ``fx.lowering.select.op_info`` imports every
family's ``impls`` in a fixed order, between the generated kernels and the NumPy fallbacks
(the registry's order breaks cost ties), so a new family is its sub-package plus one import
line there. Nothing else imports an ``impls`` module. Modules that register on import and are
imported elsewhere too (``cpu.conv``, ``cpu.library_calls``, ``cuda.cuda_library``, imported
by the pipeline) import ``op_info`` first, so their implementations always follow its own.
A kernel built from the kernel IR is rendered for every backend's dialect; one written as C or
CUDA text keeps that text in a ``.c``/``.cu`` file beside its module (``fx.lowering.resources``
reads it)."""
