"""Code generation: a fusion group becomes a kernel in the kernel IR. ``kernel_ir`` the IR
(loops, loads, stores, scalar operations), ``kernel_builder`` a group's values built on demand
(``KernelBuilder``, index maps), ``loop_kernels`` the elementwise and reduction loop nests
(``KERNEL_BUILDERS``), ``column_reductions`` the CPU's column reductions (rows through a vector
of partials), ``window_maps`` pooling as index maps, ``conv_patches`` the convolution
window gather (a compiler-internal primitive), ``c_kernel`` kernels whose C is written whole
beside their loop IR, ``index_ranges`` the clamps and tests a kernel's loop extents decide,
folded before it is rendered."""
