"""Faster, checked pair scorers for cross-encoders (the router's reranker) on CPU: ``encoder_backends``' backends.

For int8 the logits graph is exported; either fast copy is used only if it orders probe (query,
document) pairs like the original (Spearman correlation, ``RankGate``), bf16 only where the CPU
runs it natively; the verdicts are cached like the bi-encoders'.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from skill_assets.lib.models.encoder_backends import (
    _INPUTS,
    BACKENDS,
    cascade,
    export_hf_int8,
    onnx_session,
    try_bf16,
    try_int8,
    unsupported_reason,
)


@dataclass(frozen=True)
class RankGate:
    """Minimum Spearman correlation between a fast copy's (bf16 or int8) and the original's scores of probe pairs.

    A reranker is judged by the order it puts candidates in, so the gate checks order, not values.
    """

    min_spearman: float = 0.98
    probe_size: int = 64
    fields: ClassVar[tuple[str, ...]] = ("spearman", "probe")

    @staticmethod
    def agreement(fast: np.ndarray, exact: np.ndarray) -> dict:
        from scipy.stats import spearmanr

        rho = float(spearmanr(fast, exact).statistic) if len(exact) > 2 else float("nan")
        return {"spearman": rho, "probe": len(exact)}

    def passes(self, verdict: dict) -> bool:
        return verdict["spearman"] >= self.min_spearman  # NaN (too few probe pairs) never passes

    def describe(self, name: str, verdict: dict) -> str:
        return (f"{name} rank gate on {verdict['probe']} probe pairs: Spearman {verdict['spearman']:.4f} "
                f"(needs ≥{self.min_spearman})")

    @staticmethod
    def figures(verdict: dict) -> tuple:
        """The measured value a ``ScorerChoice`` carries after its reason."""
        return (verdict["spearman"],)


@dataclass
class ScorerChoice:
    """The pair-scoring function a caller should use, the backend it really is, and why. ``lasting`` is set by
    the int8 path both choices share (``try_int8``), as for ``EncoderChoice``; scores are never cached, so no
    caller reads it here."""

    score: Callable[[list[tuple[str, str]]], np.ndarray]
    backend: str
    reason: str
    probe_spearman: float | None = None
    lasting: bool = True


def torch_score(cross_encoder, batch_size: int) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    return lambda pairs: np.asarray(cross_encoder.predict(pairs, batch_size=batch_size, show_progress_bar=False),
                                    dtype=np.float64).reshape(-1)


def _export_cross_int8(cross_encoder, out_dir: Path) -> Path:
    """Export a one-label cross-encoder's transformer to ONNX (logits out), fused and int8."""
    sample = cross_encoder.preprocess([("export probe", "a document"), ("a longer probe query", "another document")])
    names = [k for k in _INPUTS if k in sample]
    return export_hf_int8(cross_encoder.transformers_model, {k: sample[k] for k in names}, "logits",
                           lambda out: out.logits, out_dir)


def _onnx_score(cross_encoder, onnx_path: Path, batch_size: int) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    import torch

    session = onnx_session(onnx_path)
    wanted = {i.name for i in session.get_inputs()}

    def score(pairs: list[tuple[str, str]]) -> np.ndarray:
        out = np.empty(len(pairs), dtype=np.float64)
        for start in range(0, len(pairs), batch_size):
            features = cross_encoder.preprocess(pairs[start : start + batch_size])
            logits = session.run(None, {k: v.numpy() for k, v in features.items() if k in wanted})[0]
            with torch.no_grad():  # the model's own activation, so scores match ``predict``'s scale
                out[start : start + len(logits)] = cross_encoder.activation_fn(torch.from_numpy(logits)).numpy().reshape(-1)
        return out

    return score


def bf16_score(cross_encoder, batch_size: int) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    """The cross-encoder itself with its matrix products in bfloat16."""
    import torch

    exact = torch_score(cross_encoder, batch_size)

    def score(pairs: list[tuple[str, str]]) -> np.ndarray:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return exact(pairs)

    return score


def choose_scorer(cross_encoder, backend: str, cache_dir: Path, fingerprint: str, sample_pairs: list[tuple[str, str]],
                  batch_size: int = 32, gate: RankGate = RankGate()) -> ScorerChoice:
    """The fastest faithful pair scorer among the requested backend(s) (as ``choose_encoder``), else the model itself."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown reranker backend {backend!r}; choose one of {BACKENDS}")
    fallback = torch_score(cross_encoder, batch_size)
    if backend == "torch":
        return ScorerChoice(fallback, "torch", "requested")
    if getattr(cross_encoder, "num_labels", 1) != 1:
        return ScorerChoice(fallback, "torch", "bf16 and int8 paths score one-label cross-encoders only")
    if why := unsupported_reason(cross_encoder, getattr(cross_encoder, "transformers_model", None)):
        return ScorerChoice(fallback, "torch", why)
    probe, out_dir = sample_pairs[: gate.probe_size], cache_dir / fingerprint
    return cascade(backend, lambda: try_bf16(bf16_score(cross_encoder, batch_size), fallback, out_dir, probe, gate,
                                               ScorerChoice),
                    lambda: try_int8(lambda out: _export_cross_int8(cross_encoder, out),
                                      lambda path: _onnx_score(cross_encoder, path, batch_size),
                                      fallback, out_dir, probe, gate, ScorerChoice))
