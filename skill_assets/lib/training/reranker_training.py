"""Fine-tune a cross-encoder on graded candidate lists (R3 ListNet, SkillRouter listwise, pointwise).

A list holds ground-truth skills (label 3), SKIP partners (label 1, unless the variant drops or
shuffles them) and the embedder's top candidates as padding (label 0), up to ``list_size``.

A list may carry a *prior*: the first stage's score of each of its skills. The cross-encoder's
score is then added to it, so the model learns a correction to the first stage's ordering rather
than an ordering from nothing; with a head that starts at zero, step 0 is the first stage exactly
(``ranking.rerank(..., residual=True)`` scores the same way at routing time).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch
from torch import nn

from skill_assets.lib.training.losses import (
    GradedListNetLoss,
    ListwiseCrossEntropyLoss,
    PointwiseBCELoss,
)
from skill_assets.lib.training.training_queries import TrainingQuery

LABEL_GROUND_TRUTH = 3
LABEL_SKIP_PARTNER = 1
LABEL_OTHER = 0


@dataclass(frozen=True)
class RerankList:
    query: str
    skill_ids: tuple[str, ...]
    labels: tuple[int, ...]
    prior: tuple[float, ...] = ()  # the first stage's score of each skill, or () for none


def build_list(query: str, ground_truth: list[str], skip_partners: list[str], embedder_top: list[str],
               list_size: int, skip_label: int = LABEL_SKIP_PARTNER) -> RerankList:
    ids, labels = [], []
    for group, label in ((ground_truth, LABEL_GROUND_TRUTH), (skip_partners, skip_label), (embedder_top, LABEL_OTHER)):
        for sid in group:
            if sid not in ids and len(ids) < list_size:
                ids.append(sid)
                labels.append(label)
    return RerankList(query, tuple(ids), tuple(labels))


def shuffled_skip_partners(queries: list[TrainingQuery], seed: int) -> dict[str, list[str]]:
    """Control D: each query gets the SKIP partners of another query with the same direction and k.

    Queries of a group are shuffled and each takes its successor's partners (a cycle), so no query
    keeps its own; a query alone in its group has no matched donor and gets none.
    """
    rng = random.Random(seed)
    by_group: dict[tuple, list[TrainingQuery]] = {}
    for q in queries:
        by_group.setdefault((q.direction, q.k), []).append(q)
    out = {}
    for group in by_group.values():
        rng.shuffle(group)
        for q, donor in zip(group, group[1:] + group[:1]):
            out[q.id] = [s for s in donor.skip_partners if s not in q.skill_ids] if donor is not q else []
    return out


def build_loss(name: str, temperature: float = 1.0) -> nn.Module:
    if name == "graded_listnet":
        return GradedListNetLoss()
    if name == "listwise_ce":
        return ListwiseCrossEntropyLoss(temperature)
    if name == "pointwise_bce":
        return PointwiseBCELoss()
    raise ValueError(f"unknown reranker loss {name!r}")


def reranker_batch_loss(model, loss: nn.Module, lists: list[RerankList], skill_text: dict[str, str]) -> torch.Tensor:
    device = next(model.parameters()).device
    width = max(len(lst.skill_ids) for lst in lists)
    pairs = [(lst.query, skill_text[sid]) for lst in lists for sid in lst.skill_ids]
    features = model.preprocess(pairs)
    features = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in features.items()}
    flat = model(features)["scores"].reshape(-1)
    scores = torch.zeros(len(lists), width, device=device, dtype=flat.dtype)
    labels = torch.zeros(len(lists), width, device=device)
    mask = torch.zeros(len(lists), width, dtype=torch.bool, device=device)
    pos = 0
    for i, lst in enumerate(lists):
        n = len(lst.skill_ids)
        scores[i, :n] = flat[pos : pos + n]
        if lst.prior:
            scores[i, :n] = scores[i, :n] + torch.tensor(lst.prior, dtype=flat.dtype, device=device)
        labels[i, :n] = torch.tensor(lst.labels, dtype=torch.float, device=device)
        mask[i, :n] = True
        pos += n
    return loss(scores, labels, mask)
