"""Small example libraries built on fx, mirroring ``jax.example_libraries``:
:mod:`fx.example_libraries.stax` (neural-network layers as ``(init_fun, apply_fun)`` pairs) and
:mod:`fx.example_libraries.optimizers` (optimizers as ``(init_fun, update_fun, get_params)``
triples). Optax-style optimizers live in :mod:`fx.optim`."""
