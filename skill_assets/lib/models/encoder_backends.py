"""Faster, checked encoders (and pair scorers) for sentence-transformers models on CPU.

Three ways to run a model on CPU beside the plain fp32 one, each used only after it has been
checked against the original on a probe of the caller's own texts:

- ``torch-bf16``: the model itself under ``torch.autocast`` in bfloat16. On CPUs with native bf16
  dot products (AVX-512 BF16 or AMX) oneDNN runs the matrix products 2-3× as fast as fp32 while
  embeddings stay within cosine ≈0.9999 of fp32. Without native support bf16 is emulated and slower
  than fp32, so it is tried only where the CPU's flags say it is native (``native_bf16``).
- ``onnx-int8``: the transformer exported to ONNX, fused by ONNX Runtime's BERT optimiser, weights
  quantized per channel (dynamic activations). It needs no bf16 hardware (AVX2/VNNI int8 kernels)
  and is the fast path on CPUs without it, at a fidelity cost (cosine ≈0.99, 10-nearest-neighbour
  overlap ≈0.9); per-tensor int8 (PyTorch's dynamic quantization) dropped to cosine 0.89.
  Only the transformer runs in ONNX; pooling, dense and normalisation layers stay the model's own
  modules, so any sentence-transformers model whose first module is a Hugging Face transformer is
  handled. Export failures (an architecture the exporter cannot trace, a model too large for one
  ONNX file) fall back to the original model.
- ``auto`` (the default of the assets): bf16 when it passes its gate here, else int8.

Speed is never timed: a timing taken while other work shares the cores flipped the verdict from one
run to the next (bf16 at 2.66× fp32, then 0.97× minutes later beside another job), so a busy machine
got a slower default. Which fast copy to try comes from the CPU's flags; whether to use it, from how
closely it agrees with the original, which no load changes. Exports and gate verdicts are cached on
disk by model fingerprint (the bf16 verdict also by CPU model, since the kernels differ), so later
runs start at once. Both are written atomically and checked when read back: a damaged one is
discarded and made again.

Cross-encoders (the router's reranker) get the same backends and gates in ``scorer_backends``.

Requests are encoded by one of ``QUERY_BACKENDS`` (``choose_query_encoder``): ``numpy`` (the default) computes the
model's own fp32 forward pass without torch (``numpy_bert``), where the folder is a model it implements, so a
request over cached document vectors never imports torch; ``torch`` is the model itself. No gate is needed: both
are fp32 and agree to 1e-6 (``tests/lib/models/test_numpy_bert.py``).
"""
from __future__ import annotations

import functools
import json
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from skill_assets.lib.common import cpu
from skill_assets.lib.common.cache_files import atomic_output, discard_damaged, write_text_atomic
from skill_assets.lib.models import numpy_bert

if TYPE_CHECKING:  # the cross-encoders' gate, defined with them
    from skill_assets.lib.models.scorer_backends import RankGate

