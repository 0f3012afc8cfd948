"""The should-not-trigger set (``skill_assets/benchmarks/no_fit/``): split as ``bench/no_fit_set.py`` builds it from
every writer's file, stratified by writer, kind and language (a later file never moves an earlier request), and its
near misses name skills of the corpus they were written against."""
from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.router.shipped_abstention import NO_FIT_KINDS, NO_FIT_REQUESTS, load_no_fit

BENCH = Path(__file__).resolve().parents[2] / "bench" / "no_fit_set.py"


def _builder(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))  # as `python bench/no_fit_set.py` has it: its siblings import
    spec = importlib.util.spec_from_file_location("no_fit_set", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_requests_and_counts_are_what_the_script_builds_from_written(monkeypatch):
    builder = _builder(monkeypatch)
    records, section, _ = builder.build(builder.written(NO_FIT_REQUESTS.parent / "written"))
    assert NO_FIT_REQUESTS.read_text(encoding="utf-8") == "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                                   for r in records)
    assert (NO_FIT_REQUESTS.parent / "README.md").read_text(encoding="utf-8").endswith(section)


def test_every_split_holds_every_kind_in_both_languages_at_about_its_share():
    requests = load_no_fit()
    assert len(requests) >= 200 and len({r.id for r in requests}) == len(requests)
    by = Counter((r.kind, r.lang, r.split) for r in requests)
    for kind in NO_FIT_KINDS:
        for lang in ("en", "zh"):
            total = sum(by[(kind, lang, s)] for s in ("train", "dev", "test"))
            assert all(by[(kind, lang, s)] >= 3 for s in ("train", "dev", "test")), (kind, lang)
            assert abs(by[(kind, lang, "train")] - 0.6 * total) <= 1 and abs(by[(kind, lang, "dev")] - 0.2 * total) <= 1


def test_the_split_is_stratified_by_a_hash_of_each_id_not_by_file_order(monkeypatch):
    builder = _builder(monkeypatch)
    rows = builder.written(NO_FIT_REQUESTS.parent / "written")
    records, _, _ = builder.build(list(reversed(rows)))
    assert {r["id"]: r["split"] for r in records} == {r.id: r.split for r in load_no_fit()}


def test_every_writers_file_is_read_and_a_later_file_moves_no_earlier_request(monkeypatch):
    builder = _builder(monkeypatch)
    rows = builder.written(NO_FIT_REQUESTS.parent / "written")
    files = sorted(p.name for p in (NO_FIT_REQUESTS.parent / "written").glob("*.jsonl"))
    assert len(files) >= 2 and {r["_where"].split(":")[0] for r in rows} == set(files)
    assert {r.id for r in load_no_fit()} == {r["id"] for r in rows}
    first = [r for r in rows if r["_where"].startswith(files[0] + ":")]
    alone, _, _ = builder.build(first)
    together = {r.id: r.split for r in load_no_fit()}
    assert {r["id"]: r["split"] for r in alone} == {r["id"]: together[r["id"]] for r in first}


def test_near_misses_name_skills_of_the_shared_corpus_and_only_they_name_any(shared_corpus, monkeypatch):
    builder = _builder(monkeypatch)
    rows = builder.written(NO_FIT_REQUESTS.parent / "written")
    builder.check(rows)
    assert builder.near_problems(rows, {s.id for s in load_pool(shared_corpus).skills}) == []
    assert all(bool(r["near"]) == (r["kind"] == "near_miss") for r in rows)
