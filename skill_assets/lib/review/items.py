"""What needs human eyes: review items per kind, seeded samples, and next rounds for disputed items.

Three kinds, after R3-Skill's review protocol: every multi-skill test query's skill set
(``skill_set``: "are these the skills this request needs?"), a seeded sample of test queries for
naturalness (``naturalness``, rated 1-5) and a seeded sample of taxonomy labels per class, rule hits and
model (or LLM) labels alike (``taxonomy``: is the rejection class correct?). An item is ``<kind>:<subject_id>``; a round is one
pass of reviewers over it, and a disputed item gets a next round for reviewers who have not seen it.
Rows follow the ``review_tasks`` table.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.lexical import LexicalIndex
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.ranking import top_k_rankings
from skill_assets.lib.retrieval.signals import lexical_document

KINDS = ("skill_set", "naturalness", "taxonomy")
KIND_TITLES = {"skill_set": "skill sets", "naturalness": "naturalness", "taxonomy": "taxonomy classes"}


def item_id(kind: str, subject_id: str, source: str = "pipeline") -> str:
    """``<kind>:<subject>`` for the pipeline's own items, ``<kind>:<source>:<subject>`` for an external benchmark's."""
    return f"{kind}:{subject_id}" if source == "pipeline" else f"{kind}:{source}:{subject_id}"


def project_title(kind: str, round_: int, source: str = "pipeline") -> str:
    """One Label Studio project per kind, round and source, so a round's overlap setting is its own."""
    title = f"skill-assets review · {KIND_TITLES[kind]} · round {round_}"
    return title if source == "pipeline" else f"{title} · {source}"


def _item(kind: str, subject_id: str, source: str, reviewers_needed: int, **fields) -> dict:
    row = {"item_id": item_id(kind, subject_id, source), "round": 1, "kind": kind, "subject_id": subject_id,
           "source": source, "reviewers_needed": reviewers_needed, "exclude_reviewers": [],
           "project": project_title(kind, 1, source), "skill_ids": [], "candidate_skill_ids": []}
    return row | fields


def _seeded(rows: Iterable[dict], key: str, seed: int) -> list[dict]:
    return sorted(rows, key=lambda r: digest(f"{seed}:{r[key]}"))


def bm25_candidates(queries: list[dict], pool: Sequence[Skill], n: int, exclude: dict[str, set[str]] | None = None
                    ) -> dict[str, list[str]]:
    """The ``n`` best BM25 skills of ``pool`` per query that are not its ground truth (nor in ``exclude``).

    Offered to reviewers as "possibly missing": the skills a router would confuse with the
    ground truth, so a reviewer can add one with a click instead of searching the library. ``pool``
    is ``Skill``s, as the router reads them, so the BM25 documents are the router's own.
    """
    if not queries or not pool or n <= 0:
        return {q["query_id"]: [] for q in queries}
    ids = [s.id for s in pool]
    index, _ = LexicalIndex.build_or_load([lexical_document(s) for s in pool])
    widest = max((len(q["skill_ids"]) + len((exclude or {}).get(q["query_id"], ())) for q in queries), default=0)
    rankings = top_k_rankings(index.scores([q["query"] for q in queries]), ids, n + widest)
    out = {}
    for q, ranking in zip(queries, rankings):
        skip = set(q["skill_ids"]) | (exclude or {}).get(q["query_id"], set())
        out[q["query_id"]] = [sid for sid, _ in ranking if sid not in skip][:n]
    return out


def skill_set_items(queries: list[dict], candidates: dict[str, list[str]], reviewers_needed: int,
                    source: str = "pipeline", min_k: int = 2) -> list[dict]:
    """Every test query with at least ``min_k`` skills: its ground truth goes to review."""
    return [_item("skill_set", q["query_id"], source, reviewers_needed, query=q["query"], direction=q["direction"],
                  k=q["k"], skill_ids=list(q["skill_ids"]), candidate_skill_ids=candidates.get(q["query_id"], []))
            for q in queries if q["k"] >= min_k]


