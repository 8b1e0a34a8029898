"""Interpreters of the IR: evaluation, forward mode (jvp), partial evaluation and
transposition (reverse mode), and batching (vmap). Each owns its table of per-primitive rules."""
