"""The primitives ONNX export does not translate, each with the reason.

``tests/fx/export/test_onnx.py`` checks that every fx primitive has an ONNX rule, is a call
primitive (inlined), or is listed here; the exporter quotes the reason in its error.
"""

from __future__ import annotations

from fx.callback import pure_callback_p
from fx.core import Primitive
from fx.custom_derivatives import custom_lin_p
from fx.debug import debug_print_p
from fx.lax import linalg, parallel
from fx.lax import parallel_moves as moves
from fx.lax import primitives as P
from fx.lax import scipy_special as special
from fx.quant.nf4 import nf4_dot_p
from fx.random import prng

_COMPLEX = ("ONNX Runtime has no complex tensors; export the real and imaginary parts as "
            "separate real arrays")
_SPECIAL = ("no ONNX operator computes this special function; fx evaluates it with series "
            "and rational approximations that would have to be spelled out in elementary ops")
_LINALG = ("a LAPACK-style decomposition or solve: ONNX has no operator for it (only Det and "
           "MatMul); export the model without it or precompute it")
_COLLECTIVE = ("a named-axis collective exists only inside fx.vmap(..., axis_name=...), where "
               "it becomes an ordinary array operation, or fx.pmap and fx.shard_map, whose "
               "program is one device's part of a computation over many; a single ONNX graph "
               "has no such axis")
_GRADIENT = "appears only in derivatives (training-time programs); inference graphs lack it"

NOT_EXPORTABLE: dict[Primitive, str] = {
    **{p: _COMPLEX for p in (P.complex_p, P.conj_p, P.real_p, P.imag_p)},
    P.fft_p: ("ONNX's DFT works on a trailing real/imaginary axis and fx's fft on complex "
              "arrays, which ONNX Runtime lacks; " + _COMPLEX),
    **{p: _SPECIAL for p in (
        P.erf_inv_p, P.lgamma_p, P.digamma_p, P.polygamma_p, P.igamma_p, P.igammac_p,
        P.igamma_grad_a_p, P.regularized_incomplete_beta_p, P.zeta_p, P.bessel_i0e_p,
        P.bessel_i1e_p, special.erfcx_p, special.dawsn_p, special.expi_p, special.spence_p,
        special.ndtri_p, special.si_p, special.ci_p, special.fresnel_s_p,
        special.fresnel_c_p, special.expn_p)},
    **{p: _LINALG for p in (
        linalg.cholesky_p, linalg.eig_p, linalg.eigh_p, linalg.geqrf_p, linalg.hessenberg_p,
        linalg.householder_product_p, linalg.lu_p, linalg.lu_pivots_to_permutation_p,
        linalg.ormqr_p, linalg.qr_p, linalg.schur_p, linalg.svd_p, linalg.triangular_solve_p,
        linalg.tridiagonal_p, linalg.tridiagonal_solve_p)},
    **{p: _COLLECTIVE for p in (P.psum_p, P.pmax_p, P.pmin_p, P.all_gather_p,
                                P.axis_index_p, moves.psum_scatter_p, moves.ppermute_p,
                                moves.all_to_all_p, parallel.pvary_p)},
    **{p: ("a placeholder of a derivative taken inside a shard_map with check_vma, resolved "
           "(fx.spmd_vma.resolve_checked) before the program is used; no exported graph has "
           "it") for p in (parallel.checked_scale_p, parallel.checked_sum_p)},
    P.select_and_gather_add_p: _GRADIENT + " (the tangent of max pooling)",
    P.select_and_scatter_add_p: _GRADIENT + " (the cotangent of max pooling)",
    custom_lin_p: "exists only inside linearized jaxprs being transposed (reverse mode)",
    P.nextafter_p: "a bit-level float operation with no ONNX operator (ONNX has no bitcast)",
    P.bitcast_convert_type_p: "ONNX has no bitcast between dtypes",
    pure_callback_p: "calls back into Python, which an ONNX graph cannot do",
    nf4_dot_p: ("a product by 4-bit NormalFloat weights (fx.quant.nf4): NF4's 16 code values "
                "are not evenly spaced, so ONNX's int4 DequantizeLinear cannot express them; "
                "export the model with the weights dequantized (fx.quant.nf4.dequantize)"),
    prng.random_wrap_p: ("a typed PRNG key array (fx.random.key) has no ONNX type; export with "
                         "raw uint32 keys (fx.random.PRNGKey, or fx.random.key_data(k))"),
    prng.random_unwrap_p: "as random_wrap: ONNX has no type for a typed PRNG key array",
    debug_print_p: ("prints from Python at run time; remove fx.debug.print before exporting "
                    "(ONNX graphs cannot print)"),
}
