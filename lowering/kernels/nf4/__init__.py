"""NF4 dequantize-in-GEMM (``fx.quant.nf4``): ``nf4_gemm`` the generated kernels, ``nf4_avx512``
the AVX-512 microkernel, ``impls`` their ``OpImpl``s."""
