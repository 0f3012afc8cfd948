import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from skill_assets.lib.common import encoder_backends
from skill_assets.lib.common.encoder_backends import (
    QualityGate,
    bf16_encode,
    choose_encoder,
    torch_encode,
)
from skill_assets.lib.common.scorer_backends import RankGate, choose_scorer, torch_score

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXTS = ["docker | compose services | containers cannot reach each other on the default network",
         "pdf | extract tables | read tables from PDF files into CSV " * 20,
         "kubernetes | helm | deploy a release",
         "提交信息 | 生成规范的提交信息 | 根据改动写出提交说明"]


class QuietMeter(encoder_backends.CpuMeter):
    """Real wall clock, no other process on the CPU: the bf16 verdict of a real run is then always final."""

    def others_cpu_seconds(self) -> float:
        return 0.0


@pytest.fixture(scope="module")
def minilm():
    from skill_assets.lib.common.bundled_models import bundled_minilm
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
    choice = choose_encoder(minilm, "auto", tmp_path, "minilm", TEXTS, batch_size=2, gate=anywhere,
                            meter=QuietMeter())  # a verdict timed beside another job is not cached
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

    from skill_assets.lib.common.bundled_models import bundled_minilm

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
    from skill_assets.lib.common.scorer_backends import bf16_score

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


# ------------------------------------------------- damaged caches and contended speed gates (issue 21, finding 7)
def _damaged_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "damaged cache file" in r.getMessage()]


def test_an_empty_bf16_verdict_is_measured_again_with_one_log_line(minilm, tmp_path, caplog):
    anywhere = QualityGate(min_bf16_speedup=0.0)
    choose_encoder(minilm, "torch-bf16", tmp_path, "minilm", TEXTS, gate=anywhere, meter=QuietMeter())
    (verdict,) = (tmp_path / "minilm").glob("bf16_gate_*.json")
    verdict.write_text("")  # what a kill during the old non-atomic write left
    caplog.set_level(logging.WARNING)
    choice = choose_encoder(minilm, "torch-bf16", tmp_path, "minilm", TEXTS, gate=anywhere, meter=QuietMeter())
    assert choice.backend == "torch-bf16" and "verdict cached" in choice.reason
    assert len(_damaged_lines(caplog)) == 1 and verdict.name in _damaged_lines(caplog)[0]
    assert json.loads(verdict.read_text())["timing_pairs"] == encoder_backends.TIMING_PAIRS


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


class FakeMeter:
    """A clock that only the fake encoders below move, and other processes' CPU use at ``competing`` cores."""

    def __init__(self, competing: float) -> None:
        self.t, self.others, self.competing = 0.0, 0.0, competing

    def now(self) -> float:
        return self.t

    def others_cpu_seconds(self) -> float:
        return self.others


def _fake_encoder(meter: FakeMeter, name: str, seconds: list[float], calls: list[str]):
    """An encoder that 'takes' the next of ``seconds`` on ``meter``'s clock (the first call is the warm-up)."""
    it = iter(seconds)

    def encode(texts: list[str]) -> np.ndarray:
        dt = next(it)
        meter.t += dt
        meter.others += dt * meter.competing
        calls.append(name)
        return np.full((len(texts), 4), 0.5, dtype=np.float32)

    return encode


def test_speedup_is_the_fastest_of_interleaved_pairs(tmp_path):
    meter, calls = FakeMeter(competing=0.0), []
    # fp32 2.0 s, bf16 1.0 s; another job slows one fp32 run and one bf16 run
    exact = _fake_encoder(meter, "fp32", [0.1, 2.0, 9.0, 2.1], calls)
    fast = _fake_encoder(meter, "bf16", [0.1, 1.0, 1.1, 5.0], calls)
    choice = encoder_backends.try_bf16(fast, exact, tmp_path, TEXTS, QualityGate(), encoder_backends.EncoderChoice,
                                        meter)
    assert calls == ["bf16", "fp32", "fp32", "bf16", "bf16", "fp32", "fp32", "bf16"]  # warm-up, then A B, B A, A B
    assert choice.backend == "torch-bf16" and "2.00× fp32" in choice.reason
    assert "fastest of 3 interleaved A/B pairs" in choice.reason and "verdict cached" in choice.reason


def test_a_speed_verdict_timed_under_contention_is_not_cached(tmp_path):
    gate, calls = QualityGate(), []

    def attempt(competing: float):
        meter = FakeMeter(competing)
        # under contention bf16 loses (0.77×), as measured beside a CPU hog; quiet, it wins (1.63×)
        fp32, bf16 = (1.0, 1.3) if competing else (1.63, 1.0)
        return encoder_backends.try_bf16(_fake_encoder(meter, "bf16", [0.1] + [bf16] * 3, calls),
                                          _fake_encoder(meter, "fp32", [0.1] + [fp32] * 3, calls),
                                         tmp_path, TEXTS, gate, encoder_backends.EncoderChoice, meter)

    busy = attempt(competing=1.0)
    assert busy.backend == "torch" and "0.77× fp32" in busy.reason
    assert "other processes used 1.00 cores" in busy.reason and "provisional, not cached" in busy.reason
    assert not list(tmp_path.glob("bf16_gate_*.json"))
    quiet = attempt(competing=0.0)  # measured again, and this time kept
    assert quiet.backend == "torch-bf16" and "1.63× fp32" in quiet.reason and "verdict cached" in quiet.reason
    assert len(list(tmp_path.glob("bf16_gate_*.json"))) == 1
    measured = len(calls)
    assert attempt(competing=1.0).backend == "torch-bf16" and len(calls) == measured  # the final verdict is read back


def test_the_real_meter_sees_another_process_on_the_cpu():
    meter = encoder_backends.CpuMeter()
    if meter.others_cpu_seconds() is None:
        pytest.skip("no /proc/stat here")
    hog = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass"])
    try:
        start, before = meter.now(), meter.others_cpu_seconds()
        while hog.poll() is None and meter.now() - start < 1.0:  # our own CPU use is subtracted
            sum(range(1000))
        used = meter.others_cpu_seconds() - before
    finally:
        hog.kill()
        hog.wait()
    assert used > 0.1  # a second of a spinning process, however the cores are shared
