"""A BERT sentence encoder (mean pooling, unit length) in numpy: requests encoded without importing torch.

Why: a one-shot ``skill-assets route`` over a pool whose document vectors are cached encodes one short request,
and importing torch and sentence-transformers for it was most of the command's wall time (3.4 s of 6.0 s on a quiet
2-core machine, ``bench/cli_route.py``). The forward pass of a 6-layer MiniLM over one request is a few small matrix
products, which numpy does as fast. The weights are read from the folder's ``model.safetensors`` and the text is
tokenized by its ``tokenizer.json`` (the Rust tokenizer sentence-transformers' fast tokenizer wraps), cut to the
same number of tokens as the torch path. The texts of a call are packed end to end (``PACK_TOKENS`` a pass): the
projections and feed-forward products run once over all their tokens and attention within each text, so nothing is
padded and no attention mask is needed.

Only what the shipped bi-encoder is, is implemented: a sentence-transformers folder of a BERT model (absolute
positions, erf GELU) followed by mean pooling and, optionally, normalisation. ``refusal(folder)`` names what
else a folder holds (another architecture, pooling, a dense layer, a default prompt), and the caller keeps the
torch encoder for it (``encoder_backends.choose_query_encoder``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
#: the module kinds (last part of ``modules.json``'s ``type``) this encoder runs, in order; the last is optional
MODULES = ("Transformer", "Pooling", "Normalize")
#: ``sentence_bert_config.json`` entries that change nothing here (the two formats sentence-transformers writes:
#: before 6.0 ``max_seq_length`` and ``do_lower_case``; from 6.0 how the transformer's output is read)
_TRANSFORMER_SETTINGS = {
    "transformer_task": "feature-extraction",
    "module_output_name": "token_embeddings",
    "modality_config": {"text": {"method": "forward", "method_output_name": "last_hidden_state"}},
}


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _pooling_refusal(config: dict) -> str | None:
    """Why a pooling config is not plain mean pooling (either format sentence-transformers writes), or None."""
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        modes = [mode] if isinstance(mode, str) else list(mode)
        return None if modes == ["mean"] else f"pooling {modes}, not mean"
    legacy = {k: v for k, v in config.items() if k.startswith("pooling_mode_")}
    on = sorted(k.removeprefix("pooling_mode_") for k, v in legacy.items() if v)
    return None if on == ["mean_tokens"] else f"pooling {on}, not mean_tokens"


def _transformer_refusal(config: dict) -> str | None:
    """Why a transformer's ``sentence_bert_config.json`` asks for more than the plain forward pass, or None."""
    for key, value in config.items():
        if key in ("max_seq_length", "do_lower_case"):
            continue
        if _TRANSFORMER_SETTINGS.get(key, object()) != value:
            return f"sentence_bert_config.json sets {key}={value!r}"
    return None


def _architecture_refusal(config: dict) -> str | None:
    """Why a Hugging Face ``config.json`` is not a BERT encoder this forward pass computes, or None."""
    if config.get("model_type") != "bert":
        return f"model type {config.get('model_type')!r}, not bert"
    if config.get("hidden_act") != "gelu":
        return f"activation {config.get('hidden_act')!r}, not gelu"
    if config.get("position_embedding_type", "absolute") != "absolute":
        return f"position embeddings {config['position_embedding_type']!r}, not absolute"
    if config.get("is_decoder") or config.get("add_cross_attention"):
        return "a decoder"
    return None


def _float_types(weights: Path) -> set[str]:
    """The floating-point tensor types of a safetensors file, read from its header (an 8-byte little-endian length,
    then JSON) without loading a tensor."""
    with weights.open("rb") as fh:
        header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
    return {t["dtype"] for name, t in header.items() if name != "__metadata__" and t["dtype"].startswith(("F", "BF"))}


def refusal(folder: str | Path) -> str | None:
    """Why the sentence-transformers folder ``folder`` is not a model this encoder computes exactly, or None."""
    folder = Path(folder)
    for name in (WEIGHTS_FILE, TOKENIZER_FILE, "modules.json", "config.json"):
        if not (folder / name).is_file():
            return f"no {name} in {folder}"
    modules = _json(folder / "modules.json")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (list(MODULES), list(MODULES[:2])):
        return f"modules {kinds}, not {list(MODULES)}"
    if modules[0].get("path", "") != "":
        return f"the transformer is in {modules[0]['path']!r}, not the folder itself"
    st_config = _json(folder / "config_sentence_transformers.json")
    if st_config.get("default_prompt_name"):
        return f"a default prompt ({st_config['default_prompt_name']!r})"
    if (types := _float_types(folder / WEIGHTS_FILE)) != {"F32"}:
        return f"weights in {sorted(types)}, not float32 alone (torch would compute in their type)"
    return (_pooling_refusal(_json(folder / modules[1]["path"] / "config.json"))
            or _transformer_refusal(_json(folder / "sentence_bert_config.json"))
            or _architecture_refusal(_json(folder / "config.json")))


