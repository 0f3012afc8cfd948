import os

import numpy as np
import pytest

from skill_assets.lib.common import encoder_backends
from skill_assets.lib.common.encoder_backends import (
    QualityGate,
    RankGate,
    bf16_encode,
    choose_encoder,
    choose_scorer,
    torch_encode,
    torch_score,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXTS = ["docker | compose services | containers cannot reach each other on the default network",
         "pdf | extract tables | read tables from PDF files into CSV " * 20,
         "kubernetes | helm | deploy a release",
         "提交信息 | 生成规范的提交信息 | 根据改动写出提交说明"]


@pytest.fixture(scope="module")
def minilm():
    from skill_assets.defs.resources import bundled_minilm
    from skill_assets.lib.training.model_training import load_bi_encoder

    return load_bi_encoder(bundled_minilm(), max_seq_length=256)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx")


def test_int8_passes_gate_and_stays_close_to_the_original(minilm, cache_dir):
    choice = choose_encoder(minilm, "onnx-int8", cache_dir, "minilm", TEXTS, batch_size=2)
    assert choice.backend == "onnx-int8", choice.reason
    got, want = choice.encode(TEXTS), torch_encode(minilm, 2)(TEXTS)
    assert got.shape == want.shape and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-4)
    assert np.min(np.sum(got * want, axis=1)) > 0.97
    exported = cache_dir / "minilm" / "model_int8.onnx"
    stamp = exported.stat().st_mtime_ns
    assert choose_encoder(minilm, "onnx-int8", cache_dir, "minilm", TEXTS).backend == "onnx-int8"
    assert exported.stat().st_mtime_ns == stamp  # reused, not exported again


def test_failed_gate_falls_back_to_the_original_model(minilm, cache_dir):
    choice = choose_encoder(minilm, "onnx-int8", cache_dir, "minilm", TEXTS, gate=QualityGate(min_cosine=1.01))
    assert choice.backend == "torch" and "int8 gate" in choice.reason
    assert np.allclose(choice.encode(TEXTS[:2]), torch_encode(minilm, 32)(TEXTS[:2]), atol=1e-6)


def test_bf16_stays_near_exact(minilm):
    got, want = bf16_encode(minilm, 2)(TEXTS), torch_encode(minilm, 2)(TEXTS)
    assert got.dtype == np.float32 and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    assert np.min(np.sum(got * want, axis=1)) > 0.999


def test_bf16_is_chosen_when_its_gate_passes_and_the_verdict_is_reused(minilm, tmp_path):
    anywhere = QualityGate(min_bf16_speedup=0.0)  # the speed half of the gate depends on the CPU; see below
    choice = choose_encoder(minilm, "auto", tmp_path, "minilm", TEXTS, batch_size=2, gate=anywhere)
    assert choice.backend == "torch-bf16" and "bf16 gate on 4 probe texts" in choice.reason
    assert choice.probe_min_cosine > 0.999
    (verdict,) = (tmp_path / "minilm").glob("bf16_gate_*.json")
    stamp = verdict.stat().st_mtime_ns
    assert choose_encoder(minilm, "torch-bf16", tmp_path, "minilm", TEXTS, gate=anywhere).backend == "torch-bf16"
    assert verdict.stat().st_mtime_ns == stamp
    assert not (tmp_path / "minilm" / "model_int8.onnx").exists()  # bf16 passed: nothing exported


def test_slow_bf16_falls_through_to_int8_and_says_why(minilm, cache_dir):
    emulated = QualityGate(min_bf16_speedup=1e9)  # what a CPU without native bf16 measures: not faster
    auto = choose_encoder(minilm, "auto", cache_dir, "minilm", TEXTS, gate=emulated)
    assert auto.backend == "onnx-int8"
    assert "bf16 gate" in auto.reason and "int8 gate" in auto.reason
    only_bf16 = choose_encoder(minilm, "torch-bf16", cache_dir, "minilm", TEXTS, gate=emulated)
    assert only_bf16.backend == "torch" and "needs ≥1000000000" in only_bf16.reason


def test_export_failure_falls_back(minilm, tmp_path, monkeypatch):
    def broken(model, out_dir):
        raise RuntimeError("cannot trace this architecture")

    monkeypatch.setattr(encoder_backends, "_export_int8", broken)
    choice = choose_encoder(minilm, "onnx-int8", tmp_path, "minilm", TEXTS)
    assert choice.backend == "torch" and "cannot trace" in choice.reason
    with pytest.raises(ValueError):
        choose_encoder(minilm, "fp4", tmp_path, "minilm", TEXTS)


