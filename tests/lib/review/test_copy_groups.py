"""Copy groups of two label sets: listing other copies of a skill is agreement, not a correction."""
from skill_assets.lib.review.copy_groups import unify_copy_groups


def test_groups_sharing_a_member_are_one_skill_named_by_the_first_label_set():
    writer = [["a/ynab", "b/ynab", "c/ynab"], ["a/budget"]]
    reviewer = [["c/ynab", "d/ynab"], ["a/budget"], ["a/extra"]]
    first, second, members = unify_copy_groups(writer, reviewer)
    assert first == ["a/ynab", "a/budget"]
    assert second == ["a/ynab", "a/budget", "a/extra"]
    assert members == {"a/ynab", "b/ynab", "c/ynab", "d/ynab", "a/budget", "a/extra"}


def test_a_reviewer_group_bridging_two_writer_groups_merges_them():
    first, second, _ = unify_copy_groups([["x"], ["y"]], [["x", "y"]])
    assert first == ["x"] and second == ["x"]
