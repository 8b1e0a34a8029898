"""Rendering: kernel IR -> C (OpenMP), CUDA C or OpenCL C source. ``renderer`` the one
renderer (and ``render_module``, a translation unit), ``literals`` values spelled as literals,
``c_dialect``, ``cuda_dialect`` and ``opencl_dialect`` one record per target (``dialect_base``
what they share, ``dialects`` all of them under one name), ``prelude`` and ``prelude_special``
the scalar helpers kernels call (their C in ``prelude.h`` and ``prelude_special.h``),
``c_program`` the C entry points and native loops rendered from the program IR."""
