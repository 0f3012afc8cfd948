"""The numpy request encoder computes what sentence-transformers computes, from the same folder (real models: the
bundled MiniLM, the shipped tuned one, and a folder saved by sentence-transformers 6), and refuses any other model,
the bi-encoder then falling back to torch with one log line."""
import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from skill_assets.lib.models import numpy_bert
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.models.encoder_backends import choose_query_encoder
from skill_assets.lib.models.numpy_bert import NumpyBertEncoder, max_tokens, refusal
from skill_assets.lib.retrieval.defaults import tuned_embedder
from skill_assets.lib.retrieval.dense import EMBEDDER_MAX_SEQ, DenseIndex

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXTS = ["my docker compose containers cannot reach each other", "把几个 PDF 文件合并成一个",
         "Café naïve résumé ÅNGSTRÖM 😀 tabs\tand\nnew lines", "x", "C++ / C# / F#: p99 latency -> 1.5ms?",
         "deploy the release " * 120,                      # past 256 tokens: cut where sentence-transformers cuts
         "中文请求" * 150 + " mixed with English words " * 10]


def sentence_transformer(folder):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    model.max_seq_length = min(model.max_seq_length or EMBEDDER_MAX_SEQ, EMBEDDER_MAX_SEQ)  # as DenseIndex sets it
    return model


def assert_same_as_torch(folder) -> None:
    assert refusal(folder) is None
    model = sentence_transformer(folder)
    encoder = NumpyBertEncoder(folder, max_tokens(folder, EMBEDDER_MAX_SEQ))
    for text in TEXTS:
        assert encoder.tokens(text) == model.tokenizer(text, truncation=True,
                                                       max_length=model.max_seq_length)["input_ids"], text
    exact = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    got = encoder.encode(TEXTS)
    assert got.dtype == np.float32 and got.shape == exact.shape
    assert np.abs(got - exact).max() < 1e-6


@pytest.mark.parametrize("which", ["bundled", "shipped tuned"])
def test_the_numpy_encoder_agrees_with_sentence_transformers(which):
    assert_same_as_torch(bundled_minilm() if which == "bundled" else tuned_embedder())


def test_a_folder_saved_by_sentence_transformers_6_is_read_the_same(tmp_path):
    """sentence-transformers 6 writes other configs (pooling_mode, the length in tokenizer_config.json)."""
    sentence_transformer(bundled_minilm()).save(str(tmp_path / "saved"))
    assert "pooling_mode" in json.loads((tmp_path / "saved" / "1_Pooling" / "config.json").read_text())
    assert_same_as_torch(tmp_path / "saved")


def linked_copy(source: str, target: Path, **configs: dict) -> Path:
    """``source``'s files linked into ``target``, the config files named in ``configs`` (path → JSON) written."""
    for path in Path(source).rglob("*"):
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(source)).symlink_to(path)
    for name, config in configs.items():
        (target / name.replace("__", "/")).unlink()
        (target / name.replace("__", "/")).write_text(json.dumps(config))
    return target


@pytest.mark.parametrize("configs, why", [
    ({"1_Pooling__config.json": {"word_embedding_dimension": 384, "pooling_mode_cls_token": True,
                                 "pooling_mode_mean_tokens": False}}, "pooling ['cls_token'], not mean_tokens"),
    ({"modules.json": [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                       {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                       {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]},
     "modules ['Transformer', 'Pooling', 'Dense'], not ['Transformer', 'Pooling', 'Normalize']"),
    ({"config.json": {"model_type": "xlm-roberta", "hidden_act": "gelu"}}, "model type 'xlm-roberta', not bert"),
    ({"config.json": {"model_type": "bert", "hidden_act": "gelu_new"}}, "activation 'gelu_new', not gelu"),
    ({"config_sentence_transformers.json": {"default_prompt_name": "query", "prompts": {"query": "query: "}}},
     "a default prompt ('query')"),
])
def test_other_models_are_refused_with_the_reason(tmp_path, configs, why):
    assert refusal(linked_copy(bundled_minilm(), tmp_path / "model", **configs)) == why


def test_half_precision_weights_are_refused(tmp_path):
    """torch computes in the weights' own type: float32 arithmetic would not be what it computes."""
    from safetensors.numpy import load_file, save_file

    folder = linked_copy(bundled_minilm(), tmp_path / "model")
    (folder / "model.safetensors").unlink()
    weights = load_file(str(Path(bundled_minilm()) / "model.safetensors"))
    save_file({k: v.astype(np.float16) for k, v in weights.items()}, str(folder / "model.safetensors"))
    assert refusal(folder) == "weights in ['F16'], not float32 alone (torch would compute in their type)"


def test_a_refused_model_is_read_by_torch_with_one_log_line(tmp_path):
    folder = linked_copy(bundled_minilm(), tmp_path / "model", **{"1_Pooling__config.json": {
        "word_embedding_dimension": 384, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}})
    said = []
    dense = DenseIndex(folder, tmp_path / "cache", log=said.append)
    got = dense.encode(TEXTS[:2])
    assert said == ["query encoder: torch, not numpy (the numpy encoder does not implement this model: pooling "
                    "['cls_token'], not mean_tokens)"]
    exact = sentence_transformer(folder).encode(TEXTS[:2], normalize_embeddings=True, convert_to_numpy=True)
    assert np.abs(got - exact).max() < 1e-6
    dense.encode(TEXTS[:1])
    assert len(said) == 1  # chosen once


def test_the_query_backends_are_named_and_torch_can_be_asked_for():
    with pytest.raises(ValueError, match="unknown query backend 'onnx'"):
        choose_query_encoder(bundled_minilm(), "onnx", EMBEDDER_MAX_SEQ, lambda: None)
    choice = choose_query_encoder(bundled_minilm(), "torch", EMBEDDER_MAX_SEQ,
                                  lambda: sentence_transformer(bundled_minilm()))
    assert (choice.backend, choice.reason) == ("torch", "requested")
    assert choose_query_encoder(bundled_minilm(), "numpy", EMBEDDER_MAX_SEQ, lambda: None).backend == "numpy"


class _CountedWeights(np.ndarray):
    """A weight matrix that counts the matrix products it takes part in."""

    products = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul:
            type(self).products += 1
        return getattr(ufunc, method)(*(np.asarray(i) for i in inputs), **kwargs)


def test_a_call_of_many_texts_reads_each_layers_weights_once_and_gives_each_text_its_own_row(monkeypatch):
    """The texts of a call are packed into one forward pass (a long request's parts are twenty texts of a few dozen
    tokens), and attention stays within each text: every row is the text's own embedding."""
    encoder = NumpyBertEncoder(bundled_minilm(), max_tokens(bundled_minilm(), EMBEDDER_MAX_SEQ))
    alone = np.vstack([encoder.encode([text]) for text in TEXTS])
    assert sum(len(encoder.tokens(t)) for t in TEXTS) > numpy_bert.PACK_TOKENS  # two passes
    assert np.abs(encoder.encode(TEXTS) - alone).max() < 1e-6
    monkeypatch.setattr(numpy_bert, "PACK_TOKENS", 10_000)
    counted = [replace(layer, intermediate=replace(layer.intermediate,
                                                   weight=layer.intermediate.weight.view(_CountedWeights)))
               for layer in encoder.layers]
    monkeypatch.setattr(encoder, "layers", counted)
    together = encoder.encode(TEXTS)
    assert _CountedWeights.products == len(encoder.layers)
    assert together.dtype == np.float32 and np.abs(together - alone).max() < 1e-6
