"""GPU throughput of the `r3` embedder recipe at Qwen3-Embedding-0.6B size on a real-sized synthetic release.

No weights or tokenizer can be downloaded here, so the backbone is a ``Qwen3Model`` randomly
initialised from a config with Qwen3-Embedding-0.6B's published sizes (hidden 1024, 28 layers,
16 query / 8 key-value heads, MLP 3072, vocabulary 151,669) and last-token pooling, and every
text is a string of synthetic token ids. Throughput does not depend on what the ids mean.

The release has R3-Skill's size (8,196 train-pool skills, 30,287 train queries with k = 1/2/3 in
the paper's proportions; skills ~1,550 tokens median, capped at 2,048; queries ≤ 512 tokens) and
one stand-in hard negative per query (a random other skill: mining cost is not training cost).
Training is the asset's own code path: ``make_examples``/``make_batches`` (siblings masked, other
queries' positives as negatives), ``MultiPositiveInfoNCELoss`` with the `r3` variant's τ and λ via
``embedder_batch_loss``, and ``run_training`` (AdamW, cosine schedule, bf16 autocast and gradient
checkpointing switched on by CUDA) for a fixed number of steps.

    .venv/bin/python bench/train_gpu.py            # on a CUDA GPU: full size, < 10 min on one H200
    .venv/bin/python bench/train_gpu.py --tiny     # anywhere: tiny config, a few steps (kept alive by a test)

The last stdout line is one JSON object: `samples_per_s` (training queries per second),
`peak_gpu_mem_mb` (null without CUDA), `steps`, `wall_s` (the training loop), and the settings.
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import AutoModel, Qwen3Config

from skill_assets.lib.training.embedder_training import (
    build_loss,
    embedder_batch_loss,
    make_batches,
    make_examples,
)
from skill_assets.lib.training.training_loop import (
    OptimConfig,
    bf16_enabled,
    enable_gpu_settings,
    run_training,
    training_device,
)
from skill_assets.lib.training.training_queries import TrainingQuery
from skill_assets.lib.training.variants import EMBEDDER_VARIANTS

R3_SKILL_TRAIN = {"skills": 8196, "queries": 30287, "k_weights": (25801, 11940, 3851)}  # METHOD.md §2


def qwen3_embedding_config(tiny: bool = False) -> Qwen3Config:
    """Qwen3-Embedding-0.6B's architecture (its published config.json sizes), or a tiny one for CPU."""
    if tiny:
        sizes = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                 "head_dim": 16, "intermediate_size": 128, "vocab_size": 1000}
    else:
        sizes = {"hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
                 "head_dim": 128, "intermediate_size": 3072, "vocab_size": 151669}
    return Qwen3Config(**sizes, max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=True,
                       rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0}, attention_bias=False,
                       hidden_act="silu", use_cache=False)


