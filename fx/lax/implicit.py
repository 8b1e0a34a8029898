"""``custom_root``: a root found by any solver, differentiated by the implicit function theorem
(jax's ``lax.custom_root``).

``solve(f, initial_guess)`` may be anything (a ``while_loop``, Newton steps, a bisection): it
is never differentiated. At the root ``x*`` of ``f(x, theta) = 0`` (``theta`` the values ``f``
closes over, made explicit by ``fx.closure_convert``), ``dx* = -(df/dx)^-1 (df/dtheta) dtheta``;
``tangent_solve(g, y)`` solves the linear system ``g(x) = y`` with ``g = df/dx`` at the root.
The rule is a ``custom_jvp``, so forward mode, ``grad`` (when ``tangent_solve`` is linear in
``y`` through fx operations, e.g. ``y / g(1.0)`` or a dense solve), ``vmap`` and ``jit`` work.
"""

from __future__ import annotations

from collections.abc import Callable

from fx import dtypes, tree_util
from fx.core import get_aval, to_value
from fx.interpreters.jvp import instantiate, jvp_flat


def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
    """The root of ``f`` that ``solve(f, initial_guess)`` returns, with derivatives with respect
    to everything ``f`` closes over from the implicit function theorem (see the module
    docstring). With ``has_aux``, ``solve`` returns ``(root, aux)`` and so does this; ``aux``
    gets no derivative.

    Example::

        >>> def sqrt_newton(a):
        ...     f = lambda x: x * x - a
        ...     newton = lambda f, x: fx.lax.fori_loop(0, 20, lambda i, x: x - f(x) / (2 * x), x)
        ...     return fx.lax.custom_root(f, 1.0, newton, lambda g, y: y / g(1.0))
        >>> fx.grad(sqrt_newton)(4.0)   # 1 / (2 sqrt(4))
        Array(0.25, dtype=float32)
    """
    from fx.custom_derivatives import closure_convert, custom_jvp
    from fx.lax.elementwise import stop_gradient

    converted, consts = closure_convert(f, initial_guess)

    def run_solver(guess, *theta):
        out = solve(lambda x: converted(x, *theta), guess)
        return tree_util.tree_map(
            lambda v: stop_gradient(v) if dtypes.is_inexact(get_aval(v).dtype) else v, out)

    @custom_jvp
    def root(guess, *theta):
        return run_solver(guess, *theta)

    def root_jvp(primals, tangents):
        guess, *theta = primals
        _, *theta_dots = tangents
        # The custom function itself, so that derivatives of this rule's output use the rule.
        out = root(guess, *theta)
        sol = out[0] if has_aux else out
        _, f_dot = _jvp(lambda *t: converted(sol, *t), tuple(theta), tuple(theta_dots))

        def linearized(v):
            return _jvp(lambda x: converted(x, *theta), (sol,), (v,))[1]

        neg = tree_util.tree_map(lambda t: -t, f_dot)
        sol_dot = tangent_solve(linearized, neg)
        if has_aux:
            aux_dot = tree_util.tree_map(lambda a: a * 0, out[1])
            return out, (sol_dot, aux_dot)
        return out, sol_dot

    root.defjvp(root_jvp)
    return root(initial_guess, *consts)


def _jvp(fun: Callable, primals: tuple, tangents: tuple):
    """``fx.jvp(fun, primals, tangents)`` for ``custom_root``'s rule, which sits below
    ``fx.autodiff``: the primal and tangent outputs, as pytrees."""
    p_leaves, in_tree = tree_util.tree_flatten(primals)
    t_leaves = tree_util.tree_leaves(tangents)
    store = {}

    def flat(*leaves):
        out, store["tree"] = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, leaves)))
        return out

    outs, touts = jvp_flat(flat, [to_value(x) for x in p_leaves],
                           [to_value(t) for t in t_leaves], "custom_root")
    return (tree_util.tree_unflatten(store["tree"], outs),
            tree_util.tree_unflatten(store["tree"], [instantiate(t) for t in touts]))
