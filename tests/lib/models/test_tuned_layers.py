"""Tuned top layers over the bundled MiniLM: saved small, materialised into an ordinary model folder, refused when
they do not fit the base."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.models.embedding_cache import model_fingerprint
from skill_assets.lib.models.tuned_layers import MARK_FILE, freeze_below, materialise, save_tuned, tuned_names
from skill_assets.lib.training.model_training import load_bi_encoder


def test_only_the_top_layers_train_and_travel(tmp_path):
    model = load_bi_encoder(bundled_minilm())
    trainable = freeze_below(model, 2)
    names = tuned_names(model, 2)
    assert names and all(n.startswith(("encoder.layer.4.", "encoder.layer.5.")) for n in names)
    assert trainable == sum(p.numel() for n, p in model[0].auto_model.named_parameters() if n in names)
    with torch.no_grad():
        for n, p in model[0].auto_model.named_parameters():
            if p.requires_grad:
                p.add_(0.01)
    sha = save_tuned(model, 2, tmp_path / "tuned.safetensors")
    saved = load_file(str(tmp_path / "tuned.safetensors"))
    assert sorted(saved) == sorted(names) and all(t.dtype == torch.float16 for t in saved.values())
    assert (tmp_path / "tuned.safetensors").stat().st_size < 8_000_000 and len(sha) == 64

    folder = materialise(bundled_minilm(), tmp_path / "tuned.safetensors", tmp_path / "cache")
    assert materialise(bundled_minilm(), tmp_path / "tuned.safetensors", tmp_path / "cache") == folder  # cached
    assert json.loads((folder / MARK_FILE).read_text())["tuned_sha256"] == sha
    assert model_fingerprint(folder) != model_fingerprint(bundled_minilm())  # caches never mix the two
    tuned = load_bi_encoder(str(folder))
    texts = ["my containers cannot reach each other", "split a pdf into pages"]
    ours = model.encode(texts, normalize_embeddings=True)
    theirs = tuned.encode(texts, normalize_embeddings=True)
    assert np.min(np.sum(ours * theirs, axis=1)) > 0.999  # float16 storage of the tuned layers only
    base = load_bi_encoder(bundled_minilm()).encode(texts, normalize_embeddings=True)
    assert np.max(np.abs(base - theirs)) > 1e-3  # and it is not the base


def test_a_tuned_file_that_does_not_fit_the_base_is_refused(tmp_path):
    save_file({"encoder.layer.5.output.dense.weight": torch.zeros(3, 3, dtype=torch.float16)},
              str(tmp_path / "wrong.safetensors"))
    with pytest.raises(ValueError, match="not a tensor of the base model"):
        materialise(bundled_minilm(), tmp_path / "wrong.safetensors", tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())  # nothing half-built is left
