"""Router fixtures: the toy bilingual pool indexed by every real signal, and a fusion fitted on its requests."""
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bilingual_pool import write_pool, write_requests  # noqa: E402

from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.evaluation.curated_benchmark import load_requests  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import save_router_model, train_fusion  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.router import load_pool  # noqa: E402


@pytest.fixture(scope="session")
def toy(tmp_path_factory):
    """(router over the toy pool with every signal, requests, FusionFit, queries training read, folder of the
    saved model + cut, root folder)."""
    root = tmp_path_factory.mktemp("toy")
    skills, rejected = load_pool(write_pool(root / "pool"))
    assert not rejected
    router = Engine(bundled_minilm(), cache_dir=root / "cache", signals=SIGNALS)
    router.index(skills)
    requests = load_requests(write_requests(root / "requests.jsonl"))
    seen: list[str] = []

    def candidates_of(queries):
        seen.extend(queries)
        return router.candidates(queries)

    fitted = train_fusion(candidates_of, router.ids, requests, SIGNALS, router.similarity, depth=50,
                          data_source="toy", folds=3)
    return router, requests, fitted, seen, save_router_model(fitted, root / "model"), root
