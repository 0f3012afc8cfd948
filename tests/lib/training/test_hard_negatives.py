"""Hard-negative mining: the R3 rank window and cosine cap, SkillRouter's 4/3/2/1 quotas, and the
false-negative filter layers, each counted where it removes a candidate."""
import numpy as np

from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.training.hard_negatives import mine_r3_negatives, mine_skillrouter_negatives

DIM = 80
POSITIVE_BODY = "inspect the bridge network then restart the compose services cleanly"


def _skills(rows: list[dict]) -> list[Skill]:
    return [Skill(f"s{i}", r["name"], "", r["body"]) for i, r in enumerate(rows)]


def _mine_r3(query_emb, skill_emb, rows: list[dict], positives):
    """The R3 rule over the fixture's skills, given as ``Skill``s."""
    return mine_r3_negatives(query_emb, skill_emb, _skills(rows), positives)


def _mine_skillrouter(query_emb, skill_emb, rows: list[dict], positives, bm25_top, seed):
    """The SkillRouter rule over the fixture's skills, given as ``Skill``s and their super-domains."""
    return mine_skillrouter_negatives(query_emb, skill_emb, _skills(rows), [r["super_domain"] for r in rows],
                                      positives, bm25_top, seed)


def _filler(rank: int, domain: str = "ops") -> dict:
    return {"name": f"filler-{rank}", "body": f"filler {rank} alpha{rank} beta{rank} gamma{rank} delta{rank}",
            "super_domain": domain}


def _vector(query_cos: float, direction: int) -> np.ndarray:
    """A unit vector with the given cosine to the query (axis 0), the rest on its own axis."""
    v = np.zeros(DIM)
    v[0], v[direction] = query_cos, np.sqrt(1 - query_cos**2)
    return v


def _r3_fixture():
    """Skill index = teacher rank (cosine 0.993 − 0.005·rank) except the positive, which ranks last.

    In the [20, 50) window: ranks 20–28 have cosine ≥ 0.85 (rank 22 is the query's sibling), 29 shares
    the positive's name, 30 copies its body, 31 lies within teacher cosine 0.92 of it, 32 is clean."""
    positive = {"name": "Compose Networking", "body": POSITIVE_BODY, "super_domain": "ops"}
    positive_vec = np.zeros(DIM)
    positive_vec[0], positive_vec[1] = 0.6, 0.8
    skills, vectors = [], []
    for rank in range(59):
        skill, vec = _filler(rank), _vector(0.993 - 0.005 * rank, rank + 2)
        if rank == 29:
            skill["name"] = "compose-networking"
        if rank == 30:
            skill["body"] = POSITIVE_BODY
        if rank == 31:
            vec = np.zeros(DIM)
            vec[0], vec[1] = 0.993 - 0.005 * 31, np.sqrt(1 - (0.993 - 0.005 * 31) ** 2)
        skills.append(skill)
        vectors.append(vec)
    skills.append(positive)
    vectors.append(positive_vec)
    return np.eye(DIM)[:1], np.array(vectors), skills, [[59, 22]]


def test_r3_rule_takes_the_first_clean_candidate_of_the_window_and_counts_each_layer():
    query, skill_emb, skills, positives = _r3_fixture()
    chosen, removed = _mine_r3(query, skill_emb, skills, positives)
    assert chosen == [32]
    assert removed == {"ground_truth": 1, "query_cosine": 8, "same_name": 1, "body_trigram_jaccard": 1,
                       "teacher_cosine": 1}


def test_r3_rule_returns_none_when_the_window_holds_nothing_clean():
    query, skill_emb, skills, _ = _r3_fixture()
    # every window member is a ground-truth skill: nothing may be a negative
    chosen, removed = _mine_r3(query, skill_emb, skills, [list(range(20, 50)) + [59]])
    assert chosen == [None] and removed == {"ground_truth": 30}


def test_r3_rule_on_a_pool_smaller_than_the_window_uses_the_lower_half():
    skills = [_filler(rank) for rank in range(10)]
    skill_emb = np.array([_vector(0.95 - 0.03 * rank, rank + 2) for rank in range(10)])
    chosen, removed = _mine_r3(np.eye(DIM)[:1], skill_emb, skills, [[0]])
    assert chosen == [5] and not removed  # ranks 5..9 are the lower half; rank 5 already has cosine < 0.85


def test_short_bodies_are_not_near_duplicates_of_each_other():
    query, skill_emb, skills, positives = _r3_fixture()
    skills = [{**s, "body": "tiny"} for s in skills]  # no word trigrams at all: no evidence of duplication
    chosen, removed = _mine_r3(query, skill_emb, skills, positives)
    assert chosen == [30] and "body_trigram_jaccard" not in removed


def test_skillrouter_rule_fills_its_four_sources_through_the_filter():
    domains = ["ops"] * 12 + ["data"] * 12
    skills = [_filler(i, d) for i, d in enumerate(domains)]
    skills[1]["name"] = skills[0]["name"]  # the top semantic neighbour is a same-name copy of the positive
    query = np.eye(DIM)[:1]
    skill_emb = np.array([_vector(0.95 - 0.02 * i, i + 2) for i in range(len(skills))])
    bm25_top = [[0, 2, 20, 21, 22, 23]]  # the positive and an already-taken skill come first
    mined, removed = _mine_skillrouter(query, skill_emb, skills, [[0]], bm25_top, seed=3)
    taken = mined[0]
    assert len(taken) == 10 and len(set(taken)) == 10 and 0 not in taken and 1 not in taken
    assert taken[:4] == [2, 3, 4, 5]  # semantic: by teacher rank, positive and same-name copy skipped
    assert taken[4:7] == [20, 21, 22]  # BM25: by BM25 rank, positive and skill 2 skipped
    assert all(skills[j]["super_domain"] == "ops" for j in taken[7:9])  # same super-domain as the positive
    assert skills[taken[9]]["super_domain"] == "data"  # one random other-domain skill
    assert removed["same_name"] >= 1
