"""A damaged index cache file is rebuilt with one log line, never a traceback on every later run (issue 21, finding 7).

Each case damages what a crash, a full disk or a careless hand leaves: a truncated embedding shard,
unparsable shard ids, a truncated BM25 array, an empty ``vocab.json``. The index built over the
damaged cache must equal one built from scratch, and the damaged file must be gone.

Issue 31, finding 11: a file that still loads can be wrong (NaN written over a row of a valid
``.npy``, two ids swapped) and was used in silence; shards now carry checksums, and the log line
names the file at fault.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from skill_assets.lib.common.cache_files import sealed_json
from skill_assets.lib.retrieval import document_cache
from skill_assets.lib.retrieval.document_cache import EmbeddingStore, embed_documents
from skill_assets.lib.retrieval.lexical import LexicalIndex

DOCS = ["docker compose networking between containers", "extract tables from pdf files",
        "helm charts deploy a release", "生成规范的提交信息", "rewrite git history interactively"]


def _encoder(calls: list[list[str]]):
    """A deterministic stand-in for a bi-encoder: each text's row is its length and first character code."""
    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.array([[len(t), ord(t[0]), 1.0] for t in texts], dtype=np.float32)
    return lambda texts: (encode, True)


def _damaged_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "damaged cache file" in r.getMessage()]


def _one_shard(tmp_path: Path) -> tuple[EmbeddingStore, Path, np.ndarray]:
    store = EmbeddingStore(tmp_path / "emb")
    want, _, _ = embed_documents(DOCS, store, _encoder([]), lambda m: None)
    [ids] = list(store.directory.glob("*.ids.json"))
    return store, ids, want


@pytest.mark.parametrize("damage", ["truncated_npy", "empty_npy", "garbage_ids", "ids_not_a_list", "short_ids"])
def test_a_damaged_embedding_shard_is_re_encoded_with_one_log_line(tmp_path, caplog, damage):
    store, ids, want = _one_shard(tmp_path)
    npy = ids.with_name(ids.name.replace(".ids.json", ".npy"))
    if damage == "truncated_npy":
        npy.write_bytes(npy.read_bytes()[:-7])
    elif damage == "empty_npy":
        npy.write_bytes(b"")
    elif damage == "garbage_ids":
        ids.write_text('["abc", "de')
    elif damage == "ids_not_a_list":
        ids.write_text('{"a": 1}')
    else:  # one id fewer than rows, in a manifest whose own checksum is right
        manifest = json.loads(ids.read_text())["content"]
        ids.write_text(sealed_json(manifest | {"hashes": manifest["hashes"][:-1]}))
    caplog.set_level(logging.WARNING)
    calls: list[list[str]] = []
    got, cached, encoded = embed_documents(DOCS, store, _encoder(calls), lambda m: None)
    assert (cached, encoded) == (0, len(DOCS)) and np.array_equal(got, want)
    assert len(_damaged_lines(caplog)) == 1 and ids.name in _damaged_lines(caplog)[0]
    assert not ids.exists() and not npy.exists()
    caplog.clear()
    again, cached, encoded = embed_documents(DOCS, store, _encoder(calls), lambda m: None)
    assert (cached, encoded) == (len(DOCS), 0) and np.array_equal(again, want) and not _damaged_lines(caplog)


def test_a_shard_checked_once_is_not_read_whole_again_until_it_changes(tmp_path, monkeypatch, caplog):
    """``serve --watch`` looks a whole pool's rows up at every reload: an unchanged shard's checksum stands, a shard
    changed since is checked again (and a damaged one still found)."""
    store, ids, want = _one_shard(tmp_path)
    read: list[Path] = []
    checksum = document_cache.file_checksum
    monkeypatch.setattr(document_cache, "file_checksum", lambda path: read.append(path) or checksum(path))
    for _ in range(2):
        got, cached, encoded = embed_documents(DOCS, store, _encoder([]), lambda m: None)
        assert (cached, encoded) == (len(DOCS), 0) and np.array_equal(got, want)
    assert len(read) == 1
    caplog.set_level(logging.WARNING)
    _nan_in_a_row(ids.with_name(ids.name.replace(".ids.json", ".npy")))
    got, cached, encoded = embed_documents(DOCS, store, _encoder([]), lambda m: None)
    assert (cached, encoded) == (0, len(DOCS)) and np.array_equal(got, want) and len(_damaged_lines(caplog)) == 1


def _swap_two_ids(ids: Path) -> None:
    """Swap the first two text hashes of a shard, as a careless hand would: nothing else in the file changes."""
    text = ids.read_text()
    raw = json.loads(text)
    hashes = raw if isinstance(raw, list) else raw["content"]["hashes"]
    ids.write_text(text.replace(hashes[0], "<first>").replace(hashes[1], hashes[0]).replace("<first>", hashes[1]))


def _nan_in_a_row(npy: Path) -> None:
    """NaN over one value of the second row, saved as a valid .npy of the same shape and dtype."""
    arr = np.load(npy)
    arr[1, 0] = np.nan
    np.save(npy, arr)


