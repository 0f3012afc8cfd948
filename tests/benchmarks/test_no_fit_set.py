"""The should-not-trigger set (``skill_assets/benchmarks/no_fit/``): split as ``bench/no_fit_set.py`` builds it from
every writer's file, stratified by writer, kind and language (a later file never moves an earlier request), its
near misses name skills of the corpus they were written against, and a second reader's review (``review.jsonl``)
covers every dev and test request, the requests it disputes left out without moving any other."""
from __future__ import annotations

import json
from collections import Counter

from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.router.shipped_abstention import NO_FIT_KINDS, NO_FIT_REQUESTS, load_no_fit
from bench_scripts import bench_module



def _builder(monkeypatch):
    return bench_module("no_fit_set", monkeypatch)


def _written_and_review(builder) -> tuple[list[dict], list[dict]]:
    return builder.written(NO_FIT_REQUESTS.parent / "written"), builder.read_review()


def _disputed(review: list[dict]) -> set[str]:
    return {r["id"] for r in review if r["verdict"] == "disputed"}


def test_requests_and_counts_are_what_the_script_builds_from_written(monkeypatch):
    builder = _builder(monkeypatch)
    records, section, _ = builder.build(*_written_and_review(builder))
    assert NO_FIT_REQUESTS.read_text(encoding="utf-8") == "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                                   for r in records)
    assert (NO_FIT_REQUESTS.parent / "README.md").read_text(encoding="utf-8").endswith(section)


def test_every_split_holds_every_kind_in_both_languages_at_about_its_share(monkeypatch):
    """Dealt at 60 / 20 / 20 % in every kind and language; after the disputed requests are left out (their places
    not refilled), every split still holds at least three of each."""
    requests = load_no_fit()
    assert len(requests) >= 200 and len({r.id for r in requests}) == len(requests)
    kept = Counter((r.kind, r.lang, r.split) for r in requests)
    builder = _builder(monkeypatch)
    dealt, _, _ = builder.build(builder.written(NO_FIT_REQUESTS.parent / "written"))
    by = Counter((r["kind"], r["lang"], r["split"]) for r in dealt)
    for kind in NO_FIT_KINDS:
        for lang in ("en", "zh"):
            total = sum(by[(kind, lang, s)] for s in ("train", "dev", "test"))
            assert all(kept[(kind, lang, s)] >= 3 for s in ("train", "dev", "test")), (kind, lang)
            assert abs(by[(kind, lang, "train")] - 0.6 * total) <= 1 and abs(by[(kind, lang, "dev")] - 0.2 * total) <= 1


def test_the_split_is_stratified_by_a_hash_of_each_id_not_by_file_order(monkeypatch):
    builder = _builder(monkeypatch)
    rows, review = _written_and_review(builder)
    records, _, _ = builder.build(list(reversed(rows)), review)
    assert {r["id"]: r["split"] for r in records} == {r.id: r.split for r in load_no_fit()}


def test_every_writers_file_is_read_and_a_later_file_moves_no_earlier_request(monkeypatch):
    builder = _builder(monkeypatch)
    rows, review = _written_and_review(builder)
    files = sorted(p.name for p in (NO_FIT_REQUESTS.parent / "written").glob("*.jsonl"))
    assert len(files) >= 2 and {r["_where"].split(":")[0] for r in rows} == set(files)
    assert {r.id for r in load_no_fit()} == {r["id"] for r in rows} - _disputed(review)
    first = [r for r in rows if r["_where"].startswith(files[0] + ":")]
    alone, _, _ = builder.build(first, [v for v in review if v["id"] in {r["id"] for r in first}])
    together = {r.id: r.split for r in load_no_fit()}
    assert {r["id"]: r["split"] for r in alone} == {r["id"]: together[r["id"]] for r in first if r["id"] in together}


def test_near_misses_name_skills_of_the_shared_corpus_and_only_they_name_any(shared_corpus, monkeypatch):
    builder = _builder(monkeypatch)
    rows = builder.written(NO_FIT_REQUESTS.parent / "written")
    builder.check(rows)
    assert builder.near_problems(rows, {s.id for s in load_pool(shared_corpus).skills}) == []
    assert all(bool(r["near"]) == (r["kind"] == "near_miss") for r in rows)


def test_every_dev_and_test_request_has_one_review_row_naming_a_real_request(shared_corpus, monkeypatch):
    """The second reader read every request dealt to dev or test (disputed ones included), each once; a row names a
    written request, and a dispute names the corpus skills that serve the request."""
    builder = _builder(monkeypatch)
    rows, review = _written_and_review(builder)
    assert builder.review_problems(review, rows, {s.id for s in load_pool(shared_corpus).skills}) == []
    dealt, _, _ = builder.build(rows)  # every request with the split it is dealt before any is left out
    counts = Counter(r["id"] for r in review)
    assert set(counts) <= {r["id"] for r in rows} and max(counts.values()) == 1
    assert {r["id"] for r in dealt if r["split"] in ("dev", "test")} <= set(counts)


def test_disputed_requests_are_left_out_and_no_other_request_moves(monkeypatch):
    builder = _builder(monkeypatch)
    rows, review = _written_and_review(builder)
    disputed = _disputed(review)
    kept = {r.id: r.split for r in load_no_fit()}
    assert disputed and not disputed & set(kept)
    dealt, _, _ = builder.build(rows)
    assert kept == {r["id"]: r["split"] for r in dealt if r["id"] not in disputed}
    _, section, summary = builder.build(rows, review)
    assert summary["disputed_left_out"] == len(disputed) and f"as disputed: {len(disputed)} (" in section


def test_a_review_row_that_breaks_the_format_is_refused(monkeypatch):
    builder = _builder(monkeypatch)
    rows, _ = _written_and_review(builder)
    rid = rows[0]["id"]
    good = {"id": rid, "verdict": "agreed", "reader_kind": rows[0]["kind"], "serving": [], "why": "no skill serves it"}
    assert builder.review_problems([good], rows) == []
    for bad, says in (({**good, "id": "n9-001"}, "names no written request"),
                      ({**good, "verdict": "disputed"}, "serving lists"),
                      ({**good, "serving": ["some/skill"]}, "serving lists"),
                      ({**good, "reader_kind": "rude"}, "reader_kind"),
                      ({**good, "why": " "}, "why not empty")):
        assert any(says in p for p in builder.review_problems([bad], rows)), bad
    assert any("reviewed twice" in p for p in builder.review_problems([good, good], rows))
    assert any("not a corpus skill" in p for p in builder.review_problems(
        [{**good, "verdict": "disputed", "serving": ["no/such-skill"]}], rows, {"some/skill"}))
