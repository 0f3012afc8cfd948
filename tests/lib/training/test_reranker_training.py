"""Reranker training lists: label order and size, and the shuffled-SKIP control (ablation D)."""
from skill_assets.lib.training.reranker_training import build_list, shuffled_skip_partners


def test_list_puts_ground_truth_then_skip_partners_then_padding_without_repeats():
    lst = build_list("q", ["a", "b"], ["c", "a"], ["b", "d", "c", "e", "f", "g", "h", "i", "j", "k"], 10)
    assert lst.skill_ids == ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
    assert lst.labels == (3, 3, 1, 0, 0, 0, 0, 0, 0, 0)


def _query(qid: str, direction: str, k: int, partners: list[str], skills: list[str] | None = None) -> dict:
    return {"query_id": qid, "direction": direction, "k": k, "skip_partners": partners,
            "skill_ids": skills or [f"gt-{qid}"]}


def test_shuffled_control_swaps_partners_only_within_direction_and_k():
    queries = [_query(f"a{i}", "en2en", 2, [f"p-a{i}"]) for i in range(5)]
    queries += [_query(f"b{i}", "en2zh", 2, [f"p-b{i}"]) for i in range(3)]
    queries += [_query(f"c{i}", "en2en", 3, [f"p-c{i}", f"p-c{i}x"]) for i in range(2)]
    queries += [_query("lonely", "zh2zh", 2, ["p-lonely"])]
    for seed in range(5):
        out = shuffled_skip_partners(queries, seed)
        for group in ("a", "b", "c"):
            members = [q for q in queries if q["query_id"].startswith(group)]
            got = [out[q["query_id"]] for q in members]
            assert sorted(map(tuple, got)) == sorted(tuple(q["skip_partners"]) for q in members)  # a permutation
            assert all(out[q["query_id"]] != q["skip_partners"] for q in members)  # nobody keeps its own
        assert out["lonely"] == []  # no matched donor


def test_shuffled_control_never_labels_a_ground_truth_skill_as_partner():
    queries = [_query("x", "en2en", 2, ["s1"], ["s2", "s3"]), _query("y", "en2en", 2, ["s2"], ["s4", "s5"])]
    out = shuffled_skip_partners(queries, 0)
    assert out == {"x": [], "y": ["s1"]}
