"""Corpus tables built through the store: streamed ingest, dedup reading texts back from DuckDB."""
import duckdb

from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.corpus.corpus_store import dedup_in_store, ingest_into_store
from skill_assets.lib.corpus.dedup import DedupConfig

BODY = " ".join(f"Step {i}: check the compose service number {i} and read its logs carefully." for i in range(40))


def write(root, folder, name, body, description="Debug docker compose stacks."):
    d = root / folder
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")


def test_streamed_ingest_and_dedup_fill_every_corpus_table(tmp_path, monkeypatch):
    root = tmp_path / "src"
    write(root, "a", "compose-debug", BODY)
    write(root, "b", "compose-debug", BODY)                                # fork
    write(root, "c", "compose-debugging", BODY.replace("carefully", "closely", 3))  # edited copy
    write(root, "d", "pandas-clean", "Clean data frames: drop duplicates, fix types, " * 30, "Clean pandas frames.")
    (root / "e").mkdir()
    (root / "e" / "SKILL.md").write_text("no front matter")
    db = tmp_path / "store.duckdb"
    result = ingest_into_store(db, [SourceSpec("src", "dir", str(root))], tmp_path, 1_000_000, 1)
    assert result.files_seen == 5 and all("body" not in r for r in result.raw_skills)
    skills, dups = dedup_in_store(db, ["src"], DedupConfig())
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw_skills").fetchone()[0] == 4
        assert con.execute("SELECT reason FROM ingest_rejects").fetchall() == [("missing_front_matter",)]
        kept = dict(con.execute("SELECT skill_id, n_duplicates FROM skills").fetchall())
        assert con.execute("SELECT count(*) FROM skills WHERE length(body) > 100").fetchone()[0] == 2
        layers = sorted(r[0] for r in con.execute("SELECT layer FROM skill_duplicates").fetchall())
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert layers == ["name_and_content", "near_duplicate"] and sum(kept.values()) == 2
    assert "src/d" in kept and len(kept) == 2 and "raw_skills__staging" not in tables
    assert skills.height == 2 and dups.height == 2
