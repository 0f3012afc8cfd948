"""bench/train_gpu.py stays runnable without a GPU (--tiny) and keeps Qwen3-Embedding-0.6B's size."""
import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import torch
from bench_scripts import bench_module

from skill_assets.lib.training.training_loop import enable_gpu_settings

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench" / "train_gpu.py"


@functools.cache
def _bench_module():
    return bench_module("train_gpu")


def test_tiny_run_trains_and_reports_one_json_line():
    done = subprocess.run([sys.executable, str(BENCH), "--tiny"], check=False, capture_output=True, text=True, timeout=1800,
                          cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["steps"] == 3 and figures["variant"] == "r3" and figures["loss"] == "multi_positive_infonce"
    assert figures["samples_per_s"] > 0 and figures["wall_s"] > 0
    assert figures["final_loss"] is not None and figures["final_loss"] > 0
    assert figures["peak_gpu_mem_mb"] is None and figures["bf16"] is False  # CPU: no GPU settings


def test_full_config_has_qwen3_embedding_0_6b_size():
    bench = _bench_module()
    config = bench.qwen3_embedding_config()
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.num_key_value_heads,
            config.intermediate_size, config.vocab_size) == (1024, 28, 16, 8, 3072, 151669)
    with torch.device("meta"):  # no memory: only the parameter count
        model = bench.LastTokenEncoder(config)
    assert sum(p.numel() for p in model.parameters()) == 595_776_512  # the published 0.6B (596M)


def test_encoder_pools_the_last_real_token_and_checkpoints_on_cuda():
    bench = _bench_module()
    torch.manual_seed(0)
    model = bench.LastTokenEncoder(bench.qwen3_embedding_config(tiny=True)).eval()
    features = model.preprocess(["5 6 7", "5 6 7 8 9"])
    pooled = model(features)["sentence_embedding"]
    alone = model(model.preprocess(["5 6 7"]))["sentence_embedding"]
    assert torch.allclose(pooled[0], alone[0], atol=1e-5)  # right padding does not move the pooled token
    assert not model.backbone.is_activation_checkpointing
    with mock.patch("torch.cuda.is_available", return_value=True):  # what a CUDA machine reports
        enable_gpu_settings(model)
    assert model.backbone.is_activation_checkpointing
