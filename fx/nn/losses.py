"""``fx.nn.losses``: cross entropy, L2 and the two knowledge-distillation losses.

Every function takes arrays (fx arrays, tracers or NumPy data) and is written over
``fx.numpy``/``fx.nn``, so it traces, differentiates, batches and compiles like any fx code.
``softmax_cross_entropy*`` and ``l2_loss`` return one loss per example (as optax does: the
caller chooses the reduction); the distillation losses return the batch mean, the number a
training step minimizes.

Distillation (Hinton, Vinyals & Dean, 2015): the student matches the teacher's output
distribution softened by a temperature ``T``,

    loss = α · T² · KL(softmax(t / T) ‖ softmax(s / T)) + (1 − α) · CE(s, labels)

averaged over the batch. The ``T²`` keeps the soft term's gradient magnitude independent of
``T`` (the softened gradients scale as 1/T²). The teacher's logits are treated as constants
(``stop_gradient``): the teacher is trained first and frozen. FitNets hints (Romero et al.,
2015) match an intermediate feature map through a learned adapter (``feature_hint``).
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx import numpy as fnp
from fx.core import get_aval
from fx.nn.encoding import one_hot
from fx.nn.normalization import log_softmax

__all__ = ["distillation", "feature_hint", "l2_loss", "softmax_cross_entropy",
           "softmax_cross_entropy_with_integer_labels"]


def _log_softmax(x):
    return log_softmax(x, axis=-1)


def softmax_cross_entropy(logits, labels):
    """Cross entropy between ``softmax(logits)`` and a label distribution, per example.

    Args:
      logits: ``(..., classes)`` unnormalized log-probabilities.
      labels: ``(..., classes)`` probabilities (one-hot or soft), same shape as ``logits``.

    Returns:
      ``-sum(labels * log_softmax(logits), axis=-1)``, shape ``logits.shape[:-1]``.

    >>> import fx, numpy as np
    >>> float(fx.nn.losses.softmax_cross_entropy(np.zeros(4, np.float32), np.eye(4)[1]))
    1.3862943649291992
    """
    la, ya = get_aval(logits), get_aval(labels)
    if la.shape != ya.shape:
        raise ValueError(f"fx.nn.losses.softmax_cross_entropy: labels {ya.str_short()} must "
                         f"have the logits' shape {la.str_short()} (for integer class ids use "
                         "softmax_cross_entropy_with_integer_labels)")
    logp = _log_softmax(logits)
    return -fnp.sum(fnp.asarray(labels).astype(logp.dtype) * logp, axis=-1)


def softmax_cross_entropy_with_integer_labels(logits, labels):
    """Cross entropy of ``softmax(logits)`` against integer class ids, per example.

    ``logits`` is ``(..., classes)``, ``labels`` integers of shape ``logits.shape[:-1]`` in
    ``[0, classes)``; returns ``-log_softmax(logits)[..., label]``.
    """
    la, ya = get_aval(logits), get_aval(labels)
    if not dtypes.is_int(ya.dtype) or ya.shape != la.shape[:-1]:
        raise ValueError(
            "fx.nn.losses.softmax_cross_entropy_with_integer_labels: labels must be integer "
            f"class ids of shape {la.shape[:-1]} for logits {la.str_short()}, got "
            f"{ya.str_short()}")
    logp = _log_softmax(logits)
    return -fnp.sum(one_hot(labels, la.shape[-1], dtype=logp.dtype) * logp, axis=-1)


def l2_loss(predictions, targets=None):
    """``0.5 * (predictions - targets) ** 2`` elementwise (optax's convention; ``targets``
    defaults to zero)."""
    d = fnp.asarray(predictions) if targets is None else fnp.asarray(predictions) - targets
    return 0.5 * d * d


def _hard_term(name: str, student_logits, labels):
    """Cross entropy against integer class ids, or against one-hot/soft labels of the
    logits' shape (chosen by the labels' dtype)."""
    sa, ya = get_aval(student_logits), get_aval(labels)
    if dtypes.is_int(ya.dtype) and ya.shape == sa.shape[:-1]:
        return softmax_cross_entropy_with_integer_labels(student_logits, labels)
    if dtypes.is_float(ya.dtype) and ya.shape == sa.shape:
        return softmax_cross_entropy(student_logits, labels)
    raise ValueError(f"fx.nn.losses.{name}: labels must be integer class ids of shape "
                     f"{sa.shape[:-1]} or one-hot/probabilities of shape {sa.shape} for student "
                     f"logits {sa.str_short()}, got {ya.str_short()}")


def distillation(student_logits, teacher_logits, labels=None, *, temperature: float = 1.0,
                 alpha: float | None = None):
    """Hinton's knowledge-distillation loss, averaged over the batch.

    ``alpha · T² · KL(softmax(teacher / T) ‖ softmax(student / T)) + (1 − alpha) · CE(student,
    labels)``, where the cross entropy uses the unsoftened student logits (``T = 1``).

    Args:
      student_logits: ``(batch..., classes)``.
      teacher_logits: the same shape; a constant of the loss (``stop_gradient``).
      labels: ``None`` (soft term only), integer class ids of shape ``(batch...)``, or
        one-hot/probability rows of the logits' shape (told apart by dtype).
      temperature: ``T > 0``.
      alpha: the soft term's weight in ``[0, 1]``; defaults to 0.5 with labels and 1.0
        without (an explicit ``alpha`` without labels scales the soft term).

    Returns:
      A scalar: the mean over every batch dimension.

    >>> import fx, numpy as np
    >>> s = np.array([[1.0, 0.0, -1.0]], np.float32)
    >>> float(fx.nn.losses.distillation(s, s, temperature=4.0))   # same distributions
    0.0
    """
    sa, ta = get_aval(student_logits), get_aval(teacher_logits)
    if sa.shape != ta.shape or sa.ndim < 1:
        raise ValueError(f"fx.nn.losses.distillation: student logits {sa.str_short()} and "
                         f"teacher logits {ta.str_short()} must have one shape (batch..., "
                         "classes)")
    if not temperature > 0:
        raise ValueError(f"fx.nn.losses.distillation: temperature must be > 0, got "
                         f"{temperature}")
    if alpha is None:
        alpha = 1.0 if labels is None else 0.5
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"fx.nn.losses.distillation: alpha must be in [0, 1], got {alpha}")
    t = np.float32(temperature)
    s = fnp.asarray(student_logits)
    teacher = lax.stop_gradient(fnp.asarray(teacher_logits).astype(s.dtype))
    log_p_t = _log_softmax(teacher / t)
    log_p_s = _log_softmax(s / t)
    # KL(p_t ‖ p_s) = sum p_t (log p_t - log p_s); log_softmax is finite, so p_t = 0 rows of
    # an underflowed teacher contribute 0 * finite = 0.
    kl = fnp.sum(fnp.exp(log_p_t) * (log_p_t - log_p_s), axis=-1)
    loss = (alpha * t * t) * fnp.mean(kl)
    if labels is not None and alpha < 1.0:
        loss = loss + (1.0 - alpha) * fnp.mean(_hard_term("distillation", s, labels))
    return loss


def feature_hint(student_feats, teacher_feats, adapter=None):
    """FitNets' hint loss: the mean squared error between ``adapter(student_feats)`` and the
    teacher's features (a constant: ``stop_gradient``).

    Args:
      student_feats: an intermediate student activation.
      teacher_feats: the teacher's activation it should predict.
      adapter: a callable mapping the student's features to the teacher's shape (e.g.
        ``lambda f: f @ w`` with ``w`` a trained parameter, or a stax ``apply_fun`` bound to
        its parameters); ``None`` when the shapes already agree.

    Returns:
      A scalar: the mean over all elements.

    >>> import fx, numpy as np
    >>> f = np.ones((2, 3), np.float32)
    >>> float(fx.nn.losses.feature_hint(f, 2 * f, adapter=lambda x: 2 * x))
    0.0
    """
    adapted = fnp.asarray(student_feats) if adapter is None else adapter(student_feats)
    aa, ta = get_aval(adapted), get_aval(teacher_feats)
    if aa.shape != ta.shape:
        raise ValueError(f"fx.nn.losses.feature_hint: the adapted student features "
                         f"{aa.str_short()} must match the teacher features {ta.str_short()}; "
                         "pass an adapter mapping one to the other")
    d = adapted - lax.stop_gradient(fnp.asarray(teacher_feats).astype(aa.dtype))
    return fnp.mean(d * d)
