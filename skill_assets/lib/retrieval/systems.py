"""The one system runner: every retrieval system over one indexed pool, as runs every metric table reads.

A system's answer is a ``Run`` (``lib.core.runs``: one ``Ranking`` per request id, and what produced it);
the evaluation graph's ``retrieval_runs`` / ``external_runs``, the router asset's adoption rule and the benches all call
``run_systems``, so a number means the same wherever it is printed. Systems, named as in the tables:

- ``bm25``, ``multilingual`` and ``gloss``: each signal alone; ``embedder:<variant>``: the dense signal of each
  registered bi-encoder (``base`` is the untrained one);
- ``rrf:<a>+<b>``: reciprocal-rank fusion of two signals (``dense`` is the first-stage embedder's; not ``gloss``);
- ``reranker:<variant>``: each cross-encoder over the first-stage embedder's head;
- ``fusion`` (the engine's fusion model) and ``fusion+reranker:<variant>`` over its head;
- ``router:default``: what a user of the store gets (``defaults.default_engine``, routed as ``part_routing.route_as_user``
  routes), when the caller passes it.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.answering import fused_rankings
from skill_assets.lib.retrieval.dense import DenseIndex
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.fusion import MODEL_FILE, FusionModel
from skill_assets.lib.retrieval.part_routing import route_as_user
from skill_assets.lib.core.runs import Run
from skill_assets.lib.retrieval.ranking import rrf, top_k_rankings
from skill_assets.lib.retrieval.reranking import Reranker
from skill_assets.lib.retrieval.signals import SIGNALS, dense_document

#: the system names of the learned fusion and of the default a user gets
FUSED_SYSTEM = "fusion"
DEFAULT_SYSTEM = "router:default"
#: the name of a signal's own system (the dense signal is named by its embedder: ``embedder:<variant>``)
SIGNAL_SYSTEM = {"bm25": "bm25", "multilingual": "multilingual", "gloss": "gloss"}
#: signals no reciprocal-rank pair is formed with: ``gloss`` is ``bm25`` again for every request without Chinese
NO_RRF = ("gloss",)


def fusion_version(model: FusionModel, directory: str | Path | None = None) -> str:
    """The fusion's fingerprint: its saved file where there is one, else its parameters."""
    if directory:
        return digest((Path(directory) / MODEL_FILE).read_bytes())
    return digest(repr((model.kind, model.params, model.linear.coef if model.linear else None)))


def run_systems(engine: Engine, requests: Mapping[str, str], first_stage: str,
                embedders: Sequence[tuple[str, str]] = (), rerankers: Sequence[tuple[str, Reranker]] = (),
                top_k: int = 50, rerank_depth: int = 20, fusion_dir: str | Path | None = None,
                default: Engine | None = None) -> dict[str, Run]:
    """Every system's run over ``engine``'s indexed pool (its signals indexed; ``engine.fusion`` optional), of
    ``requests`` (request id → text).

    ``first_stage`` names the engine's own bi-encoder (``embedder:<first_stage>``); ``embedders`` are the other
    ``(variant, path)`` bi-encoders, each indexed over the same pool; ``rerankers`` ``(variant, Reranker)`` rerank
    the first stage's head and the fusion's; ``default`` is the engine a user of the store routes with."""
    ids, queries = list(requests), list(requests.values())
    scores = engine.signal_scores(queries)
    versions = engine.signal_versions()
    runs = {SIGNAL_SYSTEM.get(s, f"embedder:{first_stage}"): Run.of(ids, top_k_rankings(scores[s], engine.ids, top_k),
                                                                     versions[s])
            for s in SIGNALS if s in scores}
    by_signal = {s: runs[SIGNAL_SYSTEM.get(s, f"embedder:{first_stage}")] for s in SIGNALS if s in scores}
    for a, b in itertools.combinations([s for s in by_signal if s not in NO_RRF], 2):
        runs[f"rrf:{a}+{b}"] = Run.of(ids, [rrf(pair, top_k) for pair in zip(by_signal[a].rankings.values(),
                                                                               by_signal[b].rankings.values())],
                                      f"rrf({versions[a]}, {versions[b]})")
    documents = [dense_document(s) for s in engine.skills]
    for variant, path in embedders:
        other = DenseIndex(path, engine.cache_dir, engine.dense.query_prompt, log=engine.log)
        matrix, _, _ = other.embed(documents)
        runs[f"embedder:{variant}"] = Run.of(ids, top_k_rankings(other.scores(queries, matrix), engine.ids, top_k),
                                             other.fingerprint)
    first_name = f"embedder:{first_stage}"
    heads = [(first_name, runs[first_name], "reranker")]
    if engine.fusion is not None:
        fused = engine.fused(queries, scores)
        version = fusion_version(engine.fusion, fusion_dir)
        runs[FUSED_SYSTEM] = Run.of(ids, fused_rankings(fused, engine.pool, top_k), version)
        heads.append((FUSED_SYSTEM, runs[FUSED_SYSTEM], f"{FUSED_SYSTEM}+reranker"))
    for variant, reranker in rerankers:
        for head_name, head, prefix in heads:
            runs[f"{prefix}:{variant}"] = Run.of(
                ids, reranker.rerank(queries, list(head.rankings.values()), engine.reranker_texts, rerank_depth),
                f"{reranker.fingerprint} over {head_name}@{head.version}")
    if default is not None:
        routed = route_as_user(default, queries, top_k=top_k, rerank_depth=rerank_depth)
        parts = f"{fusion_version(default.fusion) if default.fusion else default.dense.fingerprint} over " \
                f"{default.signals}" + (f" + reranker {default.reranker.fingerprint}" if default.reranker else "")
        runs[DEFAULT_SYSTEM] = Run.of(ids, [one.pairs for one in routed], parts)
    return runs
