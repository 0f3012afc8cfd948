"""The lexical signal: BM25 (``bm25s``) over skill documents, CJK-aware, persisted by content hash.

BM25 is the strongest single signal within one language, and it needs no truncation: a request of
thousands of characters is scored token by token. The index of a pool is saved under
``<cache>/bm25/<key>/`` where the key hashes the bm25s version, the tokenizer and every document,
so a second start over the same pool memory-maps it instead of tokenizing 10,000 bodies again. The folder
appears whole in one rename; one whose files do not agree is discarded and built again. The ``KEPT_INDEXES`` most
recently used are kept, the older removed.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from skill_assets.lib.common.cache_files import atomic_output, discard_damaged, keep_newest
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.give_way import gently

#: Chinese runs become character bigrams, English stopwords (bm25s' 33)
#: are dropped. Measured on the provisional curated train + dev requests over the shared corpus:
#: bigrams Hit@1 0.559 vs 0.505 for jieba's search-mode words (zh2zh 0.92 vs 0.79; 7,000 skills index
#: in 11 s instead of 72 s), so no segmenter; dropping stopwords 0.562 / NDCG@10 0.605 vs 0.559 / 0.594.
TOKENIZER = "bigram-stop_en"
INDEX_FORMAT = "bm25-v2"
#: saved BM25 indexes kept per cache folder, the most recently used: a pool's own, the few pools a user switches
#: between, and a watched pool's latest versions (each edit saves a new one)
KEPT_INDEXES = 8


@functools.cache
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


_WORD = re.compile(r"[a-z0-9][a-z0-9+#._-]*")
CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
#: the token of a text that has none: it matches nothing
EMPTY_TOKEN = "<empty>"


def lexical_tokens(text: str) -> list[str]:
    """The one BM25 tokenizer, for documents and requests: lower-cased words less English stopwords, then each
    Chinese run as character bigrams (no segmenter: see ``TOKENIZER``). A text with no token gets ``<empty>``,
    which matches nothing. Words first and bigrams after, in two scans done in C, not a Python branch per
    token: the first answer over a new pool waits for 10,000 documents to be tokenized."""
    low = text.lower()
    stop = _stopwords()
    tokens = [tok for tok in _WORD.findall(low) if tok not in stop]
    if not low.isascii():
        for run in CJK_RUN.findall(low):
            tokens.extend([run[i : i + 2] for i in range(max(1, len(run) - 1))])
    return tokens or [EMPTY_TOKEN]


class TermColumns:
    """The last BM25 build's layout: its documents (digests, in row order) and, column by column, the rows that hold
    each term (``indices``, ``indptr``) with each entry's term count (``tf``). A re-index of a pool in which a few
    documents changed updates it (``updated``: the changed rows' entries out, the new documents' in, kept rows
    renumbered) instead of sorting every entry of the matrix again: bm25s' argsort over the pool's two million
    entries was 0.2 s of each ``serve --watch`` re-index's CPU, taken beside the answers."""

    def __init__(self, keys: list[str], indices: np.ndarray, indptr: np.ndarray, tf: np.ndarray) -> None:
        self.keys, self.indices, self.indptr, self.tf = keys, indices, indptr, tf

    @classmethod
    def empty(cls) -> TermColumns:
        return cls([], np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.float32))

    def updated(self, keys: list[str], counts: Callable[[str], tuple[np.ndarray, np.ndarray]], n_vocab: int
                ) -> tuple[TermColumns, np.ndarray]:
        """(the layout of documents ``keys``, each entry's column): the rows of documents kept from this layout, in
        the same order, are moved, the others' entries (``counts`` by digest) sorted in. Entries are ordered by
        column, then row, as a CSC matrix built from scratch orders them."""
        moved, added = self._rows_kept(keys)
        n_docs = len(keys)
        cols = np.repeat(np.arange(len(self.indptr) - 1, dtype=np.int64), np.diff(self.indptr))
        rows = moved[self.indices]
        kept = rows >= 0
        cols, rows, tf = cols[kept], rows[kept], self.tf[kept]
        new = [counts(keys[row]) for row in added]
        new_cols = np.concatenate([c[0] for c in new]).astype(np.int64) if new else np.zeros(0, dtype=np.int64)
        new_tf = np.concatenate([c[1] for c in new]) if new else np.zeros(0, dtype=np.float32)
        new_rows = np.repeat(np.array(added, dtype=np.int64), [len(c[0]) for c in new])
        new_key = new_cols * n_docs + new_rows
        order = np.argsort(new_key)
        at = np.searchsorted(cols * n_docs + rows, new_key[order]) + np.arange(len(order))
        is_new = np.zeros(len(cols) + len(order), dtype=bool)
        is_new[at] = True

        def merged(old: np.ndarray, fresh: np.ndarray) -> np.ndarray:
            out = np.empty(len(is_new), dtype=old.dtype)
            out[at], out[~is_new] = fresh[order], old
            return out

        all_cols = merged(cols, new_cols)
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(np.bincount(all_cols, minlength=n_vocab), out=indptr[1:])
        return TermColumns(list(keys), merged(rows, new_rows), indptr, merged(tf, new_tf)), all_cols

    def _rows_kept(self, keys: list[str]) -> tuple[np.ndarray, list[int]]:
        """(each row of this layout's new row, -1 where it is not kept; the new rows not kept from it). A document is
        kept where its digest comes in the same order as here (a reordered or repeated one is treated as removed and
        added again: more work, the same matrix)."""
        rows_of: dict[str, list[int]] = {}
        for row, key in enumerate(gently(self.keys)):
            rows_of.setdefault(key, []).append(row)
        moved = np.full(len(self.keys), -1, dtype=np.int64)
        added, taken, last = [], {}, -1
        for row, key in enumerate(gently(keys)):
            old, i = rows_of.get(key), taken.get(key, 0)
            if old is not None and i < len(old) and old[i] > last:
                moved[old[i]], taken[key], last = row, i + 1, old[i]
            else:
                added.append(row)
        return moved, added


