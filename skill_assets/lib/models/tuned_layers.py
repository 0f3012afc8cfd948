"""A fine-tuned bi-encoder shipped as its tuned top layers over the bundled base, not as a second copy of it.

The bundled all-MiniLM-L6-v2 is 90 MB; a package that ships a fine-tuned copy would double that.
Fine-tuning only the top ``layers`` transformer layers (the embeddings and the lower layers stay
the base's) both keeps the shipped file small (two layers: about 7 MB in float16) and suits a few
hundred hand-written training requests, which would pull a fully unfrozen model off what it knows.
``materialise`` turns the file back into an ordinary sentence-transformers folder, once, in a
content-addressed cache folder, so every part of the router reads it like any other model path.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a model is trained or saved, not where a materialised folder is found
    import torch

#: the state-dict prefix of a BERT-style sentence-transformers model's transformer layers
LAYER_PREFIX = "encoder.layer."
WEIGHTS_FILE = "model.safetensors"
#: written into a materialised folder: its weight-file fingerprint then differs from the base's
#: (``embedding_cache.model_fingerprint`` reads each file's size and first MiB), so caches never mix
MARK_FILE = "tuned_layers.json"


def _transformer(model) -> torch.nn.Module:
    """The Hugging Face module inside a sentence-transformers model (its first module's ``auto_model``)."""
    return model[0].auto_model


def layer_count(model) -> int:
    return int(_transformer(model).config.num_hidden_layers)


def tuned_names(model, layers: int) -> list[str]:
    """State-dict names of the top ``layers`` transformer layers (and nothing else). A cross-encoder's
    transformer nests its layers one module deeper (``bert.encoder.layer.N.``): they match too."""
    total = layer_count(model)
    keep = tuple(f".{LAYER_PREFIX}{i}." for i in range(total - layers, total))
    return [n for n in _transformer(model).state_dict() if any(k in f".{n}" for k in keep)]


def freeze_below(model, layers: int, trainable_modules: tuple[str, ...] = ()) -> int:
    """Leave only the top ``layers`` transformer layers trainable, and any parameter under a module named in
    ``trainable_modules`` (a cross-encoder's ``pooler`` and scoring ``classifier``); returns the trainable
    parameter count."""
    names = set(tuned_names(model, layers))
    trainable = 0
    for name, param in _transformer(model).named_parameters():
        param.requires_grad = name in names or not set(trainable_modules).isdisjoint(name.split("."))
        trainable += param.numel() if param.requires_grad else 0
    return trainable


def save_tuned(model, layers: int, path: Path) -> str:
    """The top ``layers`` of ``model`` as float16 safetensors at ``path``; returns the file's sha256."""
    import torch
    from safetensors.torch import save_file

    state = _transformer(model).state_dict()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({n: state[n].detach().to(torch.float16).contiguous() for n in tuned_names(model, layers)}, str(path))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def materialise(base_dir: str | Path, tuned_file: str | Path, cache_root: str | Path) -> Path:
    """A sentence-transformers folder: ``base_dir`` with ``tuned_file``'s tensors in place of its own.

    Content-addressed by the tuned file's sha256 under ``cache_root``; built in a temporary folder and
    renamed into place, so a killed build leaves nothing half-written and two processes building at once
    both end with the same folder. A tuned file naming a tensor the base lacks, or of another shape, is
    refused (ValueError) rather than loaded into the wrong place."""
    tuned_file = Path(tuned_file)
    sha = hashlib.sha256(tuned_file.read_bytes()).hexdigest()
    target = Path(cache_root).expanduser() / f"tuned-{sha[:16]}"
    if (target / MARK_FILE).is_file():
        return target
    from safetensors.torch import load_file, save_file

    base_dir = Path(base_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tuned-", dir=target.parent))
    try:
        shutil.copytree(base_dir, tmp, dirs_exist_ok=True)
        weights = load_file(str(base_dir / WEIGHTS_FILE))
        tuned = load_file(str(tuned_file))
        for name, tensor in tuned.items():
            if name not in weights or weights[name].shape != tensor.shape:
                raise ValueError(f"{tuned_file.name}: tensor {name} is not a tensor of the base model {base_dir.name}")
            weights[name] = tensor.to(weights[name].dtype)
        save_file(weights, str(tmp / WEIGHTS_FILE), metadata={"format": "pt"})
        (tmp / MARK_FILE).write_text(json.dumps({"tuned_sha256": sha, "tensors": sorted(tuned)}))
        try:
            os.replace(tmp, target)
        except OSError:  # another process put the same folder there first
            if not (target / MARK_FILE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
