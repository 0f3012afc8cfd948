"""bench/router_curated.py end to end on the toy bilingual benchmark: one JSON line with every system, the
selection figures by k and the target checks (the script the README's router table comes from)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from bilingual_pool import REQUESTS, write_pool, write_requests

from skill_assets.lib.models.bundled_models import bundled_minilm

REPO = Path(__file__).resolve().parents[2]


def test_router_bench_prints_every_system_and_the_selection_figures(tmp_path):
    pool, requests = write_pool(tmp_path / "pool"), write_requests(tmp_path / "requests.jsonl")
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "router_curated.py"), "--requests", str(requests), "--split", "test",
         "--corpus", str(pool), "--cache-dir", str(tmp_path / "cache"), "--embedder", bundled_minilm(),
         "--model-dir", str(tmp_path / "model")],
        check=False, capture_output=True, text=True, timeout=1800, cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "SKILL_ASSETS_DB": str(tmp_path / "no-store.duckdb")})
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    n_test = sum(split == "test" for *_, split in REQUESTS)
    assert figures["split"] == "test" and figures["requests"] == n_test and figures["reranker"] is None
    assert figures["fusion"]["data"]["test_requests_read"] == 0
    systems = set(figures["systems"])
    assert {"bm25", "multilingual", "gloss", "embedder:base", "rrf:bm25+dense", "rrf:bm25+multilingual",
            "rrf:dense+multilingual", "fusion", "fusion-bm25", "fusion-dense", "fusion-multilingual",
            "fusion-gloss"} == systems
    assert figures["systems"]["fusion"]["all"]["n"] == n_test
    selection = figures["selection"]
    assert set(selection) == {"selected", "fixed_k1", "fixed_k2", "fixed_k3", "oracle_k"}
    assert selection["fixed_k2"]["mean_selected"] == 2.0 and selection["selected"]["k=1"]["n"] == n_test
    for row in selection.values():
        assert 0.0 <= row["all"]["exact"] <= row["all"]["f1"] <= 1.0
    assert set(figures["targets"]["selected_f1_minus_best_fixed_k"]) == {"all", "k=1"}
    assert (tmp_path / "model" / "selection.json").is_file() and (tmp_path / "model" / "fusion.json").is_file()
