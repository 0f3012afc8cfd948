"""Copies of a ground-truth skill count as that skill, once: rankings are collapsed onto groups before metrics."""
import numpy as np

from skill_assets.lib.core.metrics import per_query_metrics
from skill_assets.lib.core.runs import Qrels, Run
from skill_assets.lib.core.skill_groups import (
    collapse_ranking,
    mapped_groups,
    singleton_groups,
    with_identical_copies,
)
from skill_assets.lib.evaluation.metric_tables import metric_rows

DOCKER = ("a/docker", "b/docker-fork", "c/docker-zh")
NGINX = ("a/nginx",)


def run_of(rankings):
    """Id lists as a run (scored by rank), queries named by position."""
    return Run.of([f"q{i}" for i in range(len(rankings))],
                  [[(sid, -float(r)) for r, sid in enumerate(ranking)] for ranking in rankings])


def qrels_of(truth):
    return Qrels.of([f"q{i}" for i in range(len(truth))], truth)


def test_a_copy_stands_for_its_group_and_later_copies_drop_out():
    ranking = ["b/docker-fork", "x/unrelated", "a/docker", "c/docker-zh", "a/nginx", "y/other"]
    assert collapse_ranking(ranking, (DOCKER, NGINX)) == ["a/docker", "x/unrelated", "a/nginx", "y/other"]
    # a benchmark without copies is scored on the ranking as it is
    assert collapse_ranking(ranking, singleton_groups(["a/nginx"])) == ranking


def test_metrics_credit_a_copy_and_never_credit_one_group_twice():
    truth = [(DOCKER, NGINX), (DOCKER, NGINX), (DOCKER,)]
    rankings = [["c/docker-zh", "a/nginx", "z/1"],               # both skills, through a translation: a full set
                ["a/docker", "b/docker-fork", "z/1", "a/nginx"],  # two copies of one skill fill the top 2
                ["z/1", "b/docker-fork"]]
    scores = per_query_metrics(run_of(rankings), qrels_of(truth))
    assert scores["hit@1"].tolist() == [1.0, 1.0, 0.0]
    assert scores["set_compat"][:2].tolist() == [1.0, 0.0]  # the copy does not count as the second skill...
    assert scores["fc@5"].tolist() == [1.0, 1.0, 1.0]       # ...but nginx is still found in the top 5
    assert scores["mrr@10"][2] == 0.5 and scores["recall@5"][1] == 1.0
    # were every copy its own skill, the same rankings would be scored against a flat id set: copies look like misses
    flat = per_query_metrics(run_of(rankings), qrels_of([tuple((sid,) for sid in (*DOCKER, *NGINX))] * 2
                                                         + [tuple((sid,) for sid in DOCKER)]))
    assert flat["fc@5"][0] == 0.0


def test_metric_rows_score_groups_with_intervals():
    truth = [(DOCKER, NGINX)] * 4 + [(DOCKER,)] * 4
    good = [["b/docker-fork", "a/nginx"]] * 8
    bad = [["z/1", "z/2"]] * 8
    rows = {(r["system"], r["slice"], r["metric"]): r for r in metric_rows(
        {"embedder:base": run_of(bad), "embedder:r3": run_of(good)}, qrels_of(truth),
        {"all": np.ones(8, dtype=bool)})}
    r3 = rows["embedder:r3", "all", "hit@1"]
    assert r3["value"] == 1.0 and r3["ci_low"] == r3["ci_high"] == 1.0 and r3["n_queries"] == 8
    assert rows["embedder:r3", "all", "set_compat"]["value"] == 1.0
    assert r3["delta_vs_base"] == 1.0 and r3["p_value_vs_base"] < 0.01


def test_identical_documents_join_the_group_and_mapping_merges_folded_groups():
    document = {"a/docker": ("docker", "d", "body"), "m/docker-mirror": ("docker", "d", "body"),
                "a/nginx": ("nginx", "n", "body")}
    assert with_identical_copies((("a/docker",), NGINX), document) == (("a/docker", "m/docker-mirror"), NGINX)
    kept = {"a/docker": "a/docker", "b/docker-fork": "a/docker", "c/docker-zh": "c/docker-zh", "a/nginx": "a/nginx",
            "n/nginx-near-dup": "a/docker"}
    assert mapped_groups((DOCKER, NGINX), kept.__getitem__) == (("a/docker", "c/docker-zh"), NGINX)
    # a group whose skill the dedup folded into another group's skill is that group in kept space
    assert mapped_groups((DOCKER, ("n/nginx-near-dup",), NGINX), kept.__getitem__) == (
        ("a/docker", "c/docker-zh"), NGINX)
