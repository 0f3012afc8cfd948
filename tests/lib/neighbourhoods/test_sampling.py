from collections import Counter

from skill_assets.lib.common.language import DIRECTIONS
from skill_assets.lib.neighbourhoods.clustered import clustered_skills
from skill_assets.lib.neighbourhoods.sampling import STYLES, SamplingPlan, sample_combinations


def _sample(rows: list[dict], plan: SamplingPlan):
    """The sampler over ``skill_pools`` rows, read as the ``skill_combinations`` asset reads them."""
    return sample_combinations(clustered_skills(rows), {r["skill_id"]: r["pool"] for r in rows}, plan)


def _skills():
    skills = []
    i = 0
    for pool in ("train", "test"):
        for lang in ("en", "zh"):
            for dom in range(2):
                for sub in range(3):
                    n = 4 if pool == "train" else 2
                    for _ in range(n):
                        skills.append({"skill_id": f"s{i:03d}", "pool": pool, "language": lang,
                                       "super_domain": f"{lang}-d{dom}", "sub_cluster": f"{lang}-d{dom}-c{sub}"})
                        i += 1
    return skills


def test_combinations_respect_neighbourhood_pool_and_language():
    skills = _skills()
    by_id = {s["skill_id"]: s for s in skills}
    plan = SamplingPlan(counts={"train": {1: 5, 2: 6, 3: 4}, "test": {1: 3, 2: 3, 3: 2}}, seed=11)
    combos, shortfalls = _sample(skills, plan)
    assert shortfalls == []
    assert len(combos) == 4 * (5 + 6 + 4 + 3 + 3 + 2)
    for c in combos:
        members = [by_id[s] for s in c["skill_ids"]]
        assert len(members) == c["k"] == len(set(c["skill_ids"]))
        assert c["skill_ids"] == sorted(c["skill_ids"])
        assert {m["pool"] for m in members} == {c["pool"]}
        assert {m["language"] for m in members} == {DIRECTIONS[c["direction"]][0]}
        assert c["style"] in STYLES
        if c["k"] == 2:
            assert len({m["sub_cluster"] for m in members}) == 1
            assert c["neighbourhood"] == f"sub_cluster:{members[0]['sub_cluster']}"
        elif c["k"] == 3:
            assert len({m["super_domain"] for m in members}) == 1
            assert c["neighbourhood"] == f"super_domain:{members[0]['super_domain']}"
        else:
            assert c["neighbourhood"] == "any"
    keys = [(c["direction"], *c["skill_ids"]) for c in combos]
    assert len(keys) == len(set(keys))
    assert len({c["combination_id"] for c in combos}) == len(combos)
    per = Counter((c["pool"], c["direction"], c["k"]) for c in combos)
    assert per[("train", "zh2en", 2)] == 6 and per[("test", "en2zh", 3)] == 2


def test_deterministic_by_seed():
    skills = _skills()
    plan = SamplingPlan(seed=5)
    a, _ = _sample(skills, plan)
    b, _ = _sample(list(reversed(skills)), plan)
    assert a == b
    c, _ = _sample(skills, SamplingPlan(seed=6))
    assert [x["skill_ids"] for x in a] != [x["skill_ids"] for x in c]


def test_shortfalls_reported_and_no_repeats_when_exhausted():
    # test pool: 2 skills per sub-cluster, 6 per super-domain within a language
    skills = _skills()
    plan = SamplingPlan(counts={"test": {2: 10, 3: 25}}, directions=("en2en",), seed=0)
    combos, shortfalls = _sample(skills, plan)
    # 6 sub-clusters of 2 → 6 distinct pairs; 2 super-domains of 6 → 2 * C(6,3) = 40 triples
    k2 = [c for c in combos if c["k"] == 2]
    k3 = [c for c in combos if c["k"] == 3]
    assert len(k2) == 6 and len(k3) == 25
    assert shortfalls == [{"pool": "test", "direction": "en2en", "k": 2, "wanted": 10, "drawn": 6}]
    assert len({tuple(c["skill_ids"]) for c in k2}) == 6


def test_impossible_requests():
    skills = [s for s in _skills() if s["language"] == "en"]
    # test pool: super-domains of 6 en skills, so no 7-skill set exists; no zh skills at all
    plan = SamplingPlan(counts={"test": {1: 2, 6: 1, 7: 1}}, directions=("en2en", "zh2zh"), seed=0)
    combos, shortfalls = _sample(skills, plan)
    assert sorted((c["direction"], c["k"]) for c in combos) == [("en2en", 1), ("en2en", 1), ("en2en", 6)]
    assert shortfalls == [
        {"pool": "test", "direction": "en2en", "k": 7, "wanted": 1, "drawn": 0},
        {"pool": "test", "direction": "zh2zh", "k": 1, "wanted": 2, "drawn": 0},
        {"pool": "test", "direction": "zh2zh", "k": 6, "wanted": 1, "drawn": 0},
        {"pool": "test", "direction": "zh2zh", "k": 7, "wanted": 1, "drawn": 0},
    ]


def test_k1_exhausts_every_single_skill():
    skills = [s for s in _skills() if s["pool"] == "test" and s["language"] == "zh"]
    plan = SamplingPlan(counts={"test": {1: 100}}, directions=("zh2en",), seed=2)
    combos, shortfalls = _sample(skills, plan)
    assert sorted(c["skill_ids"][0] for c in combos) == sorted(s["skill_id"] for s in skills)
    assert shortfalls == [{"pool": "test", "direction": "zh2en", "k": 1, "wanted": 100, "drawn": len(skills)}]
