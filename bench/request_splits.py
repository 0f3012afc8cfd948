"""Hand-written request sets made ready to score: copy groups, splits by skill, the curated format, the card's counts.

Shared by the builders of each hand-written set (``meaning_set.py``, ``long_task_set.py``), so every set is split
by one rule and one set's test skills stay test skills in every other:

- **Copy groups.** A labelled skill's group is the skill, then every corpus skill with the same normalised
  name whose description is the same or whose body shares word trigrams above the SkillRouter
  false-negative threshold (``near_duplicate_bodies``), then the members of any group an earlier set put it in.
- **Splits by skill.** Requests that share any skill of their groups form one component, which goes to
  one split whole. A component holding skills an earlier set already split takes the most held-out of their
  splits (test, then dev, then train), so no test skill of any set is a train or dev positive of another and no
  dev skill a train positive; a dev component may hold another set's train skills (dev only chooses). Test
  cannot share: a request whose own skills carry the test split and another is dropped alone, before the
  components are formed (it would otherwise drag every request linked to it out), and a component that still
  joins test with another split is dropped whole; both are counted. Every other component goes to the split a
  hash of its skills falls in (the set's target shares), so a request added later never moves an earlier one.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from shared_corpus import CORPUS

from skill_assets.lib.common.hashing import digest, normalise_name, normalise_text
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.requests import Request
from skill_assets.lib.training.hard_negatives import body_trigrams, near_duplicate_bodies

COPY_JACCARD = 0.6
DIRECTION_ORDER = ("en2en", "en2zh", "zh2en", "zh2zh")
Copies = Callable[[str], list[str]]


def written(folder: Path) -> list[dict]:
    """Every request of the writers' files under ``folder``, each with ``_where`` (file:line) for messages."""
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                rec = json.loads(line)
                rec["_where"] = f"{path.name}:{n}"
                rows.append(rec)
    return rows


def earlier_splits(sets: Iterable[Request]) -> tuple[dict[str, str], dict[str, set[str]]]:
    """(skill id -> its split, skill id -> the members of every group it is in) over requests already split."""
    forced: dict[str, str] = {}
    groups: dict[str, set[str]] = defaultdict(set)
    for r in sets:
        forced.update({s: r.split for s in r.gt})
        for g in r.groups:
            for s in g:
                groups[s] |= set(g)
    return forced, groups


def copy_groups(skills: dict[str, Skill], known_groups: Mapping[str, set[str]]) -> Copies:
    """skill id -> its copies (the skill first), as ``copies_of(id)``."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for sid, s in skills.items():
        by_name[normalise_name(s.name)].append(sid)

    def copies_of(sid: str) -> list[str]:
        s = skills[sid]
        desc, tri = normalise_text(s.description), body_trigrams(s.body)
        found = [o for o in sorted(by_name[normalise_name(s.name)]) if o != sid and (
            normalise_text(skills[o].description) == desc or near_duplicate_bodies(tri, body_trigrams(skills[o].body),
                                                                                   COPY_JACCARD))]
        extra = sorted(known_groups.get(sid, set()) - {sid} - set(found))
        return [sid, *found, *(o for o in extra if o in skills)]

    return copies_of


def grouped(rows: list[dict], skills: dict[str, Skill], copies_of: Copies) -> tuple[list[dict], int]:
    """(the rows whose skills the pool holds, each with ``gt_groups``; how many were dropped, each named on stderr).

    A skill the router's pool loader rejects cannot be ground truth, so its requests are dropped, not repaired."""
    kept = []
    for r in rows:
        if missing := [s for s in r["gt"] if s not in skills]:
            print(f"{r['_where']}: dropped, a skill is not in the pool: {missing}", file=sys.stderr)
            continue
        groups, taken = [], set()
        for sid in r["gt"]:
            group = [s for s in copies_of(sid) if s not in taken]
            taken.update(group)
            groups.append(group)
        r["gt_groups"] = groups
        kept.append(r)
    return kept, len(rows) - len(kept)


def _dealt(skill_ids: list[str], targets: Mapping[str, float]) -> str:
    """The split of a free component: a hash of its skills read as a number in [0, 1), cut at the target shares,
    so adding requests elsewhere never moves it."""
    u = int(digest("|".join(skill_ids))[:12], 16) / 16 ** 12
    for split, share in targets.items():
        if u < share:
            return split
        u -= share
    return "test"


