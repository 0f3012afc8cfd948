"""Reviewers' taxonomy verdicts become labelled rationales: confirmed, corrected, or left out."""
from skill_assets.lib.review.agreement import latest_items
from skill_assets.lib.taxonomy.review_labels import named_class, review_labelled_rationales


def _task(item, label, rationale):
    return {"item_id": item, "kind": "taxonomy", "round": 1, "taxonomy_label": label, "rationale": rationale}


def _agreement(item, status, majority):
    return {"scope": "item", "item_id": item, "kind": "taxonomy", "round": 1, "status": status, "majority": majority,
            "source": "pipeline"}


def _verdict(item, reviewer, decision, comment=None):
    return {"item_id": item, "round": 1, "kind": "taxonomy", "reviewer": reviewer, "decision": decision,
            "comment": comment}


def test_named_class_reads_a_class_by_name():
    assert named_class("should be Audience mismatch, not domain") == "audience_mismatch"
    assert named_class("platform_exclusive") == "platform_exclusive"
    assert named_class("wrong") is None


def test_settled_items_become_labelled_rationales():
    tasks = [_task("taxonomy:a", "domain_mismatch", "Unrelated domains."),
             _task("taxonomy:b", "domain_mismatch", "两者用户群体不同。"),
             _task("taxonomy:c", "forced_chaining", "Forced."),
             _task("taxonomy:d", "forced_chaining", "Forced too.")]
    verdicts = [_verdict("taxonomy:a", "r1", "correct"), _verdict("taxonomy:a", "r2", "correct"),
                _verdict("taxonomy:b", "r1", "incorrect", "audience_mismatch"),
                _verdict("taxonomy:b", "r2", "incorrect", "the audience mismatch class"),
                _verdict("taxonomy:c", "r1", "incorrect", "domain_mismatch"),
                _verdict("taxonomy:c", "r2", "incorrect", "granularity_mismatch"),
                _verdict("taxonomy:d", "r1", "incorrect", "audience_mismatch")]
    agreement = [_agreement("taxonomy:a", "settled", "correct"), _agreement("taxonomy:b", "settled", "incorrect"),
                 _agreement("taxonomy:c", "settled", "incorrect"), _agreement("taxonomy:d", "disputed", None)]
    rows = review_labelled_rationales(tasks, verdicts, latest_items(agreement))
    assert [(r["item_id"], r["label"], r["outcome"], r["lang"]) for r in rows] == [
        ("taxonomy:a", "domain_mismatch", "confirmed", "en"), ("taxonomy:b", "audience_mismatch", "corrected", "zh")]


def test_a_corrected_model_label_becomes_a_labelled_rationale_that_says_so():
    tasks = [_task("taxonomy:m", "domain_mismatch", "Whoever tunes an oven is not writing a gRPC server.")
             | {"taxonomy_method": "model"}, _task("taxonomy:r", "forced_chaining", "Forced.")]
    verdicts = [_verdict("taxonomy:m", "r1", "incorrect", "audience_mismatch"),
                _verdict("taxonomy:m", "r2", "incorrect", "audience mismatch"),
                _verdict("taxonomy:r", "r1", "correct"), _verdict("taxonomy:r", "r2", "correct")]
    agreement = [_agreement("taxonomy:m", "settled", "incorrect"), _agreement("taxonomy:r", "settled", "correct")]
    rows = review_labelled_rationales(tasks, verdicts, latest_items(agreement))
    assert [(r["item_id"], r["label"], r["outcome"], r["shown_label"], r["shown_method"]) for r in rows] == [
        ("taxonomy:m", "audience_mismatch", "corrected", "domain_mismatch", "model"),
        ("taxonomy:r", "forced_chaining", "confirmed", "forced_chaining", "rule")]  # a task from before: a rule hit
