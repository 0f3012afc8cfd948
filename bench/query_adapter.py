"""An experiment: does a trained query-side map over USE multilingual lift the cross-lingual signal?

    .venv/bin/python bench/query_adapter.py [--out FOLDER] [--no-doc]

USE's document vectors stay as the engine caches them (the shipped router's multilingual caps, the whole
shared corpus as the pool; the document reading alone, which the signal was until it also read descriptions,
``multilingual``); a residual low-rank map on the request vector (``lib.retrieval.query_adapter``)
is fitted with the project's multi-positive InfoNCE (τ, sibling term) on the meaning-only and curated
train splits, every pool skill a candidate. Rank, weight decay, temperature and steps are chosen on the
meaning-only + curated dev requests (pooled NDCG@10 of the document reading alone); the styles dev set
is reported, split by whether its skills are train positives (most are: its requests restate curated
train skills), never used to choose. No test split is read. Reports the document reading alone before
and after (Hit@1, NDCG@10, by direction) with paired 95 % bootstrap intervals, the learning curve over
steps and over train size, writes the ``query-adapter`` section of docs/RESULTS.md and ends with one JSON
line. The chosen map and its card are saved under ``--out``; it is not wired into the router.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from results_doc import write_section  # noqa: E402
from shared_corpus import CORPUS  # noqa: E402

from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.common.hashing import digest  # noqa: E402
from skill_assets.lib.common.significance import bootstrap_interval  # noqa: E402
from skill_assets.lib.evaluation.curated_benchmark import load_requests  # noqa: E402
from skill_assets.lib.retrieval.chunking import best_piece, chunk_embeddings  # noqa: E402
from skill_assets.lib.retrieval.defaults import shipped_router  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.multilingual import CHUNK_CHARS, MultilingualIndex  # noqa: E402
from skill_assets.lib.retrieval.pools import load_pool  # noqa: E402
from skill_assets.lib.retrieval.query_adapter import AdapterRecipe, QueryAdapter, TrainingRows, fit  # noqa: E402
from skill_assets.lib.retrieval.ranking import top_k_rankings  # noqa: E402
from skill_assets.lib.core.metrics import per_query_metrics  # noqa: E402
from skill_assets.lib.retrieval.requests import Request, qrels, require_in_pool, run_of  # noqa: E402
from skill_assets.lib.retrieval.signals import multilingual_description, multilingual_document  # noqa: E402
from skill_assets.lib.training.losses import R3_SIBLING_WEIGHT, MultiPositiveInfoNCELoss  # noqa: E402
from skill_assets.router.routing import stderr_log  # noqa: E402
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS  # noqa: E402
from skill_assets.router.shipped_router import STYLES_REQUESTS  # noqa: E402

METRICS = ("hit@1", "ndcg@10")
RANKS = (4, 16, 256)
WEIGHT_DECAYS = (0.01, 1.0)
TEMPERATURES = (1 / 30, 0.05)
#: a first look (rank 64, lr 1e-3) fitted the train requests to NDCG@10 0.99 by step 600 while dev fell from 0.52 to
#: 0.40 from step 100 on, so the grid stops at 300 and checks every 25 steps
MAX_STEPS = 300
EVERY = 25
TRAIN_FRACTIONS = (0.25, 0.5)


class Queries:
    """A request set's USE vectors, piece by piece as the signal reads them (``chunking``), and its scoring."""

    def __init__(self, requests: list[Request], index: MultilingualIndex, ids: list[str]) -> None:
        self.requests = requests
        self.ids = ids
        self.matrix = index.matrix
        self.emb, self.starts = chunk_embeddings([r.query for r in requests], index.encoder.encode, CHUNK_CHARS)

    def scores(self, adapter: QueryAdapter | None) -> np.ndarray:
        emb = self.emb if adapter is None else adapter.apply(self.emb)
        return best_piece(emb @ self.matrix.T, self.starts)

    def metrics(self, adapter: QueryAdapter | None) -> dict[str, np.ndarray]:
        run = run_of(self.requests, top_k_rankings(self.scores(adapter), self.ids, 10))
        out = per_query_metrics(run, qrels(self.requests))
        return {m: out[m] for m in METRICS}


