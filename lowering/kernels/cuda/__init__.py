"""CUDA kernels and library calls: ``cuda_gemm`` (generated tiled GEMM), ``cuda_int8_gemm``
(int8 GEMM on ``__dp4a``), ``cuda_library`` (cuSOLVER, cuBLAS and cuFFT through CuPy).
``impls`` registers the cuBLAS and tiled GEMMs; ``cuda_library`` registers its calls, the int8
family the ``__dp4a`` tile."""