def naturalness_items(queries: list[dict], fraction: float, seed: int, reviewers_needed: int,
                      source: str = "pipeline") -> list[dict]:
    """A seeded ``fraction`` of test queries (rounded up), rated 1-5 for how natural the request reads."""
    take = math.ceil(fraction * len(queries))
    return [_item("naturalness", q["query_id"], source, reviewers_needed, query=q["query"], direction=q["direction"],
                  k=q["k"], skill_ids=list(q["skill_ids"]))
            for q in _seeded(queries, "query_id", seed)[:take]]


#: how a taxonomy label was reached, as ``skip_taxonomy.method`` says; each is its own stratum of the sample
TAXONOMY_METHODS = ("rule", "model", "llm")


def _taxonomy_method(skip: dict) -> str | None:
    """``method``, or "rule" for a row written before the column existed that has a rule id."""
    return skip.get("method") or ("rule" if skip.get("rule_id") else None)


def taxonomy_items(skips: list[dict], per_class: int, seed: int, reviewers_needed: int) -> list[dict]:
    """A seeded sample of ``per_class`` labelled SKIPs of every taxonomy class, stratified by how the label
    was reached: within a class the rule-, model- and LLM-labelled SKIPs take turns (each in its seeded
    order), so reviewers see model labels beside rule hits; when one kind runs out the others fill the
    class's share. SKIPs left ``unknown`` are not sampled (there is no class to confirm)."""
    by_label: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for s in skips:
        method = _taxonomy_method(s)
        if method in TAXONOMY_METHODS and s.get("label") not in (None, "unknown"):
            by_label[s["label"]][method].append(s)
    out = []
    for label in sorted(by_label):
        queues = [_seeded(by_label[label][m], "record_id", seed) for m in TAXONOMY_METHODS if by_label[label][m]]
        picked: list[dict] = []
        while len(picked) < per_class and any(queues):
            for queue in queues:
                if queue and len(picked) < per_class:
                    picked.append(queue.pop(0))
        out += [_item("taxonomy", s["record_id"], "pipeline", reviewers_needed, direction=s["direction"], k=s["k"],
                      skill_ids=list(s["skill_ids"]), taxonomy_label=s["label"], taxonomy_method=_taxonomy_method(s),
                      rationale=s["rationale"], matched_span=s.get("matched_span"))
                for s in picked]
    return out


def next_round_items(tasks: list[dict], latest: dict[str, dict], verdicts: list[dict], reviewers_needed: int
                     ) -> list[dict]:
    """A new round for every item whose latest round ended disputed, for reviewers who have not seen it.

    ``latest`` maps item id → its latest ``label_agreement`` item row; an item whose next round
    already exists is left alone, so rerunning adds nothing.
    """
    rounds = {(t["item_id"], t["round"]): t for t in tasks}
    seen: dict[str, set[str]] = defaultdict(set)
    for v in verdicts:
        seen[v["item_id"]].add(v["reviewer"])
    out = []
    for iid, row in sorted(latest.items()):
        nxt = row["round"] + 1
        if row["status"] != "disputed" or (iid, nxt) in rounds or (iid, row["round"]) not in rounds:
            continue
        prev = rounds[(iid, row["round"])]
        out.append(prev | {"round": nxt, "reviewers_needed": reviewers_needed, "created_at": None,
                           "exclude_reviewers": sorted(seen[iid]),
                           "project": project_title(prev["kind"], nxt, prev["source"])})
    return out


def merge_rounds(existing: list[dict], first_round: list[dict], later_rounds: list[dict], source: str,
                 now: datetime) -> list[dict]:
    """``source``'s round-1 items as built now, every later round already created or new, other sources' items.

    A task keeps the ``created_at`` of its first build (a rerun does not make it new); a later
    round whose item left round 1 (its query was regenerated away) is dropped with it.
    """
    created = {(t["item_id"], t["round"]): t["created_at"] for t in existing}
    current = {t["item_id"] for t in first_round}
    keep = [t for t in existing if t["source"] != source or (t["round"] > 1 and t["item_id"] in current)]
    rows = first_round + keep + [t for t in later_rounds if (t["item_id"], t["round"]) not in created]
    return sorted(({**t, "created_at": created.get((t["item_id"], t["round"])) or now} for t in rows),
                  key=lambda t: (t["kind"], t["round"], t["item_id"]))