def split(path: Path, name: str) -> list[Request]:
    return [r for r in load_requests(path) if r.split == name]


def training_rows(queries: Queries, row_of: dict[str, int], keep: set[int] | None = None) -> TrainingRows:
    """One row per (piece, needed skill) of the requests in ``keep`` (default all): the positive is the group's first
    id (the skill it was written for), every ground-truth id of the request is kept out of the negatives (siblings
    and copies), as ``shipped_embedder``."""
    vectors, positive, truth = [], [], []
    ends = [*queries.starts[1:], len(queries.emb)]
    for n, (r, start, end) in enumerate(zip(queries.requests, queries.starts, ends)):
        if keep is not None and n not in keep:
            continue
        gt = np.array(sorted({row_of[s] for s in r.gt}))
        for piece in range(start, end):
            for group in r.groups:
                vectors.append(queries.emb[piece])
                positive.append(row_of[group[0]])
                truth.append(gt)
    return TrainingRows(np.stack(vectors), np.array(positive), truth)


def loss_for(recipe: AdapterRecipe) -> MultiPositiveInfoNCELoss:
    return MultiPositiveInfoNCELoss(temperature=recipe.temperature, sibling_weight=R3_SIBLING_WEIGHT)


def pooled_ndcg(sets: list[Queries], adapter: QueryAdapter | None) -> float:
    return float(np.nanmean(np.concatenate([q.metrics(adapter)["ndcg@10"] for q in sets])))


def delta(after: np.ndarray, before: np.ndarray) -> list[float]:
    """[mean difference, 95 % interval low, high] in points; NaN pairs dropped."""
    keep = np.isfinite(after) & np.isfinite(before)
    lo, hi = bootstrap_interval(after[keep] - before[keep])
    return [round(100 * float((after[keep] - before[keep]).mean()), 1), round(100 * lo, 1), round(100 * hi, 1)]


