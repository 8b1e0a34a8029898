"""The program IR and its planning: ``operations`` the lowered program as data (launches, library
and host calls, control flow, in schedule order), ``memory`` the arena plan, ``control_flow``
the compiled ``scan``/``while``/``cond`` (bodies lowered as programs of their own), ``text``
``as_text()``."""
