"""``fx.scipy.optimize``: ``minimize`` (BFGS) and its ``OptimizeResults``, as
``jax.scipy.optimize``.

The solver is a ``fx.lax.while_loop`` over jax's BFGS iteration with jax's zoom line search
(Nocedal & Wright, Algorithms 3.5/3.6, with jax's constants), so it runs eagerly, under
``jit`` and under ``vmap`` with jax's iteration counts.
"""

from fx.scipy.optimize.minimize import OptimizeResults, minimize

__all__ = ["OptimizeResults", "minimize"]
