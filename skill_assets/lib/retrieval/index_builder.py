"""Build a pool's indexes signal by signal and publish each stage whole, for one engine.

Indexing is lexical first (``start``): BM25 over 10,000 skills takes seconds, the bi-encoder's and the multilingual
encoder's indexes minutes on a few cores. ``start`` builds (or loads) BM25 and publishes it, then encodes the dense
and multilingual indexes in a background thread (torch and numpy release the GIL; the two encoders run side by side,
each on half the cores: ``encoding``) and publishes the full index when both are done and the engine's request path is
warm (a pool already cached is only loaded). Routing reads the published ``PoolIndex`` once per call and works on that
object alone; a build replaces it whole in one assignment, so a call sees the lexical or the full index, never a
half-built one. Kept apart from the engine, which scores, fuses, reranks and selects over whatever is published.

A re-index (``serve --watch``: a pool in which a few skills changed) does work in proportion to the change: every
per-skill value (lexical document, its digest, language, dense and multilingual rows) is a function of the skill's
text alone, so a skill whose text is unchanged takes its values from the last build (``SkillText``) and only the
changed skills are read, hashed, looked up in the embedding caches or encoded. Over 10,000 skills the whole-pool
version of that was ~0.45 s of pure-Python CPU per reload in the interpreter that answers meanwhile. The result is
the same index, bit for bit, as a build from scratch of the new pool over the same embedding cache.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.dense import DenseIndex
from skill_assets.lib.retrieval.document_cache import IndexStats
from skill_assets.lib.retrieval.encoding import encode_side_by_side
from skill_assets.lib.retrieval.give_way import gently
from skill_assets.lib.retrieval.lexical import DocumentTokens, LexicalIndex
from skill_assets.lib.retrieval.multilingual import MultilingualEncoder, MultilingualIndex, MultilingualRead
from skill_assets.lib.retrieval.pool_index import ENCODERS, IndexBuild, IndexStopped, PoolIndex
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.signals import (
    dense_document,
    lexical_document,
    multilingual_description,
    multilingual_document,
    skill_language,
)
from skill_assets.lib.retrieval.threads import request_threads

#: what every per-skill value of an index is read from (name, description, body): two skills with the same text
#: have the same documents, digests, language and rows, whatever their ids
SkillText = tuple[str, str, str]


def skill_text(skill: Skill) -> SkillText:
    """The key a skill's per-skill values are kept under from one build to the next. Its strings' hashes are kept by
    the strings, and a pool reloaded through ``ParsedFiles`` hands back the same strings for an unchanged file, so a
    look-up neither hashes nor compares the text again."""
    return skill.name, skill.description, skill.body


@dataclass(frozen=True)
class LexicalValues:
    """A skill's BM25 document, its digest (the BM25 cache's key and the cut's copy key) and whether it is Chinese."""

    document: str
    key: str
    zh: bool

    @classmethod
    def of(cls, skill: Skill) -> LexicalValues:
        document = lexical_document(skill)
        return cls(document, digest(document), skill_language(skill) == "zh")


