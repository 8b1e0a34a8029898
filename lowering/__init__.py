"""The compiler: a closed jaxpr -> a program of kernels and calls the runtime runs.

``pipeline.lower`` runs the stages in order and returns a ``pipeline.Compilation`` (every
stage's result, ``as_text()``; ``compile()`` makes the executable); each sub-package is one
stage:

- ``passes``: jaxpr -> jaxpr rewrites (inlining, simplification, constant folding, CSE, DCE).
- ``fusion``: equations partitioned into groups (``partition.fuse``; ``recompute`` bounds what a
  kernel recomputes); the per-primitive rules (``primitive_rules``).
- ``select``: the implementation of each group (``op_impl`` the registry, ``op_info`` the
  implementations and the choice, ``cost``, ``backends``, ``fallbacks``).
- ``program``: the program IR and its schedule (``operations``), the memory plan, control
  flow, ``as_text()``.
- ``codegen``: a group -> a kernel in the kernel IR (``kernel_builder``, ``loop_kernels``).
- ``render``: kernel IR -> C, CUDA C or OpenCL C (``renderer``, one dialect per target); the
  preludes.
- ``kernels``: hand-written families (``cpu``, ``int8``, ``nf4``, ``sparse``, ``cuda``).

C, CUDA C and OpenCL C longer than a few lines lives in ``.c``/``.h``/``.cu``/``.cl`` files
beside the module that emits it, shipped as package data and read by ``resources``.
"""
