"""Code generation: a fusion group becomes a kernel in the kernel IR. ``kernel_ir`` the IR
(loops, loads, stores, scalar operations), ``codegen`` the builder (``KernelBuilder``, index
maps), ``window_maps`` pooling as index maps, ``conv_patches`` the convolution window gather
(a compiler-internal primitive), ``c_kernel`` kernels whose C is written whole beside their
loop IR."""
