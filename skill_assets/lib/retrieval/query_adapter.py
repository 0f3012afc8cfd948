"""A trained map on the query side of a fixed encoder: q' = normalise(q + A Bᵀ q), documents untouched.

The multilingual encoder (USE) is a numpy model that is not fine-tuned here, and its document
vectors are cached for every pool; a map applied to the request alone can still learn how requests
are phrased against how skills describe themselves, without re-indexing anything. The map is a
residual low-rank linear layer: ``B`` (d × r) starts as seeded small noise and ``A`` (d × r) at zero,
so the untrained map is the identity and training moves away from it only as far as the data pays
for (weight decay pulls it back).

Training is multi-positive InfoNCE against the fixed document rows of the whole pool: with the
documents frozen, scoring every pool skill costs one (batch × pool) product, so every in-batch and
every hard negative is in each step's denominator. The loss is the caller's (the project's
``lib.training.losses.MultiPositiveInfoNCELoss``; the engine layer does not import training).

Saved as data only: ``query_adapter.npz`` (``a``, ``b``; read with ``allow_pickle=False``) and
``query_adapter_card.json`` (its SHA-256, the shapes, the recipe, what the caller records of the
data). A file that is missing, damaged or does not match its card is refused with one
``ModelFileError`` line.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.cache_files import atomic_output, file_checksum, write_text_atomic
from skill_assets.lib.retrieval.model_files import ModelFileError, read_json_object

WEIGHTS_FILE = "query_adapter.npz"
CARD_FILE = "query_adapter_card.json"
FORMAT = 1
#: a map of rank r over d = 512 is 2·512·r float32 values (r = 256: 1 MB); anything far larger is not one
MAX_WEIGHTS_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class AdapterRecipe:
    """What a fit needs besides the data; saved on the card."""

    #: columns of A and B, the map's capacity (r = 256 over USE's d = 512 is 1 MB of float32)
    rank: int = 16
    steps: int = 125
    batch_size: int = 64
    learning_rate: float = 1e-3
    #: AdamW's decoupled decay, pulling the map back towards the identity
    weight_decay: float = 0.01
    temperature: float = 1 / 30
    #: B's seeded noise: A starts at 0, so the map starts as the identity, and B must not be 0 too or no gradient
    #: reaches A
    init_scale: float = 0.01
    seed: int = 0


@dataclass(frozen=True)
class TrainingRows:
    """One row per (query vector, needed skill): the positive's pool row, and every ground-truth row of the query
    (siblings and copies, kept out of the negatives)."""

    queries: np.ndarray            # (n, d) unit rows
    positive: np.ndarray           # (n,) int pool rows
    ground_truth: list[np.ndarray]  # n arrays of pool rows

    def __post_init__(self) -> None:
        if not (len(self.queries) == len(self.positive) == len(self.ground_truth)):
            raise ValueError(f"training rows disagree: {len(self.queries)} queries, {len(self.positive)} positives, "
                             f"{len(self.ground_truth)} ground-truth lists")


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)


class QueryAdapter:
    """The residual map ``q ↦ normalise(q + (q B) Aᵀ)``; ``card`` is what the fit and the caller recorded."""

    def __init__(self, a: np.ndarray, b: np.ndarray, card: dict | None = None) -> None:
        if a.shape != b.shape or a.ndim != 2:
            raise ValueError(f"A and B must be the same (d, r) shape, not {a.shape} and {b.shape}")
        self.a = np.ascontiguousarray(a, dtype=np.float32)
        self.b = np.ascontiguousarray(b, dtype=np.float32)
        self.card = dict(card or {})

    @property
    def dim(self) -> int:
        return self.a.shape[0]

    @property
    def rank(self) -> int:
        return self.a.shape[1]

    def apply(self, queries: np.ndarray) -> np.ndarray:
        """Adapted unit rows of ``queries`` (n, d): the query side only, documents' vectors stay as indexed."""
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise ValueError(f"queries must be (n, {self.dim}), not {queries.shape}")
        return _unit(queries + (queries @ self.b) @ self.a.T)

    def save(self, folder: Path) -> dict:
        """Write the weights and the card into ``folder`` (each file atomically); returns the card."""
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_output(folder / WEIGHTS_FILE) as tmp, tmp.open("wb") as fh:
            np.savez(fh, a=self.a, b=self.b)
        card = {**self.card, "format": FORMAT, "dim": self.dim, "rank": self.rank,
                "weights_sha256": file_checksum(folder / WEIGHTS_FILE)}
        write_text_atomic(folder / CARD_FILE, json.dumps(card, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        return card

    @classmethod
    def load(cls, folder: Path) -> QueryAdapter:
        """The adapter saved in ``folder``; ModelFileError (one line naming the file) when anything does not match."""
        card = read_json_object(folder / CARD_FILE)
        weights = folder / WEIGHTS_FILE
        if card.get("format") != FORMAT:
            raise ModelFileError(f"{folder / CARD_FILE}: format {card.get('format')!r}, this reader knows {FORMAT}")
        if not weights.is_file():
            raise ModelFileError(f"{weights}: missing")
        if weights.stat().st_size > MAX_WEIGHTS_BYTES:
            raise ModelFileError(f"{weights}: {weights.stat().st_size} bytes, larger than any query adapter")
        if file_checksum(weights) != card.get("weights_sha256"):
            raise ModelFileError(f"{weights}: SHA-256 does not match its card (damaged or replaced)")
        try:
            with np.load(weights, allow_pickle=False) as npz:
                a, b = npz["a"], npz["b"]
        except (OSError, ValueError, KeyError) as exc:
            raise ModelFileError(f"{weights}: unreadable ({type(exc).__name__})") from None
        shape = (card.get("dim"), card.get("rank"))
        if a.shape != shape or b.shape != shape or a.dtype != np.float32 or b.dtype != np.float32:
            raise ModelFileError(f"{weights}: arrays {a.shape}/{b.shape} {a.dtype}/{b.dtype}, the card says "
                                 f"float32 {shape}")
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise ModelFileError(f"{weights}: non-finite weights")
        return cls(a, b, card)


def fit(rows: TrainingRows, documents: np.ndarray, recipe: AdapterRecipe,
        loss: Callable[..., object], checkpoints: Sequence[int] = (),
        on_checkpoint: Callable[[int, QueryAdapter], None] = lambda step, adapter: None,
        log: Callable[[str], None] = lambda msg: None) -> QueryAdapter:
    """Fit the map on ``rows`` against the fixed pool ``documents`` (N, d unit rows); deterministic for one seed.

    ``loss(queries, candidates, positive_index, sibling_mask)`` is a multi-positive InfoNCE module built with
    ``recipe.temperature``. Batches are drawn by a seeded permutation per epoch; ``on_checkpoint(step, adapter)``
    sees the map after each step in ``checkpoints`` (the caller's learning curve). The card records the recipe
    and the mean training loss of the first and last 10 % of steps."""
    import torch

    d = documents.shape[1]
    if rows.queries.shape[1] != d:
        raise ValueError(f"queries have {rows.queries.shape[1]} dimensions, documents {d}")
    torch.manual_seed(recipe.seed)
    rng = np.random.default_rng(recipe.seed)
    b = torch.nn.Parameter(recipe.init_scale * torch.randn(d, recipe.rank, dtype=torch.float32))
    a = torch.nn.Parameter(torch.zeros(d, recipe.rank, dtype=torch.float32))
    opt = torch.optim.AdamW([a, b], lr=recipe.learning_rate, weight_decay=recipe.weight_decay)
    docs = torch.from_numpy(np.ascontiguousarray(documents, dtype=np.float32))
    queries = torch.from_numpy(np.ascontiguousarray(rows.queries, dtype=np.float32))
    positive = torch.from_numpy(rows.positive.astype(np.int64))
    n, batch = len(rows.positive), min(recipe.batch_size, len(rows.positive))
    order, at, losses = rng.permutation(n), 0, []
    wanted = set(checkpoints)

    def adapter() -> QueryAdapter:
        return QueryAdapter(a.detach().numpy().copy(), b.detach().numpy().copy())

    for step in range(1, recipe.steps + 1):
        if at + batch > n:
            order, at = rng.permutation(n), 0
        idx = order[at:at + batch]
        at += batch
        mask = torch.zeros(len(idx), len(docs), dtype=torch.bool)
        for i, j in enumerate(idx):
            mask[i, torch.from_numpy(rows.ground_truth[j].astype(np.int64))] = True
        q = queries[idx]
        value = loss(q + (q @ b) @ a.T, docs, positive[idx], mask)
        opt.zero_grad()
        value.backward()
        opt.step()
        losses.append(value.item())
        if step in wanted:
            on_checkpoint(step, adapter())
    tenth = max(1, len(losses) // 10)
    log(f"query adapter: {recipe.steps} steps, loss {np.mean(losses[:tenth]):.4f} → {np.mean(losses[-tenth:]):.4f}")
    out = adapter()
    out.card = {"recipe": asdict(recipe), "training_rows": n,
                "loss_first_tenth": round(float(np.mean(losses[:tenth])), 6),
                "loss_last_tenth": round(float(np.mean(losses[-tenth:])), 6)}
    return out
