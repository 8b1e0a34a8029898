"""``fx.nn.dot_product_attention``: scaled dot-product attention, as jax's.

It follows jax's ``implementation="xla"`` computation step by step (logits in at least
float32, masks as a large negative logit, softmax in float32, probabilities in the key's
dtype), so the two agree to rounding; it is written over ``fx.numpy``/``fx.lax``, so it
traces, batches and compiles.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx import numpy as fnp
from fx.core import get_aval
from fx.nn.normalization import logsumexp, softmax
from fx.numpy._promote import to_array

__all__ = ["dot_product_attention"]


def _to_4d(t, name: str):
    t = to_array(t, f"fx.nn.dot_product_attention ({name})")
    nd = get_aval(t).ndim
    if nd > 4:
        raise ValueError(f"fx.nn.dot_product_attention: {name} must have rank <= 4, got "
                         f"{get_aval(t).str_short()}")
    return lax.expand_dims(t, tuple(range(4 - nd))) if nd < 4 else t


def _check(name: str, t, shape, dtype) -> None:
    aval = get_aval(t)
    if aval.ndim != len(shape) or any(s != -1 and d != s for d, s in zip(aval.shape, shape)):
        shown = tuple("*" if s == -1 else s for s in shape)
        raise ValueError(f"fx.nn.dot_product_attention: {name} must have shape {shown}, got "
                         f"{aval.str_short()}")
    if dtype is not None and aval.dtype != dtype:
        raise ValueError(f"fx.nn.dot_product_attention: {name} must have dtype {dtype}, got "
                         f"{aval.str_short()}")


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
    """Scaled dot-product attention, ``softmax(q k^T * scale + bias) v``, as jax's.

    ``query`` is ``(B, T, N, H)``, ``key`` and ``value`` ``(B, S, K, H)`` with ``N`` a multiple
    of ``K`` (grouped-query attention; the batch dimension may be left out). ``bias`` (added
    to the logits) and the boolean ``mask`` (False hides a key) broadcast to ``(B, N, T, S)``.
    ``is_causal`` hides keys after the query's position, ``local_window_size = (left, right)``
    (or one int for both) keys outside the window, ``query_seq_lengths`` /
    ``key_value_seq_lengths`` (int32 ``(B,)``) padding positions; queries past their length
    give zeros. ``scale`` defaults to ``1 / sqrt(H)``. With ``return_residual`` the result is
    ``(encoded, logsumexp)``, the second ``(B, T, N)`` without a gradient. ``implementation``
    may be ``None`` or ``"xla"`` (fx has no cuDNN path).

    Example::

        >>> q = fx.numpy.ones((2, 5, 4, 8)); kv = fx.numpy.ones((2, 7, 2, 8))
        >>> fx.nn.dot_product_attention(q, kv, kv, is_causal=True).shape
        (2, 5, 4, 8)
    """
    if implementation not in (None, "xla"):
        raise NotImplementedError(
            f"fx.nn.dot_product_attention: implementation={implementation!r} is not available; "
            "fx computes attention as jax's implementation='xla' (pass None or 'xla')")
    out_rank = get_aval(to_array(query, "fx.nn.dot_product_attention")).ndim
    q, k, v = (_to_4d(t, n) for t, n in ((query, "query"), (key, "key"), (value, "value")))
    B, S, K, H = get_aval(k).shape
    kdt = get_aval(k).dtype
    if not dtypes.is_float(kdt):
        raise TypeError(f"fx.nn.dot_product_attention: query, key and value must be floating, "
                        f"got key {get_aval(k).str_short()}")
    _check("value", v, (B, S, K, H), kdt)
    _check("query", q, (B, -1, -1, H), kdt)
    T, N = get_aval(q).shape[1:3]
    if K == 0 or N % K:
        raise ValueError(f"fx.nn.dot_product_attention: the query's {N} heads must be a "
                         f"multiple of the key's {K}")
    bias = None if bias is None else _to_4d(bias, "bias")
    mask = None if mask is None else _to_4d(mask, "mask")
    if mask is not None:
        _check("mask", mask, (-1,) * 4, dtypes.bool_)
    for name, lengths in (("query_seq_lengths", query_seq_lengths),
                          ("key_value_seq_lengths", key_value_seq_lengths)):
        if lengths is not None:
            _check(name, to_array(lengths, "fx.nn.dot_product_attention"), (B,), dtypes.int32)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    if scale is None:
        scale = 1.0 / float(np.sqrt(H))

    G = N // K
    # Logits in at least float32 (jax's promote_types(dtype, float32) for floats).
    logits_dt = dtypes.float64 if kdt == dtypes.float64 else dtypes.float32
    # Logits: contract H, batch over (B, K); the G query heads of a group are free dims.
    qg = lax.reshape(q, (B, T, K, G, H))
    logits = lax.dot_general(qg, k, (((4,), (3,)), ((0, 2), (0, 2))),
                             preferred_element_type=logits_dt)     # (B, K, T, G, S)
    logits = lax.reshape(lax.transpose(logits, (0, 1, 3, 2, 4)), (B, N, T, S))
    logits = lax.mul(logits, np.asarray(scale, logits_dt))
    if bias is not None:
        logits = fnp.add(logits, bias).astype(logits_dt)

    keep = _combined_mask(B, N, T, S, mask, is_causal, local_window_size, query_seq_lengths,
                          key_value_seq_lengths)
    if keep is not None:
        big = min(float(dtypes.finfo(logits_dt).max), float(np.finfo(np.float32).max))
        logits = fnp.where(keep, logits, np.asarray(-0.7 * big, logits_dt))
    logits32 = logits.astype(dtypes.float32)
    probs = softmax(logits32, axis=-1).astype(kdt)
    pg = lax.reshape(probs, (B, K, G, T, S))
    encoded = lax.dot_general(pg, v, (((4,), (1,)), ((0, 1), (0, 2))))   # (B, K, G, T, H)
    encoded = lax.reshape(lax.transpose(encoded, (0, 3, 1, 2, 4)), (B, T, N, H))
    if query_seq_lengths is not None:
        valid = fnp.less(fnp.arange(T, dtype=dtypes.int32)[None, :],
                         fnp.asarray(query_seq_lengths)[:, None])
        encoded = fnp.multiply(encoded, valid[:, :, None, None].astype(get_aval(encoded).dtype))
    if out_rank < 4:
        encoded = lax.reshape(encoded, get_aval(encoded).shape[4 - out_rank:])
    if not return_residual:
        return encoded
    lse = logsumexp(logits32, axis=-1).astype(kdt)                          # (B, N, T)
    lse = lax.stop_gradient(lax.transpose(lse, (0, 2, 1)))
    if out_rank < 4:
        lse = lax.reshape(lse, get_aval(lse).shape[4 - out_rank:])
    return encoded, lse


def _combined_mask(B, N, T, S, mask, is_causal, window, q_lengths, kv_lengths):
    """The boolean (broadcastable to ``(B, N, T, S)``) of the logits that count, or None."""
    keep = mask
    rows = fnp.arange(T, dtype=dtypes.int32)[:, None]
    cols = fnp.arange(S, dtype=dtypes.int32)[None, :]

    def both(a, b):
        return b if a is None else fnp.logical_and(a, b)

    if is_causal:
        keep = both(keep, fnp.greater_equal(rows, cols)[None, None])
    if window is not None:
        left, right = (int(w) for w in window)
        inside = fnp.logical_and(fnp.less_equal(rows, fnp.add(cols, left)),
                                 fnp.greater_equal(rows, fnp.subtract(cols, right)))
        keep = both(keep, inside[None, None])
    if q_lengths is not None:
        q_ok = fnp.less(rows[None], fnp.asarray(q_lengths)[:, None, None])
        keep = both(keep, q_ok[:, None])
    if kv_lengths is not None:
        kv_ok = fnp.less(cols[None], fnp.asarray(kv_lengths)[:, None, None])
        keep = both(keep, kv_ok[:, None])
    return keep
