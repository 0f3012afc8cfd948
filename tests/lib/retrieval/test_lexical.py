"""The BM25 index built from kept term counts (``lexical._index_by_counts``) is bm25s' own index, array for array,
whether built from scratch or by updating the last build's layout (``TermColumns``)."""
from __future__ import annotations

import os

import bm25s
import numpy as np

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.lexical import KEPT_INDEXES, DocumentTokens, LexicalIndex, _index_by_counts

DOCS = [
    "docker compose services cannot reach each other docker network",
    "fill in and extract fields from pdf forms pdf pdf",
    "用 Docker 部署，docker-compose.yml 里的 depends_on 数据 数据 分析",
    "git bisect finds the commit that introduced a bug",
    "The and of",
    "",
    "ÜBER café — naïve C++ / C# 与中文混排",
    "docker compose services cannot reach each other docker network",  # a copy: its own row, the same counts
]
#: the pools a watched server re-indexes one after another: an edit, an addition, a deletion, a reordering, copies
#: added and removed, one document left
CHANGES = [
    DOCS,
    DOCS[:2] + ["pdf forms merged into one pdf, sourdough starter fed"] + DOCS[3:],
    ["a new first document about kubernetes pods", *DOCS, "sourdough ledger of weekly bakes"],
    DOCS[:3] + DOCS[4:],
    DOCS[::-1],
    [DOCS[0], DOCS[0], *DOCS[1:4], DOCS[0]],
    DOCS[1:2],
    DOCS,
]
QUERIES = ["docker network", "pdf 表单 fill", "数据分析", "sourdough", "the", "kubernetes pods"]


def indexed(docs: list[str], tokens: DocumentTokens) -> tuple[bm25s.BM25, bm25s.BM25]:
    """(bm25s' own index of the token ids, the index built from their counts and ``tokens``' last layout)."""
    digests = [digest(d) for d in docs]
    ids = tokens.ids(docs, digests)
    reference = bm25s.BM25()
    reference.index((ids, dict(tokens.vocab)), show_progress=False)
    built = bm25s.BM25()
    assert _index_by_counts(built, tokens, digests, ids)
    return reference, built


def test_the_index_from_term_counts_is_bm25s_own_bit_for_bit_after_every_change():
    tokens = DocumentTokens()
    for docs in CHANGES:
        reference, built = indexed(docs, tokens)
        for key in ("data", "indices", "indptr"):
            assert built.scores[key].dtype == reference.scores[key].dtype
            assert np.array_equal(built.scores[key], reference.scores[key]), key
        assert built.scores["num_docs"] == reference.scores["num_docs"]
        assert built.vocab_dict == reference.vocab_dict
        assert np.array_equal(LexicalIndex(built).scores(QUERIES), LexicalIndex(reference).scores(QUERIES))


def test_an_update_moves_the_kept_documents_and_sorts_in_only_the_new_ones():
    tokens = DocumentTokens()
    indexed(DOCS, tokens)
    edited = DOCS[:2] + ["pdf forms merged into one pdf"] + DOCS[3:]
    moved, added = tokens.columns._rows_kept([digest(d) for d in edited])
    assert added == [2]
    assert moved.tolist() == [0, 1, -1, 3, 4, 5, 6, 7]


def test_a_variant_this_does_not_build_is_left_to_bm25s():
    tokens = DocumentTokens()
    digests = [digest(d) for d in DOCS]
    ids = tokens.ids(DOCS, digests)
    assert not _index_by_counts(bm25s.BM25(method="bm25+"), tokens, digests, ids)
    assert not _index_by_counts(bm25s.BM25(csc_backend="scipy"), tokens, digests, ids)


def test_a_layout_kept_for_an_index_loaded_from_the_cache_is_updated_to_bm25s_own():
    tokens = DocumentTokens()
    tokens.keep(DOCS, [digest(d) for d in DOCS])  # no build here: ``serve --watch`` over a cached pool
    assert tokens.columns.keys == [digest(d) for d in DOCS]
    edited = DOCS[:2] + ["pdf forms merged into one pdf"] + DOCS[3:]
    assert tokens.columns._rows_kept([digest(d) for d in edited])[1] == [2]
    reference, built = indexed(edited, tokens)
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(built.scores[key], reference.scores[key]), key



def test_the_cache_keeps_the_most_recently_used_indexes(tmp_path) -> None:
    """A watched pool saves a new index after every edit: only the ``KEPT_INDEXES`` last used stay on disk, and one
    loaded again counts as used, so the pool a server routes over is not the one removed. Each new index's time is
    set one second after the last (the clock's grain decides nothing)."""
    saved = tmp_path / "bm25"
    first = ["a first pool about docker networks", "and its pdf forms"]
    LexicalIndex.build_or_load(first, tmp_path)
    (first_folder,) = saved.iterdir()
    os.utime(first_folder, (1_000, 1_000))
    known = {first_folder}
    for i in range(KEPT_INDEXES + 3):
        LexicalIndex.build_or_load([f"edit {i} of a watched pool", "sourdough ledger"], tmp_path)
        for new in set(saved.iterdir()) - known:
            os.utime(new, (1_001 + i, 1_001 + i))
            known.add(new)
        if i == 1:
            assert LexicalIndex.build_or_load(first, tmp_path)[1]  # routed again: used now, so kept from here on
    assert len(list(saved.iterdir())) == KEPT_INDEXES and first_folder.is_dir()
    assert LexicalIndex.build_or_load([f"edit {KEPT_INDEXES + 2} of a watched pool", "sourdough ledger"],
                                      tmp_path)[1]  # the newest edit is kept
    assert not LexicalIndex.build_or_load(["edit 0 of a watched pool", "sourdough ledger"], tmp_path)[1]  # gone



def test_a_read_only_cache_is_read_as_it_is(tmp_path, monkeypatch) -> None:
    """A prebuilt index baked into a read-only image cannot have its time set (injected here: the tests may run as
    root, whom file modes do not stop): it is loaded all the same, and nothing is removed."""
    docs = ["a pool shipped read-only", "inside an image"]
    LexicalIndex.build_or_load(docs, tmp_path)

    def read_only(*args, **kwargs):
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(os, "utime", read_only)
    assert LexicalIndex.build_or_load(docs, tmp_path)[1]
    assert len(list((tmp_path / "bm25").iterdir())) == 1