BACKENDS = ("auto", "torch-bf16", "onnx-int8", "torch")
QUERY_BACKENDS = ("numpy", "torch")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class QualityGate:
    """How close a fast copy (bf16 or int8) must stay to the original's embeddings of the probe texts. int8 needs
    no special hardware (ONNX Runtime's int8 kernels ran faster than fp32 on both CPUs measured: 1.5× and 2.4×
    for the transformer alone)."""

    min_cosine: float = 0.97
    mean_cosine: float = 0.99
    probe_size: int = 48
    #: what a cached verdict of this gate must hold to be read back
    fields: ClassVar[tuple[str, ...]] = ("min_cosine", "mean_cosine", "probe")

    @staticmethod
    def agreement(fast: np.ndarray, exact: np.ndarray) -> dict:
        cos = np.sum(fast * exact, axis=1)
        return {"min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()), "probe": len(cos)}

    def passes(self, verdict: dict) -> bool:
        return verdict["min_cosine"] >= self.min_cosine and verdict["mean_cosine"] >= self.mean_cosine

    def describe(self, name: str, verdict: dict) -> str:
        return (f"{name} gate on {verdict['probe']} probe texts: min cosine {verdict['min_cosine']:.4f}, "
                f"mean {verdict['mean_cosine']:.4f} (needs ≥{self.min_cosine} / ≥{self.mean_cosine})")

    @staticmethod
    def figures(verdict: dict) -> tuple:
        """The measured values an ``EncoderChoice`` carries after its reason."""
        return verdict["min_cosine"], verdict["mean_cosine"]


@dataclass
class EncoderChoice:
    """The encode function a caller should use, the backend it really is, and why.

    ``lasting`` is False where a failure (an int8 export that broke: disk full, a killed exporter), not a
    gate's verdict, put the original model in: the next run tries the requested backend again, so what this
    choice encodes must not be cached under that backend's key."""

    encode: Callable[[list[str]], np.ndarray]
    backend: str
    reason: str
    probe_min_cosine: float | None = None
    probe_mean_cosine: float | None = None
    lasting: bool = True


def torch_encode(model, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    return lambda texts: model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False).astype(np.float32)


def bf16_encode(model, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    """The model itself with its matrix products in bfloat16; vectors are renormalised in fp32."""
    import torch

    def encode(texts: list[str]) -> np.ndarray:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            emb = model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                               show_progress_bar=False).astype(np.float32)
        return emb / np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)

    return encode


def _export_int8(model, target: Path) -> None:
    """Export the transformer of a bi-encoder to ONNX (token embeddings out), fused and int8, as ``target``."""
    sample = model.preprocess(["export probe", "a second, longer export probe sentence"])
    names = [k for k in _INPUTS if k in sample]
    export_hf_int8(model[0].auto_model, {k: sample[k] for k in names}, "token_embeddings",
                    lambda out: out.last_hidden_state, target)


