"""Rendering: kernel IR -> C (OpenMP), CUDA C or OpenCL C source. ``render`` the one renderer,
``dialects`` and ``opencl_dialect`` one record per target, ``prelude`` and ``prelude_special``
the scalar helpers kernels call, ``c_program`` the C entry points and native loops rendered
from the program IR."""
