"""Operator selection: which implementation runs each fusion group. ``backends`` holds one
record per compile target (dialect, executor, operator library); ``op_impl`` what an
implementation is (``OpImpl``) and their registry; ``op_info`` the implementations and
``select``; ``cost`` the flop and byte estimates the costs read; ``fallbacks`` says why a
group runs as NumPy (``FX_STRICT=1`` makes it an error)."""