class DocumentTokens:
    """Each document's BM25 token ids (by content digest) and their vocabulary, kept from one build of a pool to the
    next: ``serve --watch`` re-indexes a pool in which a few documents changed, and tokenizing all 10,000 again was
    most of its re-index (6.2 s of it under load). Ids are never reassigned, so a kept document's ids stay valid;
    only the last build's documents are kept, and a token no document has any longer scores nothing (no document
    column holds it). Beside the ids, each document's term counts (``counts``), which the index is built from, and the
    last index's layout (``columns``), which the next one updates."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self._ids: dict[str, list[int]] = {}
        self._counts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.columns = TermColumns.empty()

    def ids(self, documents: list[str], digests: list[str]) -> list[list[int]]:
        """Each document's token ids: the kept ones, the rest tokenized now."""
        vocab, kept = self.vocab, {}
        out = []
        for document, key in gently(zip(documents, digests)):
            ids = kept.get(key) or self._ids.get(key)
            if ids is None:
                ids = [vocab.setdefault(tok, len(vocab)) for tok in lexical_tokens(document)]
            if key not in self._counts:
                tokens, tf = np.unique(np.asarray(ids, dtype=np.int32), return_counts=True)
                self._counts[key] = (tokens, tf.astype(np.float32))
            kept[key] = ids
            out.append(ids)
        self._ids = kept
        self._counts = {key: self._counts[key] for key in kept}
        return out

    def keep(self, documents: list[str], digests: list[str]) -> None:
        """``ids`` of a pool whose index was loaded from the cache, not built here, and its layout (``columns``), so
        that the next build of a changed pool neither tokenizes nor sorts its unchanged documents again."""
        self.ids(documents, digests)
        self.columns = self.columns.updated(digests, self.counts, len(self.vocab))[0]

    def counts(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(distinct token ids, how often each occurs) of a document of the last ``ids`` call, by its digest."""
        return self._counts[key]


class LexicalIndex:
    """BM25 over a pool's documents; ``scores(queries)`` gives every document's score for each query."""

    def __init__(self, retriever) -> None:
        self._retriever = retriever

    @classmethod
    def build_or_load(cls, documents: list[str], cache_dir: Path | None = None,
                      log: Callable[[str], None] = lambda msg: None, tokens: DocumentTokens | None = None,
                      digests: list[str] | None = None) -> tuple[LexicalIndex, bool]:
        """(index, loaded from cache). Builds and saves on a miss, or after discarding a damaged saved index;
        a concurrent builder that saved the same index first wins and this copy is dropped. Without
        ``cache_dir`` the index is built in memory only (the training and review miners' throwaway pools).
        ``tokens``: the documents' token ids kept from an earlier build (only new documents are tokenized);
        ``digests``: the documents' ``digest``s where the caller has them already (a re-index keeps its pool's)."""
        import bm25s

        digests = digests if digests is not None else [digest(d) for d in documents]
        key = digest(json.dumps([INDEX_FORMAT, bm25s.__version__, TOKENIZER, digests]))
        directory = cache_dir / "bm25" / key if cache_dir is not None else None
        if directory is not None and directory.is_dir():
            if (loaded := _load_checked(directory, len(documents))) is not None:
                keep_newest(directory.parent, KEPT_INDEXES, directory)
                return cls(loaded), True
        log(f"building the BM25 index of {len(documents)} documents")
        retriever = bm25s.BM25()
        # token ids made here, in the tokenizer's pass: bm25s' own vocabulary pass over 10,000 token lists costs a
        # second more (its vocabulary order is a set's anyway; a term's ids do not enter any score)
        tokens = tokens or DocumentTokens()
        ids = tokens.ids(documents, digests)
        if not _index_by_counts(retriever, tokens, digests, ids):
            retriever.index((ids, dict(tokens.vocab)), show_progress=False)  # a copy: later builds add to the vocabulary
        if directory is None:
            return cls(retriever), False
        try:
            with atomic_output(directory) as tmp:
                retriever.save(tmp, show_progress=False)
        except OSError:  # another process saved the same index first
            pass
        if directory.is_dir():
            keep_newest(directory.parent, KEPT_INDEXES, directory)
        return cls(retriever), False

    @property
    def version(self) -> str:
        """What produced the scores, for ``model_version`` columns."""
        import bm25s

        return f"bm25s-{bm25s.__version__}/{TOKENIZER}"

    def scores(self, queries: list[str]) -> np.ndarray:
        """(queries, documents) BM25 scores; the whole query is scored, whatever its length."""
        r = self._retriever
        out = np.zeros((len(queries), r.scores["num_docs"]), dtype=np.float32)
        for i, q in enumerate(queries):
            ids = r.get_tokens_ids(lexical_tokens(q))
            if ids:
                out[i] = r.get_scores_from_ids(ids)
        return out


def _index_by_counts(retriever, tokens: DocumentTokens, digests: list[str], ids: list[list[int]]) -> bool:
    """Index ``retriever`` as its own ``index((ids, vocab))`` does, to the same arrays bit for bit, but from each
    document's term counts in whole-array steps: bm25s counts and scores one document at a time in Python, a second
    of CPU over 10,000 documents, and in a server re-indexing beside its answers (``serve --watch``) that second is
    taken from the answers' share of the interpreter. The matrix's layout is the last build's, updated
    (``TermColumns``), and its scoring functions are applied to every entry at once: each is elementwise, in float64
    as it computes one document's terms, so the order entries are scored in changes no float. Returns False,
    indexing nothing, for what this does not build: BM25L and BM25+ (they subtract a non-occurrence score), the
    scipy CSC backend (the router uses bm25s' numpy one)."""
    from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

    if retriever.method in retriever.methods_requiring_nonoccurrence or retriever.csc_backend != "numpy":
        return False

    n_docs, n_vocab = len(ids), len(tokens.vocab)
    columns, cols = tokens.columns.updated(digests, tokens.counts, n_vocab)
    tokens.columns = columns
    lengths = np.array([len(doc) for doc in gently(ids)])
    df = np.diff(columns.indptr)  # a document holds a term once in its column
    # idf by distinct document frequency, with bm25s' own scalar function (the same floats as its per-token loop)
    distinct, which = np.unique(df, return_inverse=True)
    idf_of = _select_idf_scorer(retriever.idf_method)
    idf = np.array([idf_of(int(d), N=n_docs) if d else 0.0 for d in distinct], dtype=retriever.dtype)[which]
    tfc = _select_tfc_scorer(retriever.method)(tf_array=columns.tf,
                                               l_d=lengths[columns.indices].astype(np.float64),
                                               l_avg=lengths.mean(), k1=retriever.k1, b=retriever.b,
                                               delta=retriever.delta)
    data = (idf[cols] * tfc).astype(retriever.dtype)
    vocab_dict = dict(tokens.vocab)  # a copy: later builds add to the vocabulary
    vocab_dict.setdefault("", max(vocab_dict.values(), default=-1) + 1)  # bm25s' empty token, as ``index`` adds it
    retriever.scores = {"data": data, "indices": columns.indices.astype(retriever.int_dtype),
                        "indptr": columns.indptr, "num_docs": n_docs}
    retriever.vocab_dict = vocab_dict
    retriever.unique_token_ids_set = set(vocab_dict.values())
    retriever.nonoccurrence_array = None
    return True


def _load_checked(directory: Path, num_docs: int):
    """The saved retriever, memory-mapped, if its files are whole and agree with each other; else None after
    discarding the folder (a truncated array or vocabulary would otherwise fail every later run)."""
    import bm25s

    try:
        loaded = bm25s.BM25.load(directory, mmap=True, show_progress=False)
        sc = loaded.scores
        whole = (sc["num_docs"] == num_docs and len(sc["indptr"]) == len(loaded.vocab_dict)
                 and int(sc["indptr"][-1]) == len(sc["data"]) == len(sc["indices"]))
        why = "" if whole else "its arrays, vocabulary and document count disagree"
    except (OSError, ValueError, EOFError, KeyError, IndexError, TypeError) as exc:  # JSONDecodeError: ValueError
        why = f"{type(exc).__name__}: {exc}"[:200]
    if not why:
        return loaded
    discard_damaged(directory, why)
    return None
