"""Encode (and score pairs) with an int8 ONNX Runtime copy of a sentence-transformers model, checked against the original.

Why int8: on this class of CPU (AVX-512 VNNI, no bf16) PyTorch fp32 is already as fast as a fully
fused ONNX Runtime fp32 graph (measured 1.0×), so the only honest speed-up left is doing the big
matrix products in int8. We export the model's transformer to ONNX, let ONNX Runtime's BERT
optimiser fuse attention / layer-norm / GELU, then quantize weights per channel (dynamic
activations). Per-channel int8 keeps MiniLM embeddings within cosine ≈0.99 of fp32, whereas
PyTorch's per-tensor dynamic quantization dropped to 0.89.

Only the transformer runs in ONNX; pooling, dense and normalisation layers stay the model's own
modules, so any sentence-transformers model whose first module is a Hugging Face transformer is
handled. Before it is used, the int8 copy embeds a probe of the caller's texts and must agree with
the original model (``QualityGate``); otherwise, or when export fails (an architecture the exporter
cannot trace, a model too large for one ONNX file), encoding falls back to the original model.
Exports and gate results are cached on disk by model fingerprint, so later runs start at once.

Cross-encoders (the router's reranker) get the same treatment through ``choose_scorer``: the
logits graph is exported, and the int8 copy is used only if it orders probe (query, document)
pairs like the original (Spearman correlation, ``RankGate``).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BACKENDS = ("onnx-int8", "torch")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class QualityGate:
    """Minimum cosine between int8 and original embeddings of the probe texts."""

    min_cosine: float = 0.97
    mean_cosine: float = 0.99
    probe_size: int = 48


@dataclass
class EncoderChoice:
    """The encode function a caller should use, the backend it really is, and why."""

    encode: Callable[[list[str]], np.ndarray]
    backend: str
    reason: str
    probe_min_cosine: float | None = None
    probe_mean_cosine: float | None = None


def torch_encode(model, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    return lambda texts: model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True).astype(np.float32)


def _export_int8(model, out_dir: Path) -> Path:
    """Export the transformer of a bi-encoder to ONNX (token embeddings out), fused and int8."""
    sample = model.preprocess(["export probe", "a second, longer export probe sentence"])
    names = [k for k in _INPUTS if k in sample]
    return _export_hf_int8(model[0].auto_model, {k: sample[k] for k in names}, "token_embeddings",
                           lambda out: out.last_hidden_state, out_dir)


def _export_hf_int8(hf, sample: dict, output: str, select: Callable, out_dir: Path) -> Path:
    """Trace a Hugging Face model to ONNX, let ONNX Runtime fuse it for CPU, quantize weights per channel.

    ``select`` picks the output tensor from the model's output object (hidden states for a
    bi-encoder, logits for a cross-encoder); every input and output has dynamic batch/token axes.
    """
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    names = list(sample)

    class Selected(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *tensors):
            return select(self.inner(**dict(zip(names, tensors))))

    out_dir.mkdir(parents=True, exist_ok=True)
    raw, fused, int8 = out_dir / "model.onnx", out_dir / "model_fused.onnx", out_dir / "model_int8.onnx"
    axes = {k: {0: "batch", 1: "tokens"} for k in names} | {output: {0: "batch"}}
    # trace the plain ("eager") attention: ONNX Runtime's optimiser recognises and fuses that pattern
    previous = getattr(hf.config, "_attn_implementation", None)
    if previous and hasattr(hf, "set_attn_implementation"):
        hf.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            torch.onnx.export(Selected(hf).eval().cpu(), tuple(sample[k].cpu() for k in names), str(raw),
                              input_names=names, output_names=[output], dynamic_axes=axes,
                              opset_version=17, dynamo=False)
    finally:
        if previous and hasattr(hf, "set_attn_implementation"):
            hf.set_attn_implementation(previous)
    cfg = hf.config
    heads, hidden = getattr(cfg, "num_attention_heads", 0), getattr(cfg, "hidden_size", 0)
    optimizer.optimize_model(str(raw), model_type="bert", num_heads=heads, hidden_size=hidden).save_model_to_file(str(fused))
    quantize_dynamic(str(fused), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    raw.unlink()
    fused.unlink()
    return int8


def _session(onnx_path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


def _onnx_encode(model, onnx_path: Path, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    import torch

    session = _session(onnx_path)
    wanted = {i.name for i in session.get_inputs()}
    tail = list(model)[1:]

    def encode(texts: list[str]) -> np.ndarray:
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), model.get_embedding_dimension()), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            features = model.preprocess([texts[i] for i in idx])
            tokens = session.run(None, {k: v.numpy() for k, v in features.items() if k in wanted})[0]
            features = {**features, "token_embeddings": torch.from_numpy(tokens)}
            with torch.no_grad():
                for module in tail:
                    features = module(features)
            emb = features["sentence_embedding"].numpy()
            out[idx] = emb / np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)
        return out

    return encode


def _probe(texts: list[str], size: int) -> list[str]:
    """Texts spread evenly over the length range, so short and truncated-long inputs are both checked."""
    ranked = sorted(texts, key=len)
    if len(ranked) <= size:
        return ranked
    return [ranked[int(i)] for i in np.linspace(0, len(ranked) - 1, size)]


def _gated_int8(out_dir: Path, export: Callable[[Path], Path], build: Callable[[Path], Callable],
                measure: Callable[[Callable], dict]) -> tuple[Callable, dict]:
    """Export once and measure the int8 copy against the original once; both results are cached in ``out_dir``."""
    onnx_path, gate_path = out_dir / "model_int8.onnx", out_dir / "quality_gate.json"
    if not onnx_path.exists():
        export(out_dir)
    fast = build(onnx_path)
    if gate_path.exists():
        return fast, json.loads(gate_path.read_text())
    verdict = measure(fast)
    gate_path.write_text(json.dumps(verdict))
    return fast, verdict


def _unsupported(model, transformer) -> str | None:
    if model.device.type != "cpu":
        return f"int8 ONNX is a CPU path; model is on {model.device.type}"
    if transformer is None:
        return f"first module {type(model[0]).__name__} is not a transformer"
    return None


def choose_encoder(model, backend: str, cache_dir: Path, fingerprint: str, sample_texts: list[str],
                   batch_size: int = 32, gate: QualityGate = QualityGate()) -> EncoderChoice:
    """The fastest faithful encoder for ``model``: int8 ONNX when requested, exportable and gated, else torch."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}; choose one of {BACKENDS}")
    fallback = torch_encode(model, batch_size)
    if backend == "torch":
        return EncoderChoice(fallback, "torch", "requested")
    if why := _unsupported(model, getattr(model[0], "auto_model", None)):
        return EncoderChoice(fallback, "torch", why)

    def measure(int8: Callable) -> dict:
        probe = _probe(sample_texts, gate.probe_size)
        cos = np.sum(int8(probe) * fallback(probe), axis=1)
        return {"min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()), "probe": len(probe)}

    try:
        int8, verdict = _gated_int8(cache_dir / fingerprint, lambda out: _export_int8(model, out),
                                    lambda path: _onnx_encode(model, path, batch_size), measure)
    except Exception as exc:  # noqa: BLE001 - any export/runtime failure means: use the original model
        return EncoderChoice(fallback, "torch", f"int8 ONNX export failed: {type(exc).__name__}: {exc}"[:300])
    passed = verdict["min_cosine"] >= gate.min_cosine and verdict["mean_cosine"] >= gate.mean_cosine
    reason = (f"quality gate on {verdict['probe']} probe texts: min cosine {verdict['min_cosine']:.4f}, "
              f"mean {verdict['mean_cosine']:.4f} (needs ≥{gate.min_cosine} / ≥{gate.mean_cosine})")
    return EncoderChoice(int8 if passed else fallback, "onnx-int8" if passed else "torch", reason,
                         verdict["min_cosine"], verdict["mean_cosine"])


# ------------------------------------------------------------------------------------------ cross-encoders
@dataclass(frozen=True)
class RankGate:
    """Minimum Spearman correlation between int8 and original scores of probe (query, document) pairs.

    A reranker is judged by the order it puts candidates in, so the gate checks order, not values.
    """

    min_spearman: float = 0.98
    probe_size: int = 64


@dataclass
class ScorerChoice:
    """The pair-scoring function a caller should use, the backend it really is, and why."""

    score: Callable[[list[tuple[str, str]]], np.ndarray]
    backend: str
    reason: str
    probe_spearman: float | None = None


def torch_score(cross_encoder, batch_size: int) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    return lambda pairs: np.asarray(cross_encoder.predict(pairs, batch_size=batch_size, show_progress_bar=False),
                                    dtype=np.float64).reshape(-1)


def _export_cross_int8(cross_encoder, out_dir: Path) -> Path:
    """Export a one-label cross-encoder's transformer to ONNX (logits out), fused and int8."""
    sample = cross_encoder.preprocess([("export probe", "a document"), ("a longer probe query", "another document")])
    names = [k for k in _INPUTS if k in sample]
    return _export_hf_int8(cross_encoder.transformers_model, {k: sample[k] for k in names}, "logits",
                           lambda out: out.logits, out_dir)


def _onnx_score(cross_encoder, onnx_path: Path, batch_size: int) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    import torch

    session = _session(onnx_path)
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


def choose_scorer(cross_encoder, backend: str, cache_dir: Path, fingerprint: str, sample_pairs: list[tuple[str, str]],
                  batch_size: int = 32, gate: RankGate = RankGate()) -> ScorerChoice:
    """The fastest faithful pair scorer: int8 ONNX when requested, exportable and rank-gated, else torch."""
    from scipy.stats import spearmanr

    if backend not in BACKENDS:
        raise ValueError(f"unknown reranker backend {backend!r}; choose one of {BACKENDS}")
    fallback = torch_score(cross_encoder, batch_size)
    if backend == "torch":
        return ScorerChoice(fallback, "torch", "requested")
    if getattr(cross_encoder, "num_labels", 1) != 1:
        return ScorerChoice(fallback, "torch", "int8 ONNX scores one-label cross-encoders only")
    if why := _unsupported(cross_encoder, getattr(cross_encoder, "transformers_model", None)):
        return ScorerChoice(fallback, "torch", why)

    def measure(int8: Callable) -> dict:
        probe = sample_pairs[: gate.probe_size]
        rho = float(spearmanr(int8(probe), fallback(probe)).statistic) if len(probe) > 2 else float("nan")
        return {"spearman": rho, "probe": len(probe)}

    try:
        int8, verdict = _gated_int8(cache_dir / fingerprint, lambda out: _export_cross_int8(cross_encoder, out),
                                    lambda path: _onnx_score(cross_encoder, path, batch_size), measure)
    except Exception as exc:  # noqa: BLE001 - any export/runtime failure means: use the original model
        return ScorerChoice(fallback, "torch", f"int8 ONNX export failed: {type(exc).__name__}: {exc}"[:300])
    passed = verdict["spearman"] >= gate.min_spearman  # NaN (too few probe pairs) never passes
    reason = (f"rank gate on {verdict['probe']} probe pairs: Spearman {verdict['spearman']:.4f} "
              f"(needs ≥{gate.min_spearman})")
    return ScorerChoice(int8 if passed else fallback, "onnx-int8" if passed else "torch", reason, verdict["spearman"])
