"""A small, resumable fine-tuning loop shared by the embedder and the reranker.

Why not ``SentenceTransformerTrainer``: the R3 losses need per-batch candidate sets and sibling
masks built from skill ids, which do not fit its column-per-input datasets. The loop keeps the
recipe's optimiser (AdamW, weight decay 0.01, cosine schedule with 5% warm-up), turns on bf16
and gradient checkpointing on CUDA, and checkpoints atomically so an interrupted run resumes
from its last checkpoint with the same batch order.

Model selection: given an ``evaluate`` callback (a score on held-out queries, higher is better),
the loop scores the starting weights and every ``eval_every`` steps, and ends with the best-scoring
weights restored. Starting weights count as a candidate, so fine-tuning that only overfits a
small training set (too many steps or too high a learning rate for its size) never ships a model
worse on held-out data than the one it started from; ties keep the earlier weights.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
    #: a learning rate of its own for the parameters under a module named ``head_module`` (a fresh scoring head
    #: that starts at zero learns nothing in a few hundred steps at an encoder's rate); None: one rate for all
    head_learning_rate: float | None = None
    head_module: str = "classifier"


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
    dev_scores: list[tuple[int, float]] = field(default_factory=list)  # (step, held-out score)
    selected_step: int | None = None  # the step whose weights were kept; None without evaluation


def evaluation_interval(total_steps: int, evaluations: int) -> int:
    """Steps between held-out evaluations so that a run is scored about ``evaluations`` times."""
    return max(1, math.ceil(total_steps / max(1, evaluations)))


def _cpu_copy(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _parameter_groups(model: torch.nn.Module, optim: OptimConfig) -> list[dict]:
    """The trainable parameters, the head's apart when it has a learning rate of its own."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if optim.head_learning_rate is None:
        return [{"params": [p for _, p in named]}]
    in_head = [optim.head_module in n.split(".") for n, _ in named]
    if not any(in_head):
        raise ValueError(f"head_learning_rate given but no trainable parameter is under a module "
                         f"named {optim.head_module!r}")
    return [{"params": [p for (_, p), h in zip(named, in_head) if not h]},
            {"params": [p for (_, p), h in zip(named, in_head) if h], "lr": optim.head_learning_rate}]


def run_training(model: torch.nn.Module, batches: list, loss_for_batch: Callable[[object], torch.Tensor],
                 optim: OptimConfig, checkpoint_path: Path, fingerprint: str,
                 log: Callable[[str], None] = lambda _: None, evaluate: Callable[[], float] | None = None,
                 eval_every: int = 1) -> TrainingOutcome:
    """Train over the fixed batch list; resume from ``checkpoint_path`` when its fingerprint matches.

    With ``evaluate``, keep the best-scoring weights (see the module docstring)."""
    started = time.perf_counter()
    groups = _parameter_groups(model, optim)
    params = [p for group in groups for p in group["params"]]
    optimizer = torch.optim.AdamW(groups, lr=optim.learning_rate, weight_decay=optim.weight_decay)
    total = max(1, len(batches))
    scheduler = get_cosine_schedule_with_warmup(optimizer, int(total * optim.warmup_ratio), total)
    start = 0
    best: dict | None = None  # {"score", "step", "state"} of the best evaluated weights
    dev_scores: list[tuple[int, float]] = []
    state = load_checkpoint(checkpoint_path, log)
    if state is not None:
        if state.get("fingerprint") == fingerprint:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            start = state["step"]
            best, dev_scores = state.get("best"), [tuple(x) for x in state.get("dev_scores", [])]
            log(f"resuming from checkpoint at step {start}/{total}")

    def score(step: int) -> None:
        nonlocal best
        value = float(evaluate())
        model.train()
        dev_scores.append((step, value))
        log(f"step {step}/{total} held-out score {value:.4f}")
        if best is None or value > best["score"]:
            best = {"score": value, "step": step, "state": _cpu_copy(model)}

    if evaluate is not None and start == 0:
        score(0)
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
        done = step + 1
        if done % 10 == 0:
            log(f"step {done}/{total} loss {losses[-1]:.4f}")
        if evaluate is not None and (done % eval_every == 0 or done == len(batches)):
            score(done)
        if done % optim.checkpoint_every == 0 and done < len(batches):
            _save_checkpoint(checkpoint_path, {
                "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "step": done, "fingerprint": fingerprint, "best": best, "dev_scores": dev_scores})
    if best is not None:
        model.load_state_dict(best["state"])
        log(f"kept the weights of step {best['step']} (held-out score {best['score']:.4f})")
    model.eval()
    return TrainingOutcome(len(batches), start, losses, time.perf_counter() - started, dev_scores,
                           best["step"] if best is not None else None)


def load_checkpoint(path: Path, log: Callable[[str], None] = lambda _: None) -> dict | None:
    """The checkpoint at ``path`` read as data only, or None (no file, or one refused with a log line).

    A checkpoint is a file beside a model folder that anyone who can write there controls, and an
    unrestricted unpickle runs whatever code the file names. ``weights_only=True`` admits tensors,
    numbers, strings and plain containers, which is all ``_save_checkpoint`` writes; anything else is
    refused and training starts over rather than running it.
    """
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a hostile pickle, a torn write, a foreign file: none is worth resuming from
        first_line = (str(exc).splitlines() or [""])[0][:200]
        log(f"checkpoint {path.name} refused ({type(exc).__name__}: {first_line}); training starts from step 0")
        return None
    if not isinstance(state, dict):
        log(f"checkpoint {path.name} refused (not a checkpoint dictionary); training starts from step 0")
        return None
    return state


def _save_checkpoint(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
