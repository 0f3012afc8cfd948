"""The corpus assets under concurrency: no silent lost update between runs with different sources (issue 17, finding 8).

Run A ingests its sources, run B ingests others, then A's dedup would fold B's rows and record
A's sources. The assets must refuse that with a message naming both, record the sources they
actually read, and a concurrent step must wait for the store's corpus lock.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import dagster as dg
import pytest
from hostile_inputs import good, write

from skill_assets.defs.corpus.assets import deduplicated_skills, ingested_skills
from skill_assets.defs.corpus.checks import ingest_accounts_for_every_file
from skill_assets.defs.resources import DuckDBStore, SkillSources
from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.corpus.corpus_store import (
    CorpusBusy,
    CorpusChanged,
    corpus_lock,
    dedup_in_store,
    ingest_into_store,
    sources_read,
)
from skill_assets.lib.corpus.dedup import DedupConfig

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def two_corpora(tmp_path) -> tuple[Path, Path]:
    a, b = tmp_path / "corpus-a", tmp_path / "corpus-b"
    for i in range(3):
        write(a / f"a{i}" / "SKILL.md", good(f"alpha-{i}"))
    write(b / "b0" / "SKILL.md", good("beta"))
    return a, b


def resources(db: Path, corpus: Path) -> dict:
    return {"store": DuckDBStore(database=str(db)), "sources": SkillSources(paths=[str(corpus)], workers=1)}


def test_interleaved_runs_fail_clearly_instead_of_a_lost_update(tmp_path, two_corpora):
    a, b = two_corpora
    db = tmp_path / "s.duckdb"
    with dg.DagsterInstance.ephemeral() as instance:
        run_a = dg.materialize([ingested_skills, ingest_accounts_for_every_file], resources=resources(db, a),
                               instance=instance)
        assert run_a.success and all(e.passed for e in run_a.get_asset_check_evaluations())
        meta = run_a.asset_materializations_for_node("ingested_skills")[0].metadata
        assert "corpus-a" in meta["sources_read"].value and "| 3 |" in meta["sources_read"].value
        run_b = dg.materialize([ingested_skills], resources=resources(db, b), instance=instance)
        assert run_b.success
        # run A's dedup step after B replaced raw_skills
        late = dg.materialize([deduplicated_skills], resources=resources(db, a), instance=instance,
                              raise_on_error=False)
        assert not late.success
        failure = next(e for e in late.all_events if e.event_type_value == "STEP_FAILURE")
        text = str(failure.event_specific_data.error)
        assert "CorpusChanged" in text and "corpus-b" in text and "corpus-a" in text
        ok = dg.materialize([deduplicated_skills], resources=resources(db, b), instance=instance)
        assert ok.success
        skills_meta = ok.asset_materializations_for_node("deduplicated_skills")[0].metadata
        assert "corpus-b" in skills_meta["sources_read"].value and "corpus-a" not in skills_meta["sources_read"].value
    assert sources_read(db)["source"].to_list() == ["corpus-b"]


def test_dedup_checks_sources_in_the_library_too(tmp_path, two_corpora):
    a, b = two_corpora
    db = tmp_path / "s.duckdb"
    spec_a, spec_b = SourceSpec("corpus-a", "dir", str(a)), SourceSpec("corpus-b", "dir", str(b))
    ingest_into_store(db, [spec_a], tmp_path, 1_000_000, 1)
    ingest_into_store(db, [spec_b], tmp_path, 1_000_000, 1)
    with pytest.raises(CorpusChanged, match="corpus-b .* this run's sources are corpus-a"):
        dedup_in_store(db, ["corpus-a"], DedupConfig(), expected_sources=[spec_a])
    skills, _ = dedup_in_store(db, ["corpus-b"], DedupConfig(), expected_sources=[spec_b])
    assert skills.height == 1


def test_a_concurrent_step_waits_for_the_corpus_lock(tmp_path):
    db = tmp_path / "s.duckdb"
    told: list[str] = []
    release = threading.Event()

    def holder() -> None:
        with corpus_lock(db):
            release.wait(5)

    # a lock held by another open file description (as another process would hold it)
    t = threading.Thread(target=holder)
    t.start()
    time.sleep(0.2)
    with pytest.raises(CorpusBusy, match="being written by process"):
        with corpus_lock(db, wait_s=0.5, on_wait=told.append):
            pass
    assert told and "waiting for the corpus lock" in told[0]
    threading.Timer(0.5, release.set).start()
    started = time.monotonic()
    with corpus_lock(db, wait_s=10):
        waited = time.monotonic() - started
    t.join()
    assert waited > 0.2  # it waited for the holder, then took the lock
