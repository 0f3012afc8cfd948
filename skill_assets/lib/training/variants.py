"""Training variants (the partitions of the ``embedder`` and ``reranker`` assets) and their recipes.

Defaults follow METHOD.md §3: R3 (τ = 1/30, λ = 0.25, one teacher-mined negative; graded ListNet
over 10 candidates with labels 3/1/0) and SkillRouter (τ = 0.05 with 10 mined negatives; listwise
cross-entropy over 20 candidates), learning rates 2e-5 / 1e-5, one epoch.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbedderVariant:
    name: str
    ablation: str
    loss: str
    temperature: float
    sibling_weight: float
    negatives: str  # teacher | skip_partner | skillrouter
    learning_rate: float = 2e-5


@dataclass(frozen=True)
class RerankerVariant:
    name: str
    ablation: str
    loss: str
    skip_labels: str  # graded | none | shuffled
    list_size: int
    learning_rate: float = 1e-5


EMBEDDER_VARIANTS = {v.name: v for v in [
    EmbedderVariant("r3", "A", "multi_positive_infonce", 1 / 30, 0.25, "teacher"),
    EmbedderVariant("r3-skip-neg", "B", "multi_positive_infonce", 1 / 30, 0.25, "skip_partner"),
    EmbedderVariant("skillrouter", "-", "in_batch_infonce", 0.05, 0.0, "skillrouter"),
]}

RERANKER_VARIANTS = {v.name: v for v in [
    RerankerVariant("r3", "E", "graded_listnet", "graded", 10),
    RerankerVariant("r3-noskip", "C", "graded_listnet", "none", 10),
    RerankerVariant("r3-shuffled-skip", "D", "graded_listnet", "shuffled", 10),
    RerankerVariant("skillrouter-listwise", "-", "listwise_ce", "none", 20),
    RerankerVariant("pointwise", "-", "pointwise_bce", "none", 20),
]}

