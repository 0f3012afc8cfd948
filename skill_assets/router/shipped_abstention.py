"""How the shipped router's abstention is fitted: when no skill fits a request, it selects none.

Fitted over the shipped router as a fresh install routes with it (the fusion and cut in ``lib/retrieval/shipped/``,
the bi-encoder they were fitted over, USE, BM25) and the whole shared GitHub corpus, on hand-written requests:

- should-not-trigger (positives): the train split of ``benchmarks/no_fit/`` (small talk, off-topic questions,
  tasks the corpus does not cover, near misses; split by ``bench/no_fit_set.py``);
- answerable (negatives): the meaning-only and curated train splits, the sets the fusion was fitted on.
  Where the fusion's bi-encoder was fine-tuned on them (its card names the tuned layers), their bi-encoder scores
  come from the fold embedders trained without them (``shipped_router.held_out_dense``), as the fusion's did: the
  tuned model's cosines of requests it learned are higher than a new request's, and an abstention fitted on them
  would take an ordinary cosine for a poor one;
- the threshold is chosen on dev (no-fit dev; meaning-only, curated and styles dev): the lowest at which the
  selected-set F1 of the answerable dev requests drops by at most ``F1_BUDGET`` (``choose_threshold``), so the most
  no-fit dev requests abstain that this cost allows;
- no test request is read (``bench/abstention.py --test`` scores them).

The file (``shipped/abstention.json``) names the fusion's digest and the encoders' keys; after a refit of the fusion
the router routes without it, saying so, until ``build_shipped_abstention`` runs again (``REBUILD``).
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.abstention import (
    ABSTENTION_FILE,
    F1_BUDGET,
    Abstention,
    choose_threshold,
    description_cosines,
    encoder_keys,
    feature_names,
    fit_abstention,
    fusion_digest,
    recipe_hash,
    request_features,
    unnamed_description_cosines,
)
from skill_assets.lib.retrieval.defaults import SHIPPED_DIR, shipped_embedder, shipped_router
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.fusion_training import ranked
from skill_assets.lib.retrieval.model_files import ModelFileError
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.retrieval.multilingual import DESCRIPTION_READING
from skill_assets.lib.core.metrics import run_means
from skill_assets.lib.core.runs import Ranking
from skill_assets.lib.retrieval.requests import Request, qrels, run_of
from skill_assets.lib.retrieval.selection import set_scores
from skill_assets.router.shipped_embedder import REBUILD as ROUTER_REBUILD
from skill_assets.router.shipped_router import fitting_requests, held_out_dense

PACKAGE = Path(__file__).resolve().parent.parent
NO_FIT_REQUESTS = PACKAGE / "benchmarks" / "no_fit" / "requests.jsonl"
NO_FIT_KINDS = ("chit_chat", "off_topic", "uncovered", "near_miss")
REBUILD = f"{ROUTER_REBUILD} --abstention-only"
RULE = (f"threshold: the lowest no-fit probability at which answering every answerable dev request (meaning-only, "
        f"curated and styles dev) at or above it with no skill lowers their mean selected-set F1 by at most "
        f"{F1_BUDGET}: the largest no-fit dev abstention rate within that cost (halfway to the next dev probability)")


@dataclass(frozen=True)
class NoFitRequest:
    id: str
    query: str
    lang: str
    kind: str
    split: str
    writer: str


def load_no_fit(path: Path = NO_FIT_REQUESTS) -> list[NoFitRequest]:
    """The should-not-trigger requests with their splits (``bench/no_fit_set.py`` writes the file)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [NoFitRequest(r["id"], r["query"], r["lang"], r["kind"], r["split"], r["writer"]) for r in rows]


@dataclass(frozen=True)
class Scored:
    """Requests as the router saw them: abstention features, fused rankings and the cut's selected-set F1."""

    features: np.ndarray
    rankings: list[Ranking]
    f1: np.ndarray


