"""Fit the fusion model and the selection cut on a benchmark's train split, choose on dev, save with a card.

Every grid entry (``fusion.GRID``: linear regularisation strengths, LambdaRank sizes) is fitted on
the train requests and scored on dev (mean of Hit@1, NDCG@10, FC@10 and Set-Compat, ground-truth
groups as the relevant units); the best is refitted on all of train. The selection cut is calibrated on
out-of-fold fused scores of the train requests (each fold scored by a model fitted on the others),
so its probabilities are those of requests the model has not seen. The test split is never read.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.fusion import DEFAULT_DEPTH, GRID, KINDS, Candidates, FusionModel, feature_names, fit
from skill_assets.lib.core.metrics import run_means
from skill_assets.lib.core.runs import Ranking, Run, ranking_of
from skill_assets.lib.retrieval.requests import Request, qrels, run_of
from skill_assets.lib.retrieval.selection import DEFAULT_CAP, SelectionCut, Similarity, fit_cut, set_scores
from skill_assets.lib.retrieval.multilingual import READING_CARD_KEY
from skill_assets.lib.retrieval.signals import DENSE_READING_CARD_KEY

#: the selection cut saved beside a fusion model, and the card of the pair
SELECTION_FILE = "selection.json"
CARD_FILE = "skill_assets_card.json"
#: what "best on dev" means
DEV_OBJECTIVE = ("hit@1", "ndcg@10", "fc@10", "set_compat")


@dataclass
class FusionFit:
    model: FusionModel
    cut: SelectionCut
    card: dict


def labels(cands: Sequence[Candidates], requests: Sequence[Request], ids: Sequence[str]) -> list[np.ndarray]:
    """1 for a candidate in any ground-truth group of its request, else 0."""
    return [np.array([ids[r] in q.relevant for r in c.rows], dtype=np.int64) for c, q in zip(cands, requests)]


def ranked(model: FusionModel, cands: Sequence[Candidates], ids: Sequence[str]) -> list[Ranking]:
    """Per request, its candidates' skill ids best first with their fused scores."""
    out = []
    for c in cands:
        order, s = model.rank(c)
        out.append(ranking_of([ids[c.rows[j]] for j in order], s[order]))
    return out


def fused_run(model: FusionModel, cands: Sequence[Candidates], ids: Sequence[str], requests: Sequence[Request]
              ) -> Run:
    """The fusion's run over ``requests`` (whose candidates ``cands`` are)."""
    return run_of(requests, ranked(model, cands, ids))


def objective(metrics: dict[str, float]) -> float:
    """Mean of the target metrics; Set-Compat counts only when the split has multi-skill requests."""
    return float(np.nanmean([metrics[m] for m in DEV_OBJECTIVE]))


