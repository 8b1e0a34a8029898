"""Jaxpr -> jaxpr passes, each a pure function that keeps every output's bits and type:
``inline_calls`` first, then ``pipeline.PASSES`` in order to a fixed point
(``split_dilated_convolutions``, ``lower_convolutions``, ``assign_layouts``,
``expand_window_sums``, ``merge_reduced_axes``, ``simplify_algebra``, ``sink_reshapes``,
``fold_constants``, ``eliminate_common_subexpressions``, ``eliminate_dead_code``). ``rewrite``
holds the variable renaming they share. (Passes that belong to one kernel family live with it:
``kernels.sparse.sparse_gemm.sparsify``, ``kernels.int8.pack_int8_weights``.)"""
