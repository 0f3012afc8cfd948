"""The ``Router`` facade: the engine a user gets, routing long requests by their parts.

``Router.from_store().route([...])`` is the one entry point; ``skill-assets route`` (``cli``) and the MCP server
(``serve``, ``watch``) are thin over it. It wraps an ``Engine`` (``lib.retrieval.defaults.default_engine`` chooses its
parts) and shows what serving a pool needs: route, index and re-index, and what is published. Everything else (the
signals' scores, the fusion, the models) is the engine's, at ``router.engine``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from skill_assets.lib.retrieval.defaults import default_engine
from skill_assets.lib.retrieval.document_cache import IndexStats
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.engine_config import EngineSettings
from skill_assets.lib.retrieval.give_way import answering
from skill_assets.lib.retrieval.part_routing import route_as_user
from skill_assets.lib.retrieval.pool_index import IndexBuild
from skill_assets.lib.retrieval.pools import Skill, load_pool
from skill_assets.lib.retrieval.results import RoutedRequest


def _engine_attribute(name: str) -> property:
    """The engine's ``name``, read through the router: one line a member of the router's small surface."""
    return property(lambda router: getattr(router.engine, name), doc=f"``Engine.{name}``")


class Router:
    """An engine whose ``route`` takes a long task statement part by part (``part_routing.route_as_user``)."""

    load_pool = staticmethod(load_pool)

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def from_store(cls, db_path: str | Path | None = None, embedder: str | Path | None = None,
                   reranker: str | Path | None = None, fusion: str | Path | None = None,
                   cache_dir: str | Path | None = None, settings: EngineSettings | None = None,
                   log: Callable[[str], None] | None = None) -> Router:
        """The router a user gets: over ``default_engine`` (the shipped router unless a store's parts passed the
        adoption rule; explicit arguments win)."""
        return cls(default_engine(db_path, embedder, reranker, fusion, cache_dir, settings, log))

    def route(self, queries: list[str], top_k: int = 20, rerank_depth: int = 20, use_reranker: bool = True,
              cap: int | None = None, checkpoint: Callable[[], None] = lambda: None) -> list[RoutedRequest]:
        """``Engine.route``, except that a long task statement of several need parts is routed whole and part by
        part and merged (``part_routing.route_as_user``). A re-index running beside it (``serve --watch``) gives way
        to it meanwhile (``give_way``)."""
        with answering():
            return route_as_user(self.engine, queries, top_k, rerank_depth, use_reranker, cap, checkpoint)

    # ---- the index (``Engine``): built, rebuilt as the pool changes (``watch``)
    def index(self, skills: list[Skill]) -> IndexStats:
        """Every signal's index of ``skills``, once the full index is published."""
        return self.engine.index(skills)

    def start_index(self, skills: list[Skill], encoders: str = "background") -> IndexBuild:
        """BM25's index published before this returns, the encoders' as ``encoders`` says (``Engine.start_index``)."""
        return self.engine.start_index(skills, encoders=encoders)

    def keep_lexical_tokens(self) -> None:
        self.engine.keep_lexical_tokens()

    # ---- what is published, and what the server (``serve``), the watcher (``watch``, which also loads the
    # bi-encoder before its first re-index) and ``cli`` read
    pool = _engine_attribute("pool")
    skills = _engine_attribute("skills")
    skill_by_id = _engine_attribute("skill_by_id")
    ready_signals = _engine_attribute("ready_signals")
    signals = _engine_attribute("signals")
    cache_dir = _engine_attribute("cache_dir")
    dense = _engine_attribute("dense")


def stderr_log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
