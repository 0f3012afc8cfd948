import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from skill_assets.lib.common import cpu
from skill_assets.lib.models import encoder_backends
from skill_assets.lib.models.encoder_backends import (
    QualityGate,
    bf16_encode,
    choose_encoder,
    torch_encode,
)
from skill_assets.lib.models.scorer_backends import RankGate, choose_scorer, torch_score

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXTS = ["docker | compose services | containers cannot reach each other on the default network",
         "pdf | extract tables | read tables from PDF files into CSV " * 20,
         "kubernetes | helm | deploy a release",
         "提交信息 | 生成规范的提交信息 | 根据改动写出提交说明"]


@pytest.fixture
def native(monkeypatch):
    """A CPU with native bf16, as far as the backends can tell (the model runs the same either way)."""
    monkeypatch.setattr(encoder_backends, "native_bf16", lambda: "avx512_bf16")


@pytest.fixture
def emulated(monkeypatch):
    """A CPU without native bf16 (AVX2 only)."""
    monkeypatch.setattr(encoder_backends, "native_bf16", lambda: None)


@pytest.fixture(scope="module")
def minilm():
    from skill_assets.lib.models.bundled_models import bundled_minilm
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


def test_bf16_is_chosen_when_its_gate_passes_and_the_verdict_is_reused(minilm, tmp_path, native):
    choice = choose_encoder(minilm, "auto", tmp_path, "minilm", TEXTS, batch_size=2)
    assert choice.backend == "torch-bf16" and "bf16 gate on 4 probe texts" in choice.reason
    assert "native bf16 (avx512_bf16)" in choice.reason and "not timed" in choice.reason
    assert choice.probe_min_cosine > 0.999
    (verdict,) = (tmp_path / "minilm").glob("bf16_gate_*.json")
    stamp = verdict.stat().st_mtime_ns
    assert choose_encoder(minilm, "torch-bf16", tmp_path, "minilm", TEXTS).backend == "torch-bf16"
    assert verdict.stat().st_mtime_ns == stamp
    assert not (tmp_path / "minilm" / "model_int8.onnx").exists()  # bf16 passed: nothing exported


def test_without_native_bf16_auto_takes_int8_and_says_why(minilm, cache_dir, emulated):
    auto = choose_encoder(minilm, "auto", cache_dir, "minilm", TEXTS)
    assert auto.backend == "onnx-int8"
    assert "bf16 not tried" in auto.reason and "int8 gate" in auto.reason
    only_bf16 = choose_encoder(minilm, "torch-bf16", cache_dir, "minilm", TEXTS)
    assert only_bf16.backend == "torch" and "no native bf16" not in only_bf16.reason
    assert "none of the native bf16 flags" in only_bf16.reason
    assert not list((cache_dir / "minilm").glob("bf16_gate_*.json"))  # nothing measured, nothing kept


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

    from skill_assets.lib.models.bundled_models import bundled_minilm

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


def test_bf16_scorer_keeps_the_order_and_auto_takes_int8_without_native_bf16(cross_encoder, tmp_path, monkeypatch):
    from skill_assets.lib.models.scorer_backends import bf16_score

    got, want = bf16_score(cross_encoder, 32)(PAIRS), torch_score(cross_encoder, 32)(PAIRS)
    assert got.shape == want.shape and np.max(np.abs(got - want)) < 0.02
    anywhere = RankGate(min_spearman=-1.0)
    monkeypatch.setattr(encoder_backends, "native_bf16", lambda: "amx_bf16")
    auto = choose_scorer(cross_encoder, "auto", tmp_path, "ce", PAIRS, gate=anywhere)
    assert auto.backend == "torch-bf16" and "bf16 rank gate on 12 probe pairs" in auto.reason
    assert not (tmp_path / "ce" / "model_int8.onnx").exists()
    monkeypatch.setattr(encoder_backends, "native_bf16", lambda: None)
    slow = choose_scorer(cross_encoder, "auto", tmp_path, "ce", PAIRS, gate=anywhere)
    assert slow.backend == "onnx-int8" and "bf16 not tried" in slow.reason and "int8 rank gate" in slow.reason
    assert choose_scorer(cross_encoder, "torch-bf16", tmp_path, "ce", PAIRS, gate=anywhere).backend == "torch"


def test_cache_keys_name_the_cpu_where_the_backend_depends_on_it():
    from skill_assets.lib.models.encoder_backends import backend_key

    assert backend_key("torch") == "torch" and backend_key("onnx-int8") == "onnx-int8"
    assert backend_key("auto").startswith("auto@") and backend_key("torch-bf16").startswith("torch-bf16@")
    assert backend_key("auto") == backend_key("auto")  # stable on one machine, so warm runs hit the cache


