"""fx's layers, enforced: the import-linter contracts in setup.cfg hold.

import-linter (grimp) finds a package's modules by walking its directory, but fx.interpreters,
fx.lowering and fx.runtime live outside fx/ (setup.cfg's package_dir). The test lays out the
installed tree (fx/ with those packages linked in) in a temporary folder and runs
``lint-imports`` there, in a fresh interpreter so that the fx this process imported is not the
one analysed.
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is in the test extra: "
                    "pip install -e '.[test]' (or pip install import-linter)")

ROOT = Path(__file__).resolve().parents[1]
SETUP_CFG = ROOT / "setup.cfg"


def _installed_tree(dest: Path) -> Path:
    """``dest/fx``: links to everything in fx/ plus the package_dir packages under their names."""
    cfg = configparser.ConfigParser()
    cfg.read(SETUP_CFG)
    package_dir = {}
    for line in cfg["options"]["package_dir"].strip().splitlines():
        name, _, folder = (part.strip() for part in line.partition("="))
        package_dir[name] = folder
    fx = dest / "fx"
    fx.mkdir()
    for entry in (ROOT / package_dir.pop("fx")).iterdir():
        if entry.name != "__pycache__":
            (fx / entry.name).symlink_to(entry)
    for name, folder in package_dir.items():
        assert name.count(".") == 1 and name.startswith("fx."), name
        (fx / name.split(".")[1]).symlink_to(ROOT / folder)
    return dest


def _lint_imports(tree: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command as m; m()",
         str(SETUP_CFG), "--no-cache"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=120)


def test_layer_contracts_are_kept(tmp_path):
    result = _lint_imports(_installed_tree(tmp_path))
    report = result.stdout + result.stderr
    assert "Analyzed" in report, report
    assert result.returncode == 0, (
        "an import breaks fx's layers (setup.cfg [importlinter]); move the code it needs down a "
        "layer or let the upper package register with the lower one:\n" + report)
    assert "0 broken" in report, report


def test_an_upward_import_is_caught(tmp_path):
    # The check itself can fail: fx.config (the core) importing fx.numpy breaks the layers.
    tree = _installed_tree(tmp_path)
    config = tree / "fx" / "config.py"
    source = config.read_text()
    config.unlink()
    config.write_text(source + "\n\ndef _upward():\n    import fx.numpy  # noqa: F401\n")
    result = _lint_imports(tree)
    report = result.stdout + result.stderr
    assert result.returncode != 0, report
    assert "fx.config is not allowed to import fx.numpy" in report, report

