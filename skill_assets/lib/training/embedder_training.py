"""Fine-tune a bi-encoder on benchmark training queries (R3 multi-positive or SkillRouter in-batch).

A training example is (query, main positive, siblings, negatives), all skills by id. Each batch
embeds its queries and the union of every skill it mentions, so other queries' positives act as
negatives, except where they are this query's own siblings.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch
from torch import nn

from skill_assets.lib.training.losses import InBatchInfoNCELoss, MultiPositiveInfoNCELoss
from skill_assets.lib.training.training_queries import TrainingQuery


@dataclass(frozen=True)
class EmbedderTrainingExample:
    query: str
    positive: str
    siblings: tuple[str, ...] = ()
    negatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class EmbedderBatch:
    queries: list[str]
    candidate_ids: list[str]
    positive_index: list[int]
    sibling_index: list[list[int]] = field(default_factory=list)


def make_examples(queries: list[TrainingQuery], negatives: dict[str, list[str]], seed: int
                  ) -> list[EmbedderTrainingExample]:
    """One example per query; the main positive is drawn (seeded) from its ground-truth set."""
    rng = random.Random(seed)
    out = []
    for q in queries:
        ids = list(q.skill_ids)
        positive = rng.choice(ids)
        out.append(EmbedderTrainingExample(q.query, positive, tuple(s for s in ids if s != positive),
                                           tuple(negatives.get(q.id, ()))))
    return out


def make_batches(examples: list[EmbedderTrainingExample], batch_size: int, epochs: int, seed: int) -> list[EmbedderBatch]:
    rng = random.Random(seed)
    batches = []
    for _ in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        for start in range(0, len(order), batch_size):
            chunk = [examples[i] for i in order[start : start + batch_size]]
            ids: list[str] = []
            for ex in chunk:
                for sid in (ex.positive, *ex.siblings, *ex.negatives):
                    if sid not in ids:
                        ids.append(sid)
            batches.append(EmbedderBatch(
                queries=[ex.query for ex in chunk], candidate_ids=ids,
                positive_index=[ids.index(ex.positive) for ex in chunk],
                sibling_index=[[ids.index(s) for s in ex.siblings] for ex in chunk]))
    return batches


def build_loss(name: str, temperature: float, sibling_weight: float) -> nn.Module:
    if name == "multi_positive_infonce":
        return MultiPositiveInfoNCELoss(temperature, sibling_weight)
    if name == "in_batch_infonce":
        return InBatchInfoNCELoss(temperature)
    raise ValueError(f"unknown embedder loss {name!r}")


def embedder_batch_loss(model, loss: nn.Module, batch: EmbedderBatch, skill_text: dict[str, str],
                        query_prompt: str = "") -> torch.Tensor:
    device = next(model.parameters()).device

    def embed(texts: list[str]) -> torch.Tensor:
        features = model.preprocess(texts)
        features = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in features.items()}
        return model(features)["sentence_embedding"]

    q = embed([query_prompt + t for t in batch.queries])
    c = embed([skill_text[sid] for sid in batch.candidate_ids])
    sibling_mask = torch.zeros(len(batch.queries), len(batch.candidate_ids), dtype=torch.bool, device=device)
    for i, sibs in enumerate(batch.sibling_index):
        sibling_mask[i, sibs] = True
    return loss(q, c, torch.tensor(batch.positive_index, device=device), sibling_mask)
