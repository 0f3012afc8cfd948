"""A small, resumable fine-tuning loop shared by the embedder and the reranker.

Why not ``SentenceTransformerTrainer``: the R3 losses need per-batch candidate sets and sibling
masks built from skill ids, which do not fit its column-per-input datasets. The loop keeps the
recipe's optimiser (AdamW, weight decay 0.01, cosine schedule with 5% warm-up), turns on bf16
and gradient checkpointing on CUDA, and checkpoints atomically so an interrupted run resumes
from its last checkpoint with the same batch order.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import get_cosine_schedule_with_warmup


@dataclass(frozen=True)
class OptimConfig:
    learning_rate: float = 2e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.05
    max_grad_norm: float = 1.0
    checkpoint_every: int = 20


def training_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def bf16_enabled() -> bool:
    """bf16 autocast where the GPU supports it; CPU training stays in float32."""
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def enable_gpu_settings(model: torch.nn.Module) -> None:
    """Gradient checkpointing on CUDA, where memory, not compute, bounds the batch size."""
    if torch.cuda.is_available():
        for module in model.modules():
            if hasattr(module, "gradient_checkpointing_enable"):
                module.gradient_checkpointing_enable()
                break


@dataclass
class TrainingOutcome:
    steps: int
    resumed_from_step: int
    losses: list[float]
    wall_s: float


def run_training(model: torch.nn.Module, batches: list, loss_for_batch: Callable[[object], torch.Tensor],
                 optim: OptimConfig, checkpoint_path: Path, fingerprint: str,
                 log: Callable[[str], None] = lambda _: None) -> TrainingOutcome:
    """Train over the fixed batch list; resume from ``checkpoint_path`` when its fingerprint matches."""
    started = time.perf_counter()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=optim.learning_rate, weight_decay=optim.weight_decay)
    total = max(1, len(batches))
    scheduler = get_cosine_schedule_with_warmup(optimizer, int(total * optim.warmup_ratio), total)
    start = 0
    if checkpoint_path.exists():
        state = torch.load(checkpoint_path, map_location="cpu", weights_only=False)
        if state.get("fingerprint") == fingerprint:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            start = state["step"]
            log(f"resuming from checkpoint at step {start}/{total}")
    use_bf16 = bf16_enabled()
    losses: list[float] = []
    model.train()
    for step in range(start, len(batches)):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
            loss = loss_for_batch(batches[step])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, optim.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        if (step + 1) % optim.checkpoint_every == 0 and step + 1 < len(batches):
            _save_checkpoint(checkpoint_path, model, optimizer, scheduler, step + 1, fingerprint)
        if (step + 1) % 10 == 0:
            log(f"step {step + 1}/{total} loss {losses[-1]:.4f}")
    model.eval()
    return TrainingOutcome(len(batches), start, losses, time.perf_counter() - started)


def _save_checkpoint(path: Path, model, optimizer, scheduler, step: int, fingerprint: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "step": step, "fingerprint": fingerprint}, tmp)
    os.replace(tmp, path)
