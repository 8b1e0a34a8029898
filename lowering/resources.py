"""The C, CUDA C and OpenCL C text the compiler emits, read from the resource files shipped
beside the modules that use it (``render/prelude.h``, ``kernels/int8/int8_vnni.c``, ...; the
libraries above the compiler read theirs here too, e.g. ``fx/distributed/native.c``).

A resource file is target source with two conventions on top:

- Its leading lines starting with ``//`` document it (what it holds, what fills its
  placeholders); they are not part of the text.
- A file holding several texts splits them into sections: a line ``//@ name`` starts the
  section ``name``, which runs to the next such line (or to the end of the file). Each
  section, like a whole file, is its text byte for byte, its last newline included.

Templates (texts a module fills in) use :class:`string.Template` placeholders, ``${name}``
(``$$`` is a dollar sign), filled with ``substitute`` so a missing value is an error. Files
are read once per process (the functions are cached) through :mod:`importlib.resources`, so
an installed wheel reads them from the package as a checkout does.
"""

from __future__ import annotations

import functools
import re
import string
from importlib import resources

_SECTION = "//@ "
_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")  # a line with its newline (the last may lack it)


@functools.cache
def text(package: str, name: str) -> str:
    """The text of resource file ``name`` of ``package`` (a module's ``__package__``), its
    documentation lines dropped."""
    raw = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    lines = _LINE.findall(raw)
    start = 0
    while start < len(lines) and lines[start].startswith("//") and \
            not lines[start].startswith(_SECTION):
        start += 1
    return "".join(lines[start:])


@functools.cache
def sections(package: str, name: str) -> dict[str, str]:
    """The sections of resource file ``name`` of ``package``, by name, in file order."""
    out: dict[str, list[str]] = {}
    current = None
    for line in _LINE.findall(text(package, name)):
        if line.startswith(_SECTION):
            current = line[len(_SECTION):].strip()
            if current in out:
                raise ValueError(f"{package}/{name}: section {current!r} twice")
            out[current] = []
        elif current is None:
            raise ValueError(f"{package}/{name}: text before the first '{_SECTION}' line")
        else:
            out[current].append(line)
    return {k: "".join(v) for k, v in out.items()}


@functools.cache
def template(package: str, name: str, section: str | None = None) -> string.Template:
    """Resource file ``name`` of ``package`` (or one of its sections) as a template."""
    source = text(package, name) if section is None else sections(package, name)[section]
    return string.Template(source)
