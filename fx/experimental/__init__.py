"""APIs jax keeps under ``jax.experimental``, spelled as there. Each is a submodule, imported
when used (``from fx.experimental import multihost_utils``)."""
