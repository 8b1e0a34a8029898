"""Gradient transformations: the building blocks of :mod:`fx.optim` optimizers.

A :class:`GradientTransformation` is a pair of pure functions, ``init(params) -> state`` and
``update(updates, state, params=None) -> (updates, state)``, as in optax. ``updates`` and
``params`` are pytrees of the same structure; ``state`` is a pytree of fx arrays (NamedTuples
of arrays, never Python counters), so a whole training step, optimizer included, can be
jitted, and the state can be carried through ``fx.jit`` calls, ``vmap``-ed over or saved.

Transformations compose with :func:`chain`; :func:`apply_updates` adds the final updates to the
parameters. Each rule follows optax's arithmetic in the same order, so the same gradients give
the same updates up to rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import fx.numpy as fnp
from fx import dtypes, lax
from fx.tree_util import tree_leaves, tree_map

__all__ = [
    "AddDecayedWeightsState", "ClipByGlobalNormState", "EmptyState", "GradientTransformation",
    "ScaleByAdamState", "ScaleByRmsState", "ScaleByScheduleState", "ScaleState", "TraceState",
    "add_decayed_weights", "apply_updates", "chain", "clip_by_global_norm", "global_norm",
    "scale", "scale_by_adam", "scale_by_learning_rate", "scale_by_rms", "scale_by_schedule",
    "trace",
]

Params = Any
Updates = Any
Schedule = Callable[[Any], Any]
ScalarOrSchedule = float | Schedule


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(updates, state, params=None) -> (updates, state)``.

    >>> opt = fx.optim.sgd(0.1)
    >>> state = opt.init({"w": fx.numpy.ones(2)})
    >>> updates, state = opt.update({"w": fx.numpy.ones(2)}, state)
    >>> updates["w"]
    Array([-0.1, -0.1], dtype=float32)
    """

    init: Callable[[Params], Any]
    update: Callable[..., tuple[Updates, Any]]


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


ScaleState = EmptyState
AddDecayedWeightsState = EmptyState
ClipByGlobalNormState = EmptyState


class TraceState(NamedTuple):
    trace: Params


class ScaleByAdamState(NamedTuple):
    count: Any  # int32 scalar: how many updates have been made
    mu: Updates
    nu: Updates


class ScaleByRmsState(NamedTuple):
    nu: Updates
    mu: Updates  # () unless centered


class ScaleByScheduleState(NamedTuple):
    count: Any


# --- helpers ---------------------------------------------------------------------------------


def _zeros_like(tree):
    return tree_map(lambda p: fnp.zeros(fnp.shape(p), fnp.result_type(p)), tree)


def _count():
    return fnp.zeros((), dtypes.int32)


def _increment(count):
    # Saturates instead of wrapping, so a schedule never sees a negative step after 2**31 steps.
    limit = np.iinfo(np.int32).max
    return fnp.where(count < limit, count + 1, limit).astype(dtypes.int32)


def _check_tree(name: str, updates, other, what: str) -> None:
    from fx.tree_util import tree_structure

    if tree_structure(updates) != tree_structure(other):
        raise ValueError(f"fx.optim.{name}: the updates have structure {tree_structure(updates)} "
                         f"but the {what} have {tree_structure(other)}; pass the same pytree "
                         "that init() was given")


def _cast_like(x, t):
    """``x`` (a Python number or fx scalar) in the dtype of leaf ``t``."""
    return fnp.asarray(x, dtype=fnp.result_type(t))


# --- composition -----------------------------------------------------------------------------


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply ``transforms`` one after the other; the state is the tuple of their states.

    >>> opt = fx.optim.chain(fx.optim.clip_by_global_norm(1.0), fx.optim.adam(1e-3))
    """

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if len(state) != len(transforms):
            raise ValueError(f"fx.optim.chain: state has {len(state)} entries for "
                             f"{len(transforms)} transformations; pass the state from init()")
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


def apply_updates(params: Params, updates: Updates) -> Params:
    """``params + updates`` leaf by leaf, keeping each parameter's dtype.

    >>> fx.optim.apply_updates({"w": fx.numpy.ones(2)}, {"w": fx.numpy.full(2, -0.5)})
    {'w': Array([0.5, 0.5], dtype=float32)}
    """
    _check_tree("apply_updates", updates, params, "params")
    return tree_map(lambda p, u: fnp.asarray(p + u).astype(fnp.result_type(p)), params, updates)


# --- stateless transformations ---------------------------------------------------------------


def scale(step_size: float) -> GradientTransformation:
    """Multiply the updates by a constant."""

    def update(updates, state, params=None):
        return tree_map(lambda g: step_size * g, updates), state

    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """Multiply the updates by ``step_size_fn(count)``, ``count`` the number of earlier
    updates (an int32 array, so the schedule runs under jit)."""

    def init(params):
        return ScaleByScheduleState(_count())

    def update(updates, state, params=None):
        step_size = step_size_fn(state.count)
        updates = tree_map(lambda g: _cast_like(step_size, g) * g, updates)
        return updates, ScaleByScheduleState(_increment(state.count))

    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate: ScalarOrSchedule, *,
                           flip_sign: bool = True) -> GradientTransformation:
    """Multiply by ``-learning_rate`` (a number or a schedule of the step count)."""
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


def add_decayed_weights(weight_decay: float = 0.0, mask=None) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled weight decay, as in AdamW).

    ``mask`` is a pytree of bools like ``params`` (or a function of ``params`` returning one);
    leaves marked False are not decayed.
    """

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("fx.optim.add_decayed_weights: update() needs params "
                             "(call opt.update(grads, state, params))")
        _check_tree("add_decayed_weights", updates, params, "params")
        m = mask(params) if callable(mask) else mask
        if m is None:
            return tree_map(lambda g, p: g + weight_decay * p, updates, params), state
        return tree_map(lambda g, p, keep: g + weight_decay * p if keep else g,
                        updates, params, m), state

    return GradientTransformation(lambda params: EmptyState(), update)


