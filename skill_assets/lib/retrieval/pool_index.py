"""A pool's indexes as routing reads them (``PoolIndex``, published whole) and the build that publishes them.

The engine publishes the lexical index first and the encoders' indexes when they are done, each time
a complete new ``PoolIndex``, so a request routed during a background build never sees half an index.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from skill_assets.lib.core.skill_text import RERANKER_CAPS, skill_document
from skill_assets.lib.retrieval.document_cache import IndexStats
from skill_assets.lib.retrieval.lexical import LexicalIndex
from skill_assets.lib.retrieval.multilingual import MultilingualIndex
from skill_assets.lib.retrieval.pools import Skill

#: when ``start_index`` builds the encoders' indexes (dense, multilingual): in a background thread, before it
#: returns, or not at all (BM25 alone: a one-shot ``route --ready lexical``)
ENCODERS = ("background", "now", "skip")


@dataclass(frozen=True)
class PoolIndex:
    """One pool's indexes as routing reads them: published whole by a build, never changed in place.

    ``lexical`` is there once BM25 is built (when the engine has the signal), ``dense`` and ``multilingual``
    once the encoders are done; ``copy_keys`` (each skill's lexical document digest) is how the lexical
    phase's cut recognises copies before any cosine exists. ``ids`` and ``row_of`` follow from ``skills`` (made
    here, so no caller can hand over a look-up that disagrees with the pool), and ``derived`` starts empty with
    each published index."""

    skills: tuple[Skill, ...]
    skill_zh: np.ndarray
    copy_keys: list[str]
    lexical: LexicalIndex | None = None
    dense: np.ndarray | None = None                 # (n, d) unit rows
    multilingual: MultilingualIndex | None = None
    ids: list[str] = field(init=False)
    row_of: dict[str, int] = field(init=False, compare=False)
    derived: dict = field(init=False, compare=False)  # per-pool values computed on first use

    def __post_init__(self) -> None:
        ids = [s.id for s in self.skills]
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "row_of", {sid: i for i, sid in enumerate(ids)})
        object.__setattr__(self, "derived", {})

    def skill(self, sid: str) -> Skill | None:
        """The skill ``sid`` names in this pool, if any: one look-up, where ``Engine.skill_by_id`` builds a dict of the
        whole pool (the server names every answer's skills, per call)."""
        row = self.row_of.get(sid)
        return self.skills[row] if row is not None else None

    def has(self, signal: str) -> bool:
        return {"bm25": self.lexical, "gloss": self.lexical, "dense": self.dense,
                "multilingual": self.multilingual}[signal] is not None

    def cosine(self, a: str, b: str) -> float:
        if self.dense is None:
            raise RuntimeError("the dense index is still being built")
        return float(self.dense[self.row_of[a]] @ self.dense[self.row_of[b]])

    def same_document(self, a: str, b: str) -> float:
        return float(self.copy_keys[self.row_of[a]] == self.copy_keys[self.row_of[b]])

    def reranker_texts(self) -> dict[str, str]:
        if "reranker_texts" not in self.derived:
            self.derived["reranker_texts"] = {s.id: skill_document(s.name, s.description, s.body, RERANKER_CAPS)
                                              for s in self.skills}
        return self.derived["reranker_texts"]


class IndexStopped(Exception):
    """Raised inside a background build at its next chunk of documents once ``IndexBuild.stop()`` was called."""


class IndexBuild:
    """A pool's index build, from ``Engine.start_index``.

    The lexical index is published when ``start_index`` returns (``lexical_seconds`` after it began), the full one
    when ``done``. ``wait()`` blocks for the full index and returns its ``IndexStats`` or raises the build's error;
    ``stop()`` ends a background build at its next chunk (what it encoded so far stays cached)."""

    def __init__(self, lexical_seconds: float) -> None:
        self.lexical_seconds = lexical_seconds
        self.stats: IndexStats | None = None
        self.error: BaseException | None = None
        self.complete = False          # the full index was published (not so after ``encoders="skip"``)
        self._done = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> IndexStats:
        if not self._done.wait(timeout):
            raise TimeoutError(f"the index build is still running after {timeout} s")
        if self.error is not None:
            raise self.error
        return self.stats

    def stop(self, timeout: float | None = 60.0) -> None:
        """Stop a background build at its next chunk of documents and wait up to ``timeout`` s for it to end."""
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def checkpoint(self) -> None:
        if self._stopping.is_set():
            raise IndexStopped("the index build was stopped")

    def _finish(self, stats: IndexStats | None = None, error: BaseException | None = None,
                complete: bool = True) -> None:
        self.stats, self.error, self.complete = stats, error, complete and error is None
        self._done.set()
