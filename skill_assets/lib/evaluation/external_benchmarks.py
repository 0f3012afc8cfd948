"""Import skill-routing benchmarks published by others, so every system is also scored on their data.

Three release layouts are read into one shape (``ExternalBenchmark``: the pool as ``pools.Skill``s,
the queries as ``requests.Request``s, the record type of every benchmark):

- ``r3`` — the R3-Skill release: ``skills.jsonl`` with ``{"id", "text"}`` (text is
  ``name | description | body``, as ``lib/splits/release.py`` writes it) and ``queries_<split>.jsonl``
  (or ``queries.jsonl``) with ``{"query", "skill_ids"}``; queries carry no id, so a query's id is
  ``<split>-<line number>``.
- ``skillret`` — SkillRet (Cho, Kang, Kim 2026; Hugging Face dataset ``ThakiCloud/SKILLRET``).
  Based on the field list of its dataset card (revision 7cae7cf), not on the data files, which are
  out of reach here: ``data/skills/<split>.jsonl`` (``id``, ``name``, ``description``, ``body``,
  ``skill_md`` and metadata we ignore), ``data/queries/<split>.jsonl`` (``id``, ``query``,
  ``skill_ids``, ``skill_names``, ``k``, ``generator_model``) and ``data/qrels/<split>.jsonl``
  (``query_id``, ``skill_id``, ``relevance``). When qrels exist, the skills with relevance > 0
  are the ground truth (it is the release's relevance file); otherwise the queries' ``skill_ids``.
- ``skill_md`` — a directory tree ``skills/`` of SKILL.md files (skill id = skill folder relative
  to ``skills/``, as ``skill-assets route`` names them) plus ``queries.jsonl`` with
  ``{"id"?, "query", "skill_ids"}``.
- ``curated`` — this project's hand-written benchmark (``curated_benchmark``): ``requests.jsonl``
  in the folder, the skills in a separate ``pool``: a SKILL.md tree (id = folder relative to it) or
  a sources YAML fetched by the corpus stage (``curated_pool``). Its ground truth comes as groups of interchangeable copies, each query records its
  direction, and a ground-truth id missing from the pool is an error naming it.

Input is validated, not repaired: a line that is not a JSON object with the required fields, a
duplicate id, an unparseable SKILL.md or a qrels row for a query the release does not have raises
``BenchmarkFormatError`` naming the file (and line), so nothing is dropped silently. Ground-truth
ids missing from the pool are not an error for releases of others (they do ship such queries);
each query lists them in ``unknown_skill_ids`` and is scored on the rest.
"""
from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from skill_assets.lib.common.hashing import digest, normalise_text
from skill_assets.lib.common.jsonl import format_records
from skill_assets.lib.core.skill_groups import singleton_groups, with_identical_copies
from skill_assets.lib.evaluation import curated_benchmark as curated
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.requests import Request, UnresolvedSkillIds, require_in_pool

LAYOUTS = ("r3", "skillret", "skill_md", "curated")
#: env var naming the YAML file that lists external benchmarks (see ``load_benchmark_specs``)
CONFIG_ENV = "SKILL_ASSETS_EXTERNAL_BENCHMARKS"
DEMO_CONFIG = Path(__file__).resolve().parents[2] / "demo" / "external" / "benchmarks.yaml"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class BenchmarkFormatError(ValueError):
    """A benchmark file that does not follow its layout; the message names the file and line."""


@dataclass(frozen=True)
class ExternalBenchmark:
    name: str
    layout: str
    skills: tuple[Skill, ...]
    queries: tuple[Request, ...]

    @property
    def version(self) -> str:
        """Content hash of the pool and the ground truth: changes whenever a number could."""
        payload = json.dumps([[(s.id, s.name, s.description, s.body) for s in self.skills],
                              [(q.id, q.query, q.skill_ids, q.unknown_skill_ids) for q in self.queries],
                              [(q.groups, q.direction) for q in self.queries if q.direction is not None]])
        return digest(payload)[:16]