def max_tokens(folder: str | Path, cap: int) -> int:
    """Tokens a text is cut to, special tokens included, as sentence-transformers reads the folder and a caller caps
    it: ``max_seq_length`` (format before 6.0), else the tokenizer's ``model_max_length``; never past the position
    table or ``cap``."""
    folder = Path(folder)
    declared = (_json(folder / "sentence_bert_config.json").get("max_seq_length")
                or _json(folder / "tokenizer_config.json").get("model_max_length") or cap)
    return int(min(declared, _json(folder / "config.json")["max_position_embeddings"], cap))


#: erfc(z) ≈ t·exp(-z² + P(t)), t = 1 / (1 + z/2), P's coefficients lowest first (Press et al., Numerical Recipes,
#: ``erfcc``: fractional error under 1.2e-7 everywhere)
_ERFC = np.array([-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
                  -0.82215223, 0.17087277], dtype=np.float32)


#: tokens of one packed forward pass: a 600-word request and its 19 parts (24 pieces, 1,965 tokens) took 852 ms of
#: CPU one piece a pass, 739 ms in passes of up to 256 tokens, 692 of 512, 688 of 1,024 and 710 in one pass (one
#: thread, medians of 5); past the caches' reach the erf's and layer norms' passes cost more than a product saves
PACK_TOKENS = 512
#: rows of a layer's intermediate activations the GELU reads at a time: 64 × 1536 float32 (MiniLM) stay in a core's L2
#: cache through the erf's twenty passes; over all the tokens of a 600-word request and its parts at once (3 M values,
#: each pass a new 12 MB array) the GELU took 40 ms of CPU a layer, in blocks written in place 13 ms
GELU_ROWS = 64


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float32 to within 4e-7 of the exact value (GELU within 3e-7), in place of ``x``: numpy has no erf,
    scipy.special's import (0.2 s) costs more than a request's forward pass, and in float64 it took as long as the
    layers' products."""
    z = np.abs(x)
    t = np.multiply(z, np.float32(0.5))
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = np.full_like(t, _ERFC[-1])
    for c in _ERFC[-2:0:-1]:
        poly *= t
        poly += c
    poly *= t
    poly += _ERFC[0]
    np.multiply(z, z, out=z)
    poly -= z
    np.exp(poly, out=poly)
    poly *= t
    np.subtract(np.float32(1.0), poly, out=poly)
    return np.copysign(poly, x, out=x)


def _gelu(h: np.ndarray) -> np.ndarray:
    """GELU, erf form (BERT's ``gelu``), of ``h`` in place, ``GELU_ROWS`` rows at a time."""
    for start in range(0, len(h), GELU_ROWS):
        block = h[start:start + GELU_ROWS]
        erf = _erf(block / np.float32(np.sqrt(2.0)))
        erf += np.float32(1.0)
        block *= np.float32(0.5)
        block *= erf
    return h


def _packs(ids: list[list[int]], budget: int) -> list[list[list[int]]]:
    """``ids`` in order, cut into runs of at most ``budget`` tokens together (a longer sequence is a run alone)."""
    packs: list[list[list[int]]] = []
    size = budget
    for seq in ids:
        if size + len(seq) > budget:
            packs.append([])
            size = 0
        packs[-1].append(seq)
        size += len(seq)
    return packs


@dataclass(frozen=True)
class _Dense:
    """A linear map and its bias, the matrix transposed once so that a row ``x`` maps as ``x @ weight + bias``."""

    weight: np.ndarray
    bias: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x @ self.weight + self.bias


@dataclass(frozen=True)
class _Layer:
    """One transformer layer's weights: four dense maps and the two layer norms (weight, bias) after them."""

    qkv: _Dense              # (hidden, 3 * hidden): query, key and value projections side by side
    attention_out: _Dense
    attention_norm: tuple[np.ndarray, np.ndarray]
    intermediate: _Dense
    out: _Dense
    out_norm: tuple[np.ndarray, np.ndarray]


