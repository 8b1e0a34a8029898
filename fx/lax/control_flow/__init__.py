"""Structured control flow: ``cond``/``switch``, ``while_loop``/``fori_loop`` and
``scan``/``map``.

Each construct traces the user's functions once into sub-jaxprs (their constants hoisted into
explicit operands) and binds one primitive (``cond``, ``while``, ``scan``) whose params hold
them; ``make_jaxpr`` prints them nested. Every primitive has jvp, batching, partial-evaluation
and transpose rules (``while`` cannot be transposed: use ``scan``), and an impl that evaluates
the sub-jaxprs op by op, looping in Python.
"""

from fx.lax.control_flow.common import source_location
from fx.lax.control_flow.conditionals import cond, cond_p, switch
from fx.lax.control_flow.loops import fori_loop, while_loop, while_p
from fx.lax.control_flow.scans import map, scan, scan_p  # noqa: A004

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "cond_p", "while_p",
           "scan_p", "source_location"]
