"""bench/curated_eval.py (an 80-minute run) loads, and its run config fits the router's fusion on the curated requests."""
import importlib.util
from pathlib import Path

from skill_assets.lib.evaluation.curated_benchmark import CURATED_DIR, REQUESTS

BENCH = Path(__file__).resolve().parents[2] / "bench" / "curated_eval.py"


def test_curated_eval_config_selects_the_router_fusion_on_the_curated_requests(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))  # as `python bench/curated_eval.py` has it: its siblings import
    spec = importlib.util.spec_from_file_location("curated_eval", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its imports resolve (a wrong one once broke the bench at the end of setup)
    fusion = module.run_config(1, 1, tmp_path)["ops"]["router_fusion"]["config"]
    assert fusion == {"requests_path": str(CURATED_DIR / REQUESTS), "pool_path": str(tmp_path)}
    assert Path(fusion["requests_path"]).is_file()
