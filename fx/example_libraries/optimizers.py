"""Optimizers as ``(init_fun, update_fun, get_params)`` triples, after
``jax.example_libraries.optimizers``.

- ``init_fun(params) -> opt_state`` for any pytree of arrays ``params``;
- ``update_fun(step, grads, opt_state) -> opt_state``: ``step`` is the iteration index (an
  int or a traced integer), ``grads`` has the structure of ``params``;
- ``get_params(opt_state) -> params``.

``opt_state`` is an :class:`OptimizerState`, itself a pytree (its leaves are the per-parameter
state arrays), so ``update_fun`` can be ``fx.jit``-compiled and the state passed through it.
Each optimizer is written for one array by the :func:`optimizer` decorator, which maps it over
the leaves. Step sizes are a scalar or a schedule ``step -> scalar`` (:func:`make_schedule`).
The arithmetic follows jax's formulas, so fx and jax states agree step by step.

>>> import fx.numpy as fnp
>>> from fx.example_libraries import optimizers
>>> init, update, get_params = optimizers.adam(1e-3)
>>> state = init({"w": fnp.ones(3)})
>>> state = update(0, {"w": fnp.ones(3)}, state)
>>> print(get_params(state)["w"])
[0.999 0.999 0.999]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import fx.numpy as fnp
from fx import tree_util

__all__ = [
    "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn", "Schedule",
    "State", "Step", "UpdateFn", "Updates", "adagrad", "adam", "adamax",
    "clip_grads", "constant", "exponential_decay", "inverse_time_decay", "l2_norm",
    "make_schedule", "momentum", "nesterov", "optimizer", "pack_optimizer_state",
    "piecewise_constant", "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
    "unpack_optimizer_state",
]

Schedule = Callable[[Any], Any]
Step = int
Params = Any
Updates = Any  # a pytree of gradients, shaped as Params
State = Any
InitFn = Callable[[Params], "OptimizerState"]
UpdateFn = Callable[[Any, Params, "OptimizerState"], "OptimizerState"]
ParamsFn = Callable[["OptimizerState"], Params]


class OptimizerState(NamedTuple):
    """Per-leaf optimizer states, flattened: ``packed_state[k]`` holds the leaves of the state
    of parameter leaf ``k``, ``subtree_defs[k]`` that state's structure and ``tree_def`` the
    parameters' structure. A pytree whose leaves are the state arrays."""

    packed_state: tuple
    tree_def: tree_util.PyTreeDef
    subtree_defs: tuple


tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


class Optimizer(NamedTuple):
    """What an :func:`optimizer`-decorated constructor returns; unpacks as the triple."""

    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]
              ) -> Callable[..., Optimizer]:
    """Lift a constructor of single-array optimizers to one of pytree optimizers.

    ``opt_maker(*args, **kwargs)`` returns ``(init, update, get_params)`` for one array:
    ``init(x0) -> state`` (any pytree), ``update(step, g, state) -> state`` and
    ``get_params(state) -> x``. The decorated constructor returns an :class:`Optimizer` whose
    functions take and give pytrees, applying those per leaf.

    Example::

        @optimizer
        def sign_sgd(step_size):
            step_size = make_schedule(step_size)
            return (lambda x0: x0, lambda i, g, x: x - step_size(i) * fnp.sign(g),
                    lambda x: x)
    """

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)
        name = getattr(opt_maker, "__name__", "optimizer")

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_util.tree_flatten(x0_tree)
            flat_states = [tree_util.tree_flatten(init(x0)) for x0 in x0_flat]
            return OptimizerState(tuple(s for s, _ in flat_states), tree,
                                  tuple(d for _, d in flat_states))

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            _check_state(opt_state, f"{name}'s update_fun")
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = tree_util.tree_flatten(grad_tree)
            if tree2 != tree:
                raise TypeError(
                    f"{name}'s update_fun: the gradient tree has structure {tree2}, but the "
                    f"parameters the state was made from have structure {tree}; pass gradients "
                    "of the parameters (e.g. fx.grad(loss)(get_params(state), ...))")
            new_flat, new_defs = [], []
            for g, leaves, sub in zip(grad_flat, states_flat, subtrees):
                new = update(i, g, tree_util.tree_unflatten(sub, leaves))
                leaves2, sub2 = tree_util.tree_flatten(new)
                if sub2 != sub:
                    raise TypeError(
                        f"{name}'s update_fun: the per-leaf update returned a state of "
                        f"structure {sub2}, but init made {sub}; update must keep the state's "
                        "structure")
                new_flat.append(leaves2)
                new_defs.append(sub2)
            return OptimizerState(tuple(new_flat), tree, tuple(new_defs))

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            _check_state(opt_state, f"{name}'s get_params")
            states_flat, tree, subtrees = opt_state
            params = [get_params(tree_util.tree_unflatten(sub, leaves))
                      for leaves, sub in zip(states_flat, subtrees)]
            return tree_util.tree_unflatten(tree, params)

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