@dataclass(frozen=True)
class BenchmarkSpec:
    """Where one external benchmark lives; ``layout`` None means detect it from the files.

    ``pool``: the skill directory of a layout that ships no skills (``curated``); ``pool_name``: the source
    name its skill ids start with (``<pool_name>/<skill folder>``, as the ingest names a ``dir`` source's
    skills), so a benchmark written against the pipeline's ids reads a plain folder."""

    name: str
    path: Path
    layout: str | None = None
    split: str = "test"
    pool: Path | None = None
    pool_name: str | None = None


def curated_spec(pool: str | Path) -> BenchmarkSpec:
    """The curated benchmark's test split scored over ``pool`` (``$SKILL_ASSETS_CURATED_POOL``)."""
    return BenchmarkSpec(curated.BENCHMARK_NAME, curated.CURATED_DIR, "curated", "test", Path(pool).resolve())


# --------------------------------------------------------------------------------------------- config
def load_benchmark_specs(config: str | Path) -> dict[str, BenchmarkSpec]:
    """Benchmarks listed in a YAML mapping ``name: {path, layout?, split?, pool?}`` (paths relative to the file)."""
    config = Path(config)
    raw = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    if not isinstance(raw, dict):
        raise BenchmarkFormatError(f"{config}: expected a mapping of benchmark name -> {{path, layout, split}}")
    specs = {}
    for name, entry in raw.items():
        entry = {"path": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or "path" not in entry:
            raise BenchmarkFormatError(f"{config}: benchmark {name!r} needs a 'path'")
        if not _NAME.match(str(name)):
            raise BenchmarkFormatError(f"{config}: benchmark name {name!r} must be letters, digits, '.', '_' or '-'")
        layout = entry.get("layout")
        if layout is not None and layout not in LAYOUTS:
            raise BenchmarkFormatError(f"{config}: benchmark {name!r} has layout {layout!r}; known: {LAYOUTS}")
        pool = (config.parent / str(entry["pool"])).resolve() if entry.get("pool") else None
        specs[str(name)] = BenchmarkSpec(str(name), (config.parent / str(entry["path"])).resolve(), layout,
                                         str(entry.get("split", "test")), pool, entry.get("pool_name"))
    return specs


def detect_layout(root: Path) -> str:
    if (root / "skills.jsonl").is_file():
        return "r3"
    if (root / "data" / "skills").is_dir():
        return "skillret"
    if (root / "skills").is_dir() and (root / "queries.jsonl").is_file():
        return "skill_md"
    if (root / curated.REQUESTS).is_file():
        return "curated"
    raise BenchmarkFormatError(f"{root}: no known layout (expected skills.jsonl [r3], data/skills/ [skillret], "
                               f"skills/ + queries.jsonl [skill_md] or {curated.REQUESTS} [curated])")


def load_benchmark(spec: BenchmarkSpec) -> ExternalBenchmark:
    if not spec.path.is_dir():
        raise FileNotFoundError(f"benchmark {spec.name!r}: {spec.path} is not a directory")
    layout = spec.layout or detect_layout(spec.path)
    if layout == "curated":
        skills, curated_queries = load_curated(spec.path, spec.split, spec.pool, spec.pool_name)
        return ExternalBenchmark(spec.name, layout, tuple(skills), tuple(curated_queries))
    loader = {"r3": load_r3, "skillret": load_skillret, "skill_md": load_skill_md}[layout]
    skills, queries = loader(spec.path, spec.split)
    return ExternalBenchmark(spec.name, layout, tuple(skills), _resolve(queries, skills))


# --------------------------------------------------------------------------------------------- layouts
def load_r3(root: Path, split: str = "test") -> tuple[list[Skill], list[tuple[str, str, list[str], str]]]:
    skills = []
    path = root / "skills.jsonl"
    for where, rec in _records(path):
        sid, text = _string(rec, "id", where), _string(rec, "text", where)
        parts = text.split(" | ", 2)
        name, description, body = parts if len(parts) == 3 else (sid, "", text)
        skills.append(Skill(sid, name, description, body))
    queries_path = root / f"queries_{split}.jsonl"
    if not queries_path.is_file():
        queries_path = root / "queries.jsonl"
    queries = [(f"{split}-{where.rsplit(':', 1)[1]}", _string(rec, "query", where), _id_list(rec, "skill_ids", where),
                where) for where, rec in _records(queries_path)]
    return _unique_skills(skills, path), queries


def load_skillret(root: Path, split: str = "test"
                  ) -> tuple[list[Skill], list[tuple[str, str, list[str], str]]]:
    data = root / "data"
    skills_path = data / "skills" / f"{split}.jsonl"
    skills = [Skill(_string(rec, "id", where), _string(rec, "name", where),
                            _string(rec, "description", where, required=False), _string(rec, "body", where,
                                                                                         required=False))
              for where, rec in _records(skills_path)]
    qrels_path = data / "qrels" / f"{split}.jsonl"
    relevant: dict[str, list[str]] | None = None
    if qrels_path.is_file():
        relevant = {}
        for where, rec in _records(qrels_path):
            grade = rec.get("relevance", 1)
            if not isinstance(grade, (int, float)) or isinstance(grade, bool):
                raise BenchmarkFormatError(f"{where}: 'relevance' must be a number")
            if grade > 0:
                relevant.setdefault(_string(rec, "query_id", where), []).append(_string(rec, "skill_id", where))
    queries = []
    for where, rec in _records(data / "queries" / f"{split}.jsonl"):
        qid = _string(rec, "id", where)
        truth = relevant.get(qid, []) if relevant is not None else _id_list(rec, "skill_ids", where)
        queries.append((qid, _string(rec, "query", where), truth, where))
    if relevant and (orphans := sorted(set(relevant) - {q[0] for q in queries})):
        # a judgement with no query to attach it to would silently leave its query unscored
        raise BenchmarkFormatError(f"{qrels_path}: {len(orphans)} query ids have qrels but no row in "
                                   f"{data / 'queries' / f'{split}.jsonl'}: {orphans[:10]}")
    return _unique_skills(skills, skills_path), queries


def _skill_tree(root: Path) -> tuple[list[Skill], list]:
    """(skills, quarantined files) of a SKILL.md tree, ids as ``skill-assets route`` names them."""
    from skill_assets.lib.retrieval.pools import load_pool

    pool = load_pool(root)
    return [Skill(s.id, s.name, s.description, s.body) for s in pool.skills], pool.rejected


def load_skill_md(root: Path, split: str = "test"
                  ) -> tuple[list[Skill], list[tuple[str, str, list[str], str]]]:
    """``split`` is unused: a SKILL.md benchmark ships one query file."""
    skills, rejected = _skill_tree(root / "skills")
    if rejected:
        raise BenchmarkFormatError("; ".join(str(r) for r in rejected))
    queries = [(str(rec["id"]) if rec.get("id") is not None else f"q-{where.rsplit(':', 1)[1]}",
                _string(rec, "query", where), _id_list(rec, "skill_ids", where), where)
               for where, rec in _records(root / "queries.jsonl")]
    return skills, queries


def curated_pool(pool: Path) -> list[Skill]:
    """The skills of a curated pool: a directory with one folder per repository (id = skill folder relative
    to it), or a sources YAML (``sources.yaml`` of the benchmark) whose sources are fetched with the corpus
    stage's own code, each skill named ``<source name>/<skill folder>`` as the ingest names it."""
    if pool.is_dir():
        return _skill_tree(pool)[0]
    if not pool.is_file():
        raise FileNotFoundError(f"curated pool {pool} is neither a directory nor a sources file")
    from skill_assets.lib.corpus.sources import SourceError, load_source_specs, prepare_source
    from skill_assets.lib.retrieval.pools import load_pool

    skills = []
    with tempfile.TemporaryDirectory(prefix="curated-pool-") as work:
        for spec in load_source_specs(pool):
            try:
                root = prepare_source(spec, Path(work)).root
            except SourceError as exc:
                raise BenchmarkFormatError(f"{pool}: {exc}") from exc
            for s in load_pool(root).skills:
                folder = Path(s.source).parent.relative_to(root).as_posix()
                skills.append(Skill(spec.name if folder == "." else f"{spec.name}/{folder}", s.name,
                                            s.description, s.body))
    return skills


def load_curated(root: Path, split: str, pool: Path | None, pool_name: str | None = None
                 ) -> tuple[list[Skill], list[Request]]:
    """The curated requests of ``split`` over every skill of ``pool``, ground truth as copy groups.

    Each group also takes in the pool skills whose document is identical to a member's (same
    normalised name, description and body), which every system ranks in an arbitrary order among
    themselves. Quarantined pool files are not skills; an id that names one is unresolved.
    """
    if pool is None:
        raise BenchmarkFormatError(f"{root}: the curated layout needs a skill pool "
                                   f"(`pool:` in the benchmarks file, or ${curated.POOL_ENV})")
    try:
        requests = [r for r in curated.load_requests(root) if r.split == split]
        skills = curated_pool(pool)
        if pool_name:
            skills = [Skill(f"{pool_name}/{s.id}", s.name, s.description, s.body) for s in skills]
        require_in_pool(requests, {s.id for s in skills}, str(pool))
    except (curated.CuratedFormatError, UnresolvedSkillIds) as exc:
        raise BenchmarkFormatError(str(exc)) from exc
    document = {s.id: (normalise_text(s.name), normalise_text(s.description), normalise_text(s.body)) for s in skills}
    queries = []
    for r in requests:
        groups = with_identical_copies(r.groups, document)
        queries.append(replace(r, groups=groups, skill_ids=tuple(s for g in groups for s in g)))
    return skills, queries


# --------------------------------------------------------------------------------------------- parsing
def _records(path: Path) -> Iterator[tuple[str, dict]]:
    """(``path:line``, object) for every non-blank line; anything else raises naming the line."""
    return format_records(path, BenchmarkFormatError)


def _string(rec: dict, key: str, where: str, required: bool = True) -> str:
    value = rec.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise BenchmarkFormatError(f"{where}: {key!r} must be a non-empty string")
    return value.strip()


def _id_list(rec: dict, key: str, where: str) -> list[str]:
    value = rec.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise BenchmarkFormatError(f"{where}: {key!r} must be a non-empty list of skill id strings")
    return [v.strip() for v in value]


def _unique_skills(skills: list[Skill], path: Path) -> list[Skill]:
    seen: set[str] = set()
    for s in skills:
        if s.id in seen:
            raise BenchmarkFormatError(f"{path}: skill id {s.id!r} appears twice")
        seen.add(s.id)
    return skills


def _resolve(queries: list[tuple[str, str, list[str], str]], skills: list[Skill]) -> tuple[Request, ...]:
    """Split each query's ground truth into ids the pool has and ids it lacks; duplicate query ids raise."""
    pool = {s.id for s in skills}
    out, seen = [], {}
    for qid, text, truth, where in queries:
        if qid in seen:
            raise BenchmarkFormatError(f"{where}: query id {qid!r} already used at {seen[qid]}")
        seen[qid] = where
        unique = list(dict.fromkeys(truth))
        present = tuple(s for s in unique if s in pool)
        out.append(Request(qid, text, singleton_groups(present), skill_ids=present,
                           unknown_skill_ids=tuple(s for s in unique if s not in pool)))
    return tuple(out)