class NumpyBertEncoder:
    """``encode(texts)`` → unit-length mean-pooled float32 rows, as the sentence-transformers model computes them.

    Build it only for a folder ``refusal`` accepts."""

    def __init__(self, folder: str | Path, max_length: int) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        config = _json(folder / "config.json")
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.lower = bool(_json(folder / "sentence_bert_config.json").get("do_lower_case", False))
        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length)
        weights = load_file(str(folder / WEIGHTS_FILE))
        prefix = "" if "embeddings.word_embeddings.weight" in weights else "bert."

        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)

        def norm(name: str) -> tuple[np.ndarray, np.ndarray]:
            return w(f"{name}.weight"), w(f"{name}.bias")

        def dense(name: str) -> _Dense:
            return _Dense(np.ascontiguousarray(w(f"{name}.weight").T), w(f"{name}.bias"))

        self.words = w("embeddings.word_embeddings.weight")
        self.positions = w("embeddings.position_embeddings.weight")
        self.token_type = w("embeddings.token_type_embeddings.weight")[0]
        self.embedding_norm = norm("embeddings.LayerNorm")
        self.layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv = [p + f"attention.self.{n}" for n in ("query", "key", "value")]
            self.layers.append(_Layer(
                _Dense(np.ascontiguousarray(np.concatenate([w(f"{n}.weight") for n in qkv]).T),
                       np.concatenate([w(f"{n}.bias") for n in qkv])),
                dense(p + "attention.output.dense"), norm(p + "attention.output.LayerNorm"),
                dense(p + "intermediate.dense"), dense(p + "output.dense"), norm(p + "output.LayerNorm")))

    def tokens(self, text: str) -> list[int]:
        """The token ids the model reads of ``text``: special tokens added, cut to the maximum length."""
        return self.tokenizer.encode(text.lower() if self.lower else text).ids

    def encode(self, texts: list[str]) -> np.ndarray:
        """(texts, hidden) float32 rows, unit length: the texts' tokens packed end to end, at most ``PACK_TOKENS`` a
        forward pass, each text's states mean-pooled."""
        if not texts:
            return np.zeros((0, self.words.shape[1]), np.float32)
        pooled = np.vstack([self._mean_states(pack) for pack in _packs([self.tokens(t) for t in texts], PACK_TOKENS)])
        return (pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)

    def _mean_states(self, ids: list[list[int]]) -> np.ndarray:
        """(sequences, hidden): each token sequence's mean last-layer state, every token counted (nothing is padded)."""
        lengths = np.array([len(i) for i in ids])
        return np.add.reduceat(self._states(ids), np.cumsum(lengths) - lengths, axis=0) / lengths[:, None]

    def _layer_norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * params[0] + params[1]

    def _states(self, ids: list[list[int]]) -> np.ndarray:
        """(all tokens, hidden): the last layer's token states of each token sequence in ``ids``, in order.

        The sequences are packed end to end: every projection and feed-forward product runs once over all their
        tokens (one product of the weights per layer, not one per text: the 19 parts of a 600-word request are 19
        texts of 48 tokens on average), and attention runs within each sequence alone, so no token is padded and
        none sees another text's: a text's rows are those it has encoded alone."""
        lengths = [len(i) for i in ids]
        ends = np.cumsum(lengths)
        n, hidden = int(ends[-1]), self.words.shape[1]
        size = hidden // self.heads
        sqrt_size = np.float32(np.sqrt(size))
        positions = np.concatenate([np.arange(m) for m in lengths])
        x = self._layer_norm(self.words[np.concatenate(ids)] + self.positions[positions] + self.token_type,
                             self.embedding_norm)
        context = np.empty((n, hidden), np.float32)
        for layer in self.layers:
            qkv = layer.qkv(x).reshape(n, 3, self.heads, size)
            for end, m in zip(ends, lengths):
                q, k, v = qkv[end - m:end].transpose(1, 2, 0, 3)
                a = q @ k.transpose(0, 2, 1) / sqrt_size
                a = np.exp(a - a.max(-1, keepdims=True))
                a /= a.sum(-1, keepdims=True)
                context[end - m:end] = (a @ v).transpose(1, 0, 2).reshape(m, hidden)
            x = self._layer_norm(layer.attention_out(context) + x, layer.attention_norm)
            h = _gelu(layer.intermediate(x))
            x = self._layer_norm(layer.out(h) + x, layer.out_norm)
        return x
