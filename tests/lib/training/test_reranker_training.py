"""Reranker training lists: label order and size, and the shuffled-SKIP control (ablation D)."""
from skill_assets.lib.training.reranker_training import build_list, shuffled_skip_partners
from skill_assets.lib.training.training_queries import TrainingQuery


def test_list_puts_ground_truth_then_skip_partners_then_padding_without_repeats():
    lst = build_list("q", ["a", "b"], ["c", "a"], ["b", "d", "c", "e", "f", "g", "h", "i", "j", "k"], 10)
    assert lst.skill_ids == ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
    assert lst.labels == (3, 3, 1, 0, 0, 0, 0, 0, 0, 0)


def _query(qid: str, direction: str, k: int, partners: list[str], skills: list[str] | None = None
           ) -> TrainingQuery:
    return TrainingQuery(qid, f"request {qid}", tuple(skills or [f"gt-{qid}"]), tuple(partners), direction=direction,
                         k=k)


def test_shuffled_control_swaps_partners_only_within_direction_and_k():
    queries = [_query(f"a{i}", "en2en", 2, [f"p-a{i}"]) for i in range(5)]
    queries += [_query(f"b{i}", "en2zh", 2, [f"p-b{i}"]) for i in range(3)]
    queries += [_query(f"c{i}", "en2en", 3, [f"p-c{i}", f"p-c{i}x"]) for i in range(2)]
    queries += [_query("lonely", "zh2zh", 2, ["p-lonely"])]
    for seed in range(5):
        out = shuffled_skip_partners(queries, seed)
        for group in ("a", "b", "c"):
            members = [q for q in queries if q.id.startswith(group)]
            got = [out[q.id] for q in members]
            assert sorted(map(tuple, got)) == sorted(q.skip_partners for q in members)  # a permutation
            assert all(tuple(out[q.id]) != q.skip_partners for q in members)  # nobody keeps its own
        assert out["lonely"] == []  # no matched donor


def test_shuffled_control_never_labels_a_ground_truth_skill_as_partner():
    queries = [_query("x", "en2en", 2, ["s1"], ["s2", "s3"]), _query("y", "en2en", 2, ["s2"], ["s4", "s5"])]
    out = shuffled_skip_partners(queries, 0)
    assert out == {"x": [], "y": ["s1"]}


def test_a_residual_list_at_a_zero_head_scores_exactly_its_prior():
    """A reranker trained as a correction of the first stage starts as that stage: the loss of a list with a prior,
    under a head at zero, is the listwise loss of the prior alone, and its gradient reaches the head."""
    import torch
    from sentence_transformers import CrossEncoder

    from skill_assets.lib.models.bundled_models import bundled_minilm
    from skill_assets.lib.training.reranker_training import RerankList, build_loss, reranker_batch_loss

    model = CrossEncoder(str(bundled_minilm()), num_labels=1, max_length=64, device="cpu",
                         activation_fn=torch.nn.Identity())
    head = model[0].model.classifier
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    texts = {"a": "merge pdf files into one document", "b": "deploy containers with compose", "c": "tune a guitar"}
    prior = (2.0, 0.5, -1.0)
    lst = RerankList("combine two pdfs", ("a", "b", "c"), (3, 0, 0), prior)
    loss = build_loss("listwise_ce")
    model.eval()  # no dropout: the head's output is exactly 0
    got = reranker_batch_loss(model, loss, [lst], texts)
    expected = -torch.log_softmax(torch.tensor(prior), 0)[0]
    assert abs(float(got) - float(expected)) < 1e-6
    got.backward()
    assert head.weight.grad is not None and float(head.weight.grad.abs().sum()) > 0
    plain = reranker_batch_loss(model, loss, [RerankList(lst.query, lst.skill_ids, lst.labels)], texts)
    assert abs(float(plain) - float(torch.log(torch.tensor(3.0)))) < 1e-6  # without a prior: a uniform list
