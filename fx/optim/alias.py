"""Ready-made optimizers: SGD (with momentum and Nesterov), Adam, AdamW and RMSProp, each a
:class:`~fx.optim.GradientTransformation` chained from :mod:`fx.optim.transform` exactly as
optax builds them. Every ``learning_rate`` may be a number or a schedule (a function of the
int32 step count, see :mod:`fx.optim.schedules`).

>>> import fx, fx.numpy as fnp
>>> params = {"w": fnp.ones(3)}
>>> opt = fx.optim.adam(1e-2)
>>> state = opt.init(params)
>>> grads = fx.grad(lambda p: fnp.sum(p["w"] ** 2))(params)
>>> updates, state = opt.update(grads, state, params)
>>> params = fx.optim.apply_updates(params, updates)
"""

from __future__ import annotations

from fx.optim.transform import (
    GradientTransformation,
    ScalarOrSchedule,
    add_decayed_weights,
    chain,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    trace,
)

__all__ = ["adam", "adamw", "momentum", "rmsprop", "sgd"]


def sgd(learning_rate: ScalarOrSchedule, momentum: float | None = None,
        nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent: ``-learning_rate * g``, or with ``momentum`` the momentum
    buffer ``t = g + momentum * t`` in place of ``g`` (``g + momentum * t`` with
    ``nesterov``)."""
    if momentum is None:
        if nesterov:
            raise ValueError("fx.optim.sgd: nesterov=True needs a momentum value")
        return scale_by_learning_rate(learning_rate)
    return chain(trace(momentum, nesterov), scale_by_learning_rate(learning_rate))


def momentum(learning_rate: ScalarOrSchedule, beta: float = 0.9,
             nesterov: bool = False) -> GradientTransformation:
    """SGD with (heavy-ball or Nesterov) momentum ``beta``; the same as
    ``sgd(learning_rate, beta, nesterov)``."""
    return sgd(learning_rate, beta, nesterov)


def adam(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8, eps_root: float = 0.0) -> GradientTransformation:
    """Adam (Kingma & Ba): ``-lr * m_hat / (sqrt(v_hat + eps_root) + eps)`` with bias-corrected
    moving averages of the gradient and its square."""
    return chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adamw(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
          eps: float = 1e-8, eps_root: float = 0.0, weight_decay: float = 1e-4,
          mask=None) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov & Hutter):
    ``-lr * (adam_direction + weight_decay * params)``. ``mask`` (a bool pytree like the params,
    or a function returning one) selects which parameters decay."""
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate: ScalarOrSchedule, decay: float = 0.9, eps: float = 1e-8,
            initial_scale: float = 0.0, centered: bool = False, momentum: float | None = None,
            nesterov: bool = False) -> GradientTransformation:
    """RMSProp (Tieleman & Hinton): ``-lr * g / sqrt(nu + eps)``, ``nu`` the running mean of
    ``g**2`` (``centered`` subtracts the squared running mean of ``g``), optionally followed by
    momentum."""
    parts = [scale_by_rms(decay, eps, initial_scale, centered)]
    if momentum is not None:
        parts.append(trace(momentum, nesterov))
    parts.append(scale_by_learning_rate(learning_rate))
    return chain(*parts)
