"""Skill ids are the curated ones whether the corpus stage reads the shared folder or the pinned git sources.

The corpus stage ingests ``tests/data/curated/pool`` (one folder per repository, like the shared
corpus's ``repos/``) through a sources file with ``subfolders: true``, and the same folders as git
repositories at a pinned commit; both give ``<owner>__<repo>/<skill folder>``, the ids the requests use.
"""
import shutil
import subprocess
from pathlib import Path

from skill_assets.lib.common import store
from skill_assets.lib.corpus.sources import load_source_specs
from skill_assets.lib.corpus.corpus_store import ingest_into_store
from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.retrieval.requests import require_in_pool

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "curated"
POOL = FIXTURE / "pool"


def _raw_ids(sources_file: Path, tmp_path: Path) -> list[str]:
    db = tmp_path / f"{sources_file.stem}.duckdb"
    ingest_into_store(db, load_source_specs(sources_file), tmp_path / f"work-{sources_file.stem}", 1_000_000, 1)
    return store.query(db, "SELECT skill_id FROM raw_skills ORDER BY skill_id")["skill_id"].to_list()


def _git_repo(folder: Path, at: Path) -> str:
    shutil.copytree(folder, at)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=at, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=at, capture_output=True, text=True, check=True).stdout.strip()


def test_shared_folder_and_git_sources_give_the_curated_ids(tmp_path):
    folder = tmp_path / "folder.yaml"
    folder.write_text(f"sources:\n  - {{location: {POOL}, subfolders: true}}\n")
    specs = load_source_specs(folder)
    assert [(s.name, s.kind) for s in specs] == [("alpha__skills", "dir"), ("beta__mirror", "dir"),
                                                 ("gamma__zh", "dir")]
    from_folder = _raw_ids(folder, tmp_path)
    git = tmp_path / "git.yaml"
    git.write_text("sources:\n" + "".join(
        f"  - {{name: {repo.name}, kind: git, location: {tmp_path / 'remote' / repo.name}, "
        f"commit: {_git_repo(repo, tmp_path / 'remote' / repo.name)}}}\n" for repo in sorted(POOL.iterdir())))
    assert _raw_ids(git, tmp_path) == from_folder
    assert "beta__mirror/docker-net-fork" in from_folder and "gamma__zh/skills/weekly-report-zh" in from_folder
    require_in_pool(load_requests(FIXTURE), set(from_folder), "the ingested fixture")