def score(engine: Engine, queries: list[str], groups: Sequence[Sequence[Sequence[str]]] | None = None,
          held_out: dict[str, np.ndarray] | None = None) -> Scored:
    """Route ``queries`` through ``engine``'s fusion and cut (no reranker: the shipped router has none), each with
    its ground-truth ``groups`` where it has any (else F1 0); ``held_out`` replaces the bi-encoder scores of the
    requests it holds (by text)."""
    scores = engine.signal_scores(queries)
    for i, query in enumerate(queries):
        if held_out and query in held_out:
            scores["dense"][i] = held_out[query]
    cands = engine.candidates(queries, scores=scores)
    rankings = ranked(engine.fusion, cands, engine.ids)
    first = [int(engine.fusion.rank(c)[0][0]) for c in cands]  # the fused first skill's position in its candidates
    rows = [int(c.rows[i]) for c, i in zip(cands, first)]
    descriptions = description_cosines(scores[DESCRIPTION_READING], rows)
    unnamed = unnamed_description_cosines(queries, rows, engine.pool, descriptions)
    f1 = [set_scores(engine.selection.select(r, engine.similarity, q), g)[1] if g else 0.0
          for r, q, g in zip(rankings, queries, groups or [()] * len(queries))]
    features = [request_features(q, c, engine.fusion.signals, len(engine.ids), i, float(d), float(u))
                for q, c, i, d, u in zip(queries, cands, first, descriptions, unnamed)]
    return Scored(np.array(features), rankings, np.array(f1))


def _ids_hash(ids: Sequence[str]) -> str:
    return digest("\n".join(sorted(ids)))


def _rate(abstained: np.ndarray, labels: Sequence[str], order: Sequence[str]) -> dict[str, dict]:
    """Abstention rate per label value, in ``order``."""
    out = {}
    for value in (v for v in order if v in labels):
        mask = np.array([v == value for v in labels])
        out[value] = {"n": int(mask.sum()), "abstained": round(float(abstained[mask].mean()), 4)}
    return out


def dev_figures(model: Abstention, no_fit: list[NoFitRequest], x_no_fit: np.ndarray, answerable: list[Request],
                sources: list[str], scored: Scored) -> dict:
    """What ``model`` does on dev: no-fit abstention by kind and language, answerable set F1 without and with it
    (by source: ``sources``, one per answerable request), and Hit@1 (of the ranking, which abstention leaves as it
    is)."""
    out_nf = model.probability(x_no_fit) >= model.threshold
    out_ans = model.probability(scored.features) >= model.threshold
    with_abstention = np.where(out_ans, 0.0, scored.f1)
    return {
        "no_fit": {"n": len(no_fit), "abstained": round(float(out_nf.mean()), 4),
                   "by_kind": _rate(out_nf, [r.kind for r in no_fit], NO_FIT_KINDS),
                   "by_language": _rate(out_nf, [r.lang for r in no_fit], ("en", "zh"))},
        "answerable": {"n": len(answerable), "abstained": round(float(out_ans.mean()), 4),
                       "selected_set_f1": round(float(scored.f1.mean()), 4),
                       "selected_set_f1_with_abstention": round(float(with_abstention.mean()), 4),
                       "f1_drop": round(float(scored.f1.mean() - with_abstention.mean()), 4),
                       "abstained_by_source": _rate(out_ans, sources, sorted(set(sources), key=sources.index)),
                       "hit@1": round(run_means(run_of(answerable, scored.rankings), qrels(answerable))["hit@1"], 4)},
    }


def _current(path: Path, fusion: str, encoders: dict[str, str], data_hash: str) -> Abstention | None:
    """The abstention saved at ``path`` where it was fitted over this fusion, these encoders, data and recipe (a file
    of another recipe is refused by ``Abstention.load``)."""
    try:
        model = Abstention.load(path)
    except ModelFileError:
        return None
    data = model.card.get("data")
    same = (model.fusion_digest, model.encoders, data.get("data_hash") if isinstance(data, dict) else None) == (
        fusion, encoders, data_hash)
    return model if same else None