def _check_state(opt_state, what: str) -> None:
    if not isinstance(opt_state, OptimizerState):
        raise TypeError(f"{what}: expected the OptimizerState that init_fun returned, got "
                        f"{type(opt_state).__name__}")


# --- optimizers (jax's update formulas, one array at a time) -------------------------------------


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x -= step_size(i) * g``."""
    step_size = make_schedule(step_size)

    def update(i, g, x):
        return x - step_size(i) * g

    return (lambda x0: x0), update, (lambda x: x)


@optimizer
def momentum(step_size, mass: float):
    """Heavy-ball momentum: ``v = mass * v + g; x -= step_size(i) * v``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return init, update, lambda state: state[0]


@optimizer
def nesterov(step_size, mass: float):
    """Nesterov's accelerated gradient: ``v = mass * v + g; x -= step_size(i) * (mass * v +
    g)``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return init, update, lambda state: state[0]


@optimizer
def adagrad(step_size, momentum: float = 0.9):
    """Adagrad with momentum on the preconditioned gradient ``g / sqrt(sum of g**2)``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0), fnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + fnp.square(g)
        g_sq_inv_sqrt = fnp.where(g_sq > 0, 1.0 / fnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, lambda state: state[0]


@optimizer
def rmsprop(step_size, gamma: float = 0.9, eps: float = 1e-8):
    """RMSProp: a running mean of ``g**2`` (decay ``gamma``) scales the step."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + fnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / fnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return init, update, lambda state: state[0]


@optimizer
def rmsprop_momentum(step_size, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9):
    """RMSProp whose scaled steps accumulate in a momentum buffer."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0), fnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + fnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / fnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, lambda state: state[0]


@optimizer
def adam(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """Adam (Kingma and Ba, 2014): bias-corrected first and second moment estimates; the
    corrections ``1 - b**(i + 1)`` are computed in the parameters' dtype."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0), fnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * fnp.square(g) + b2 * v
        mhat = m / (1 - fnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - fnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (fnp.sqrt(vhat) + eps), m, v

    return init, update, lambda state: state[0]


@optimizer
def adamax(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """AdaMax, Adam's infinity-norm variant: ``u = max(b2 * u, |g|)`` replaces ``sqrt(v)``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0), fnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = fnp.maximum(b2 * u, fnp.abs(g))
        x = x - (step_size(i) / (1 - fnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, lambda state: state[0]


@optimizer
def sm3(step_size, momentum: float = 0.9):
    """SM3 (Anil et al., 2019, arXiv:1901.11150): one accumulator per axis slice instead of
    one per entry; a leaf's accumulator is the minimum over its slices' accumulators."""
    step_size = make_schedule(step_size)

    def init(x0):
        x_shape = tuple(np.shape(x0))
        x0 = fnp.atleast_1d(x0)
        vs = [fnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, fnp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        ndim = g.ndim
        # v_j lies along axis j: reshape it to broadcast against g.
        vs = [fnp.reshape(v, tuple(-1 if a == j else 1 for a in range(ndim)) if ndim else (-1,))
              for j, v in enumerate(vs)]
        accum = functools.reduce(fnp.minimum, vs) + fnp.square(g)
        accum_inv_sqrt = fnp.where(accum > 0, 1.0 / fnp.sqrt(accum), 0.0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [fnp.max(accum, axis=tuple(a for a in range(x.ndim) if a != j))
              for j in range(x.ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return fnp.reshape(x, tuple(int(d) for d in x_shape))

    return init, update, get_params


# --- schedules -----------------------------------------------------------------------------------


def constant(step_size) -> Schedule:
    """The schedule that is ``step_size`` at every step."""
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase: bool = False
                       ) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)``; with ``staircase`` the ratio is
    floored, so the rate drops every ``decay_steps`` steps."""
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * fnp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power: float = 1.0) -> Schedule:
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` steps along
    ``(1 - i / decay_steps) ** power``, then constant."""
    def schedule(step_num):
        step_num = fnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values) -> Schedule:
    """``values[k]`` for steps with ``k`` of the ``boundaries`` below them: ``values`` has one
    entry more than ``boundaries``.

    Example::

        piecewise_constant([100, 200], [1.0, 0.1, 0.01])   # 1.0 up to step 100, then 0.1, ...
    """
    b, v = np.asarray(boundaries), np.asarray(values)
    if not b.ndim == v.ndim == 1:
        raise ValueError(
            f"piecewise_constant: boundaries and values must be sequences, got arrays of shapes "
            f"{b.shape} and {v.shape}")
    if b.shape[0] != v.shape[0] - 1:
        raise ValueError(
            f"piecewise_constant: boundaries must be one shorter than values, got "
            f"{b.shape[0]} boundaries and {v.shape[0]} values")
    boundaries, values = fnp.asarray(boundaries), fnp.asarray(values)

    def schedule(i):
        return values[fnp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule) -> Schedule:
    """A schedule from a callable (kept as is) or a scalar (:func:`constant`)."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(
        f"make_schedule: expected a scalar step size or a schedule (a function of the step), "
        f"got {type(scalar_or_schedule).__name__} of shape {np.shape(scalar_or_schedule)}")


# --- utilities -----------------------------------------------------------------------------------


def l2_norm(tree) -> Any:
    """The Euclidean norm of all the leaves of ``tree`` taken together."""
    leaves = tree_util.tree_leaves(tree)
    return fnp.sqrt(sum(fnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm) -> Any:
    """Scale ``grad_tree`` down so its :func:`l2_norm` is at most ``max_norm``."""
    norm = l2_norm(grad_tree)

    def normalize(g):
        return fnp.where(norm < max_norm, g, g * (max_norm / norm))

    return tree_util.tree_map(normalize, grad_tree)


class JoinPoint:
    """Marks where a parameter leaf's state subtree hangs in :func:`unpack_optimizer_state`'s
    nested tree (a leaf of that tree, so the states do not merge into the outer structure)."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree

    def __repr__(self) -> str:
        return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """``opt_state`` as a tree of the parameters' structure whose leaves are
    :class:`JoinPoint` objects holding each leaf's state (e.g. to pickle it); the inverse of
    :func:`pack_optimizer_state`."""
    _check_state(opt_state, "unpack_optimizer_state")
    states_flat, tree_def, subtree_defs = opt_state
    points = [JoinPoint(tree_util.tree_unflatten(sub, leaves))
              for leaves, sub in zip(states_flat, subtree_defs)]
    return tree_util.tree_unflatten(tree_def, points)


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The :class:`OptimizerState` of a tree made by :func:`unpack_optimizer_state`."""
    points, tree_def = tree_util.tree_flatten(marked_pytree)
    bad = [type(p).__name__ for p in points if not isinstance(p, JoinPoint)]
    if bad:
        raise TypeError(f"pack_optimizer_state: every leaf must be a JoinPoint (as "
                        f"unpack_optimizer_state makes), got {', '.join(sorted(set(bad)))}")
    flat = [tree_util.tree_flatten(p.subtree) for p in points]
    return OptimizerState(tuple(s for s, _ in flat), tree_def, tuple(d for _, d in flat))
