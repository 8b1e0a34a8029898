"""Sparse constant weights: ``sparse_gemm`` rewrites their products as CSR x dense and
generates the kernel; ``impls`` registers it for every backend."""
