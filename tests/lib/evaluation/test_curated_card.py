"""The curated dataset card is computed from the files: counts, super-domains, the rules' blind score."""
from pathlib import Path

from skill_assets.lib.evaluation.curated_benchmark import load_rejections, load_requests
from skill_assets.lib.evaluation.curated_card import (
    AGREEMENT_END,
    AGREEMENT_START,
    SuperDomain,
    count_tables,
    render_card,
    score_rules,
)
from skill_assets.lib.taxonomy.rules import RULESET_VERSION, TAXONOMY_CLASSES, match_rules

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "curated"
REQUESTS, REJECTIONS = load_requests(FIXTURE), load_rejections(FIXTURE)


def test_counts_follow_the_files():
    tables = count_tables(REQUESTS)
    assert "| en2en | 2 | 1 | 2 | 5 |" in tables["directions"]  # train, dev, test, all
    assert "| all | 3 | 1 | 4 | 8 |" in tables["directions"]
    assert "| 1 | 6 (75%) | 1 |" in tables["k"]  # one k=1 request lists a copy
    assert "| debug | 2 (25%) |" in tables["styles"]


def test_card_places_skills_in_super_domains_scores_the_rules_and_leaves_agreement_to_the_review():
    domain = {sid: (SuperDomain(0, "docker, data", 7) if sid.startswith("alpha") else SuperDomain(1, "report, 周报", 2))
              for r in REQUESTS for sid in r.gt} | {"other/skill": SuperDomain(2, "music", 1200)}
    rules = score_rules(REJECTIONS, lambda text: match_rules(text).label, TAXONOMY_CLASSES, RULESET_VERSION)
    assert rules.n == 2 and 0.0 <= rules.micro_f1 <= 1.0
    assert rules.per_class["domain_mismatch"][0] == 1 and rules.per_class["unknown"][0] == 0
    card = render_card(REQUESTS, REJECTIONS, domain, rules, "a test run", n_review=0)
    assert "8 requests and 2 SKIP decisions written **by hand" in card
    # 10 needed skills: 8 in super-domain 0 over 6 requests, 2 in super-domain 1 over 2 requests
    assert "| 0 | docker, data | 7 | 8 | 6 |" in card and "| 1 | report, 周报 | 2 | 2 | 2 |" in card
    assert "| 2 | music | 1,200 | 0 | 0 |" in card  # a super-domain no request needs is shown, not hidden
    assert f"micro-F1 {rules.micro_f1:.3f}" in card and RULESET_VERSION in card
    block = card[card.index(AGREEMENT_START):card.index(AGREEMENT_END)]
    assert "To be filled in by the review loop" in block and "4 test requests" in block
    unplaced = render_card(REQUESTS, REJECTIONS, {}, rules, "a run over another corpus", n_review=0)
    assert "not in the run's skill_clusters | – | 10 |" in unplaced