def build_shipped_abstention(pool: str | Path, cache_dir: str | Path | None = None,
                             log: Callable[[str], None] = lambda msg: None, force: bool = False) -> Abstention:
    """Fit the abstention over the shipped router (as ``Router.from_store`` routes with it, no store) and ``pool``
    (the whole shared corpus), choose its threshold on dev and save it with its card beside the shipped fusion.
    Skipped (the saved one returned) where it was fitted over the same fusion, encoders, data and recipe, unless
    ``force``."""
    fusion, cut = shipped_router()
    engine = Engine(shipped_embedder(), cache_dir=cache_dir, fitted=FittedRouting(fusion, cut), log=log)
    skills = load_pool(pool).skills
    requests, dev_by_source = fitting_requests()
    answerable = {split: [r for r in requests if r.split == split] for split in ("train", "dev")}
    no_fit = {split: [r for r in load_no_fit() if r.split == split] for split in ("train", "dev")}
    hashes = {f"{name}_{split}_ids_hash": _ids_hash([r.id for r in rows[split]])
              for name, rows in (("no_fit", no_fit), ("answerable", answerable)) for split in ("train", "dev")}
    hashes["pool_ids_hash"] = _ids_hash([s.id for s in skills])
    data_hash = digest(json.dumps(hashes, sort_keys=True))
    path = SHIPPED_DIR / ABSTENTION_FILE
    if not force and (saved := _current(path, fusion_digest(SHIPPED_DIR), encoder_keys(engine), data_hash)):
        log(f"abstention current ({path.name}: same fusion, encoders, data and recipe): skipped")
        return saved
    engine.index(skills)
    tuned = fusion.card.get("data", {}).get("embedder_sha256")
    held_out = held_out_dense(pool, skills, answerable["train"], cache_dir, log) if tuned else None
    x_train = np.vstack([score(engine, [r.query for r in no_fit["train"]]).features,
                         score(engine, [r.query for r in answerable["train"]], held_out=held_out).features])
    y_train = np.array([True] * len(no_fit["train"]) + [False] * len(answerable["train"]))
    model = fit_abstention(x_train, y_train, fusion.signals)
    x_dev = score(engine, [r.query for r in no_fit["dev"]]).features
    dev = score(engine, [r.query for r in answerable["dev"]], [r.groups for r in answerable["dev"]])
    threshold = choose_threshold(model.probability(x_dev), model.probability(dev.features), dev.f1)
    model = replace(model, threshold=threshold, fusion_digest=fusion_digest(SHIPPED_DIR),
                    encoders=encoder_keys(engine))
    dev_sources = [name for name, n in dev_by_source.items() for _ in range(n)]  # fitting_requests' order
    card = {
        "what": "P(no skill fits) by logistic regression over standardised features; at or above the threshold a "
                "request selects no skill and says why, its ranking unchanged",
        "features": feature_names(fusion.signals),
        "weights_of_standardised_features": dict(zip(feature_names(fusion.signals),
                                                     (round(w, 4) for w in model.coef))),
        "threshold": round(threshold, 4), "rule": RULE, "recipe_hash": recipe_hash(fusion.signals),
        "fusion": {"digest": model.fusion_digest, "kind": fusion.kind,
                   "source": fusion.card.get("data", {}).get("source")},
        "data": {"no_fit_train": len(no_fit["train"]), "no_fit_dev": len(no_fit["dev"]),
                 "no_fit_train_by_kind": dict(Counter(r.kind for r in no_fit["train"])),
                 "answerable_train": len(answerable["train"]), "answerable_dev": len(answerable["dev"]),
                 "answerable_dev_by_source": dev_by_source, **hashes, "data_hash": data_hash,
                 "train_dense_scores": ("cross-fitted: each answerable train request scored by the fold embedder "
                                        "trained without it" if tuned else "the shipped bi-encoder's (it saw no "
                                        "fitting request)"),
                 "pool_skills": len(skills), "test_requests_read": 0,
                 "rebuild": REBUILD},
        "dev": dev_figures(model, no_fit["dev"], x_dev, answerable["dev"], dev_sources, dev),
    }
    model = replace(model, card=card)
    model.save(path)
    figures = card["dev"]
    log(f"abstention: threshold {threshold:.3f}; no-fit dev abstained {figures['no_fit']['abstained']:.3f}; answerable "
        f"dev set F1 {figures['answerable']['selected_set_f1']:.4f} -> "
        f"{figures['answerable']['selected_set_f1_with_abstention']:.4f}")
    return model
