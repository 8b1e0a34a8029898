"""Host steps: ``library`` runs groups with NumPy (BLAS matmul, the primitives' impls op by
op, host copies for device programs), ``library_calls`` linear algebra and FFTs as
LAPACK/pocketfft calls, ``conv`` the CPU convolution implementations. ``impls`` registers the
BLAS matrix product; ``conv`` and ``library_calls`` register their own."""
