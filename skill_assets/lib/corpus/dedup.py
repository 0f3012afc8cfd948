"""Layered deduplication of raw skills.

Layers, applied in order, each recording which skill a duplicate was folded into:
1. ``name_and_content`` — same normalised name and same normalised content (a fork or mirror);
2. ``content`` — same normalised content under another name (a renamed copy);
3. ``near_duplicate`` — MinHash-LSH candidates over 5-word shingles (64 permutations, 16 bands of
   4 rows: a pair at Jaccard 0.7 becomes a candidate with probability 0.99), verified by exact
   Jaccard ≥ 0.7 and grouped with union-find (edited copies).

Keep policy (every layer): the most complete body (longest after normalisation), then the earliest source in the
configured order, then the smallest skill id — deterministic, and it favours the original
over a truncated copy.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from skill_assets.lib.common.hashing import normalise_text
from skill_assets.lib.corpus.minhash import MinHasher, Utf8Chunk, lsh_pair_array, sketch_chunks
from skill_assets.lib.corpus.minhash_kernels import verified_groups


@dataclass(frozen=True)
class DedupConfig:
    shingle_size: int = 5
    num_perm: int = 64
    bands: int = 16
    jaccard_threshold: float = 0.7
    #: candidates whose signature-estimated Jaccard is this far below the threshold skip exact
    #: verification (3.5 standard errors at 64 permutations: a true 0.7 pair is kept with p > 0.999)
    estimate_margin: float = 0.2
    seed: int = 1


#: documents per chunk of near-duplicate texts (a slice of a list, or one batch of the store scan)
TEXT_CHUNK = 2000


@dataclass(frozen=True, slots=True)
class DedupCandidate:
    """A raw skill as the layers and the keep policy read it: its keys, never its text (which the near-duplicate
    layer streams through ``texts_for``, so a 100K-skill corpus is not held in memory; slots keep 100K of these
    smaller than the rows they come from)."""

    skill_id: str
    source: str
    name: str
    name_hash: str     # hash of the normalised name (layer 1)
    content_hash: str  # hash of the normalised description and body (layers 1 and 2)
    body_chars: int    # length of the normalised body: the keep policy prefers the most complete one


def dedup_candidates(rows: Iterable[Mapping]) -> list[DedupCandidate]:
    """Candidates of rows keyed as ``raw_skills`` is, in the rows' order: the one place such a row becomes one.
    A row without ``body_chars`` (a store written before the column) measures its ``body``."""
    return [DedupCandidate(r["skill_id"], r["source"], r["name"], r["name_hash"], r["content_hash"],
                           r["body_chars"] if r.get("body_chars") is not None else len(normalise_text(r["body"])))
            for r in rows]


def row_texts(rows: Iterable[Mapping]) -> Callable[[list[str]], list[str]]:
    """``texts_for`` over rows that hold their text (``description`` and ``body``), for a corpus held in memory."""
    text = {r["skill_id"]: r["description"] + "\n" + r["body"] for r in rows}
    return lambda skill_ids: [text[sid] for sid in skill_ids]


def keep_order_key(skill: DedupCandidate, source_rank: dict[str, int]) -> tuple:
    return (-skill.body_chars, source_rank.get(skill.source, len(source_rank)), skill.skill_id)


def _fold_by_key(skills: list[DedupCandidate], key: Callable[[DedupCandidate], object], layer: str,
                 duplicates: list[dict]) -> list[DedupCandidate]:
    """Keep the first skill (they are pre-sorted by keep order) of each key group."""
    kept: dict = {}
    for skill in skills:
        k = key(skill)
        if k in kept:
            duplicates.append({"duplicate_skill_id": skill.skill_id, "kept_skill_id": kept[k].skill_id,
                               "layer": layer, "similarity": 1.0})
        else:
            kept[k] = skill
    return list(kept.values())


def near_duplicate_pairs(texts: list[str] | Iterable[list[str] | Utf8Chunk],
                         config: DedupConfig) -> list[tuple[int, int, float]]:
    """(duplicate index, kept index, Jaccard) for each text folded into an earlier one.

    ``texts`` is a list, or an iterable of chunks: lists of the next texts, or ``Utf8Chunk``s that
    name their documents' places (so a caller can stream them from disk in whatever order a scan
    returns them). Places are keep order: the smallest index of a group is the one kept.
    Candidate pairs whose ends are already in one group skip verification (union-find), which
    keeps exact Jaccard work near-linear in the number of duplicates.
    """
    chunks = texts
    if isinstance(texts, list) and (not texts or isinstance(texts[0], str)):
        chunks = [texts[i : i + TEXT_CHUNK] for i in range(0, len(texts), TEXT_CHUNK)]
    sk = sketch_chunks(chunks, config.shingle_size, MinHasher(config.num_perm, config.seed))
    sigs, n = sk.signatures, len(sk.set_starts)
    if n < 2:
        return []
    pairs = lsh_pair_array(sigs, config.bands)
    estimate = (sigs[pairs[:, 0]] == sigs[pairs[:, 1]]).mean(axis=1) if len(pairs) else np.zeros(0)
    parent, similarity = np.arange(n, dtype=np.int64), np.ones(n, dtype=np.float64)
    # the reported similarity is the measured Jaccard to the kept skill (a member joined through a
    # chain of near-duplicates may sit below the threshold to it, and the table says so)
    verified_groups(np.ascontiguousarray(pairs[estimate >= config.jaccard_threshold - config.estimate_margin]),
                    sk.sets, sk.set_starts, sk.set_ends, config.jaccard_threshold, parent, similarity)
    folded = np.flatnonzero(parent != np.arange(n))
    return list(zip(folded.tolist(), parent[folded].tolist(), similarity[folded].tolist(), strict=True))


FILE_OPERATION_RULES: dict[str, re.Pattern[str]] = {
    rule: re.compile(pattern, re.IGNORECASE)
    for rule, pattern in {
        "pdf_handler": r"^(pdf|pdf[-_ ]?(tools?|processing|handler|editor|manipulation))$",
        "docx_handler": r"^(docx?|word[-_ ]?(documents?|docx?))$",
        "xlsx_handler": r"^(xlsx?|excel|spreadsheets?)$",
        "pptx_handler": r"^(pptx?|powerpoint|slides?)$",
    }.items()
}


def file_operation_rule(name: str) -> str | None:
    """Rule name when a skill is a generic document-format handler (excluded from sampling)."""
    for rule, pattern in FILE_OPERATION_RULES.items():
        if pattern.match(name.strip()):
            return rule
    return None


def deduplicate(skills: Sequence[DedupCandidate], source_order: list[str], config: DedupConfig = DedupConfig(), *,
                texts_for: Callable[[list[str]], list[str] | Iterable[list[str] | Utf8Chunk]]
                ) -> tuple[list[DedupCandidate], list[dict]]:
    """Return (kept skills, ``skill_duplicates`` rows); every input skill is in exactly one of the two.

    ``texts_for(skill_ids)`` gives the near-duplicate texts (description + body) of those skills: a list of
    them in that order, or chunk by chunk, lists of texts in that order or ``Utf8Chunk``s naming each text's
    place in ``skill_ids`` (``row_texts`` where the rows are in memory).
    """
    rank = {s: i for i, s in enumerate(source_order)}
    ordered = sorted(skills, key=lambda s: keep_order_key(s, rank))
    duplicates: list[dict] = []
    kept = _fold_by_key(ordered, lambda s: (s.name_hash, s.content_hash), "name_and_content", duplicates)
    kept = _fold_by_key(kept, lambda s: s.content_hash, "content", duplicates)
    folded = set()
    for dup, keep, sim in near_duplicate_pairs(texts_for([s.skill_id for s in kept]), config):
        duplicates.append({"duplicate_skill_id": kept[dup].skill_id, "kept_skill_id": kept[keep].skill_id,
                           "layer": "near_duplicate", "similarity": round(sim, 4)})
        folded.add(dup)
    kept = [s for i, s in enumerate(kept) if i not in folded]
    # a duplicate folded into a row that a later layer folded points at the final kept skill
    final = {d["duplicate_skill_id"]: d["kept_skill_id"] for d in duplicates}
    for d in duplicates:
        target = d["kept_skill_id"]
        while target in final:
            target = final[target]
        d["kept_skill_id"] = target
    return kept, duplicates
