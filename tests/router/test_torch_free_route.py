"""A request over a cached pool is encoded in numpy (``numpy_bert``), not by torch: the shipped router ranks exactly as
with the torch request encoder, and a warm one-shot ``skill-assets route`` imports no torch. Real models and skills."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from skill_assets.lib.retrieval.engine_config import EngineSettings
from skill_assets.lib.core.skill_files import walk_skill_paths
from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.router import Router, load_pool
from skill_assets.router.shipped_router import CURATED_REQUESTS

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SLICE = 300
REQUESTS = 50
DEMO_POOL = Path(__file__).resolve().parents[2] / "skill_assets" / "demo" / "skills"
#: what a request over a cached pool must not import (seconds each: ``bench/cli_route.py``)
HEAVY = ("torch", "sentence_transformers", "transformers")


def corpus_slice(corpus: Path, target: Path, wanted: set[str]) -> Path:
    """A folder pool of ``SLICE`` corpus skills under their corpus ids: every id in ``wanted``, then the first others."""
    paths = [p for p in walk_skill_paths(corpus) if isinstance(p, str)]
    ids = {os.path.relpath(os.path.dirname(p), corpus): p for p in paths}
    chosen = [sid for sid in ids if sid in wanted]
    chosen += [sid for sid in ids if sid not in wanted][: SLICE - len(chosen)]
    for sid in chosen:
        (target / sid).mkdir(parents=True)
        shutil.copyfile(ids[sid], target / sid / os.path.basename(ids[sid]))
    return target


def test_numpy_and_torch_request_encoders_rank_the_curated_dev_requests_alike(shared_corpus, tmp_path):
    requests = [r for r in load_requests(CURATED_REQUESTS) if r.split == "dev"][:REQUESTS]
    pool = corpus_slice(shared_corpus, tmp_path / "pool", {sid for r in requests for sid in r.gt})
    skills = load_pool(pool).skills
    assert len(skills) >= SLICE - 5 and {sid for r in requests for sid in r.gt} <= {s.id for s in skills}
    queries = [r.query for r in requests]
    routed, vectors = {}, {}
    for backend in ("torch", "numpy"):
        router = Router.from_store(db_path=tmp_path / "missing.duckdb", cache_dir=tmp_path / "cache",
                                   settings=EngineSettings(query_backend=backend))
        router.index(skills)
        assert router.dense.query_encoder.backend == backend
        routed[backend] = router.route(queries, top_k=10)
        vectors[backend] = router.dense.encode(queries)
    assert np.abs(vectors["numpy"] - vectors["torch"]).max() < 1e-5
    for exact, got in zip(routed["torch"], routed["numpy"]):
        assert [x.skill_id for x in got.ranking] == [x.skill_id for x in exact.ranking]
        assert got.selected == exact.selected and got.no_fit == exact.no_fit


def test_a_warm_one_shot_route_imports_no_torch_unless_asked_to(tmp_path):
    """``--query-backend torch`` reads the request with torch instead, and answers the same."""
    cache, db = tmp_path / "cache", tmp_path / "missing.duckdb"
    skills = load_pool(DEMO_POOL).skills
    Router.from_store(db_path=db, cache_dir=cache).index(skills)  # the cold start, here: encodes with torch
    tables = {}
    for backend in ("numpy", "torch"):
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "skill_assets.cli", "route", "--query",
                               "my docker compose containers cannot reach each other", "--pool", str(DEMO_POOL),
                               "--cache-dir", str(cache), "--db", str(db), "--query-backend", backend],
                              capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"({len(skills)} cached, 0 encoded)" in done.stderr
        imported = {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr,
                                                    re.M)}
        heavy = {name.split(".")[0] for name in imported} & set(HEAVY)
        if backend == "numpy":
            assert "skill_assets.lib.models.numpy_bert" in imported  # the parse reads what the process imported
            assert not heavy
        else:
            assert "torch" in heavy
        assert re.search(r"^ +1 +\* ", done.stdout, re.M)  # a ranked table, its first skill selected
        rows = [line.split() for line in done.stdout.splitlines() if re.match(r"^ +\d+ ", line)]
        tables[backend] = [row[:3] if row[1] == "*" else row[:2] for row in rows]  # rank, load mark, skill id
    assert tables["numpy"] == tables["torch"] and tables["numpy"]
