"""Training with the curated benchmark: its train split joins, its dev split selects, its test split stays unseen.

Fixture requests from ``tests/data/curated/``; the pipeline side is a small kept-skill space in which
the dedup folded the mirror into the Docker skill. The last test trains the bundled MiniLM for real
on the mixed queries and checks what its card says it saw.
"""
import json
from pathlib import Path

import pytest

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.retrieval.requests import UnresolvedSkillIds
from skill_assets.lib.retrieval.store_skills import skills_from_rows
from skill_assets.lib.training.curated_training import corpus_holds_curated, curated_data_version, with_curated
from skill_assets.lib.training.model_training import TrainingSettings, train_embedder
from skill_assets.lib.training.training_queries import TrainingQuery, training_queries
from skill_assets.lib.training.variants import EMBEDDER_VARIANTS

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "curated"
REQUESTS = load_requests(FIXTURE)
RAW = sorted(p.parent.relative_to(FIXTURE / "pool").as_posix() for p in (FIXTURE / "pool").rglob("SKILL.md")
             if "broken" not in p.parts)
FOLDED = {"beta__mirror/skills/docker-networking": "alpha__skills/skills/docker-networking"}
KEPT_OF = {sid: FOLDED.get(sid, sid) for sid in RAW}
SKILLS = {s.id: s for s in skills_from_rows(
    {"skill_id": sid, "name": sid.rsplit("/", 1)[1], "description": f"About {sid.rsplit('/', 1)[1]}.",
     "body": f"# {sid}\n\nSteps for {sid.rsplit('/', 1)[1].replace('-', ' ')}."} for sid in set(KEPT_OF.values()))}
# the pipeline put the pandas skill in its test pool; everything else is in its train pool
TRAIN_POOL = [s for sid, s in sorted(SKILLS.items()) if sid != "alpha__skills/skills/pandas-cleaning"]
PIPELINE = training_queries([
    {"query_id": "p1", "query": "containers cannot talk", "skill_ids": ["alpha__skills/skills/docker-networking"],
     "skip_partners": [], "direction": "en2en", "k": 1},
    {"query_id": "p2", "query": "bisect a regression", "skill_ids": ["alpha__skills/skills/git-bisect"],
     "skip_partners": [], "direction": "en2en", "k": 1},
])


def test_corpus_holds_the_curated_skills_all_or_none():
    assert corpus_holds_curated(REQUESTS, set(RAW))
    assert not corpus_holds_curated(REQUESTS, {"demo/docker-compose-networking"})  # the demo's corpus
    with pytest.raises(UnresolvedSkillIds, match="gamma__zh/skills/weekly-report-zh") as err:
        corpus_holds_curated(REQUESTS, set(RAW) - {"gamma__zh/skills/weekly-report-zh"})
    assert "curated: false" in str(err.value)


def test_train_joins_dev_selects_and_test_skills_are_never_seen():
    data = with_curated(PIPELINE, [TrainingQuery("p-dev", "a dev request", ())], TRAIN_POOL, SKILLS, REQUESTS,
                        KEPT_OF, "v1")
    # p1's skill is the ground truth of test request t-001: the pipeline query is dropped
    assert [q.id for q in data.train] == ["p2", "curated:r-001", "curated:r-002", "curated:r-003"]
    assert [q.id for q in data.dev] == ["curated:d-001"]
    assert data.dev[0].groups == (("alpha__skills/skills/pandas-cleaning",),)
    pool = {s.id for s in data.skills}
    test_skills = {KEPT_OF[s] for r in REQUESTS if r.split == "test" for s in r.gt}
    assert not pool & test_skills  # never a positive, a mined negative or a ranked candidate in selection
    assert "alpha__skills/skills/pandas-cleaning" in pool  # a curated train skill from the pipeline's test pool
    assert data.card["train_sources"] == {"pipeline": 1, "curated_train": 3}
    assert data.card["dropped_touching_curated_test"] == {"pipeline_train": 1, "curated_train": 0, "curated_dev": 0}
    assert data.card["curated_skills_from_pipeline_test_pool"] == 1 and data.card["pipeline_dev_unused"] == 1
    assert data.card["dev_source"] == "curated dev split" and "v1" in data.card["curated"]


def test_a_train_request_on_a_skill_folded_into_a_test_skill_is_dropped():
    folded = {**KEPT_OF, "alpha__skills/skills/git-bisect": "alpha__skills/skills/nginx-proxy"}  # near-duplicate
    data = with_curated([], [], TRAIN_POOL, SKILLS, REQUESTS, folded, "v1")
    assert "curated:r-002" not in [q.id for q in data.train]
    assert data.card["dropped_touching_curated_test"]["curated_train"] == 1


def test_the_data_version_moves_with_the_splits():
    moved = [r if r.id != "d-001" else type(r)(**{**r.__dict__, "split": "train"}) for r in REQUESTS]
    assert curated_data_version(REQUESTS) != curated_data_version(moved)


def test_embedder_trains_on_curated_train_and_selects_on_curated_dev(tmp_path):
    data = with_curated(PIPELINE, [], TRAIN_POOL, SKILLS, REQUESTS, KEPT_OF, "v1")
    base = bundled_minilm()
    trained = train_embedder(EMBEDDER_VARIANTS["r3"], data.train, data.skills, base, base, tmp_path / "r3",
                             TrainingSettings(epochs=1, batch_size=2, max_seq_length=48, checkpoint_every=100),
                             dev_queries=data.dev, provenance={"training_data": data.card})
    card = json.loads((trained.path / "skill_assets_card.json").read_text())
    assert card["train_queries"] == 4 and card["dev_queries"] == 1
    assert [step for step, _ in card["dev_ndcg10_by_step"]] == [0, 1, 2]
    assert card["training_data"]["train_sources"] == {"pipeline": 1, "curated_train": 3}
    readme = (trained.path / "README.md").read_text()
    assert "(pipeline: 1, curated_train: 3)" in readme and "queries of the curated dev split" in readme