class IndexBuilder:
    """The published ``PoolIndex`` of one engine and the build that replaces it.

    ``warm()`` loads what an answer with every signal needs (run in the build's thread before the full index is
    published); ``answering(pool)`` names the signals an answer over ``pool`` uses, for the log."""

    def __init__(self, dense: DenseIndex, multilingual: MultilingualEncoder, multilingual_read: MultilingualRead,
                 signals: tuple[str, ...], cache_dir: Path, log: Callable[[str], None], warm: Callable[[], None],
                 answering: Callable[[PoolIndex], tuple[str, ...]]) -> None:
        self.dense = dense
        self.multilingual = multilingual
        self.multilingual_read = multilingual_read
        self.signals = signals
        self.cache_dir = cache_dir
        self.log = log
        self._warm = warm
        self._answering = answering
        self._pool: PoolIndex | None = None
        self._publishing = threading.Lock()
        self._generation = 0
        self._lexical_tokens = DocumentTokens()  # a re-index tokenizes only new documents
        self._lexical_values: dict[SkillText, LexicalValues] = {}  # the last started pool's, by text
        self._build: IndexBuild | None = None

    def read_documents(self, document_tokens: int | None, multilingual_body_chars: int) -> None:
        """Read pool documents to these caps, as a fusion being fitted here will route them (a fitted fusion's card
        sets both at construction). Before indexing only: an index is read at one set of caps."""
        if self._pool is not None:
            raise RuntimeError("the pool is indexed already: set how documents are read before indexing")
        d = self.dense
        self.dense = DenseIndex(d.model_path, d.cache_dir, d.query_prompt, d.batch_size, d.backend, self.log,
                                document_tokens, d.query_backend)
        read = self.multilingual_read
        self.multilingual_read = replace(read, caps=replace(read.caps, body_chars=multilingual_body_chars))

    def start(self, skills: list[Skill], shard_size: int = 512, encoders: str = "background",
              hold: Callable[[], None] | None = None) -> IndexBuild:
        """Build (or load) BM25 and publish it, then the dense and multilingual indexes (``encoders``: in a
        background thread, before returning, or ``"skip"``: not at all); returns the build's handle.

        In the background a pool already cached is only loaded, and the full index is published once the request
        encoders are loaded too (seconds): until then answers are lexical, unless a full index is published already
        (a re-index: ``serve --watch``): then it answers until the new full one replaces it, so a re-index never
        drops the answers to BM25 alone. Without the ``bm25`` signal there is
        nothing to answer with early, so the encoders run before this returns. ``hold()`` runs in the background
        thread before any encoding (a test keeps the lexical phase open with it, without depending on timing)."""
        t0 = time.perf_counter()
        if encoders not in ENCODERS:
            raise ValueError(f"encoders must be one of {ENCODERS}, not {encoders!r}")
        if not skills:
            raise ValueError("cannot index an empty skill pool")
        ids = [s.id for s in skills]
        if len(set(ids)) != len(ids):
            raise ValueError("skill ids in the pool are not unique")
        if self._build is not None:
            self._build.stop(timeout=None)  # the pool it encodes is no longer the one asked for
        with self._publishing:
            self._generation += 1
            generation = self._generation
        values = self._lexical_values_of(skills)
        pool = PoolIndex(tuple(skills), np.array([v.zh for v in values], dtype=bool), [v.key for v in values])
        if "bm25" not in self.signals:
            encoders = "now"
        else:
            lexical, _ = LexicalIndex.build_or_load([v.document for v in values], self.cache_dir, self.log,
                                                    self._lexical_tokens, pool.copy_keys)
            pool = replace(pool, lexical=lexical)
            if encoders == "skip" or not self.complete:
                self._publish(pool, generation)
        build = self._build = IndexBuild(time.perf_counter() - t0)
        if encoders == "skip":
            build._finish(IndexStats(len(skills), 0, 0, build.lexical_seconds), complete=False)
            self.log(f"lexical index ready in {build.lexical_seconds:.1f}s: answering with bm25 alone "
                     "(the dense and multilingual indexes are not built)")
        elif encoders == "now":
            self._encode_and_publish(pool, shard_size, generation, build, t0, hold, warm=False)
            build.wait()  # raises the build's error here
        else:
            lexical_only = self._pool is pool
            answering = "bm25" if lexical_only else "the full index it replaces"
            self.log(f"lexical index ready in {build.lexical_seconds:.1f}s: answering with {answering} while the "
                     f"{' and '.join(self.encoded_signals())} indexes build")
            build._thread = threading.Thread(target=self._encode_and_publish, name="skill-assets-index",
                                             args=(pool, shard_size, generation, build, t0, hold, lexical_only),
                                             daemon=True)
            build._thread.start()
        return build

    def _lexical_values_of(self, skills: Sequence[Skill]) -> list[LexicalValues]:
        """Each skill's ``LexicalValues``: the last started pool's where its text is unchanged, the rest computed now;
        kept for the next build (only this pool's, so a skill edited away is not held)."""
        last, kept = self._lexical_values, {}
        out = []
        for s in gently(skills):
            text = skill_text(s)
            values = kept.get(text) or last.get(text) or LexicalValues.of(s)
            kept[text] = values
            out.append(values)
        self._lexical_values = kept
        return out

    def keep_lexical_tokens(self) -> None:
        """Tokenize the published pool's BM25 documents now and keep them with the matrix's layout, so that the next
        index of a changed pool tokenizes and sorts in only its new documents (``serve --watch``): a BM25 index loaded
        from the cache kept neither."""
        pool = self.pool
        self._lexical_tokens.keep([v.document for v in self._lexical_values_of(pool.skills)], pool.copy_keys)

    def encoded_signals(self) -> list[str]:
        """What the encoders build: the dense index always (the cut's copies and cosines, the bi-encoder path),
        the multilingual one where the signal is configured."""
        return ["dense", *(["multilingual"] if "multilingual" in self.signals else [])]

    def _encode_and_publish(self, pool: PoolIndex, shard_size: int, generation: int, build: IndexBuild, t0: float,
                            hold: Callable[[], None] | None, warm: bool) -> None:
        """Encode (or load from the cache) the dense and multilingual indexes and publish the full index. ``warm``:
        load what answering with every signal needs first (the engine's ``warm``), so the first such answer comes at
        the hybrid's speed while the lexical answers go on. A re-index has no lexical answers to cover: answers go on
        over the full index it replaces, with every signal, and load what they need themselves; warming would only
        encode the warm-up requests again beside them."""
        try:
            if hold is not None:
                hold()
            build.checkpoint()
            dense, multilingual, cached, encoded = self._encode(pool.skills, shard_size, build.checkpoint)
            if warm:
                build.checkpoint()
                self._warm()
            full = replace(pool, dense=dense, multilingual=multilingual)
            if self._publish(full, generation):
                self.log(f"full index ready in {time.perf_counter() - t0:.1f}s ({encoded} documents encoded, "
                         f"{cached} cached): answering with {', '.join(self._answering(full))}")
            build._finish(IndexStats(len(pool.skills), cached, encoded, time.perf_counter() - t0))
        except BaseException as exc:  # noqa: BLE001 -- handed to whoever waits; a background thread has no caller
            if build._thread is not None and isinstance(exc, IndexStopped):
                self.log(f"index build stopped ({exc}) before the full index was published")
            elif build._thread is not None:
                self.log(f"the dense and multilingual indexes were not built ({type(exc).__name__}: {exc}); "
                         "answers stay lexical")
            build._finish(error=exc)

    def _encode(self, skills: Sequence[Skill], shard_size: int, checkpoint: Callable[[], None]
                ) -> tuple[np.ndarray, MultilingualIndex | None, int, int]:
        """(dense matrix, multilingual index or None, documents cached, documents encoded): the rows of skills whose
        text the published full index holds are copied from it (counted as cached), only the others' documents are
        made, looked up in the embedding caches and encoded."""
        last = self._pool
        multilingual = "multilingual" in self.signals
        if last is None or last.dense is None or (multilingual and last.multilingual is None):
            return self._encode_documents(skills, shard_size, checkpoint)
        last_row = {skill_text(s): i for i, s in enumerate(gently(last.skills))}
        rows = [last_row.get(skill_text(s)) for s in gently(skills)]
        new = [i for i, row in enumerate(rows) if row is None]
        kept = [i for i, row in enumerate(rows) if row is not None]
        kept_from = [rows[i] for i in kept]

        def assembled(old: np.ndarray, fresh: np.ndarray | None) -> np.ndarray:
            out = np.empty((len(skills), old.shape[1]), dtype=np.float32)
            out[kept] = old[kept_from]
            if new:
                out[new] = fresh
            return out

        fresh_dense, fresh_index, cached, encoded = (
            self._encode_documents([skills[i] for i in new], shard_size, checkpoint) if new else (None, None, 0, 0))
        dense = assembled(last.dense, fresh_dense)
        if not multilingual:
            return dense, None, cached + len(kept), encoded
        fresh = (fresh_index.matrix, fresh_index.descriptions) if fresh_index is not None else (None, None)
        index = MultilingualIndex(self.multilingual, assembled(last.multilingual.matrix, fresh[0]),
                                  assembled(last.multilingual.descriptions, fresh[1]), self.multilingual_read.reading)
        return dense, index, cached + len(kept), encoded

    def _encode_documents(self, skills: Sequence[Skill], shard_size: int, checkpoint: Callable[[], None]
                          ) -> tuple[np.ndarray, MultilingualIndex | None, int, int]:
        """``_encode`` of ``skills`` (not empty) from their documents alone: the embedding caches, else the encoders.
        A few skills (fewer than ``SMALL_BATCH``: a re-index's changed ones) are encoded as a request is, torch and
        BLAS on one thread (``request_threads``): a re-index encodes beside the answers, and a pool of threads for
        a few documents would only spin on the cores they need."""
        dense_docs = [dense_document(s) for s in skills]
        with request_threads(len(skills)):
            if "multilingual" not in self.signals:
                dense, cached, encoded = self.dense.embed(dense_docs, shard_size, checkpoint)
                return dense, None, cached, encoded
            caps = self.multilingual_read.caps
            return encode_side_by_side(self.dense, dense_docs, self.multilingual,
                                       [multilingual_document(s, caps) for s in skills],
                                       [multilingual_description(s, caps) for s in skills],
                                       self.multilingual_read.reading, self.cache_dir, self.log, shard_size,
                                       checkpoint)

    def _publish(self, pool: PoolIndex, generation: int) -> bool:
        """Make ``pool`` the one routing reads, unless a newer build has begun since (its pool wins)."""
        with self._publishing:
            if generation != self._generation:
                return False
            if pool.dense is not None:
                self.dense.matrix = pool.dense  # kept in step for readers of the dense index itself
            self._pool = pool
            return True

    @property
    def pool(self) -> PoolIndex:
        """The published index (read once per call: a build may publish a newer one meanwhile)."""
        pool = self._pool
        if pool is None:
            raise RuntimeError("call index(skills) before routing")
        return pool

    @property
    def published(self) -> PoolIndex | None:
        """The published index, or None before the first build publishes one."""
        return self._pool

    def is_complete(self, pool: PoolIndex) -> bool:
        """Whether ``pool`` holds every configured signal's index."""
        return pool.dense is not None and all(pool.has(s) for s in self.signals)

    @property
    def complete(self) -> bool:
        """Whether the full index (every configured signal) is published."""
        return self._pool is not None and self.is_complete(self._pool)
