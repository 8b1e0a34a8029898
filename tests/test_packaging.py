"""Packaging: every package directory is listed in setup.cfg, so a regular (non-editable)
install ships all of fx."""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    mapping = {"interpreters": "fx.interpreters", "lowering": "fx.lowering",
               "runtime": "fx.runtime"}
    found = set()
    for init in ROOT.glob("**/__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts[0] not in ("fx", *mapping):
            continue
        name = ".".join(rel.parts)
        for src, dst in mapping.items():
            if rel.parts[0] == src:
                name = dst + name[len(src):]
        found.add(name)
    assert found <= listed, f"missing from setup.cfg [options] packages: {sorted(found - listed)}"