def compare(requests: list[Request], before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> dict:
    """Before / after / paired difference per metric, over all requests and by direction."""
    def row(idx: np.ndarray) -> dict:
        out = {"n": int(idx.sum())}
        for m in METRICS:
            means = [round(100 * float(np.nanmean(v[m][idx])), 1) for v in (before, after)]
            out[m] = [*means, delta(after[m][idx], before[m][idx])]
        return out

    everything = np.ones(len(requests), dtype=bool)
    directions = sorted({r.direction for r in requests if r.direction})
    return {"all": row(everything), **{d: row(np.array([r.direction == d for r in requests])) for d in directions}}


def grid_search(rows: TrainingRows, docs: np.ndarray, dev: list[Queries], log) -> tuple[AdapterRecipe, dict]:
    """Every (rank, weight decay, temperature), dev pooled NDCG@10 every ``EVERY`` steps; the best trained (recipe,
    step), whether or not it beats the untrained map (the intervals of the report say whether it does)."""
    curves: dict[str, list[float]] = {}
    scored: list[tuple[float, AdapterRecipe]] = []
    for rank, wd, tau in itertools.product(RANKS, WEIGHT_DECAYS, TEMPERATURES):
        recipe = AdapterRecipe(rank=rank, weight_decay=wd, temperature=tau, steps=MAX_STEPS)
        curve = curves.setdefault(recipe_key(recipe), [])

        def seen(step: int, adapter: QueryAdapter, recipe: AdapterRecipe = recipe, curve: list[float] = curve) -> None:
            curve.append(round(100 * pooled_ndcg(dev, adapter), 2))
            scored.append((curve[-1], replace(recipe, steps=step)))

        t0 = time.perf_counter()
        fit(rows, docs, recipe, loss_for(recipe), range(EVERY, MAX_STEPS + 1, EVERY), seen)
        log(f"{recipe_key(recipe)}: dev NDCG@10 {curve} ({time.perf_counter() - t0:.0f} s)")
    return max(scored, key=lambda t: t[0])[1], curves


def recipe_key(recipe: AdapterRecipe) -> str:
    return f"r{recipe.rank} wd{recipe.weight_decay} τ{recipe.temperature:.3f}"


def data_card(train: list[Request], ids: list[str], index: MultilingualIndex, caps_body: int) -> dict:
    return {"train_requests": len(train), "train_hash": digest(json.dumps(sorted(r.id for r in train)))[:16],
            "meaning_file_hash": digest(MEANING_REQUESTS.read_bytes())[:16],
            "curated_file_hash": digest(CURATED_REQUESTS.read_bytes())[:16],
            "pool_skills": len(ids), "pool_hash": digest(json.dumps(sorted(ids)))[:16],
            "encoder": index.encoder.model, "encoder_fingerprint": index.encoder.fingerprint,
            "multilingual_body_chars": caps_body}


def fmt(cell: list) -> str:
    d = cell[2]
    return f"{cell[0]} → {cell[1]} ({d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}])"


def report(results: dict, chosen: AdapterRecipe, curves: dict, chosen_key: str, sizes: dict, n_train: int,
           fit_s: float, load: tuple) -> str:
    lines = [f"USE v3's document reading alone (the multilingual signal when this was measured), before → after the "
             f"query adapter, with the paired difference "
             f"[95 % bootstrap interval], in %. Pool: {results['pool']} corpus skills. Trained on {n_train} "
             f"meaning-only + curated train rows; chosen on meaning + curated dev pooled NDCG@10 (grid of "
             f"{len(curves)} recipes × {MAX_STEPS // EVERY} checkpoints, so the chosen map's dev figures are "
             f"optimistic): rank {chosen.rank}, weight decay {chosen.weight_decay}, τ {chosen.temperature:.4f}, "
             f"{chosen.steps} steps, batch {chosen.batch_size}, lr {chosen.learning_rate}. Fit {fit_s:.0f} s "
             f"(load average {load[0]:.1f}).", "",
             "Directions are skill language → request language (en2zh: an English skill asked for in Chinese). "
             "The styles dev set is split by whether a request's skills are train positives: a map that learns the "
             "train skills rather than how requests are phrased gains on the second part alone.", "",
             "| set | direction | n | Hit@1 | NDCG@10 |", "|---|---|---|---|---|"]
    for name, res in results["sets"].items():
        for d, row in res.items():
            lines.append(f"| {name} | {d} | {row['n']} | {fmt(row['hit@1'])} | {fmt(row['ndcg@10'])} |")
    lines += ["", f"Learning curve over steps (dev pooled NDCG@10 every {EVERY} steps; untrained "
              f"{results['dev_ndcg_before']}):", ""]
    lines += [f"- {k}{' (chosen)' if k == chosen_key else ''}: {' '.join(map(str, v))}" for k, v in curves.items()]
    lines += ["", "Learning curve over train size (chosen recipe; dev pooled NDCG@10): "
              + ", ".join(f"{k} → {v}" for k, v in sizes.items()), ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/bench-index").expanduser()))
    ap.add_argument("--out", default=str(Path("~/.cache/skill-assets/build/query-adapter").expanduser()),
                    help="folder the chosen map and its card are saved in")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/RESULTS.md")
    args = ap.parse_args()
    # one torch thread: on 2 busy cores (load average 10) a (64 × 7,034 × 512) training step took 0.12 s on 1
    # thread and 1.46 s on 2, the second thread only spinning against other work
    torch.set_num_threads(1)
    log = stderr_log
    skills = load_pool(args.corpus).skills
    engine = Engine(bundled_minilm(), cache_dir=args.cache_dir, fitted=FittedRouting(shipped_router()[0]), log=log)
    caps = engine.multilingual_caps
    index, _ = MultilingualIndex.build_or_load([multilingual_document(s, caps) for s in skills],
                                               [multilingual_description(s, caps) for s in skills], engine.cache_dir,
                                               engine.multilingual, log)
    ids = [s.id for s in skills]
    row_of = {sid: i for i, sid in enumerate(ids)}
    train = split(MEANING_REQUESTS, "train") + split(CURATED_REQUESTS, "train")
    train_skills = {s for r in train for s in r.gt}
    sets = {"meaning dev": split(MEANING_REQUESTS, "dev"), "curated dev": split(CURATED_REQUESTS, "dev")}
    styles = split(STYLES_REQUESTS, "dev")
    sets["styles dev, skills unseen"] = [r for r in styles if not set(r.gt) & train_skills]
    sets["styles dev, train skills"] = [r for r in styles if set(r.gt) & train_skills]
    for name, requests in [("train", train), *sets.items()]:
        require_in_pool(requests, set(ids), f"{args.corpus} ({name})")
    if leaked := [r.id for name in ("meaning dev", "curated dev") for r in sets[name] if set(r.gt) & train_skills]:
        raise SystemExit(f"{len(leaked)} dev requests name a train positive (splits are by skill): {leaked[:5]}")
    queries = {name: Queries(requests, index, ids) for name, requests in [("train", train), *sets.items()]}
    readings = index.readings([r.query for r in sets["meaning dev"]])
    if not np.allclose(readings.document, queries["meaning dev"].scores(None), atol=1e-5):
        raise SystemExit("the untrained scores here differ from the engine's document reading")
    rows = training_rows(queries["train"], row_of)
    dev = [queries["meaning dev"], queries["curated dev"]]
    chosen, curves = grid_search(rows, index.matrix, dev, log)
    chosen_key = recipe_key(chosen)
    t0 = time.perf_counter()
    adapter = fit(rows, index.matrix, chosen, loss_for(chosen), log=log)
    fit_s, load = time.perf_counter() - t0, os.getloadavg()
    sizes = {}
    for fraction in TRAIN_FRACTIONS:
        keep = set(np.random.default_rng(chosen.seed).permutation(len(train))[:round(fraction * len(train))].tolist())
        part = fit(training_rows(queries["train"], row_of, keep), index.matrix, chosen, loss_for(chosen))
        sizes[f"{fraction:.0%}"] = round(100 * pooled_ndcg(dev, part), 2)
    sizes["100%"] = round(100 * pooled_ndcg(dev, adapter), 2)
    results = {"pool": len(ids), "dev_ndcg_before": round(100 * pooled_ndcg(dev, None), 2),
               "sets": {name: compare(q.requests, q.metrics(None), q.metrics(adapter)) for name, q in queries.items()
                        if name != "train"}}
    adapter.card.update({"data": data_card(train, ids, index, caps.body_chars), "fit_seconds": round(fit_s, 1),
                         "load_average": [round(x, 2) for x in load],
                         "dev": {k: v["all"] for k, v in results["sets"].items()},
                         "rebuild": "python bench/query_adapter.py"})
    out = Path(args.out)
    adapter.save(out)
    reloaded = QueryAdapter.load(out)
    if not np.array_equal(queries["meaning dev"].scores(reloaded), queries["meaning dev"].scores(adapter)):
        raise SystemExit(f"the map saved in {out} does not score as the fitted one")
    if not args.no_doc:
        text = report(results, chosen, curves, chosen_key, sizes, len(rows.positive), fit_s, load)
        write_section("query-adapter", f"`bench/query_adapter.py`. {text}")
    size = (out / "query_adapter.npz").stat().st_size
    print(json.dumps({"chosen": asdict(chosen), "adapter_bytes": size, "fit_seconds": round(fit_s, 1),
                      "load_average": [round(x, 2) for x in load], "dev_ndcg_before": results["dev_ndcg_before"],
                      "learning_curve_sizes": sizes, **results["sets"]}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
