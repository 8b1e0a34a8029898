"""Fusion: the optimized jaxpr partitioned into groups, each one kernel or one library call
plus its epilogue. ``primitive_rules`` holds what lowering knows per primitive (its op pattern
in the fusion lattice, its kernel-IR scalar rule, how a reduction combines); ``groups`` the
group and the rules for joining one; ``recompute`` what a kernel recomputes instead of
storing; ``group_graph`` the group graph kept acyclic while groups merge; ``partition`` the
partition itself (``fuse``), and ``merges`` the passes that join whole groups after it."""
