"""bench/curated_eval.py (an 80-minute run) loads, and its run config fits the router's fusion on the curated requests."""
from pathlib import Path

from bench_scripts import bench_module

from skill_assets.lib.evaluation.curated_benchmark import CURATED_DIR, REQUESTS


def test_curated_eval_config_selects_the_router_fusion_on_the_curated_requests(tmp_path, monkeypatch):
    module = bench_module("curated_eval", monkeypatch)  # its imports resolve (a wrong one once broke the bench)
    fusion = module.run_config(1, 1, tmp_path)["ops"]["router_fusion"]["config"]
    assert fusion == {"requests_path": str(CURATED_DIR / REQUESTS), "pool_path": str(tmp_path)}
    assert Path(fusion["requests_path"]).is_file()
