"""``fx.nn.losses``: values and gradients against a jax reference written from the formulas,
the T² scaling of the soft term, alpha = 0 as plain cross entropy, and the errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.nn.losses as L


def _logits(seed, shape=(6, 5), scale=3.0):
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def _jax_distillation(s, t, labels, temperature, alpha):
    log_pt = jax.nn.log_softmax(jax.lax.stop_gradient(t) / temperature)
    log_ps = jax.nn.log_softmax(s / temperature)
    kl = jnp.sum(jnp.exp(log_pt) * (log_pt - log_ps), axis=-1)
    loss = alpha * temperature ** 2 * jnp.mean(kl)
    if labels is not None:
        onehot = labels if labels.ndim == s.ndim else jax.nn.one_hot(labels, s.shape[-1])
        ce = -jnp.sum(onehot * jax.nn.log_softmax(s), axis=-1)
        loss = loss + (1 - alpha) * jnp.mean(ce)
    return loss


LABELS = np.array([0, 4, 2, 2, 1, 3], np.int32)


@pytest.mark.parametrize("labels,temperature,alpha", [
    (None, 1.0, 1.0), (None, 4.0, 1.0), (LABELS, 2.0, 0.7), (np.eye(5, dtype=np.float32)[LABELS],
                                                              3.0, 0.25)])
def test_distillation_value_and_gradient_match_jax(labels, temperature, alpha):
    s, t = _logits(1), _logits(2)

    def f(s):
        return L.distillation(s, t, labels, temperature=temperature, alpha=alpha)

    def g(s):
        return _jax_distillation(s, t, None if labels is None else jnp.asarray(labels),
                                 temperature, alpha)

    # (jax.jit: one compile of the reference instead of one per op)
    value, grad = jax.jit(jax.value_and_grad(g))(s)
    np.testing.assert_allclose(np.asarray(f(s)), np.asarray(value), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fx.grad(f)(s)), np.asarray(grad), rtol=2e-5,
                               atol=1e-6)
    # The teacher gets no gradient (a frozen constant of the loss).
    gt = fx.grad(lambda t_: L.distillation(s, t_, labels, temperature=temperature,
                                           alpha=alpha))(t)
    assert np.array_equal(np.asarray(gt), np.zeros_like(t))


@pytest.mark.slow  # compiling the gradient program takes seconds on a loaded machine
def test_distillation_gradient_under_jit():
    s, t = _logits(1), _logits(2)

    def f(s):
        return L.distillation(s, t, LABELS, temperature=2.0, alpha=0.7)

    def g(s):
        return _jax_distillation(s, t, jnp.asarray(LABELS), 2.0, 0.7)

    np.testing.assert_allclose(np.asarray(fx.jit(fx.grad(f))(s)), np.asarray(jax.grad(g)(s)),
                               rtol=2e-5, atol=1e-6)


def test_temperature_squared_scaling():
    # The soft term is T² times the KL of the softened distributions: divided by T², it is
    # the T=1 loss of the logits divided by T.
    s, t = _logits(3), _logits(4)
    for temperature in (2.0, 5.0):
        soft = float(L.distillation(s, t, temperature=temperature))
        plain = float(L.distillation(s / temperature, t / temperature, temperature=1.0))
        np.testing.assert_allclose(soft, temperature ** 2 * plain, rtol=1e-5)
    # alpha scales it linearly when given without labels.
    np.testing.assert_allclose(float(L.distillation(s, t, temperature=2.0, alpha=0.25)),
                               0.25 * float(L.distillation(s, t, temperature=2.0)), rtol=1e-6)


def test_alpha_zero_is_plain_cross_entropy():
    s, t = _logits(5), _logits(6)
    want = float(np.mean(np.asarray(L.softmax_cross_entropy_with_integer_labels(s, LABELS))))
    got = float(L.distillation(s, t, LABELS, temperature=3.0, alpha=0.0))
    assert got == want
    ref = -jax.nn.log_softmax(s)[np.arange(6), LABELS].mean()
    np.testing.assert_allclose(got, float(ref), rtol=1e-6)
    onehot = np.eye(5, dtype=np.float32)[LABELS]
    assert float(L.distillation(s, t, onehot, temperature=3.0, alpha=0.0)) == got


def test_identical_distributions_have_zero_soft_loss():
    s = _logits(7)
    assert abs(float(L.distillation(s, s, temperature=3.0))) < 1e-6


def test_feature_hint_and_gradient_of_the_adapter():
    rng = np.random.default_rng(8)
    fs = rng.standard_normal((4, 3)).astype(np.float32)
    ft = rng.standard_normal((4, 7)).astype(np.float32)
    w = rng.standard_normal((3, 7)).astype(np.float32)

    def f(w, fs):
        return L.feature_hint(fs, ft, lambda x: x @ w)

    def g(w, fs):
        return jnp.mean((fs @ w - ft) ** 2)

    np.testing.assert_allclose(float(f(w, fs)), float(g(w, fs)), rtol=1e-6)
    want = jax.jit(jax.grad(g, argnums=(0, 1)))(w, fs)
    for a, b in zip(fx.grad(f, argnums=(0, 1))(w, fs), want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)


def test_cross_entropy_and_l2_match_jax():
    s = _logits(9)
    onehot = np.eye(5, dtype=np.float32)[LABELS]
    want = -np.sum(onehot * np.asarray(jax.nn.log_softmax(s)), axis=-1)
    np.testing.assert_allclose(np.asarray(L.softmax_cross_entropy(s, onehot)), want, rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(L.softmax_cross_entropy_with_integer_labels(s, LABELS)), want, rtol=1e-6)
    assert np.array_equal(np.asarray(L.l2_loss(s, 1.0)), 0.5 * (s - 1) * (s - 1))


def test_errors_name_the_function_and_shapes():
    s = _logits(10)
    with pytest.raises(ValueError, match=r"distillation: student logits .* teacher"):
        L.distillation(s, s[:, :3])
    with pytest.raises(ValueError, match="temperature must be > 0"):
        L.distillation(s, s, temperature=0.0)
    with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\]"):
        L.distillation(s, s, LABELS, alpha=1.5)
    with pytest.raises(ValueError, match="labels must be integer class ids"):
        L.distillation(s, s, LABELS[:3])
    with pytest.raises(ValueError, match="feature_hint: the adapted student"):
        L.feature_hint(s, s[:, :2])
    with pytest.raises(ValueError, match="integer_labels"):
        L.softmax_cross_entropy(s, LABELS)
