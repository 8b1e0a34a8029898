"""The compiler: a closed jaxpr -> a program of kernels and calls the runtime runs.

``pipeline.lower`` runs the stages in order; each sub-package is one stage:

- ``passes``: jaxpr -> jaxpr rewrites (inlining, simplification, constant folding, CSE, DCE).
- ``fusion``: equations partitioned into groups; the per-primitive rules (``primitive_rules``).
- ``select``: the implementation of each group (``op_info``, ``cost``, ``backends``, ``fallbacks``).
- ``program``: the program IR, the schedule, the memory plan, control flow, ``as_text()``.
- ``codegen``: a group -> a kernel in the kernel IR.
- ``render``: kernel IR -> C, CUDA C or OpenCL C; the preludes.
- ``kernels``: hand-written families (``cpu``, ``int8``, ``nf4``, ``sparse``, ``cuda``).
"""