@pytest.fixture(scope="module")
def cross_encoder():
    import torch
    from sentence_transformers import CrossEncoder

    from skill_assets.defs.resources import bundled_minilm

    torch.manual_seed(0)  # the bundled MiniLM has no classification head: a seeded random one
    model = CrossEncoder(bundled_minilm(), num_labels=1, device="cpu")
    model.max_seq_length = 128
    return model


PAIRS = [(q, d) for q in ("docker containers cannot talk", "write a commit message", "extract tables from a pdf")
         for d in TEXTS]


def test_int8_scorer_tracks_the_original_and_reuses_its_export(cross_encoder, tmp_path):
    choice = choose_scorer(cross_encoder, "onnx-int8", tmp_path, "ce", PAIRS, gate=RankGate(min_spearman=-1.0))
    assert choice.backend == "onnx-int8", choice.reason
    got, want = choice.score(PAIRS), torch_score(cross_encoder, 32)(PAIRS)
    assert got.shape == (len(PAIRS),) and np.max(np.abs(got - want)) < 0.01  # same activation, same scale
    assert "Spearman" in choice.reason and -1 <= choice.probe_spearman <= 1
    stamp = (tmp_path / "ce" / "model_int8.onnx").stat().st_mtime_ns
    again = choose_scorer(cross_encoder, "onnx-int8", tmp_path, "ce", PAIRS, gate=RankGate(min_spearman=-1.0))
    assert again.probe_spearman == choice.probe_spearman  # cached verdict
    assert (tmp_path / "ce" / "model_int8.onnx").stat().st_mtime_ns == stamp


def test_scorer_falls_back_when_order_is_not_kept_or_torch_is_asked(cross_encoder, tmp_path):
    strict = choose_scorer(cross_encoder, "onnx-int8", tmp_path, "ce", PAIRS, gate=RankGate(min_spearman=1.01))
    assert strict.backend == "torch" and "rank gate" in strict.reason
    assert np.array_equal(strict.score(PAIRS[:3]), torch_score(cross_encoder, 32)(PAIRS[:3]))
    assert choose_scorer(cross_encoder, "torch", tmp_path, "ce", PAIRS).reason == "requested"
    too_few = choose_scorer(cross_encoder, "onnx-int8", tmp_path, "few", PAIRS[:2])
    assert too_few.backend == "torch"  # two pairs cannot show an order: never trusted
    with pytest.raises(ValueError):
        choose_scorer(cross_encoder, "int4", tmp_path, "ce", PAIRS)


def test_bf16_scorer_keeps_the_order_and_auto_falls_through_when_it_is_not_faster(cross_encoder, tmp_path):
    from skill_assets.lib.common.encoder_backends import bf16_score

    got, want = bf16_score(cross_encoder, 32)(PAIRS), torch_score(cross_encoder, 32)(PAIRS)
    assert got.shape == want.shape and np.max(np.abs(got - want)) < 0.02
    anywhere = RankGate(min_spearman=-1.0, min_bf16_speedup=0.0)  # the speed half depends on the CPU
    auto = choose_scorer(cross_encoder, "auto", tmp_path, "ce", PAIRS, gate=anywhere)
    assert auto.backend == "torch-bf16" and "bf16 rank gate on 12 probe pairs" in auto.reason
    assert not (tmp_path / "ce" / "model_int8.onnx").exists()
    emulated = RankGate(min_spearman=-1.0, min_bf16_speedup=1e9)
    slow = choose_scorer(cross_encoder, "auto", tmp_path, "ce", PAIRS, gate=emulated)  # cached bf16 verdict reused
    assert slow.backend == "onnx-int8" and "bf16 rank gate" in slow.reason and "int8 rank gate" in slow.reason
    assert choose_scorer(cross_encoder, "torch-bf16", tmp_path, "ce", PAIRS, gate=emulated).backend == "torch"


def test_cache_keys_name_the_cpu_where_the_backend_depends_on_it():
    from skill_assets.lib.common.encoder_backends import backend_key

    assert backend_key("torch") == "torch" and backend_key("onnx-int8") == "onnx-int8"
    assert backend_key("auto").startswith("auto@") and backend_key("torch-bf16").startswith("torch-bf16@")
    assert backend_key("auto") == backend_key("auto")  # stable on one machine, so warm runs hit the cache
