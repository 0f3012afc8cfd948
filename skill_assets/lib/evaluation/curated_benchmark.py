"""The curated benchmark: requests and SKIP decisions written by hand over real skills, and their pool.

The files live in ``skill_assets/benchmarks/curated/`` (their dataset card ``README.md`` says how
they were written). Skill ids are ``<owner>__<repo>/<skill folder inside the repository>``: the
folder relative to a pool directory holding one folder per repository (the shared corpus's
``repos/``, or the repositories of ``sources.yaml`` checked out under their folder names), so the
same id names the same skill whichever way the pool was built. Only requests, rejections, review
labels and ids ship here, never skill texts: the pool is the user's (``$SKILL_ASSETS_CURATED_POOL``).

- ``requests.jsonl``: ``{"id", "query", "lang", "direction", "k", "gt", "gt_groups", "style",
  "split", "topic", "writer"}``; ``gt_groups`` holds one group per skill the request needs (the
  skill written for, then every interchangeable copy), ``k == len(gt_groups)``, ``gt`` the same
  ids flat;
- ``rejections.jsonl``: ``{"id", "skills", "direction", "rationale", "lang", "label", "writer"}``,
  ``label`` the rejection-taxonomy class labelled by hand;
- ``review.jsonl`` (once written): the second pass over the test split.

Files are validated, never repaired: a malformed line raises ``CuratedFormatError`` naming file and
line. A ground-truth id the pool does not hold raises ``UnresolvedSkillIds`` naming every such id
and the requests that use it: unlike a release of others, a benchmark we wrote and a pool we pin
must agree exactly, and scoring around a missing skill would hide a broken pool.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from skill_assets.lib.common.jsonl import format_records
from skill_assets.lib.common.language import DIRECTIONS
from skill_assets.lib.retrieval.requests import Request, Writing

CURATED_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "curated"
#: env var naming the pool directory (one folder per repository); the curated partition exists when it is set
POOL_ENV = "SKILL_ASSETS_CURATED_POOL"
BENCHMARK_NAME = "curated"
REQUESTS, REJECTIONS, REVIEW = "requests.jsonl", "rejections.jsonl", "review.jsonl"
SPLITS = ("train", "dev", "test")
#: skills a request may need: the short sets' (curated, meaning-only, styles) one to three, a long task
#: statement's up to six (``LONG_TASK_REQUESTS``, issue 33); each reader names its own limit
MAX_GROUPS, LONG_TASK_MAX_GROUPS = 3, 6
LONG_TASK_REQUESTS = CURATED_DIR.parent / "long_tasks" / REQUESTS
STYLES = ("task_direct", "scene", "role_setup", "constraint", "multi_step", "debug",
          # the demo benchmark's and the styles dev set's: how users write beside the curated writers
          "terse", "vague", "pasted_error", "step_list", "other_language", "casual")


class CuratedFormatError(ValueError):
    """A curated file that breaks its format; the message names the file and line."""


@dataclass(frozen=True)
class CuratedRejection:
    id: str
    skills: tuple[str, ...]
    direction: str
    rationale: str
    lang: str
    label: str
    writer: str = ""


def load_requests(path: Path = CURATED_DIR, max_groups: int = MAX_GROUPS) -> list[Request]:
    """The requests of a curated-format file (or of ``requests.jsonl`` in a folder): the one reader of request
    files, strict: a line that breaks the format raises, naming file and line; nothing is repaired.

    ``max_groups``: the most skills one request may need. The short sets keep 3, so a fourth group there is a
    malformed line, not a long task; the long task statements are read with ``LONG_TASK_MAX_GROUPS``."""
    path = Path(path)
    out: list[Request] = []
    seen: dict[str, str] = {}
    for where, rec in _records(path / REQUESTS if path.is_dir() else path):
        rid = _text(rec, "id", where)
        if rid in seen:
            raise CuratedFormatError(f"{where}: request id {rid!r} already used at {seen[rid]}")
        seen[rid] = where
        direction, split, style = _choice(rec, "direction", DIRECTIONS, where), _choice(rec, "split", SPLITS, where), \
            _choice(rec, "style", STYLES, where)
        raw_groups = rec.get("gt_groups")
        if (not isinstance(raw_groups, list) or not 1 <= len(raw_groups) <= max_groups
                or not all(isinstance(g, list) and g and all(isinstance(s, str) and s for s in g) for g in raw_groups)):
            raise CuratedFormatError(f"{where}: 'gt_groups' must be 1-{max_groups} non-empty lists of skill ids")
        groups = tuple(tuple(g) for g in raw_groups)
        flat = [s for g in groups for s in g]
        if len(set(flat)) != len(flat):
            raise CuratedFormatError(f"{where}: a skill id appears twice in 'gt_groups'")
        if rec.get("k") != len(groups):
            raise CuratedFormatError(f"{where}: 'k' is {rec.get('k')!r} but 'gt_groups' has {len(groups)} groups")
        if "gt" in rec and sorted(rec["gt"] or []) != sorted(flat):
            raise CuratedFormatError(f"{where}: 'gt' is not the ids of 'gt_groups'")
        if rec.get("lang") != DIRECTIONS[direction][1]:
            raise CuratedFormatError(f"{where}: 'lang' must be {DIRECTIONS[direction][1]!r} for {direction}")
        writing = Writing(rec["lang"], style, str(rec.get("topic") or ""), str(rec.get("writer") or ""))
        out.append(Request(rid, _text(rec, "query", where), groups, direction, split, writing))
    return out


def load_rejections(root: Path = CURATED_DIR) -> list[CuratedRejection]:
    out = []
    for where, rec in _records(root / REJECTIONS):
        skills = rec.get("skills")
        if not isinstance(skills, list) or not 2 <= len(set(skills)) == len(skills) <= 3 \
                or not all(isinstance(s, str) and s for s in skills):
            raise CuratedFormatError(f"{where}: 'skills' must be 2-3 distinct skill ids")
        direction = _choice(rec, "direction", DIRECTIONS, where)
        out.append(CuratedRejection(_text(rec, "id", where), tuple(skills), direction, _text(rec, "rationale", where),
                                    _text(rec, "lang", where), _text(rec, "label", where), str(rec.get("writer") or "")))
    return out


def load_review(root: Path = CURATED_DIR) -> list[dict]:
    """The second pass over the test split, as written (empty before it exists)."""
    path = root / REVIEW
    return [rec for _, rec in _records(path)] if path.is_file() else []


def split_skills(requests: Iterable[Request], splits: Iterable[str]) -> set[str]:
    """Every ground-truth id (copies included) of the requests in ``splits``."""
    wanted = set(splits)
    return {sid for r in requests if r.split in wanted for sid in r.gt}


# --------------------------------------------------------------------------------------------- parsing
def _records(path: Path) -> Iterator[tuple[str, dict]]:
    """(``path:line``, object) for every non-blank line; anything else raises naming the line."""
    return format_records(path, CuratedFormatError)


def _text(rec: dict, key: str, where: str) -> str:
    value = rec.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CuratedFormatError(f"{where}: {key!r} must be a non-empty string")
    return value.strip()


def _choice(rec: dict, key: str, allowed: Iterable[str], where: str) -> str:
    value = rec.get(key)
    if value not in allowed:
        raise CuratedFormatError(f"{where}: {key!r} is {value!r}; expected one of {sorted(allowed)}")
    return value
