"""Fusion: the optimized jaxpr partitioned into groups, each one kernel or one library call
plus its epilogue. ``primitive_rules`` holds what lowering knows per primitive (its op pattern
in the fusion lattice, its kernel-IR scalar rule, how a reduction combines); ``fusion_groups``
the group and the rules for joining one; ``fusion_graph`` the group graph kept acyclic while
groups merge; ``fusion`` the partition itself (``fuse``)."""
