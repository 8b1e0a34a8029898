"""Error types against jax: one table of bad calls (shape mismatches in the fx.numpy products
and fx.lax ops, array arguments given as lists, malformed pytrees and vmap axes), each run
under jax and under fx (the same call with jnp -> fx.numpy, lax -> fx.lax, jax.tree_util ->
fx.tree_util, jax -> fx); fx must raise jax's exception type (or a subclass of it).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import jax.scipy.stats as jst
import numpy as np
import pytest

import fx
import fx.numpy as fnp
import fx.scipy.special as fsp
import fx.scipy.stats as fst

JAX = types.SimpleNamespace(np=jnp, sp=jsp, st=jst, lax=jax.lax, tu=jax.tree_util, api=jax)
FX = types.SimpleNamespace(np=fnp, sp=fsp, st=fst, lax=fx.lax, tu=fx.tree_util, api=fx)

DN = (((1,), (0,)), ((), ()))  # a matrix product's dimension numbers


def f32(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


@dataclass(frozen=True)
class Row:
    name: str
    call: Callable[[Any], Any]  # m -> the call, m.np/m.lax/m.tu/m.api being jax's or fx's
    match: str | None = None  # what fx's message must say (the operation, the shapes)
    marks: tuple = field(default=())


ROWS = [
    # --- fx.numpy products: contracted sizes differ (jax: TypeError from dot_general) ---------
    Row("dot_1d", lambda m: m.np.dot(f32(3), f32(4)), r"fx.numpy.dot: shapes \(3,\) and \(4,\)"),
    Row("dot_2d", lambda m: m.np.dot(f32(2, 3), f32(4, 5)), r"fx.numpy.dot: .*\(2, 3\).*\(4, 5\)"),
    Row("dot_nd", lambda m: m.np.dot(f32(2, 3, 4), f32(5, 6, 7)), r"size 4.*size 6"),
    Row("dot_jit", lambda m: m.api.jit(m.np.dot)(f32(2, 3), f32(2, 3)), r"fx.numpy.dot"),
    Row("matmul_2d", lambda m: m.np.matmul(f32(2, 3), f32(4, 5)),
        r"fx.numpy.matmul: .*\(2, 3\) @ \(4, 5\)"),
    Row("matmul_1d", lambda m: m.np.matmul(f32(3), f32(4)), r"\(3 != 4\)"),
    Row("matmul_operator", lambda m: m.np.asarray(f32(2, 3)) @ m.np.asarray(f32(4, 5))),
    Row("matmul_scalar", lambda m: m.np.matmul(f32(), f32(3)), r"fx.numpy.matmul"),
    Row("matmul_batch", lambda m: m.np.matmul(f32(2, 2, 3), f32(3, 3, 4))),
    Row("linalg_matmul", lambda m: m.np.linalg.matmul(f32(2, 3), f32(4, 5))),
    Row("tensordot_int", lambda m: m.np.tensordot(f32(2, 3), f32(4, 5), axes=1),
        r"fx.numpy.tensordot: shapes \(2, 3\) and \(4, 5\)"),
    Row("tensordot_pairs", lambda m: m.np.tensordot(f32(2, 3), f32(4, 5), axes=[[0], [0]])),
    Row("tensordot_int_pair", lambda m: m.np.tensordot(f32(2, 3), f32(4, 5), axes=(1, 0))),
    Row("tensordot_axis_oob", lambda m: m.np.tensordot(f32(2, 3), f32(3, 5), axes=[[5], [0]])),
    Row("tensordot_too_many", lambda m: m.np.tensordot(f32(2, 3), f32(3, 5), axes=3),
        r"fx.numpy.tensordot: axes=3 exceeds"),
    Row("tensordot_unequal", lambda m: m.np.tensordot(f32(2, 3), f32(3, 5), axes=[[0, 1], [0]]),
        r"fx.numpy.tensordot: 2 axes of a paired with 1"),
    Row("tensordot_mixed_pair", lambda m: m.np.tensordot(f32(2, 3), f32(3, 5), axes=(1, [0])),
        r"fx.numpy.tensordot: the axes pair"),
    Row("tensordot_triple", lambda m: m.np.tensordot(f32(2, 3), f32(3, 5), axes=(1, 0, 0))),
    Row("tensordot_str", lambda m: m.np.tensordot(f32(2, 3), f32(3, 5), axes="x")),
    Row("tensordot_repeat", lambda m: m.np.tensordot(f32(3, 3), f32(3, 3), axes=[[0, 0], [0, 1]])),
    Row("inner_1d", lambda m: m.np.inner(f32(3), f32(4)), r"fx.numpy.inner: shapes \(3,\)"),
    Row("inner_2d", lambda m: m.np.inner(f32(2, 3), f32(2, 4))),
    Row("vdot", lambda m: m.np.vdot(f32(3), f32(4)), r"fx.numpy.vdot: .*\(3 and 4\)"),
    Row("vecdot", lambda m: m.np.vecdot(f32(3), f32(4))),
    Row("matvec", lambda m: m.np.matvec(f32(2, 3), f32(4))),
    Row("einsum", lambda m: m.np.einsum("ij,jk->ik", f32(2, 3), f32(4, 5))),
    Row("multi_dot", lambda m: m.np.linalg.multi_dot([f32(2, 3), f32(4, 5)])),
    # --- other fx.numpy shape errors ----------------------------------------------------------
    Row("add_broadcast", lambda m: m.np.add(f32(3), f32(4)),
        r"fx.numpy.add: operands could not be broadcast together with shapes \(3,\) \(4,\)"),
    Row("add_broadcast_rank", lambda m: m.np.add(f32(2, 3), f32(4))),
    Row("maximum_broadcast", lambda m: m.np.maximum(f32(2, 3), f32(4, 3))),
    Row("ldexp_broadcast", lambda m: m.np.ldexp(f32(3), f32(4, dtype=np.int32))),
    Row("gcd_broadcast", lambda m: m.np.gcd(f32(3, dtype=np.int32), f32(4, dtype=np.int32))),
    Row("copysign_broadcast", lambda m: m.np.copysign(f32(3), f32(4))),
    Row("heaviside_broadcast", lambda m: m.np.heaviside(f32(2, 3), f32(4, 3))),
    # --- fx.scipy.special: operands that do not broadcast (jax: TypeError from the lax
    # primitive at equal ranks, ValueError where jax broadcasts with broadcast_arrays) ---------
    Row("xlogy_broadcast", lambda m: m.sp.xlogy(f32(3), f32(4)),
        r"fx.scipy.special.xlogy: .* shapes \(3,\) \(4,\)"),
    Row("xlog1py_broadcast", lambda m: m.sp.xlog1py(f32(3), f32(4))),
    Row("gammainc_broadcast", lambda m: m.sp.gammainc(f32(2, 3), f32(4, 3))),
    Row("gammaincc_broadcast", lambda m: m.sp.gammaincc(f32(3), f32(4))),
    Row("betaln_broadcast", lambda m: m.sp.betaln(f32(3), f32(4))),
    Row("betainc_broadcast", lambda m: m.sp.betainc(f32(3), f32(3), f32(4))),
    Row("zeta_broadcast", lambda m: m.sp.zeta(f32(3), f32(4))),
    Row("rel_entr_rank", lambda m: m.sp.rel_entr(f32(2, 3), f32(4))),
    Row("expn_broadcast", lambda m: m.sp.expn(f32(3, dtype=np.int32), f32(4))),
    Row("hyp1f1_broadcast", lambda m: m.sp.hyp1f1(f32(3), f32(4), f32(3)),
        r"fx.scipy.special.hyp1f1: .* shapes \(3,\) \(4,\) \(3,\)"),
    Row("hyp2f1_broadcast", lambda m: m.sp.hyp2f1(f32(3), f32(4), f32(3), f32(4))),
    Row("norm_logpdf_broadcast", lambda m: m.st.norm.logpdf(f32(3), f32(4))),
    Row("truncnorm_pdf_broadcast", lambda m: m.st.truncnorm.pdf(f32(3), f32(4), f32(3))),
    Row("mvn_cov_shape", lambda m: m.st.multivariate_normal.logpdf(f32(3), f32(4), f32(3))),
    Row("where_broadcast", lambda m: m.np.where(f32(3, dtype=bool), f32(4), f32(5))),
    Row("concatenate", lambda m: m.np.concatenate([f32(2, 3), f32(2, 4)], axis=0),
        r"fx.numpy.concatenate: .*dimension 1 the array at index 0 has size 3"),
    Row("concatenate_rank_np", lambda m: m.np.concatenate([f32(2, 3), f32(2)], axis=0)),
    Row("hstack", lambda m: m.np.hstack([f32(2, 3), f32(3, 3)])),
    Row("transpose_repeat", lambda m: m.np.transpose(f32(2, 3), (0, 0)),
        r"fx.numpy.transpose: repeated axis in \(0, 0\)"),
    Row("transpose_length", lambda m: m.np.transpose(f32(2, 3), (0,))),
    Row("moveaxis_repeat", lambda m: m.np.moveaxis(f32(2, 3, 4), (0, 0), (0, 1))),
    Row("stack", lambda m: m.np.stack([f32(3), f32(4)])),
    Row("np_reshape_size", lambda m: m.np.reshape(f32(6), (4,))),
    Row("sum_axis", lambda m: m.np.sum(f32(3), axis=2)),
    Row("broadcast_to", lambda m: m.np.broadcast_to(f32(3), (4,))),
    Row("cross", lambda m: m.np.cross(f32(4), f32(4))),
    Row("solve", lambda m: m.np.linalg.solve(f32(2, 3), f32(2))),
    # --- array arguments given as Python lists (jax: TypeError, ensure_arraylike) ------------
    Row("sum_list", lambda m: m.np.sum([1, 2])),
    Row("mean_list", lambda m: m.np.mean([1.0, 2.0])),
    Row("dot_list", lambda m: m.np.dot([1.0, 2.0], [3.0, 4.0])),
    Row("matmul_list", lambda m: m.np.matmul([[1.0]], [[2.0]])),
    Row("tensordot_list", lambda m: m.np.tensordot([1.0], [2.0], 1)),
    Row("exp_list", lambda m: m.np.exp([1.0])),
    Row("add_list", lambda m: m.np.add([1.0], [2.0])),
    Row("var_tuple", lambda m: m.np.var((1.0, 2.0))),
    # --- fx.lax ---------------------------------------------------------------------------------
    Row("dot_general_contract", lambda m: m.lax.dot_general(f32(2, 3), f32(4, 5), DN),
        r"dot_general: contracting dimensions"),
    Row("dot_general_batch",
        lambda m: m.lax.dot_general(f32(2, 3, 4), f32(3, 4, 5), (((2,), (1,)), ((0,), (0,))))),
    Row("dot_general_axis_oob",
        lambda m: m.lax.dot_general(f32(2, 3), f32(3, 4), (((5,), (0,)), ((), ())))),
    Row("dot_general_repeat",
        lambda m: m.lax.dot_general(f32(3, 3), f32(3, 3), (((1, 1), (0, 1)), ((), ())))),
    Row("dot_general_numbers", lambda m: m.lax.dot_general(f32(3), f32(3), (0, 0))),
    Row("dot_general_narrow_pet", lambda m: m.lax.dot_general(
        f32(2, 3, dtype=np.int64), f32(3, 4, dtype=np.int64), DN,
        preferred_element_type=np.int32)),
    Row("dot_general_jit", lambda m: m.api.jit(lambda a, b: m.lax.dot_general(a, b, DN))(
        f32(2, 3), f32(4, 5))),
    Row("lax_dot_sizes", lambda m: m.lax.dot(f32(3), f32(4)), r"dot: .*\(3,\) and \(4,\)"),
    Row("lax_dot_rank", lambda m: m.lax.dot(f32(2, 3, 4), f32(4, 5))),
    Row("batch_matmul", lambda m: m.lax.batch_matmul(f32(2, 2, 3), f32(2, 4, 5))),
    Row("add_shapes", lambda m: m.lax.add(f32(3), f32(4))),
    Row("add_rank", lambda m: m.lax.add(f32(3), f32(1, 3))),
    Row("add_dtypes", lambda m: m.lax.add(f32(3), f32(3, dtype=np.int32))),
    Row("mul_widths", lambda m: m.lax.mul(f32(3), f32(3, dtype=np.float64))),
    Row("atan2_shapes", lambda m: m.lax.atan2(f32(2, 3), f32(3))),
    Row("select_n_shapes", lambda m: m.lax.select_n(f32(3, dtype=bool), f32(4), f32(4))),
    Row("select_n_predicate", lambda m: m.lax.select_n(f32(3), f32(3), f32(3))),
    Row("clamp_shapes", lambda m: m.lax.clamp(f32(2), f32(3), f32(2))),
    Row("concatenate_sizes", lambda m: m.lax.concatenate([f32(2, 3), f32(2, 4)], 0)),
    Row("concatenate_rank", lambda m: m.lax.concatenate([f32(2, 3), f32(2)], 0)),
    Row("concatenate_dtypes",
        lambda m: m.lax.concatenate([f32(2, 3), f32(2, 3, dtype=np.int32)], 0)),
    Row("concatenate_dimension", lambda m: m.lax.concatenate([f32(2, 3), f32(2, 3)], 2)),
    Row("concatenate_none", lambda m: m.lax.concatenate([], 0)),
    Row("concatenate_lists", lambda m: m.lax.concatenate([[1.0, 2.0], [3.0]], 0)),
    Row("lax_reshape_size", lambda m: m.lax.reshape(f32(6), (4,)),
        r"reshape: cannot reshape to \(4,\): sizes differ \(6 elements\)"),
    Row("lax_reshape_size_jit", lambda m: m.api.jit(lambda x: m.lax.reshape(x, (4,)))(f32(6))),
    Row("reshape_negative", lambda m: m.lax.reshape(f32(6), (-1,))),
    Row("reshape_dimensions", lambda m: m.lax.reshape(f32(2, 3), (6,), dimensions=(0, 0))),
    Row("broadcast_in_dim_size", lambda m: m.lax.broadcast_in_dim(f32(3), (4,), (0,))),
    Row("broadcast_in_dim_rank", lambda m: m.lax.broadcast_in_dim(f32(3), (3, 4), (0, 1))),
    Row("broadcast_negative", lambda m: m.lax.broadcast(f32(3), (-1,)),
        r"fx.lax.broadcast: negative size"),
    Row("transpose_permutation", lambda m: m.lax.transpose(f32(2, 3), (0, 0))),
    Row("slice_limit", lambda m: m.lax.slice(f32(3), (0,), (5,))),
    Row("slice_rank", lambda m: m.lax.slice(f32(3, 3), (0,), (2,)),
        r"slice: needs 2 start and limit indices, one per dimension, got 1 and 1"),
    Row("slice_rank_long", lambda m: m.lax.slice(f32(3, 3), (0, 0, 0), (2, 2, 2))),
    Row("slice_strides", lambda m: m.lax.slice(f32(3, 3), (0, 0), (2, 2), (1,)),
        r"slice: needs 2 strides"),
    Row("pad_config", lambda m: m.lax.pad(f32(3), np.float32(0), [(0, 0, 0), (0, 0, 0)]),
        r"pad: padding_config needs 1 .* got 2"),
    Row("pad_config_short", lambda m: m.lax.pad(f32(3, 3), np.float32(0), [(0, 0, 0)])),
    Row("pad_interior", lambda m: m.lax.pad(f32(3), np.float32(0), [(0, 0, -1)])),
    Row("pad_negative_size", lambda m: m.lax.pad(f32(3), np.float32(0), [(-2, -2, 0)])),
    Row("pad_value_shape", lambda m: m.lax.pad(f32(3), f32(2), [(0, 0, 0)])),
    Row("pad_dtype", lambda m: m.lax.pad(f32(3), np.int32(0), [(0, 0, 0)])),
    Row("squeeze_size", lambda m: m.lax.squeeze(f32(2, 3), (0,)),
        r"squeeze: cannot remove dimension 0 of size 2"),
    Row("squeeze_size_negative_axis", lambda m: m.lax.squeeze(f32(1, 3), (-1,))),
    Row("rev_dimension", lambda m: m.lax.rev(f32(2, 3), (5,)),
        r"rev: axis 5 is out of bounds for an array of rank 2"),
    Row("rev_repeat", lambda m: m.lax.rev(f32(2, 3), (0, 0)), r"rev: repeated axis"),
    Row("iota_negative", lambda m: m.lax.iota(np.float32, -1), r"iota: negative dimension"),
    Row("broadcasted_iota_negative", lambda m: m.lax.broadcasted_iota(np.int32, (2, -1), 0)),
    Row("expand_dims_oob", lambda m: m.lax.expand_dims(f32(3), (5,))),
    Row("dynamic_slice_indices", lambda m: m.lax.dynamic_slice(f32(3, 3), (0,), (2, 2)),
        r"dynamic_slice: got 1 start indices for an operand of rank 2"),
    Row("dynamic_slice_sizes", lambda m: m.lax.dynamic_slice(f32(3, 3), (0, 0), (2,)),
        r"dynamic_slice: needs one slice size per operand dimension"),
    Row("dynamic_slice_indices_jit",
        lambda m: m.api.jit(lambda x: m.lax.dynamic_slice(x, (0,), (2, 2)))(f32(3, 3))),
    Row("dynamic_update_slice_indices",
        lambda m: m.lax.dynamic_update_slice(f32(3, 3), f32(2, 2), (0,))),
    Row("dynamic_slice_size", lambda m: m.lax.dynamic_slice(f32(3, 3), (0, 0), (4, 2))),
    Row("dynamic_update_slice_rank",
        lambda m: m.lax.dynamic_update_slice(f32(3, 3), f32(4), (0, 0))),
    Row("dynamic_update_slice_dtype",
        lambda m: m.lax.dynamic_update_slice(f32(3), f32(2, dtype=np.int32), (0,))),
    Row("reduce_max_axes", lambda m: m.lax.reduce_max(f32(2, 3), (5,))),
    Row("reduce_axes", lambda m: m.lax.reduce(f32(3), np.float32(0), m.lax.add, (1,))),
    Row("argmax_axis", lambda m: m.lax.argmax(f32(3), 1, np.int32)),
    Row("cumsum_axis", lambda m: m.lax.cumsum(f32(3), 1)),
    Row("top_k_k", lambda m: m.lax.top_k(f32(3), 5)),
    Row("sort_num_keys", lambda m: m.lax.sort((f32(3), f32(3)), num_keys=3)),
    Row("convert_dtype", lambda m: m.lax.convert_element_type(f32(3), "notadtype")),
    Row("cond_branches", lambda m: m.lax.cond(True, lambda: f32(3), lambda: f32(4))),
    Row("switch_branches",
        lambda m: m.lax.switch(0, [lambda: f32(3), lambda: f32(3, dtype=np.int32)])),
    Row("scan_carry", lambda m: m.lax.scan(lambda c, x: (f32(4), x), f32(3), f32(5, 2))),
    Row("scan_xs_lengths", lambda m: m.lax.scan(lambda c, x: (c, x), f32(), (f32(3), f32(4)))),
    Row("fori_loop_carry", lambda m: m.lax.fori_loop(0, 3, lambda i, c: f32(4), f32(3))),
    Row("map_lengths", lambda m: m.lax.map(lambda x: x, (f32(3), f32(4)))),
    # --- pytrees ------------------------------------------------------------------------------
    Row("unflatten_too_few",
        lambda m: m.tu.tree_unflatten(m.tu.tree_structure((1, 2, 3)), [1, 2])),
    Row("unflatten_too_many",
        lambda m: m.tu.tree_unflatten(m.tu.tree_structure((1, 2)), [1, 2, 3])),
    Row("unflatten_empty", lambda m: m.tu.tree_unflatten(m.tu.tree_structure({"a": 1}), [])),
    Row("tree_map_lengths", lambda m: m.tu.tree_map(lambda a, b: a, (1, 2), (1, 2, 3))),
    Row("tree_map_types", lambda m: m.tu.tree_map(lambda a, b: a, (1, 2), [1, 2])),
    Row("tree_map_keys", lambda m: m.tu.tree_map(lambda a, b: a, {"a": 1}, {"b": 1})),
    Row("tree_map_extra_key",
        lambda m: m.tu.tree_map(lambda a, b: a, {"a": 1}, {"a": 1, "b": 2})),
    Row("tree_map_none", lambda m: m.tu.tree_map(lambda a, b: a, (1, None), (1, 2))),
    Row("tree_map_nested", lambda m: m.tu.tree_map(lambda a, b: a, ((1, 2), 3), (1, 3))),
    Row("tree_map_with_path",
        lambda m: m.tu.tree_map_with_path(lambda p, a, b: a, (1, 2), [1, 2])),
    Row("flatten_up_to", lambda m: m.tu.tree_structure((1, 2)).flatten_up_to((1, 2, 3))),
    Row("tree_broadcast", lambda m: m.tu.tree_broadcast((1, 2), (1, 2, 3))),
    Row("tree_reduce_empty", lambda m: m.tu.tree_reduce(lambda a, b: a, [])),
    Row("tree_all_arguments", lambda m: m.tu.tree_all(1, 2, 3)),
    Row("compose_not_treedef", lambda m: m.tu.tree_structure((1, 2)).compose(3),
        r"PyTreeDef.compose: expected a PyTreeDef, got int"),
    # --- vmap axes and transformation arguments ------------------------------------------------
    Row("vmap_in_axes_length",
        lambda m: m.api.vmap(lambda a, b: a, in_axes=(0, 0, 0))(f32(3), f32(3))),
    Row("vmap_in_axes_short", lambda m: m.api.vmap(lambda a, b: a, in_axes=(0,))(f32(3), f32(3))),
    Row("vmap_in_axes_structure",
        lambda m: m.api.vmap(lambda a: a[0], in_axes=((0, 0),))((f32(3), f32(3), f32(3)))),
    Row("vmap_in_axes_keys",
        lambda m: m.api.vmap(lambda d: d["b"], in_axes=({"a": 0},))({"b": f32(3)})),
    Row("vmap_in_axes_float", lambda m: m.api.vmap(lambda a: a, in_axes=1.5)(f32(3))),
    Row("vmap_in_axes_str", lambda m: m.api.vmap(lambda a: a, in_axes="0")(f32(3))),
    Row("vmap_in_axis_oob", lambda m: m.api.vmap(lambda a: a, in_axes=2)(f32(3))),
    Row("vmap_in_axes_all_none", lambda m: m.api.vmap(lambda a: a, in_axes=None)(f32(3))),
    Row("vmap_out_axes_structure",
        lambda m: m.api.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(f32(3))),
    Row("vmap_out_axis_oob", lambda m: m.api.vmap(lambda a: a, out_axes=3)(f32(3))),
    Row("vmap_out_axes_none_batched", lambda m: m.api.vmap(lambda a: a, out_axes=None)(f32(3))),
    Row("vmap_sizes", lambda m: m.api.vmap(lambda a, b: a + b[0])(f32(3), f32(4))),
    Row("vmap_axis_size", lambda m: m.api.vmap(lambda a: a, axis_size=4)(f32(3))),
    Row("vmap_scalar", lambda m: m.api.vmap(lambda a: a)(np.float32(1))),
    Row("vmap_no_arguments", lambda m: m.api.vmap(lambda: 1.0)()),
    Row("vmap_string_leaf", lambda m: m.api.vmap(lambda a: a)("s")),
    Row("jvp_structure", lambda m: m.api.jvp(lambda a: a, (f32(3),), (f32(3), f32(3))),
        r"jvp: primals .* and tangents .* differ in structure"),
    Row("jvp_shape", lambda m: m.api.jvp(lambda a: a, (f32(3),), (f32(4),))),
    Row("jvp_dtype", lambda m: m.api.jvp(lambda a: a, (f32(3),), (f32(3, dtype=np.float64),)),
        r"jvp: primal and tangent 0 .*f32\[3\] and f64\[3\]"),
    Row("vjp_cotangent_shape", lambda m: m.api.vjp(lambda a: a, f32(3))[1](f32(4))),
    Row("vjp_cotangent_structure", lambda m: m.api.vjp(lambda a: a, f32(3))[1]((f32(3), f32(3)))),
    Row("grad_not_scalar", lambda m: m.api.grad(lambda a: a)(f32(3))),
    Row("grad_integer", lambda m: m.api.grad(lambda a: a)(1)),
]


def _jax_error(row: Row) -> type[BaseException]:
    try:
        row.call(JAX)
    except Exception as e:  # noqa: BLE001  (any type: it is what the row records)
        return type(e)
    raise AssertionError(f"{row.name}: jax accepts this call, so it is no bad call")


@pytest.mark.parametrize(
    "row", [pytest.param(r, id=r.name, marks=r.marks) for r in ROWS])
def test_error_type_as_jax(row: Row):
    expected = _jax_error(row)
    # A row records a builtin type (jax's own error classes have no fx counterpart).
    assert expected.__module__ == "builtins", expected
    with pytest.raises(Exception) as info:  # noqa: PT011  (the type is checked below)
        row.call(FX)
    got = type(info.value)
    assert issubclass(got, expected), (
        f"{row.name}: jax raises {expected.__name__}, fx raises {got.__name__}: {info.value}")
    if row.match:
        assert info.match(row.match)


def test_table_covers_numpy_lax_and_trees():
    names = [r.name for r in ROWS]
    assert len(names) == len(set(names))
    uses = {ns: sum(ns in r.call.__code__.co_names for r in ROWS) for ns in vars(FX)}
    # fx.scipy's rows check only that its broadcasting follows fx.numpy's
    assert all(n >= (3 if ns in ("sp", "st") else 10) for ns, n in uses.items()), uses


def test_mixed_dtype_dot_general_as_jax():
    # jax's dot_general takes operands of different dtypes (the result is the higher-precision
    # one); fx's converts them to it, which computes the same.
    rng = np.random.default_rng(0)
    for a, b in [(np.float32, np.int32), (np.int8, np.int32), (np.uint8, np.int8),
                 (np.float16, jnp.bfloat16), (np.float32, np.complex64), (np.bool_, np.int16)]:
        x = rng.uniform(-3, 3, (2, 3)).astype(a)
        y = rng.uniform(-3, 3, (3, 4)).astype(b)
        want = jax.lax.dot_general(x, y, DN)
        for fn in (fx.lax.dot_general, fx.jit(fx.lax.dot_general, static_argnums=2)):
            got = fn(x, y, DN)
            assert got.dtype == want.dtype, (a, b)
            np.testing.assert_allclose(np.asarray(got, np.complex128),
                                       np.asarray(want, np.complex128), rtol=1e-2)


def test_tensordot_negative_axes_as_jax():
    # jax contracts nothing for a negative int (an outer product), where NumPy raises.
    a, b = np.arange(6.0).reshape(2, 3), np.arange(4.0)
    want = jnp.tensordot(a, b, axes=-1)
    got = fnp.tensordot(a, b, axes=-1)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
