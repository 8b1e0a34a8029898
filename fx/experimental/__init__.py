"""APIs jax keeps under ``jax.experimental``, spelled as there: ``fx.experimental.shard_map``
(the older spelling of ``fx.shard_map``). Each is a submodule, imported when used."""