def export_hf_int8(hf, sample: dict, output: str, select: Callable, target: Path) -> None:
    """Trace a Hugging Face model to ONNX, let ONNX Runtime fuse it for CPU, quantize weights per channel.

    ``select`` picks the output tensor from the model's output object (hidden states for a
    bi-encoder, logits for a cross-encoder); every input and output has dynamic batch/token axes.
    ``target`` is the private temporary path ``atomic_output`` gives the export; the traced and fused
    intermediates are named after it, so two concurrent exports never share a file.
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

    raw, fused = target.with_name(f"{target.name}.raw.onnx"), target.with_name(f"{target.name}.fused.onnx")
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
        cfg = hf.config
        heads, hidden = getattr(cfg, "num_attention_heads", 0), getattr(cfg, "hidden_size", 0)
        optimizer.optimize_model(str(raw), model_type="bert", num_heads=heads,
                                 hidden_size=hidden).save_model_to_file(str(fused))
        quantize_dynamic(str(fused), str(target), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    finally:
        if previous and hasattr(hf, "set_attn_implementation"):
            hf.set_attn_implementation(previous)
        raw.unlink(missing_ok=True)
        fused.unlink(missing_ok=True)


def onnx_session(onnx_path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


def _onnx_encode(model, onnx_path: Path, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    import torch

    session = onnx_session(onnx_path)
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


def _cached_verdict(path: Path, measure: Callable[[], dict], fields: tuple[str, ...]) -> dict:
    """A gate measurement is paid once: later runs (and 1%-incremental rebuilds) read it back.

    A file that is not a JSON object with a number for each of ``fields`` (empty, truncated, an older
    format) is discarded with one log line and measured again.
    """
    if path.exists():
        try:
            verdict = json.loads(path.read_text())
            if isinstance(verdict, dict) and all(isinstance(verdict.get(f), (int, float)) for f in fields):
                return verdict
            why = f"not a verdict with {', '.join(fields)}"
        except (OSError, ValueError) as exc:  # JSONDecodeError and undecodable bytes are ValueErrors
            why = f"{type(exc).__name__}: {exc}"[:200]
        discard_damaged(path, why)
    verdict = measure()
    write_text_atomic(path, json.dumps(verdict))
    return verdict


def _exported(onnx_path: Path, export: Callable[[Path], None], build: Callable[[Path], Callable]) -> Callable:
    """``build(onnx_path)``, exporting first where there is no export. The export reaches ``onnx_path`` in one
    rename (``atomic_output``); one that cannot be loaded (torn by a kill before exports were atomic, or
    damaged since) is discarded and exported again."""
    if onnx_path.exists():
        try:
            return build(onnx_path)
        except Exception as exc:  # noqa: BLE001 - ONNX Runtime's load errors are plain Exceptions
            discard_damaged(onnx_path, f"{type(exc).__name__}: {exc}"[:200])
    with atomic_output(onnx_path) as tmp:
        export(tmp)
    return build(onnx_path)


def _gated_int8(out_dir: Path, export: Callable[[Path], None], build: Callable[[Path], Callable],
                measure: Callable[[Callable], dict], fields: tuple[str, ...]) -> tuple[Callable | None, dict]:
    """Export once and measure the int8 copy against the original once; both results are cached in ``out_dir``.

    Any export or runtime failure means "use the original model": (None, {"error": why}).
    """
    try:
        fast = _exported(out_dir / "model_int8.onnx", export, build)
        return fast, _cached_verdict(out_dir / "quality_gate.json", lambda: measure(fast), fields)
    except Exception as exc:  # noqa: BLE001 - whatever broke, the original model still works
        return None, {"error": f"int8 ONNX export failed: {type(exc).__name__}: {exc}"[:300]}


def unsupported_reason(model, transformer) -> str | None:
    if model.device.type != "cpu":
        return f"int8 ONNX and bf16 autocast are CPU paths; model is on {model.device.type}"
    if transformer is None:
        return f"first module {type(model[0]).__name__} is not a transformer"
    return None


@functools.cache
def _cpu_tag() -> str:
    """Which CPU a bf16 verdict was measured on: the same model files on other hardware are measured again."""
    from skill_assets.lib.common.hashing import digest

    names = [ln for ln in cpu.cpuinfo() if ln.startswith(("model name", "flags"))]
    return digest("\n".join(sorted(set(names))) or platform.processor() or platform.machine())[:12]


def backend_key(backend: str) -> str:
    """The backend as part of a cache key. Where the choice depends on the CPU (``auto`` may resolve to bf16 on
    one machine and int8 on another), the CPU is part of it, so vectors of two backends never share a key."""
    return f"{backend}@{_cpu_tag()}" if backend in ("auto", "torch-bf16") else backend


#: CPU flags (``/proc/cpuinfo``) of native bf16 matrix products: x86 AVX-512 BF16 and AMX, Arm's BF16 extension
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


@functools.cache
def native_bf16() -> str | None:
    """The flag by which this CPU runs bf16 matrix products natively, or None (bf16 would be emulated).

    A table, not a timing: measured with MiniLM documents of 256 tokens on an AMD EPYC with ``avx512_bf16``,
    bf16 ran 2.6× fp32 on one thread and 2.4× on two, machine otherwise quiet; emulated bf16 is slower than
    fp32. Where ``/proc/cpuinfo`` is missing (macOS, Windows) nothing is known and bf16 is not tried.
    """
    flags = cpu.cpu_flags()
    return next((flag for flag in NATIVE_BF16_FLAGS if flag in flags), None)


def try_bf16(fast: Callable, fallback: Callable, out_dir: Path, probe: list, gate: QualityGate | RankGate, make: type):
    """``fast`` (a bf16 run of the model) where this CPU has native bf16 and ``fast`` agrees with ``fallback`` under
    ``gate`` on the probe; else ``fallback``, with the reason.

    The verdict is cached per CPU: the same weights on other hardware are checked again.
    """
    flag = native_bf16()
    if flag is None:
        return make(fallback, "torch", f"bf16 not tried: this CPU has none of the native bf16 flags "
                                       f"{', '.join(NATIVE_BF16_FLAGS)}, and emulated bf16 is slower than fp32")
    verdict = _cached_verdict(out_dir / f"bf16_gate_{_cpu_tag()}.json",
                              lambda: gate.agreement(fast(probe), fallback(probe)), gate.fields)
    passed = gate.passes(verdict)
    reason = f"{gate.describe('bf16', verdict)}; native bf16 ({flag}), speed read from the CPU flags, not timed"
    return make(fast if passed else fallback, "torch-bf16" if passed else "torch", reason, *gate.figures(verdict))


def try_int8(export: Callable[[Path], None], build: Callable[[Path], Callable], fallback: Callable, out_dir: Path,
              probe: list, gate: QualityGate | RankGate, make: type):
    """The int8 ONNX copy (exported by ``export``, run by ``build``) if it agrees with ``fallback`` under ``gate``."""
    int8, verdict = _gated_int8(out_dir, export, build, lambda fast: gate.agreement(fast(probe), fallback(probe)),
                                gate.fields)
    if int8 is None:
        return make(fallback, "torch", verdict["error"], lasting=False)
    passed = gate.passes(verdict)
    return make(int8 if passed else fallback, "onnx-int8" if passed else "torch", gate.describe("int8", verdict),
                *gate.figures(verdict))


def cascade(backend: str, bf16: Callable, int8: Callable):
    """``auto``: bf16 if it passes its gate, else int8; a named backend: that one alone. A failed try's reason is kept."""
    if backend == "onnx-int8":
        return int8()
    first = bf16()
    if first.backend != "torch" or backend == "torch-bf16":
        return first
    second = int8()
    second.reason = f"{first.reason}; {second.reason}"
    return second


