"""Hand-written kernel families and library steps that operator selection chooses among:
``cpu`` (NumPy/BLAS steps, LAPACK and FFT calls, convolutions), ``int8`` (int8 GEMM and
convolution, VNNI microkernels, weight packing), ``nf4`` (NF4 dequantize-in-GEMM), ``sparse``
(CSR x dense for sparse constant weights), ``cuda`` (tiled and int8 GEMMs, cuSOLVER/cuBLAS/cuFFT
calls)."""
