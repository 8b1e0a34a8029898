"""``fx.scipy``: jax's ``jax.scipy`` submodules over fx primitives (differentiable, batched,
compiled like the rest of fx)."""

from fx.scipy import fft, integrate, linalg, ndimage, optimize, signal, special, stats

__all__ = ["fft", "integrate", "linalg", "ndimage", "optimize", "signal", "special",
           "stats"]
