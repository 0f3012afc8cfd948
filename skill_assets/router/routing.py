"""The ``Router`` facade: the retrieval engine with the parts a user gets by default.

``Router.from_store().route([...])`` is the one entry point; ``skill-assets route`` (``cli``) and
the MCP server (``serve``) are thin over it. Everything it does past choosing its parts is the
engine's (``lib.retrieval.engine``): index, score, fuse, rerank, select, one result shape
(``RoutedRequest``).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.store import resolve_db
from skill_assets.lib.retrieval.abstention import load_abstention
from skill_assets.lib.retrieval.defaults import default_parts, lexical_router
from skill_assets.lib.retrieval.engine import CACHE_ENV, Engine
from skill_assets.lib.retrieval.engine_config import EngineSettings, FittedRouting
from skill_assets.lib.retrieval.fusion_training import load_router_model
from skill_assets.lib.retrieval.part_routing import route_by_parts
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.retrieval.results import RoutedRequest

#: ``reranker=`` values meaning "the bundled base MiniLM as a cross-encoder" / "no reranker"
BASE_RERANKER = ("base", "minilm")
NO_RERANKER = ("none", "off", "")


class Router(Engine):
    """The engine, built by ``from_store`` from the shipped router or a store's adopted parts."""

    @classmethod
    def from_store(cls, db_path: str | Path | None = None, embedder: str | Path | None = None,
                   reranker: str | Path | None = None, fusion: str | Path | None = None,
                   cache_dir: str | Path | None = None, settings: EngineSettings | None = None,
                   log: Callable[[str], None] | None = None) -> Router:
        """The router a user gets: the shipped router (``lib.retrieval.defaults``: fusion and selection cut fitted
        on the curated benchmark, bundled MiniLM, no reranker), unless the store's newest fusion or reranker passed
        the adoption rule (``adoption``: ≥ 100 train and ≥ 50 disjoint dev requests, and a dev win over the
        default); each store model left out is logged with the reason. Explicit arguments win: ``embedder`` a
        bi-encoder path; ``fusion`` a fusion folder or ``"none"`` for the bi-encoder path alone; ``reranker`` a
        path, ``"base"`` (the bundled MiniLM as a cross-encoder, random head) or ``"none"``. While only BM25 is
        indexed (``start_index``) the router answers with the fusion folder's lexical path (``lexical/``; the
        shipped router's where the folder has none). Where the fusion folder holds an abstention fitted over that
        fusion and this router's encoders (the shipped one does), a request no skill fits selects none
        (``load_abstention``; one log line where it is left out). ``settings``: how the models run."""
        log = log or (lambda msg: None)
        db = resolve_db(db_path)
        parts = default_parts(db)
        for note in parts.notes:
            log(note)
        fusion_dir, fitted = None, None
        if fusion is None or str(fusion).lower() not in NO_RERANKER:
            fusion_dir = str(fusion) if fusion is not None else parts.fusion_dir
            model, cut = load_router_model(fusion_dir)
            fitted = FittedRouting(model, cut, *(lexical_router(fusion_dir) if "bm25" in model.signals else ()))
        emb = str(embedder) if embedder else (parts.embedder if fusion is None else bundled_minilm())
        if reranker is None:
            rr = parts.reranker if fusion is None else None
        elif str(reranker).lower() in NO_RERANKER:
            rr = None
        elif str(reranker).lower() in BASE_RERANKER:
            rr = bundled_minilm()
        else:
            rr = str(reranker)
        if cache_dir is None and not os.environ.get(CACHE_ENV) and db.is_file():
            cache_dir = db.resolve().parent / "index_cache"
        router = cls(emb, rr, fitted=fitted, settings=settings, cache_dir=cache_dir, log=log)
        if fusion_dir is not None:
            router.abstention = load_abstention(fusion_dir, router, log)
        return router

    def route(self, queries: list[str], top_k: int = 20, rerank_depth: int = 20, use_reranker: bool = True,
              cap: int | None = None, checkpoint: Callable[[], None] = lambda: None) -> list[RoutedRequest]:
        """``Engine.route``, except that a long task statement of several need parts is routed whole and part by
        part and merged (``part_routing``; over the shipped router, on the long-task dev split, 65 tasks: Set-Compat
        10.8 -> 20.0, FC@10 36.9 -> 46.2, Hit@1 53.8 -> 52.3, one task; the short dev sets within one request); a
        request of one part routes exactly as the engine routes it."""
        return route_by_parts(self, queries, top_k, cap, checkpoint=checkpoint, route_whole=lambda texts: Engine.route(
            self, texts, top_k, rerank_depth, use_reranker, cap, checkpoint))

    load_pool = staticmethod(load_pool)


def stderr_log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