def global_norm(updates: Updates):
    """The L2 norm of all leaves together, ``sqrt(sum(sum(x**2)))``."""
    leaves = tree_leaves(updates)
    if not leaves:
        return fnp.zeros((), dtypes.float32)
    return fnp.sqrt(sum(fnp.sum(fnp.square(x)) for x in leaves))


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Scale all updates by ``max_norm / global_norm`` when the global norm exceeds
    ``max_norm`` (leaving their direction unchanged).

    >>> clip = fx.optim.clip_by_global_norm(1.0)
    >>> clip.update([fx.numpy.array([3.0, 4.0])], clip.init(None))[0]
    [Array([0.6, 0.8], dtype=float32)]
    """

    def update(updates, state, params=None):
        g_norm = global_norm(updates)
        trigger = g_norm < max_norm

        def clip(t):
            return fnp.where(trigger, t, (t / g_norm.astype(t.dtype)) * max_norm)

        return tree_map(clip, updates), state

    return GradientTransformation(lambda params: EmptyState(), update)


# --- stateful transformations ----------------------------------------------------------------


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: ``t = g + decay * t``; the update is ``t`` (or ``g + decay * t`` with
    ``nesterov``)."""

    def init(params):
        return TraceState(_zeros_like(params))

    def update(updates, state, params=None):
        _check_tree("trace", updates, state.trace, "momentum buffers")
        f = lambda g, t: g + decay * t
        new_trace = tree_map(f, updates, state.trace)
        updates = tree_map(f, updates, new_trace) if nesterov else new_trace
        return updates, TraceState(new_trace)

    return GradientTransformation(init, update)


def _moment(updates, moments, decay: float, order: int):
    if order == 1:
        return tree_map(lambda g, t: (1 - decay) * g + decay * t, updates, moments)
    return tree_map(lambda g, t: (1 - decay) * fnp.square(g) + decay * t, updates, moments)


def _bias_correction(moments, decay: float, count):
    # The correction is formed in each leaf's own dtype, so float64 parameters get a float64
    # correction (optax forms it in the default float type).
    def correct(t):
        c = 1 - fnp.power(_cast_like(decay, t), count.astype(fnp.result_type(t)))
        return t / c

    return tree_map(correct, moments)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                  eps_root: float = 0.0) -> GradientTransformation:
    """Adam's rescaling: bias-corrected first moment over the root of the second,
    ``m_hat / (sqrt(v_hat + eps_root) + eps)``."""

    def init(params):
        return ScaleByAdamState(_count(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        _check_tree("scale_by_adam", updates, state.mu, "moments")
        mu = _moment(updates, state.mu, b1, 1)
        nu = _moment(updates, state.nu, b2, 2)
        count = _increment(state.count)
        mu_hat = _bias_correction(mu, b1, count)
        nu_hat = _bias_correction(nu, b2, count)
        updates = tree_map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        return updates, ScaleByAdamState(count, mu, nu)

    return GradientTransformation(init, update)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                 centered: bool = False) -> GradientTransformation:
    """RMSProp's rescaling: ``g / sqrt(nu + eps)`` with ``nu`` the running mean of ``g**2``
    (minus the squared running mean of ``g`` when ``centered``)."""

    def init(params):
        # The fill goes through asarray(dtype=...): fnp.full rounds Python floats to float32.
        nu = tree_map(lambda p: fnp.full(fnp.shape(p), _cast_like(initial_scale, p)), params)
        return ScaleByRmsState(nu, _zeros_like(params) if centered else ())

    def update(updates, state, params=None):
        _check_tree("scale_by_rms", updates, state.nu, "running averages")
        nu = _moment(updates, state.nu, decay, 2)
        if centered:
            mu = _moment(updates, state.mu, decay, 1)
            updates = tree_map(lambda g, m, n: g * lax.rsqrt(n - fnp.square(m) + eps),
                               updates, mu, nu)
        else:
            mu = ()
            updates = tree_map(lambda g, n: g * lax.rsqrt(n + eps), updates, nu)
        return updates, ScaleByRmsState(nu, mu)

    return GradientTransformation(init, update)
