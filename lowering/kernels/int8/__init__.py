"""Exact int8 x int8 -> int32 products on the CPU: ``int8_products`` (the ``int8_packed_dot``
primitive, the matrix layout of a product), ``int8_epilogue`` (the group's epilogue as a
function, for the kernels written whole), ``int8_gemm`` (generated tiles), ``int8_vnni`` (the
AVX-512 VNNI microkernel, its C in ``int8_vnni.c``), ``int8_conv`` (convolution reading its
input in place, ``int8_conv.c``), ``pack_int8_weights`` (constant weights packed once at
compile time), ``impls`` (their ``OpImpl``s, the CUDA ``__dp4a`` tile of
``fx.lowering.kernels.cuda.cuda_int8_gemm`` included)."""