def choose_query_encoder(model_path: str | Path, backend: str, max_tokens: int, load_model: Callable[[], object],
                         batch_size: int = 64) -> EncoderChoice:
    """How requests are encoded: ``numpy`` where ``numpy_bert`` implements the folder's model (it reads texts to
    ``max_tokens``, as the loaded model does), else, and for ``torch``, the sentence-transformers model that
    ``load_model()`` returns; ``reason`` says why numpy was not used."""
    if backend not in QUERY_BACKENDS:
        raise ValueError(f"unknown query backend {backend!r}; choose one of {QUERY_BACKENDS}")
    if backend == "torch":
        return EncoderChoice(torch_encode(load_model(), batch_size), "torch", "requested")
    if why := numpy_bert.refusal(model_path):
        return EncoderChoice(torch_encode(load_model(), batch_size), "torch",
                             f"the numpy encoder does not implement this model: {why}")
    encoder = numpy_bert.NumpyBertEncoder(model_path, numpy_bert.max_tokens(model_path, max_tokens))
    return EncoderChoice(encoder.encode, "numpy", "the model's fp32 forward pass in numpy")


def choose_encoder(model, backend: str, cache_dir: Path, fingerprint: str, sample_texts: list[str],
                   batch_size: int = 32, gate: QualityGate = QualityGate()) -> EncoderChoice:
    """The fastest faithful encoder for ``model`` among the requested backend(s), else the model itself.

    ``auto`` tries bf16 first (near-exact, where the hardware has it), then int8; ``reason`` says
    what each gate measured, so a fallback is never silent.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}; choose one of {BACKENDS}")
    fallback = torch_encode(model, batch_size)
    if backend == "torch":
        return EncoderChoice(fallback, "torch", "requested")
    if why := unsupported_reason(model, getattr(model[0], "auto_model", None)):
        return EncoderChoice(fallback, "torch", why)
    probe, out_dir = _probe(sample_texts, gate.probe_size), cache_dir / fingerprint
    return cascade(backend, lambda: try_bf16(bf16_encode(model, batch_size), fallback, out_dir, probe, gate,
                                               EncoderChoice),
                    lambda: try_int8(lambda out: _export_int8(model, out),
                                      lambda path: _onnx_encode(model, path, batch_size),
                                      fallback, out_dir, probe, gate, EncoderChoice))
