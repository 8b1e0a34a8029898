"""Packaging: every package directory is listed in setup.cfg and every C resource file of the
compiler is package data, so a regular (non-editable) install ships all of fx."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import scipy

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


RESOURCE_SUFFIXES = (".c", ".h", ".cu", ".cl")


def test_a_build_ships_the_compilers_c_sources(tmp_path):
    """The C/CUDA/OpenCL resource files (under lowering/ and runtime/, and fx/'s own: the native
    collectives' runtime library) are package data: setuptools' build (what a wheel holds)
    copies every one, and the compiler and fx.distributed read them from there."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("fx", "interpreters", "lowering", "runtime"):
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    lib = tmp_path / "lib"
    subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q",
                    "build", "--build-lib", str(lib)], cwd=src, check=True,
                   capture_output=True)
    for folder in ("lowering", "runtime", "fx"):
        built = lib / "fx" if folder == "fx" else lib / "fx" / folder
        wanted = {p.relative_to(ROOT / folder) for p in (ROOT / folder).rglob("*")
                  if p.suffix in RESOURCE_SUFFIXES}
        assert wanted, f"no resource files found under {folder}/"
        shipped = {p.relative_to(built) for p in built.rglob("*") if p.suffix in RESOURCE_SUFFIXES}
        assert wanted <= shipped, f"not in the build: {sorted(map(str, wanted - shipped))}"
    # The built package (alone on the path, with its dependencies) assembles its prelude and
    # reads the native collectives' C.
    deps = {str(Path(m.__file__).parents[1]) for m in (np, ml_dtypes, scipy)}
    code = ("import sys; sys.path[:0] = sys.argv[1:]; import fx.lowering.render.prelude as p; "
            "assert p.__file__.startswith(sys.argv[1]), p.__file__; assert 'fx_expf' in p.PRELUDE; "
            "import fx.distributed.native as n; assert 'fx_mpi_allreduce' in n._KERNEL")
    subprocess.run([sys.executable, "-S", "-c", code, str(lib), *sorted(deps)], check=True)
