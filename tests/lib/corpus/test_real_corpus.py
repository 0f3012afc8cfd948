"""The corpus stage on thousands of real SKILL.md files from public GitHub repositories (../shared)."""
import os

from skill_assets.lib.common import store
from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.corpus.corpus_store import dedup_in_store, ingest_into_store
from skill_assets.lib.corpus.dedup import DedupConfig


def test_every_real_file_is_parsed_or_quarantined_and_every_duplicate_points_at_a_kept_skill(shared_corpus, tmp_path):
    db = tmp_path / "corpus.duckdb"
    ingest_into_store(db, [SourceSpec("github-skills", "dir", str(shared_corpus))], tmp_path / "work", 1_000_000,
                      os.cpu_count() or 1)
    dedup_in_store(db, ["github-skills"], DedupConfig())
    files = sum(1 for p in shared_corpus.rglob("*") if p.name.lower() == "skill.md" and p.is_file())

    def count(sql: str) -> int:
        return int(store.query(db, sql)[0, 0])

    raw, rejected = count("SELECT count(*) FROM raw_skills"), count("SELECT count(*) FROM ingest_rejects")
    assert raw + rejected == files and rejected > 0  # the real corpus does hold broken files
    assert count("SELECT count(*) FROM ingest_rejects WHERE coalesce(reason, '') = ''") == 0
    kept, dups = count("SELECT count(*) FROM skills"), count("SELECT count(*) FROM skill_duplicates")
    assert kept + dups == raw and dups > 0
    assert count("""SELECT count(*) FROM skill_duplicates d LEFT JOIN skills s ON s.skill_id = d.kept_skill_id
                    WHERE s.skill_id IS NULL""") == 0
    assert count("SELECT count(*) FROM skill_duplicates d JOIN skills s ON s.skill_id = d.duplicate_skill_id") == 0