@pytest.mark.parametrize("damage,at_fault", [("nan_in_a_row", ".npy"), ("swapped_ids", ".ids.json")])
def test_a_shard_that_loads_but_is_wrong_is_re_encoded_naming_the_file_at_fault(tmp_path, caplog, damage, at_fault):
    """NaN in an otherwise valid .npy changed the ranking, and two swapped ids gave two documents each other's rows,
    with no log line (issue 31, finding 11)."""
    store, ids, want = _one_shard(tmp_path)
    npy = ids.with_name(ids.name.replace(".ids.json", ".npy"))
    _nan_in_a_row(npy) if damage == "nan_in_a_row" else _swap_two_ids(ids)
    caplog.set_level(logging.WARNING)
    calls: list[list[str]] = []
    got, cached, encoded = embed_documents(DOCS, store, _encoder(calls), lambda m: None)
    assert np.array_equal(got, want) and (cached, encoded) == (0, len(DOCS))
    [line] = _damaged_lines(caplog)
    named = (npy if at_fault == ".npy" else ids).name
    assert f"{store.directory / named} (" in line  # the file at fault, not its partner
    assert not ids.exists() and not npy.exists()
    caplog.clear()
    again, cached, encoded = embed_documents(DOCS, store, _encoder(calls), lambda m: None)
    assert (cached, encoded) == (len(DOCS), 0) and np.array_equal(again, want) and not caplog.records


def test_shards_written_before_checksums_are_removed_with_one_line_and_re_encoded(tmp_path, caplog):
    store = EmbeddingStore(tmp_path / "emb")
    for part in (DOCS[:2], DOCS[2:]):  # two shards, then rewritten as the previous version wrote them
        embed_documents(part, store, _encoder([]), lambda m: None)
    for ids in store.directory.glob("*.ids.json"):
        ids.write_text(json.dumps(json.loads(ids.read_text())["content"]["hashes"]))  # a bare list of hashes
    caplog.set_level(logging.WARNING)
    _, cached, encoded = embed_documents(DOCS, store, _encoder([]), lambda m: None)
    assert (cached, encoded) == (0, len(DOCS))
    [line] = [r.getMessage() for r in caplog.records]
    assert "2 embedding cache shards written without checksums" in line and str(store.directory) in line
    assert len(list(store.directory.glob("*.ids.json"))) == 1  # only the new shard


def test_shards_are_written_through_a_private_temporary_path(tmp_path):
    store, _, _ = _one_shard(tmp_path)
    names = sorted(p.name for p in store.directory.iterdir())
    assert len(names) == 2 and not any(n.startswith(".") for n in names)  # nothing left beside the shard


def _bm25_file(directory: Path, name: str) -> Path:
    [path] = [p for p in directory.iterdir() if p.name.startswith(name)]
    return path


@pytest.mark.parametrize("damage", ["truncated_data", "empty_vocab", "truncated_indptr", "missing_params"])
def test_a_damaged_bm25_index_is_rebuilt_with_one_log_line(tmp_path, caplog, damage):
    index, loaded = LexicalIndex.build_or_load(DOCS, tmp_path)
    assert not loaded
    want = index.scores(["docker networking", "提交信息"])
    [directory] = list((tmp_path / "bm25").iterdir())
    if damage == "truncated_data":
        f = _bm25_file(directory, "data.csc")
        f.write_bytes(f.read_bytes()[:-4])
    elif damage == "empty_vocab":
        _bm25_file(directory, "vocab").write_text("")
    elif damage == "truncated_indptr":
        f = _bm25_file(directory, "indptr.csc")
        f.write_bytes(f.read_bytes()[:90])
    else:
        _bm25_file(directory, "params").unlink()
    caplog.set_level(logging.WARNING)
    logged: list[str] = []
    rebuilt, loaded = LexicalIndex.build_or_load(DOCS, tmp_path, logged.append)
    assert not loaded and np.array_equal(rebuilt.scores(["docker networking", "提交信息"]), want)
    assert len(_damaged_lines(caplog)) == 1 and directory.name in _damaged_lines(caplog)[0]
    assert logged == [f"building the BM25 index of {len(DOCS)} documents"]
    caplog.clear()
    cached, loaded = LexicalIndex.build_or_load(DOCS, tmp_path)
    assert loaded and np.array_equal(cached.scores(["docker networking", "提交信息"]), want)
    assert not _damaged_lines(caplog) and [p.name for p in (tmp_path / "bm25").iterdir()] == [directory.name]


def test_a_bm25_index_of_another_pool_size_is_not_trusted(tmp_path, caplog):
    LexicalIndex.build_or_load(DOCS, tmp_path)
    [directory] = list((tmp_path / "bm25").iterdir())
    other = tmp_path / "other"
    LexicalIndex.build_or_load(DOCS[:2], other)
    [small] = list((other / "bm25").iterdir())
    for f in directory.iterdir():  # a whole, loadable index, but not of these documents
        f.write_bytes((small / f.name).read_bytes())
    caplog.set_level(logging.WARNING)
    _, loaded = LexicalIndex.build_or_load(DOCS, tmp_path)
    assert not loaded and len(_damaged_lines(caplog)) == 1
