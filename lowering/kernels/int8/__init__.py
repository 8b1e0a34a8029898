"""Exact int8 x int8 -> int32 products on the CPU: ``int8_gemm`` (generated tiles),
``int8_vnni`` (the AVX-512 VNNI microkernel), ``int8_conv`` (convolution reading its input in
place), ``pack_int8_weights`` (constant weights packed once at compile time)."""
