"""Operator selection: which implementation runs each fusion group. ``backends`` holds one
record per compile target (dialect, executor, operator library); ``op_impl`` what an
implementation is (``OpImpl``) and their registry; ``op_info`` the generic implementations
(generated elementwise and reduction kernels, compiled control flow, the NumPy fallbacks) and
``select``; ``generable`` which groups generated kernels handle; ``cost`` the flop and byte
estimates the costs read; ``fallbacks`` says why a group runs as NumPy (``FX_STRICT=1`` makes
it an error).

The hand-written kernel families (``fx.lowering.kernels``) register their own implementations
into ``op_impl.registry``; ``op_info`` imports each family's ``impls`` module at a fixed point,
so the registry's order (which breaks cost ties) does not depend on who imports what first."""
