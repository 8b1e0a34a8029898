"""APIs jax keeps under ``jax.experimental``, spelled as there: ``fx.experimental.shard_map``
(the older spelling of ``fx.shard_map``) and ``fx.experimental.multihost_utils``
(``process_allgather``, ``broadcast_one_to_all``, ``sync_global_devices``). Each is a
submodule, imported when used."""
