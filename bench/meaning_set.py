"""Build the meaning-only request set from its writers' files: copy groups, splits by skill, the card's counts.

Input: ``skill_assets/benchmarks/meaning/written/*.jsonl`` (one file per writer, ``gt`` one skill id per
needed skill), the curated benchmark (whose skills keep their split here) and the shared corpus. Output:
``skill_assets/benchmarks/meaning/requests.jsonl`` in the curated format (``load_requests`` reads it) and
the counts section of the folder's ``README.md``. Deterministic: the same files give the same bytes.

- **Copy groups.** A labelled skill's group is the skill, then every corpus skill with the same normalised
  name whose description is the same or whose body shares word trigrams above the SkillRouter
  false-negative threshold (``near_duplicate_bodies``), then the members of any curated group it is in.
- **Splits by skill.** Requests that share any skill of their groups form one component, which goes to
  one split whole. A component holding a curated skill takes that skill's curated split (so the curated
  test skills stay test skills for every model trained on either set); a component whose skills carry two
  curated splits is dropped and counted. Every other component goes to the split a hash of its skills
  falls in (``TARGETS`` shares), so a request added later never moves an earlier one.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from shared_corpus import CORPUS

from skill_assets.lib.common.hashing import digest, normalise_name, normalise_text
from skill_assets.lib.evaluation.curated_benchmark import CURATED_DIR, load_requests
from skill_assets.lib.retrieval.pools import Skill, load_pool
from skill_assets.lib.training.hard_negatives import body_trigrams, near_duplicate_bodies

MEANING_DIR = CURATED_DIR.parent / "meaning"
TARGETS = {"train": 0.66, "dev": 0.19, "test": 0.15}
COPY_JACCARD = 0.6
COUNTS_MARK = "## Counts"


def written(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                rec = json.loads(line)
                rec["_where"] = f"{path.name}:{n}"
                rows.append(rec)
    return rows


def copy_groups(skills: dict[str, Skill], curated_groups: dict[str, set[str]]):
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
        extra = sorted(curated_groups.get(sid, set()) - {sid} - set(found))
        return [sid, *found, *(o for o in extra if o in skills)]

    return copies_of


def _dealt(skill_ids: list[str]) -> str:
    """The split of a free component: a hash of its skills read as a number in [0, 1), cut at the target shares,
    so adding requests elsewhere never moves it."""
    u = int(digest("|".join(skill_ids))[:12], 16) / 16 ** 12
    for split, share in TARGETS.items():
        if u < share:
            return split
        u -= share
    return "test"


def assign_splits(requests: list[dict], forced: dict[str, str]) -> tuple[dict[str, str], list[dict]]:
    """request id -> split, and the requests dropped for a component tied to two curated splits."""
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
    split_of, dropped = {}, []
    free: dict[str, list[list[dict]]] = defaultdict(list)
    for root, members in components.items():
        skills = {s for r in members for g in r["gt_groups"] for s in g}
        tied = {forced[s] for s in skills if s in forced}
        if len(tied) > 1:
            dropped.extend(members)
        elif tied:
            (split,) = tied
            split_of.update({r["id"]: split for r in members})
        else:
            free[members[0]["direction"]].append(members)
    for comps in free.values():
        for comp in comps:
            split = _dealt(sorted({s for r in comp for g in r["gt_groups"] for s in g}))
            split_of.update({r["id"]: split for r in comp})
    return split_of, dropped


def counts_section(rows: list[dict], dropped: list[dict], unreadable: int) -> str:
    by = Counter((r["direction"], r["split"]) for r in rows)
    lines = [COUNTS_MARK, "", "_Written by `bench/meaning_set.py`._", "",
             "| direction | train | dev | test | all |", "|---|---|---|---|---|"]
    for d in ("en2en", "en2zh", "zh2en", "zh2zh"):
        row = [by[(d, s)] for s in ("train", "dev", "test")]
        lines.append(f"| {d} | {' | '.join(map(str, row))} | {sum(row)} |")
    split_totals = Counter(r["split"] for r in rows)
    lines.append(f"| all | {split_totals['train']} | {split_totals['dev']} | {split_totals['test']} | {len(rows)} |")
    ks = Counter(r["k"] for r in rows)
    lines += ["", f"k = 1 / 2 / 3: {ks[1]} / {ks[2]} / {ks[3]}; groups with a copy: "
                  f"{sum(len(g) > 1 for r in rows for g in r['gt_groups'])}; requests dropped because their skills "
                  f"carry two curated splits: {len(dropped)}; because a skill is not in the pool the router reads "
                  f"(its loader rejects the file): {unreadable}.", ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    args = ap.parse_args()
    skills = {s.id: s for s in load_pool(args.corpus).skills}
    curated = load_requests()
    forced = {s: r.split for r in curated for s in r.gt}
    curated_groups: dict[str, set[str]] = defaultdict(set)
    for r in curated:
        for g in r.groups:
            for s in g:
                curated_groups[s] |= set(g)
    copies_of = copy_groups(skills, curated_groups)
    rows = written(MEANING_DIR / "written")
    unreadable = [r for r in rows if any(s not in skills for s in r["gt"])]
    for r in unreadable:  # a skill the router's pool loader rejects cannot be ground truth
        print(f"{r['_where']}: dropped, a skill is not in the pool: "
              f"{[s for s in r['gt'] if s not in skills]}", file=sys.stderr)
    rows = [r for r in rows if all(s in skills for s in r["gt"])]
    for r in rows:
        groups, taken = [], set()
        for sid in r["gt"]:
            group = [s for s in copies_of(sid) if s not in taken]
            taken.update(group)
            groups.append(group)
        r["gt_groups"] = groups
    split_of, dropped = assign_splits(rows, forced)
    out = []
    for r in rows:
        if r["id"] not in split_of:
            continue
        out.append({"id": r["id"], "query": r["query"], "lang": r["lang"], "direction": r["direction"], "k": r["k"],
                    "gt": [s for g in r["gt_groups"] for s in g], "gt_groups": r["gt_groups"],
                    "style": r.get("style", "task_direct"), "split": split_of[r["id"]], "topic": r.get("topic", ""),
                    "writer": r.get("writer", "")})
    out.sort(key=lambda r: r["id"])
    (MEANING_DIR / "requests.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out),
                                                encoding="utf-8")
    readme = MEANING_DIR / "README.md"
    head = readme.read_text(encoding="utf-8").split(COUNTS_MARK)[0] if readme.is_file() else "# Meaning-only requests\n\n"
    readme.write_text(head + counts_section(out, dropped, len(unreadable)), encoding="utf-8")
    print(json.dumps({"requests": len(out), "dropped": len(dropped),
                      "splits": dict(Counter(r["split"] for r in out)),
                      "directions": dict(Counter(r["direction"] for r in out))}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
