"""Every package a test or a bench script imports is declared in pyproject.toml (issue 17, finding 11).

``bench/corpus_scale.py`` once needed ``datasketch``, installed by hand on the developers'
machines, so a fresh clone could not run it. This reads the imports of ``tests/`` and ``bench/``
and checks each resolves to a distribution that the project's dependencies or extras bring in
(directly, or through a declared package's own requirements).
"""
from __future__ import annotations

import ast
import importlib.metadata as md
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent


def local_modules(folder: Path) -> set[str]:
    """The project package and every module that lives in ``folder`` (helpers imported by file name).

    Taken from the tree, not from a hand-kept list, so a new helper module (``bench/route_latency.py``
    imported by ``bench/first_answer.py``) is local the moment it exists.
    """
    return {"skill_assets"} | {path.stem for path in folder.rglob("*.py")}


def imported_modules(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - local_modules(folder) - set(sys.stdlib_module_names)


def declared_closure() -> set[str]:
    """Canonical names of every distribution the declared requirements pull in (extras included)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    todo += [Requirement(r) for reqs in project["optional-dependencies"].values() for r in reqs]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        key = name + "[" + ",".join(sorted(req.extras)) + "]"
        if key in seen:
            continue
        seen |= {key, name}
        try:
            requires = md.requires(req.name) or []
        except md.PackageNotFoundError:
            continue
        for text in requires:
            sub = Requirement(text)
            envs = [{"extra": e} for e in req.extras] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in envs):
                todo.append(sub)
    return {s for s in seen if "[" not in s}


def test_every_import_of_tests_and_bench_is_declared():
    dists_of = md.packages_distributions()
    declared = declared_closure()
    missing = {}
    for folder in ("tests", "bench"):
        for module in sorted(imported_modules(REPO / folder)):
            dists = {canonicalize_name(d) for d in dists_of.get(module, [])}
            if not dists & declared:
                missing[f"{folder}: {module}"] = sorted(dists) or "not installed"
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