def train_fusion(candidates_of: Callable[[list[str]], list[Candidates]], ids: Sequence[str],
                 requests: Sequence[Request], signals: Sequence[str], similarity: Similarity,
                 depth: int, data_source: str, cap: int = DEFAULT_CAP, folds: int = 5, seed: int = 0,
                 log: Callable[[str], None] = lambda msg: None, kinds: Sequence[str] = KINDS) -> FusionFit:
    """Fit on ``split == "train"``, choose on ``split == "dev"`` (train itself when there is no dev split), among
    the grid entries of ``kinds``."""
    t0 = time.perf_counter()
    train = [r for r in requests if r.split == "train"]
    dev = [r for r in requests if r.split == "dev"] or train
    if not train:
        raise ValueError("no train requests to fit the fusion on")
    cands_train = candidates_of([r.query for r in train])
    cands_dev = candidates_of([r.query for r in dev]) if dev is not train else cands_train
    y_train = labels(cands_train, train, ids)
    if not any(y.any() for y in y_train):
        raise ValueError("no train request has a ground-truth skill among its candidates: nothing to learn from")
    grid = [(kind, params) for kind, params in GRID if kind in kinds]
    grid_scores = []
    for kind, params in grid:
        model = fit(kind, params, cands_train, y_train, signals, depth)
        metrics = run_means(fused_run(model, cands_dev, ids, dev), qrels(dev))
        grid_scores.append({"kind": kind, **params, **{m: round(metrics[m], 4) for m in DEV_OBJECTIVE},
                            "objective": round(objective(metrics), 4)})
        log(f"fusion {kind} {params}: dev " + ", ".join(f"{m} {metrics[m]:.3f}" for m in DEV_OBJECTIVE))
    best = max(range(len(grid)), key=lambda i: (grid_scores[i]["objective"], -i))
    kind, params = grid[best]

    # out-of-fold fused scores of the train requests, for the calibrated cut
    rng = np.random.default_rng(seed)
    fold_of = rng.permutation(len(train)) % max(2, min(folds, len(train)))
    oof: dict[str, Ranking] = {}
    for f in np.unique(fold_of):
        inside = [i for i in range(len(train)) if fold_of[i] != f]
        if not any(y_train[i].any() for i in inside):
            continue
        model = fit(kind, params, [cands_train[i] for i in inside], [y_train[i] for i in inside], signals, depth)
        held = [i for i in range(len(train)) if fold_of[i] == f]
        for i, r in zip(held, ranked(model, [cands_train[i] for i in held], ids)):
            oof[train[i].id] = r
    cut = fit_cut(Run(oof), qrels(train), {q.id: q.query for q in train}, similarity, cap)

    model = fit(kind, params, cands_train, y_train, signals, depth)
    dev_run = fused_run(model, cands_dev, ids, dev)
    dev_metrics = run_means(dev_run, qrels(dev))
    dev_sets = np.array([set_scores(cut.select(dev_run.rankings[q.id], similarity, q.query), q.groups)
                         for q in dev])
    card = {
        "kind": kind, "params": params, "signals": list(signals), "features": feature_names(signals),
        "language_pairs": "<skill language>2<query language>",
        "weights_by_language": model.weights_by_language() if kind == "linear" else None,
        "data": {"source": data_source, "train_requests": len(train), "dev_requests": len(dev) if dev is not train else 0,
                 "train_ids_hash": digest("\n".join(sorted(r.id for r in train))),
                 "dev_ids_hash": digest("\n".join(sorted(r.id for r in dev))), "pool_skills": len(ids),
                 "test_requests_read": 0},
        "dev": {**{m: round(v, 4) for m, v in dev_metrics.items() if np.isfinite(v)},
                "selected_exact_match": round(float(dev_sets[:, 0].mean()), 4),
                "selected_set_f1": round(float(dev_sets[:, 1].mean()), 4)},
        "grid": grid_scores, "selection": cut.as_dict(), "fit_seconds": round(time.perf_counter() - t0, 1),
    }
    model.card = card
    return FusionFit(model, cut, card)


def fit_over(engine: Engine, requests: Sequence[Request], signals: tuple[str, ...], similarity: Similarity,
             data_source: str, card_data: dict, depth: int = DEFAULT_DEPTH, cap: int = DEFAULT_CAP,
             kinds: Sequence[str] = KINDS, held_out: dict[str, np.ndarray] | None = None,
             log: Callable[[str], None] = lambda msg: None) -> FusionFit:
    """The one recipe for fitting a fusion over an engine's indexed pool (the router asset and the shipped router's
    build both fit through here, passing what differs): every request scored by ``signals``, each signal's top
    ``depth`` the candidates, ``train_fusion`` on them; ``held_out`` replaces the bi-encoder scores of the requests
    it holds (by text), and ``card_data`` joins the card's ``data``."""
    def candidates_of(queries: list[str]) -> list[Candidates]:
        scores = engine.signal_scores(queries, signals=signals)
        for i, query in enumerate(queries):
            if held_out and query in held_out:
                scores["dense"][i] = held_out[query]
        return engine.candidates(queries, depth, scores, signals)

    fitted = train_fusion(candidates_of, engine.ids, requests, signals, similarity, depth, data_source, cap=cap,
                          log=log, kinds=kinds)
    fitted.card["data"].update(card_data)
    # how the engine routing with this fusion must read its signals (``Engine``)
    if "multilingual" in signals:
        fitted.card[READING_CARD_KEY] = engine.multilingual_reading
    if "dense" in signals:
        fitted.card[DENSE_READING_CARD_KEY] = engine.dense_reading
    return fitted


def save_router_model(result: FusionFit, directory: Path) -> Path:
    """The fusion model, its selection cut and its card in one folder (``load_router_model`` reads it)."""
    result.model.save(directory)
    (directory / SELECTION_FILE).write_text(json.dumps(result.cut.as_dict(), indent=2))
    (directory / CARD_FILE).write_text(json.dumps(result.card, indent=2, ensure_ascii=False))
    return directory


def load_router_model(directory: str | Path) -> tuple[FusionModel, SelectionCut | None]:
    """(fusion model, selection cut) saved in ``directory`` by ``save_router_model``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"fusion model folder {directory} does not exist")
    cut = directory / SELECTION_FILE
    return FusionModel.load(directory), (SelectionCut.load(cut) if cut.is_file() else None)
