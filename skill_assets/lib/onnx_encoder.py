"""Encode with an int8 ONNX Runtime copy of a sentence-transformers model, checked against the original.

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
    """Export the transformer of ``model`` to ONNX, fuse it for CPU and quantize weights to int8."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    hf = model[0].auto_model
    sample = model.preprocess(["export probe", "a second, longer export probe sentence"])
    names = [k for k in _INPUTS if k in sample]

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *tensors):
            return self.inner(**dict(zip(names, tensors))).last_hidden_state

    out_dir.mkdir(parents=True, exist_ok=True)
    raw, fused, int8 = out_dir / "model.onnx", out_dir / "model_fused.onnx", out_dir / "model_int8.onnx"
    axes = {k: {0: "batch", 1: "tokens"} for k in [*names, "token_embeddings"]}
    # trace the plain ("eager") attention: ONNX Runtime's optimiser recognises and fuses that pattern
    previous = getattr(hf.config, "_attn_implementation", None)
    if previous and hasattr(hf, "set_attn_implementation"):
        hf.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            torch.onnx.export(LastHiddenState(hf).eval().cpu(), tuple(sample[k].cpu() for k in names), str(raw),
                              input_names=names, output_names=["token_embeddings"], dynamic_axes=axes,
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


def _onnx_encode(model, onnx_path: Path, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    import onnxruntime as ort
    import torch

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
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


def choose_encoder(model, backend: str, cache_dir: Path, fingerprint: str, sample_texts: list[str],
                   batch_size: int = 32, gate: QualityGate = QualityGate()) -> EncoderChoice:
    """The fastest faithful encoder for ``model``: int8 ONNX when requested, exportable and gated, else torch."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}; choose one of {BACKENDS}")
    fallback = torch_encode(model, batch_size)
    if backend == "torch":
        return EncoderChoice(fallback, "torch", "requested")
    if model.device.type != "cpu":
        return EncoderChoice(fallback, "torch", f"int8 ONNX is a CPU path; model is on {model.device.type}")
    if not hasattr(model[0], "auto_model"):
        return EncoderChoice(fallback, "torch", f"first module {type(model[0]).__name__} is not a transformer")
    out_dir = cache_dir / fingerprint
    onnx_path, gate_path = out_dir / "model_int8.onnx", out_dir / "quality_gate.json"
    try:
        if not onnx_path.exists():
            _export_int8(model, out_dir)
        int8 = _onnx_encode(model, onnx_path, batch_size)
        if gate_path.exists():
            verdict = json.loads(gate_path.read_text())
        else:
            probe = _probe(sample_texts, gate.probe_size)
            cos = np.sum(int8(probe) * fallback(probe), axis=1)
            verdict = {"min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()), "probe": len(probe)}
            gate_path.write_text(json.dumps(verdict))
    except Exception as exc:  # noqa: BLE001 - any export/runtime failure means: use the original model
        return EncoderChoice(fallback, "torch", f"int8 ONNX export failed: {type(exc).__name__}: {exc}"[:300])
    passed = verdict["min_cosine"] >= gate.min_cosine and verdict["mean_cosine"] >= gate.mean_cosine
    reason = (f"quality gate on {verdict['probe']} probe texts: min cosine {verdict['min_cosine']:.4f}, "
              f"mean {verdict['mean_cosine']:.4f} (needs ≥{gate.min_cosine} / ≥{gate.mean_cosine})")
    return EncoderChoice(int8 if passed else fallback, "onnx-int8" if passed else "torch", reason,
                         verdict["min_cosine"], verdict["mean_cosine"])
