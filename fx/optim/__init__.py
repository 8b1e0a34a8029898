"""``fx.optim``: optax-style optimizers over pytrees of fx arrays.

An optimizer is a :class:`GradientTransformation` ``(init, update)``; its state is a pytree of
fx arrays (step counts included), so a whole training step can be jitted::

    opt = fx.optim.adam(1e-3)                    # or a schedule: adam(cosine_decay_schedule(...))
    state = opt.init(params)

    @fx.jit
    def step(params, state, x, y):
        loss, grads = fx.value_and_grad(loss_fn)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return fx.optim.apply_updates(params, updates), state, loss

Optimizers: :func:`sgd`, :func:`momentum`, :func:`adam`, :func:`adamw`, :func:`rmsprop`.
Building blocks: :func:`chain`, :func:`clip_by_global_norm`, :func:`scale_by_adam`, ...
Schedules: :func:`constant_schedule`, :func:`exponential_decay`, :func:`cosine_decay_schedule`,
:func:`warmup_cosine_decay_schedule`, :func:`piecewise_constant_schedule` (also under the
short names ``constant``, ``cosine_decay``, ``warmup_cosine`` and ``piecewise_constant``).
"""

from fx.optim.alias import adam, adamw, momentum, rmsprop, sgd
from fx.optim.schedules import (
    constant_schedule,
    cosine_decay_schedule,
    exponential_decay,
    join_schedules,
    linear_schedule,
    piecewise_constant_schedule,
    polynomial_schedule,
    warmup_cosine_decay_schedule,
)
from fx.optim.transform import (
    EmptyState,
    GradientTransformation,
    ScaleByAdamState,
    ScaleByRmsState,
    ScaleByScheduleState,
    TraceState,
    add_decayed_weights,
    apply_updates,
    chain,
    clip_by_global_norm,
    global_norm,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_schedule,
    trace,
)

# Short names used in fx's docs and examples.
constant = constant_schedule
cosine_decay = cosine_decay_schedule
warmup_cosine = warmup_cosine_decay_schedule
piecewise_constant = piecewise_constant_schedule
