"""The bench scripts as modules, for tests that check what a bench builds or runs without running it whole."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str, monkeypatch: pytest.MonkeyPatch | None = None) -> ModuleType:
    """``bench/<name>.py`` loaded as a module, registered under its name while it executes (dataclasses defined in it
    look their module up). Where ``monkeypatch`` is given, its sibling modules are importable and the registration
    holds for the test alone, as ``python bench/<name>.py`` has them; without it the script must import none."""
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    if monkeypatch is not None:
        monkeypatch.syspath_prepend(str(BENCH_DIR))
        monkeypatch.setitem(sys.modules, name, module)
    else:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
