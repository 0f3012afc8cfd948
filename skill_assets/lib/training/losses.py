"""Training losses of the two recipes, written out because stock libraries lack them.

* ``MultiPositiveInfoNCELoss`` — R3-Embedding. sentence-transformers has no loss that keeps the
  other ground-truth skills of a multi-skill query (siblings) out of the negatives; this is ours.
* ``InBatchInfoNCELoss`` — SkillRouter's encoder loss (τ = 0.05), the same formula with no siblings.
* ``GradedListNetLoss`` — R3-Reranker. Targets are ``softmax(labels)`` of graded labels (3/1/0);
  sentence-transformers' ``ListNetLoss`` normalises labels differently, so it is not reused.
* ``ListwiseCrossEntropyLoss`` — SkillRouter's reranker loss (τ = 1): softmax over the list, the
  positive's negative log-likelihood (targets spread uniformly over several positives).
* ``PointwiseBCELoss`` — the pointwise baseline of SkillRouter's ablation.

All operate on tensors (scores or embeddings) so the same modules serve any model.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

R3_TEMPERATURE = 1 / 30
R3_SIBLING_WEIGHT = 0.25
SKILLROUTER_TEMPERATURE = 0.05


class MultiPositiveInfoNCELoss(nn.Module):
    """L = L_nce + λ·L_sib over cosine logits z_c = cos(q, c) / τ.

    With siblings S◇ = S* \\ {s⁺} and the candidate set C (every skill embedded in the batch):
    L_nce = −log(exp z_{s⁺} / Σ_{c ∈ C \\ S◇} exp z_c);
    L_sib = −mean_{s◇ ∈ S◇} log(exp z_{s◇} / (exp z_{s◇} + Σ_{c ∈ N} exp z_c)), N = C \\ ({s⁺} ∪ S◇).
    Inputs: ``queries`` (B, d), ``candidates`` (C, d), ``positive_index`` (B,), ``sibling_mask``
    (B, C) bool. Queries without siblings reduce to plain InfoNCE.
    """

    def __init__(self, temperature: float = R3_TEMPERATURE, sibling_weight: float = R3_SIBLING_WEIGHT) -> None:
        super().__init__()
        self.temperature = temperature
        self.sibling_weight = sibling_weight

    def forward(self, queries: torch.Tensor, candidates: torch.Tensor, positive_index: torch.Tensor,
                sibling_mask: torch.Tensor) -> torch.Tensor:
        z = F.normalize(queries, dim=-1) @ F.normalize(candidates, dim=-1).T / self.temperature
        rows = torch.arange(z.shape[0], device=z.device)
        positive = torch.zeros_like(sibling_mask)
        positive[rows, positive_index] = True
        sibling_mask = sibling_mask & ~positive
        neg_inf = torch.finfo(z.dtype).min
        nce = torch.logsumexp(z.masked_fill(sibling_mask, neg_inf), dim=1) - z[rows, positive_index]
        negatives = ~(sibling_mask | positive)
        lse_neg = torch.logsumexp(z.masked_fill(~negatives, neg_inf), dim=1, keepdim=True)
        per_sibling = torch.logaddexp(z, lse_neg) - z
        n_sib = sibling_mask.sum(dim=1)
        sib = (per_sibling * sibling_mask).sum(dim=1) / n_sib.clamp(min=1)
        return (nce + self.sibling_weight * sib).mean()


class InBatchInfoNCELoss(MultiPositiveInfoNCELoss):
    """Plain in-batch InfoNCE (SkillRouter, τ = 0.05): other ground-truth skills are masked, never weighted."""

    def __init__(self, temperature: float = SKILLROUTER_TEMPERATURE) -> None:
        super().__init__(temperature=temperature, sibling_weight=0.0)


def _masked_log_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=1)


class GradedListNetLoss(nn.Module):
    """−Σ_s softmax(labels)_s · log softmax(scores)_s over each list; ``mask`` marks real (non-padding) items."""

    def forward(self, scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        targets = torch.softmax(labels.float().masked_fill(~mask, float("-inf")), dim=1)
        return -(targets * _masked_log_softmax(scores, mask)).masked_fill(~mask, 0.0).sum(dim=1).mean()


class ListwiseCrossEntropyLoss(nn.Module):
    """Cross-entropy of softmax(scores / τ) against the positives (label > 0), spread uniformly."""

    def __init__(self, temperature: float = 1.0) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positive = (labels >= labels.max(dim=1, keepdim=True).values) & (labels > 0) & mask
        targets = positive.float() / positive.sum(dim=1, keepdim=True).clamp(min=1)
        logp = _masked_log_softmax(scores / self.temperature, mask)
        return -(targets * logp.masked_fill(~mask, 0.0)).sum(dim=1).mean()


class PointwiseBCELoss(nn.Module):
    """Binary cross-entropy per (query, skill) pair; relevant = the top label of the list."""

    def forward(self, scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        relevant = (labels >= labels.max(dim=1, keepdim=True).values) & (labels > 0)
        return F.binary_cross_entropy_with_logits(scores[mask], relevant[mask].float())
