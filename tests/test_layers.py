"""fx's layers, enforced: the import-linter contracts in setup.cfg hold, and no modules of fx
import each other in a cycle except the declared registries.

import-linter (grimp) finds a package's modules by walking its directory, but fx.interpreters,
fx.lowering and fx.runtime live outside fx/ (setup.cfg's package_dir). The test lays out the
installed tree (fx/ with those packages linked in) in a temporary folder and runs
``lint-imports`` there, in a fresh interpreter so that the fx this process imported is not the
one analysed.
"""

from __future__ import annotations

import configparser
import json
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



# --- cycles between modules ---------------------------------------------------------------------
# A cycle between modules (package __init__ re-exports aside: a package importing its own
# modules to re-export them is not one) is allowed only for a registry whose rule modules must
# register into a table the importer of those rules also reads; each is declared here with its
# reason, and in setup.cfg's [importlinter] comments. None is needed today: the rule tables (the
# interpreters' rule dicts, fx.export.onnx_graph.onnx_rules) sit in leaf modules their rule
# modules import one way.
DECLARED_REGISTRY_CYCLES: dict[frozenset[str], str] = {}

# Run in a fresh interpreter on the laid-out tree (grimp finds fx by importing its spec). Prints
# the strongly connected components of the module graph, packages left out, as a JSON list.
_CYCLES_SCRIPT = r"""
import json
import grimp

graph = grimp.build_graph("fx", include_external_packages=False)
packages = {m for m in graph.modules if graph.find_children(m)}
nodes = sorted(set(graph.modules) - packages)
edges = {m: sorted(set(graph.find_modules_directly_imported_by(m)) - packages) for m in nodes}
reverse = {m: [] for m in nodes}
for m, targets in edges.items():
    for t in targets:
        reverse[t].append(m)

# Kosaraju: finishing order on the graph, then components on the reversed graph.
order, seen = [], set()
for root in nodes:
    if root in seen:
        continue
    seen.add(root)
    stack = [(root, iter(edges[root]))]
    while stack:
        node, it = stack[-1]
        for nxt in it:
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(edges[nxt])))
                break
        else:
            stack.pop()
            order.append(node)
components, assigned = [], set()
for root in reversed(order):
    if root in assigned:
        continue
    assigned.add(root)
    component, todo = [], [root]
    while todo:
        node = todo.pop()
        component.append(node)
        for prev in reverse[node]:
            if prev not in assigned:
                assigned.add(prev)
                todo.append(prev)
    if len(component) > 1:
        components.append(sorted(component))
print(json.dumps(sorted(components)))
"""


def _module_cycles(tree: Path) -> set[frozenset[str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    result = subprocess.run([sys.executable, "-c", _CYCLES_SCRIPT], cwd=tree, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return {frozenset(c) for c in json.loads(result.stdout)}


def test_no_import_cycles_but_the_declared_registries(tmp_path):
    found = _module_cycles(_installed_tree(tmp_path))
    allowed = set(DECLARED_REGISTRY_CYCLES)
    new = [sorted(c) for c in found - allowed]
    assert not new, (
        "modules of fx import each other in a cycle; move the shared piece down into its own "
        f"module (or, for a registry, declare it in tests/test_layers.py): {new}")
    gone = [sorted(c) for c in allowed - found]
    assert not gone, f"declared cycles no longer there; remove them from the lists: {gone}"


def test_a_new_cycle_is_caught(tmp_path):
    # The check itself can fail: fx.config importing fx.dtypes back closes a cycle.
    tree = _installed_tree(tmp_path)
    config = tree / "fx" / "config.py"
    source = config.read_text()
    config.unlink()
    config.write_text(source + "\n\ndef _cycle():\n    import fx.dtypes  # noqa: F401\n")
    assert frozenset({"fx.config", "fx.dtypes"}) in _module_cycles(tree)