class LastTokenEncoder(nn.Module):
    """A Qwen3 backbone with last-token pooling, exposing the two calls ``embedder_batch_loss`` makes
    of a SentenceTransformer: ``preprocess(texts)`` and ``forward(features)["sentence_embedding"]``.
    Texts are space-separated token ids (there is no tokenizer to load); padding is on the right."""

    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        self.backbone = AutoModel.from_config(config, attn_implementation="sdpa")

    def preprocess(self, texts: list[str]) -> dict[str, torch.Tensor]:
        rows = [np.array(t.split(), dtype=np.int64) for t in texts]
        width = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.from_numpy(r)
            mask[i, : len(r)] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def forward(self, features: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        hidden = self.backbone(input_ids=features["input_ids"], attention_mask=features["attention_mask"]).last_hidden_state
        last = features["attention_mask"].sum(dim=1) - 1
        return {"sentence_embedding": hidden[torch.arange(hidden.shape[0], device=hidden.device), last]}


@dataclass(frozen=True)
class ReleaseShape:
    skills: int
    queries: int
    vocab: int
    doc_median_tokens: int
    doc_max_tokens: int
    query_max_tokens: int


def _token_text(rng: np.random.Generator, vocab: int, n: int) -> str:
    return " ".join(map(str, rng.integers(1, vocab, size=n)))


class SyntheticSkillTexts(Mapping):
    """Skill id → synthetic document, generated on demand from the id (8,196 × ~1,550 tokens need not sit in memory)."""

    def __init__(self, shape: ReleaseShape, seed: int) -> None:
        self.shape, self.seed = shape, seed

    def __getitem__(self, skill_id: str) -> str:
        rng = np.random.default_rng([self.seed, int(skill_id.removeprefix("skill-"))])
        n = int(min(self.shape.doc_max_tokens, max(16, rng.lognormal(math.log(self.shape.doc_median_tokens), 0.6))))
        return _token_text(rng, self.shape.vocab, n)

    def __iter__(self) -> Iterator[str]:
        return (f"skill-{i}" for i in range(self.shape.skills))

    def __len__(self) -> int:
        return self.shape.skills


def synthetic_queries(shape: ReleaseShape, n: int, seed: int) -> tuple[list[TrainingQuery], dict[str, list[str]]]:
    """``n`` train queries with 1–3 ground-truth skills (R3-Skill's k mix) and one negative each."""
    rng = np.random.default_rng(seed)
    weights = np.array(R3_SKILL_TRAIN["k_weights"], dtype=float)
    queries, negatives = [], {}
    for i in range(n):
        k = int(rng.choice([1, 2, 3], p=weights / weights.sum()))
        picked = rng.choice(shape.skills, size=k + 1, replace=False)
        qid = f"q-{i}"
        length = int(rng.integers(min(60, shape.query_max_tokens // 2), shape.query_max_tokens + 1))
        queries.append(TrainingQuery(qid, _token_text(rng, shape.vocab, length),
                                     tuple(f"skill-{j}" for j in picked[:k]), k=k))
        negatives[qid] = [f"skill-{picked[k]}"]
    return queries, negatives


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny config and release, a few steps (runs on CPU)")
    parser.add_argument("--steps", type=int, help="training steps (default 80; 3 with --tiny)")
    parser.add_argument("--batch-size", type=int, help="queries per batch (default 16; 4 with --tiny)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    steps = args.steps or (3 if args.tiny else 80)
    batch_size = args.batch_size or (4 if args.tiny else 16)
    vocab = qwen3_embedding_config(args.tiny).vocab_size
    shape = (ReleaseShape(64, 48, vocab, 24, 64, 16) if args.tiny
             else ReleaseShape(R3_SKILL_TRAIN["skills"], R3_SKILL_TRAIN["queries"], vocab, 1550, 2048, 512))
    variant = EMBEDDER_VARIANTS["r3"]
    device = training_device()

    torch.manual_seed(args.seed)
    with torch.device(device):
        model = LastTokenEncoder(qwen3_embedding_config(args.tiny))
    enable_gpu_settings(model)
    n_params = sum(p.numel() for p in model.parameters())
    # the whole release is drawn (its size shapes the batches), the loop runs the first `steps` batches
    queries, negatives = synthetic_queries(shape, shape.queries, args.seed)
    batches = make_batches(make_examples(queries, negatives, args.seed), batch_size, 1, args.seed)[:steps]
    texts = SyntheticSkillTexts(shape, args.seed)
    loss = build_loss(variant.loss, variant.temperature, variant.sibling_weight)
    print(f"{device}: {n_params / 1e6:.1f}M parameters, {len(batches)} steps of {batch_size} queries",
          file=sys.stderr, flush=True)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_training(model, batches, lambda b: embedder_batch_loss(model, loss, b, texts),
                               OptimConfig(variant.learning_rate, checkpoint_every=steps + 1),  # time training, not disk
                               Path(tmp) / "bench.checkpoint.pt", "train-gpu-bench",
                               lambda line: print(line, file=sys.stderr, flush=True))
    wall = outcome.wall_s
    print(json.dumps({
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "tiny": args.tiny,
        "params_m": round(n_params / 1e6, 1), "variant": variant.name, "loss": variant.loss,
        "temperature": variant.temperature, "sibling_weight": variant.sibling_weight,
        "bf16": bf16_enabled(), "gradient_checkpointing": model.backbone.is_activation_checkpointing,
        "batch_size": batch_size, "steps": outcome.steps,
        "candidates_per_step": round(sum(len(b.candidate_ids) for b in batches) / max(1, len(batches)), 1),
        "samples_per_s": round(outcome.steps * batch_size / wall, 2), "wall_s": round(wall, 3),
        "final_loss": round(outcome.losses[-1], 4) if outcome.losses else None,
        "peak_gpu_mem_mb": round(torch.cuda.max_memory_allocated() / 2**20) if device == "cuda" else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


if __name__ == "__main__":
    main()
