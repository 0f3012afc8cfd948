from collections import Counter

import pytest

from skill_assets.lib.neighbourhoods.clustered import ClusteredSkill
from skill_assets.lib.neighbourhoods.skill_split import split_pools


def _skills():
    skills = []
    sizes = {("devops", "en"): 50, ("devops", "zh"): 7, ("finance", "en"): 23, ("finance", "zh"): 2,
             ("design", "en"): 1, ("design", "zh"): 3}
    for (dom, lang), n in sizes.items():
        for i in range(n):
            skills.append(ClusteredSkill(f"{dom}-{lang}/{i}", lang, sub_cluster=0, super_domain=dom))
    return skills, sizes


def test_every_skill_assigned_and_deterministic():
    skills, _ = _skills()
    a = split_pools(skills, 0.2, seed=0)
    assert set(a) == {s.skill_id for s in skills}
    assert set(a.values()) == {"train", "test"}
    assert split_pools(list(reversed(skills)), 0.2, seed=0) == a  # order of input does not matter
    b = split_pools(skills, 0.2, seed=1)
    assert b != a
    assert Counter(b.values()) == Counter(a.values())  # same counts per stratum, other members


@pytest.mark.parametrize("fraction", [0.1, 0.2, 0.5])
def test_strata_get_both_pools_and_fraction_respected(fraction):
    skills, sizes = _skills()
    pools = split_pools(skills, fraction, seed=3)
    for (dom, lang), n in sizes.items():
        members = [pools[s.skill_id] for s in skills if (s.super_domain, s.language) == (dom, lang)]
        n_test = members.count("test")
        if n >= 2:
            assert 1 <= n_test <= n - 1
            expected = min(max(round(n * fraction), 1), n - 1)
            assert n_test == expected
        else:
            assert n_test == round(n * fraction)
    total_test = sum(v == "test" for v in pools.values())
    assert abs(total_test / len(pools) - fraction) < 0.1


def test_singleton_stratum_and_extreme_fractions():
    one = [ClusteredSkill("x", "en", sub_cluster=0, super_domain=0)]
    assert split_pools(one, 0.2) == {"x": "train"}
    assert split_pools(one, 0.9) == {"x": "test"}
    two = [ClusteredSkill(s, "en", sub_cluster=0, super_domain=0) for s in "ab"]
    assert sorted(split_pools(two, 0.0).values()) == ["test", "train"]
    assert sorted(split_pools(two, 1.0).values()) == ["test", "train"]
    assert split_pools([], 0.2) == {}
