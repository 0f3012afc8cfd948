"""The layer rules of docs/ARCHITECTURE.md, checked on every import of the package and the benches.

- ``lib/`` is framework-free: nothing under it imports ``router/``, ``defs/`` or Dagster;
- ``lib/`` has floors, each importing only those below it: ``lib/common`` (infrastructure: the store,
  hashing, processes, cache files) imports only itself (and the package version); ``lib/core`` (the domain
  every stage shares: skill files, skill text and groups, metrics) imports ``common``; ``lib/models`` (model
  runtime: backends, bundled models, the embedding cache, the registry) imports ``common`` and ``core``;
  ``lib/retrieval`` (the engine) imports those three;
- the other ``lib/`` stages import the floors, the engine and the stages before them in pipeline order
  (``STAGES``), never a later one;
- no import cycle between modules (imports under ``if TYPE_CHECKING:`` are annotations, not cycles);
- ``defs/`` stages do not import one another (shared ``defs/*.py`` modules are fine);
- ``router/`` (the edge) imports no ``defs/``;
- ``bench/`` does not import ``tests/`` (nor puts it on ``sys.path``).

Every import counts, at module level or inside a function: a deferred import is still a dependency.
"""
from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "skill_assets"
TEST_MODULES = {p.stem for p in (REPO / "tests").rglob("*.py")}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every import in ``path``; ``from x import y`` also yields ``x.y``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def layer(module: str) -> str:
    """``skill_assets.lib.<stage>``, ``skill_assets.defs.<stage>`` (a shared ``defs`` module is ``defs``),
    ``skill_assets.router``, or the module's top package otherwise."""
    parts = module.split(".")
    if parts[0] != "skill_assets":
        return parts[0]
    if len(parts) >= 3 and parts[1] == "lib":
        return ".".join(parts[:3])
    if len(parts) >= 3 and parts[1] == "defs" and (PACKAGE / "defs" / parts[2]).is_dir():
        return ".".join(parts[:3])
    return ".".join(parts[:2])


#: the floors of lib/, lowest first: each imports only those below it
FLOORS = tuple(f"skill_assets.lib.{name}" for name in ("common", "core", "models", "retrieval"))
#: the pipeline's stages in the order data flows through them: a stage may use what an earlier one made
STAGES = tuple(f"skill_assets.lib.{name}" for name in (
    "corpus", "neighbourhoods", "generation", "taxonomy", "splits", "review", "training", "evaluation"))


def violation(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported``, or None when the rules allow it."""
    src, dst = layer(importer), layer(imported)
    if src == dst or not (dst.startswith("skill_assets") or dst == "dagster"):
        return None
    if src.startswith("skill_assets.lib."):
        if dst == "dagster" or not dst.startswith("skill_assets.lib."):
            if imported in ("skill_assets", "skill_assets.__version__"):
                return None
            return "lib/ is framework-free: it imports no router/, defs/ or Dagster"
        if dst in FLOORS:
            if src in FLOORS and FLOORS.index(dst) > FLOORS.index(src):
                return f"lib/{src.rsplit('.', 1)[1]} imports only the floors below it"
            return None
        if src in FLOORS:
            return f"lib/{src.rsplit('.', 1)[1]} imports only the floors below it"
        if src not in STAGES or dst not in STAGES:
            return "lib/ holds only its floors and STAGES"
        if STAGES.index(dst) > STAGES.index(src):
            return "a lib/ stage imports only the floors and the stages before it"
    if src.startswith("skill_assets.defs.") and dst.startswith("skill_assets.defs.") and dst.count(".") == 2:
        return "defs/ stages do not import one another"
    if src == "skill_assets.router" and dst.startswith("skill_assets.defs"):
        return "the router edge imports no defs/"
    return None


def package_violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        for line, imported in imports(path):
            if why := violation(importer, imported):
                found.append(f"{path.relative_to(REPO)}:{line} imports {imported}: {why}")
    return found


def test_the_package_keeps_its_layer_rules():
    assert package_violations() == []


@pytest.mark.parametrize(("importer", "imported", "broken"), [
    ("skill_assets.lib.retrieval.engine", "skill_assets.router.routing", True),
    ("skill_assets.lib.evaluation.report", "dagster", True),
    ("skill_assets.lib.training.losses", "skill_assets.lib.evaluation.report", True),
    ("skill_assets.lib.retrieval.pools", "skill_assets.lib.corpus.ingest", True),
    ("skill_assets.lib.common.store", "skill_assets.lib.retrieval.ranking", True),
    ("skill_assets.defs.router.assets", "skill_assets.defs.training.assets", True),
    ("skill_assets.router.cli", "skill_assets.defs.resources", True),
    ("skill_assets.lib.training.losses", "skill_assets.lib.retrieval.ranking", False),
    ("skill_assets.defs.router.assets", "skill_assets.defs.resources", False),
    ("skill_assets.lib.common.provenance", "skill_assets.__version__", False),
    ("skill_assets.lib.common.store", "skill_assets.lib.core.metrics", True),
    ("skill_assets.lib.core.metrics", "skill_assets.lib.models.model_registry", True),
    ("skill_assets.lib.models.encoder_backends", "skill_assets.lib.retrieval.engine", True),
    ("skill_assets.lib.corpus.ingest", "skill_assets.lib.taxonomy.settling", True),
    ("skill_assets.lib.retrieval.engine", "skill_assets.lib.models.encoder_backends", False),
    ("skill_assets.lib.taxonomy.settling", "skill_assets.lib.generation.llm_output", False),
    ("skill_assets.lib.evaluation.external_benchmarks", "skill_assets.lib.corpus.sources", False),
])
def test_each_rule_catches_what_it_forbids(importer, imported, broken):
    """The check is not vacuous: each rule refuses a made-up import that breaks it and allows one that keeps it."""
    assert (violation(importer, imported) is not None) is broken


def runtime_imports(path: Path) -> list[str]:
    """The modules ``path`` imports when it runs: every import but those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    annotations = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
                   for child in node.body for n in ast.walk(child)}
    found = []
    for node in ast.walk(tree):
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return found


def import_graph() -> dict[str, set[str]]:
    """Each package module and the package modules it imports at run time."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in runtime_imports(path) if m in modules and m != name} for name, path in modules.items()}


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (its modules in order), or [] when there is none."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(error.args[1])
    return []


def test_no_module_imports_itself_round_a_cycle():
    assert cycle(import_graph()) == []


def test_the_cycle_check_finds_a_made_up_cycle():
    graph = import_graph()
    graph["skill_assets.lib.common.hashing"].add("skill_assets.lib.common.store")
    graph["skill_assets.lib.common.store"].add("skill_assets.lib.common.hashing")
    assert set(cycle(graph)) >= {"skill_assets.lib.common.hashing", "skill_assets.lib.common.store"}


def test_benches_do_not_import_the_tests():
    found = []
    for path in sorted((REPO / "bench").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if '"tests"' in text and "sys.path" in text:
            found.append(f"{path.name}: puts tests/ on sys.path")
        found += [f"{path.name}:{line} imports {name}" for line, name in imports(path)
                  if name.split(".")[0] in TEST_MODULES | {"tests"} and name.split(".")[0] != "skill_assets"]
    assert found == []
