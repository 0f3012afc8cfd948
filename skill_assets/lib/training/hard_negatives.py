"""Mine hard negatives for training queries with a teacher embedder, minus false negatives.

R3 rule: one negative whose teacher rank lies in [20, 50) and whose cosine to the query is
below 0.85 (hard, but unlikely to be an unlabelled positive). A candidate is never a negative
when it is a ground-truth skill of the query (siblings included) or fails the false-negative
filter: same normalised name as a positive, body word-trigram Jaccard > 0.6 with a positive, or
teacher cosine > 0.92 with a positive.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from skill_assets.lib.common.hashing import jaccard, normalise_name, word_tokens
from skill_assets.lib.retrieval.pools import Skill


@dataclass(frozen=True)
class MiningRule:
    rank_low: int = 20
    rank_high: int = 50
    max_query_cosine: float = 0.85
    trigram_jaccard_max: float = 0.6
    positive_cosine_max: float = 0.92


def body_trigrams(body: str) -> set[str]:
    tokens = word_tokens(body)
    return {" ".join(tokens[i : i + 3]) for i in range(max(0, len(tokens) - 2))}


def near_duplicate_bodies(a: set[str], b: set[str], threshold: float) -> bool:
    """Body word-trigram Jaccard above ``threshold``; bodies too short for a trigram prove nothing."""
    return bool(a) and bool(b) and jaccard(a, b) > threshold


def mine_r3_negatives(query_emb: np.ndarray, skill_emb: np.ndarray, skills: Sequence[Skill],
                      positives: list[list[int]], rule: MiningRule = MiningRule()) -> tuple[list[int | None], Counter]:
    """Per query, the index of one negative (or None) and counts of candidates removed per filter layer."""
    q = query_emb / np.linalg.norm(query_emb, axis=1, keepdims=True)
    s = skill_emb / np.linalg.norm(skill_emb, axis=1, keepdims=True)
    sims = q @ s.T
    skill_sims = s @ s.T
    names = [normalise_name(x.name) for x in skills]
    trigrams: dict[int, set[str]] = {}
    removed: Counter = Counter()
    chosen: list[int | None] = []
    for qi, pos in enumerate(positives):
        order = np.argsort(-sims[qi], kind="stable")
        window = [int(j) for j in order[rule.rank_low : rule.rank_high]]
        if not window:  # a pool smaller than rank_low: fall back to the lower half of the ranking
            window = [int(j) for j in order[len(order) // 2 :]]
        pick = None
        for j in window:
            if j in pos:
                removed["ground_truth"] += 1
                continue
            if sims[qi, j] >= rule.max_query_cosine:
                removed["query_cosine"] += 1
                continue
            if any(names[j] == names[p] for p in pos):
                removed["same_name"] += 1
                continue
            tj = trigrams.setdefault(j, body_trigrams(skills[j].body))
            if any(near_duplicate_bodies(tj, trigrams.setdefault(p, body_trigrams(skills[p].body)),
                                         rule.trigram_jaccard_max) for p in pos):
                removed["body_trigram_jaccard"] += 1
                continue
            if any(skill_sims[j, p] > rule.positive_cosine_max for p in pos):
                removed["teacher_cosine"] += 1
                continue
            pick = j
            break
        chosen.append(pick)
    return chosen, removed


def mine_skillrouter_negatives(query_emb: np.ndarray, skill_emb: np.ndarray, skills: Sequence[Skill],
                               domains: Sequence[Hashable], positives: list[list[int]], bm25_top: list[list[int]],
                               seed: int = 0, rule: MiningRule = MiningRule()) -> tuple[list[list[int]], Counter]:
    """SkillRouter's 10 negatives: 4 semantic, 3 BM25, 2 same super-domain, 1 random other-domain,
    each passed through the same false-negative filter. ``domains``: each skill's super-domain, in the
    skills' order."""
    import random

    rng = random.Random(seed)
    s = skill_emb / np.linalg.norm(skill_emb, axis=1, keepdims=True)
    q = query_emb / np.linalg.norm(query_emb, axis=1, keepdims=True)
    sims, skill_sims = q @ s.T, s @ s.T
    names = [normalise_name(x.name) for x in skills]
    trigrams = [body_trigrams(x.body) for x in skills]
    removed: Counter = Counter()

    def acceptable(j: int, pos: list[int], taken: list[int]) -> bool:
        if j in pos or j in taken:
            return False
        for p in pos:
            if names[j] == names[p]:
                removed["same_name"] += 1
                return False
            if near_duplicate_bodies(trigrams[j], trigrams[p], rule.trigram_jaccard_max):
                removed["body_trigram_jaccard"] += 1
                return False
            if skill_sims[j, p] > rule.positive_cosine_max:
                removed["teacher_cosine"] += 1
                return False
        return True

    out = []
    for qi, pos in enumerate(positives):
        wanted = {domains[p] for p in pos}
        same = [j for j in range(len(skills)) if domains[j] in wanted]
        other = [j for j in range(len(skills)) if domains[j] not in wanted]
        rng.shuffle(same)
        rng.shuffle(other)
        sources = [(list(np.argsort(-sims[qi], kind="stable")), 4), (bm25_top[qi], 3), (same, 2), (other, 1)]
        taken: list[int] = []
        for candidates, quota in sources:
            got = 0
            for j in candidates:
                if got == quota:
                    break
                if acceptable(int(j), pos, taken):
                    taken.append(int(j))
                    got += 1
        out.append(taken)
    return out, removed
