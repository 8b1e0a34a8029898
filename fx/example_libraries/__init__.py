"""Small example libraries built on fx, mirroring ``jax.example_libraries``:
:mod:`fx.example_libraries.stax` (neural-network layers as ``(init_fun, apply_fun)`` pairs).
Optimizers live in :mod:`fx.optim`."""