def _joins_test(splits: set[str]) -> bool:
    """Whether skills of these earlier splits hold a test skill beside a train or dev one: no split is honest."""
    return "test" in splits and len(splits) > 1


def assign_splits(requests: list[dict], forced: Mapping[str, str], targets: Mapping[str, float]
                  ) -> tuple[dict[str, str], list[dict]]:
    """request id -> split, and the requests dropped for joining an earlier set's test split with another."""

    def earlier(rs: Iterable[dict]) -> set[str]:
        return {forced[s] for r in rs for g in r["gt_groups"] for s in g if s in forced}

    dropped = [r for r in requests if _joins_test(earlier([r]))]
    requests = [r for r in requests if not _joins_test(earlier([r]))]
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in requests:
        ids = [s for g in r["gt_groups"] for s in g]
        for s in ids[1:]:
            parent[find(s)] = find(ids[0])
    components: dict[str, list[dict]] = defaultdict(list)
    for r in requests:
        components[find(r["gt_groups"][0][0])].append(r)
    split_of: dict[str, str] = {}
    free: dict[str, list[list[dict]]] = defaultdict(list)
    for members in components.values():
        tied = earlier(members)
        if not tied:
            free[members[0]["direction"]].append(members)
        elif _joins_test(tied):
            dropped.extend(members)
        else:  # the most held-out of its earlier splits
            split = next(s for s in ("test", "dev", "train") if s in tied)
            split_of.update({r["id"]: split for r in members})
    for comps in free.values():
        for comp in comps:
            split = _dealt(sorted({s for r in comp for g in r["gt_groups"] for s in g}), targets)
            split_of.update({r["id"]: split for r in comp})
    return split_of, dropped


def curated_record(r: dict, split: str, style: str, **extra: object) -> dict:
    """One request in the curated format ``load_requests`` reads (``extra`` fields after the curated ones)."""
    return {"id": r["id"], "query": r["query"], "lang": r["lang"], "direction": r["direction"], "k": r["k"],
            "gt": [s for g in r["gt_groups"] for s in g], "gt_groups": r["gt_groups"], "style": style, "split": split,
            "topic": r.get("topic", ""), "writer": r.get("writer", ""), **extra}


def write_requests(path: Path, records: list[dict]) -> None:
    """``records`` sorted by id, one JSON line each (the same records give the same bytes)."""
    records = sorted(records, key=lambda r: r["id"])
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def split_table(rows: list[dict]) -> list[str]:
    """Requests by direction and split, as the cards' Markdown table."""
    by = Counter((r["direction"], r["split"]) for r in rows)
    lines = ["| direction | train | dev | test | all |", "|---|---|---|---|---|"]
    for d in DIRECTION_ORDER:
        row = [by[(d, s)] for s in ("train", "dev", "test")]
        lines.append(f"| {d} | {' | '.join(map(str, row))} | {sum(row)} |")
    split_totals = Counter(r["split"] for r in rows)
    lines.append(f"| all | {split_totals['train']} | {split_totals['dev']} | {split_totals['test']} | {len(rows)} |")
    return lines


def write_counts(readme: Path, mark: str, section: str, title: str) -> None:
    """Replace everything of ``readme`` from ``mark`` on with ``section`` (the card's head is kept as written)."""
    head = readme.read_text(encoding="utf-8").split(mark)[0] if readme.is_file() else f"# {title}\n\n"
    readme.write_text(head + section, encoding="utf-8")


def build_main(description: str, build: Callable[[Path], tuple[list[dict], str, dict]], requests: Path,
               readme: Path, mark: str, title: str) -> int:
    """A set builder's command line: ``--corpus``, then ``build(corpus)``'s records written to ``requests``, its
    counts section into ``readme`` (from ``mark`` on) and its summary as one JSON line."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--corpus", default=str(CORPUS))
    args = ap.parse_args()
    out, section, summary = build(Path(args.corpus))
    write_requests(requests, out)
    write_counts(readme, mark, section, title)
    print(json.dumps(summary))
    return 0
