"""The BM25 index built from kept term counts (``lexical._index_by_counts``) is bm25s' own index, array for array."""
from __future__ import annotations

import bm25s
import numpy as np
import pytest

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.lexical import DocumentTokens, LexicalIndex, _index_by_counts

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


def indexed(docs: list[str], tokens: DocumentTokens, csc_backend: str) -> tuple[bm25s.BM25, bm25s.BM25]:
    """(bm25s' own index of the token ids, the index built from their counts)."""
    digests = [digest(d) for d in docs]
    ids = tokens.ids(docs, digests)
    reference = bm25s.BM25(csc_backend=csc_backend)
    reference.index((ids, dict(tokens.vocab)), show_progress=False)
    built = bm25s.BM25(csc_backend=csc_backend)
    assert _index_by_counts(built, [tokens.counts(key) for key in digests], ids, tokens.vocab)
    return reference, built


@pytest.mark.parametrize("csc_backend", ["numpy", "scipy"])
def test_the_index_from_term_counts_is_bm25s_own_bit_for_bit_and_after_a_change(csc_backend):
    tokens = DocumentTokens()
    for docs in (DOCS, DOCS[:2] + ["pdf forms merged into one pdf, sourdough starter fed"] + DOCS[3:]):
        reference, built = indexed(docs, tokens, csc_backend)
        for key in ("data", "indices", "indptr"):
            assert built.scores[key].dtype == reference.scores[key].dtype
            assert np.array_equal(built.scores[key], reference.scores[key]), key
        assert built.scores["num_docs"] == reference.scores["num_docs"]
        assert built.vocab_dict == reference.vocab_dict
        queries = ["docker network", "pdf 表单 fill", "数据分析", "sourdough", "the"]
        assert np.array_equal(LexicalIndex(built).scores(queries), LexicalIndex(reference).scores(queries))


def test_a_variant_with_a_non_occurrence_score_is_left_to_bm25s():
    tokens = DocumentTokens()
    digests = [digest(d) for d in DOCS]
    ids = tokens.ids(DOCS, digests)
    assert not _index_by_counts(bm25s.BM25(method="bm25+"), [tokens.counts(k) for k in digests], ids, tokens.vocab)