# ------------------------------------------------- damaged caches and contended speed gates (issue 21, finding 7)
def _damaged_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "damaged cache file" in r.getMessage()]


def test_an_empty_bf16_verdict_is_measured_again_with_one_log_line(minilm, tmp_path, caplog, native):
    choose_encoder(minilm, "torch-bf16", tmp_path, "minilm", TEXTS)
    (verdict,) = (tmp_path / "minilm").glob("bf16_gate_*.json")
    verdict.write_text("")  # what a kill during the old non-atomic write left
    caplog.set_level(logging.WARNING)
    choice = choose_encoder(minilm, "torch-bf16", tmp_path, "minilm", TEXTS)
    assert choice.backend == "torch-bf16", choice.reason
    assert len(_damaged_lines(caplog)) == 1 and verdict.name in _damaged_lines(caplog)[0]
    assert json.loads(verdict.read_text())["probe"] == len(TEXTS)


def test_a_torn_int8_export_is_exported_again(minilm, cache_dir, tmp_path, caplog):
    choose_encoder(minilm, "onnx-int8", cache_dir, "minilm", TEXTS)  # the module's export, made once
    whole = (cache_dir / "minilm" / "model_int8.onnx").read_bytes()
    torn = tmp_path / "minilm" / "model_int8.onnx"
    torn.parent.mkdir()
    torn.write_bytes(whole[: len(whole) // 2])  # what kill -9 during a non-atomic export left
    caplog.set_level(logging.WARNING)
    choice = choose_encoder(minilm, "onnx-int8", tmp_path, "minilm", TEXTS)
    assert choice.backend == "onnx-int8", choice.reason
    assert len(_damaged_lines(caplog)) == 1 and "model_int8.onnx" in _damaged_lines(caplog)[0]
    assert torn.stat().st_size > len(whole) // 2
    assert sorted(p.name for p in torn.parent.iterdir()) == ["model_int8.onnx", "quality_gate.json"]


def test_two_concurrent_exports_do_not_overwrite_each_other(tmp_path):
    both_writing = threading.Barrier(2, timeout=30)

    def export(target: Path) -> None:  # each writer's bytes, half before and half after the other has begun
        mark = threading.current_thread().name.encode()[:1]
        with target.open("wb") as fh:
            fh.write(mark * 1000)
            fh.flush()
            both_writing.wait()
            fh.write(mark * 1000)

    def build(path: Path):
        data = path.read_bytes()
        assert len(data) == 2000 and len(set(data)) == 1, "a torn or mixed export"
        return data

    got: dict[str, bytes] = {}
    threads = [threading.Thread(target=lambda: got.update({threading.current_thread().name:
                                                           encoder_backends._exported(tmp_path / "m.onnx",
                                                                                      export, build)}),
                                name=name) for name in ("A", "B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(got) == ["A", "B"] and all(len(v) == 2000 and len(set(v)) == 1 for v in got.values())
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]  # each wrote its own private file; none left over


def test_the_native_bf16_flag_is_read_from_the_cpu_flags(monkeypatch):
    encoder_backends.native_bf16.cache_clear()
    try:
        for lines, want in ((("flags\t\t: fpu sse avx2 avx512f avx512_bf16",), "avx512_bf16"),
                            (("flags\t\t: fpu sse avx2 fma",), None),
                            (("Features\t: fp asimd sve bf16 i8mm",), "bf16"),
                            ((), None)):
            monkeypatch.setattr(cpu, "cpuinfo", lambda lines=lines: lines)
            encoder_backends.native_bf16.cache_clear()
            assert encoder_backends.native_bf16() == want
    finally:
        encoder_backends.native_bf16.cache_clear()


def test_the_backend_choice_is_the_same_beside_a_cpu_hog(minilm, tmp_path):
    """Load changes nothing: no speed is timed, so a busy machine gets the backend a quiet one gets, and the
    verdict it keeps is the one a quiet run would keep (issue 23: a verdict timed under contention)."""
    quiet = choose_encoder(minilm, "torch-bf16", tmp_path / "quiet", "minilm", TEXTS, batch_size=2)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        busy = choose_encoder(minilm, "torch-bf16", tmp_path / "busy", "minilm", TEXTS, batch_size=2)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert busy.backend == quiet.backend and busy.reason == quiet.reason
    kept = {run: sorted(p.name for p in (tmp_path / run / "minilm").iterdir() if p.suffix == ".json")
            for run in ("quiet", "busy")}
    assert kept["busy"] == kept["quiet"]
    assert bool(kept["quiet"]) == (encoder_backends.native_bf16() is not None)  # a verdict only where bf16 is tried
