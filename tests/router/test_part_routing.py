"""Part-wise routing on the toy bilingual pool (real signals, the toy fusion): a request of one part routes exactly
as ``Engine.route`` does, the merge lifts each part's best skill into the top k of a long request, and a request of
five parts loads each part's best skill."""
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import load_router_model  # noqa: E402
from skill_assets.lib.retrieval.part_routing import MAX_PARTS, route_by_parts  # noqa: E402
from skill_assets.lib.retrieval.selection import PARTS_MAX, PARTS_MOST  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.lib.retrieval.task_parts import need_parts, task_parts  # noqa: E402
from skill_assets.router import Router  # noqa: E402

#: the background names other skills' topics, to pull the whole request toward them (it is left out as setup)
LONG = """Ticket INFRA-7: our small web shop has to be ready for the spring sale next week.

Background: every week the team squashes its commits with an interactive rebase before review, cleans the CSV exports
of the shop with pandas (duplicated rows, dates read as text), fills in the PDF forms of the tax office and posts build
alerts to the DingTalk group. None of that needs help this time.

1. The web container and the database container in our compose project cannot reach each other by service name.
2. A query on the orders table takes nine seconds; read its plan and add the index it is missing.
3. Our designer is applying for a new job and asks for a one-page letter for the application.

Constraints: nothing may be deployed on Friday, and every change needs a second reviewer."""
NEEDS = {"devops/docker-compose-networking", "db/postgres-index-tuning", "writing/cover-letter"}
#: five needs, one a step, each of another toy skill: more than the cut's cap of three
FIVE = """Before the audit on Monday:

1. The web container and the database container in our compose project cannot reach each other by service name.
2. A query on the orders table takes nine seconds; read its plan and add the index it is missing.
3. Our designer is applying for a new job and asks for a one-page letter for the application.
4. The tax office sent us a PDF form: fill in its fields and flatten it so that nobody can edit the entries.
5. The sales export is a CSV file with duplicated rows and a date column read as text; clean it with pandas."""
FIVE_NEEDS = NEEDS | {"docs/pdf-form-filling", "data/pandas-csv-cleaning"}
SHORT = ["my docker compose containers cannot reach each other by service name",
         "订单表上的一个查询要跑九秒，看看执行计划应该加什么索引",
         "My compose services cannot reach each other. How do I fix it?"]


@pytest.fixture(scope="module")
def fused(toy):
    """The toy pool routed by the fusion and cut fitted on the toy requests."""
    router, _, _, _, folder, root = toy
    fusion, cut = load_router_model(folder)
    engine = Engine(bundled_minilm(), cache_dir=root / "cache", fitted=FittedRouting(fusion, cut), signals=SIGNALS)
    engine.index(router.skills)
    return engine


def test_a_request_of_one_part_routes_exactly_as_before(fused):
    assert all(len(task_parts(q)) == 1 for q in SHORT)
    before = [r.as_dict() for r in fused.route(SHORT, top_k=5)]
    assert [r.as_dict() for r in route_by_parts(fused, SHORT, top_k=5)] == before
    for query in SHORT:
        assert route_by_parts(fused, [query], top_k=5)[0].as_dict() == fused.route([query], top_k=5)[0].as_dict()
    # beside a long request in one call: the same skills and selection (a batch of other size pads the encoders'
    # inputs otherwise, which moves a score in its last digits, as it does for Engine.route itself)
    mixed = route_by_parts(fused, [SHORT[0], LONG, SHORT[1]], top_k=5)
    for got, want in zip([mixed[0], mixed[2]], before[:2]):
        assert [r.skill_id for r in got.ranking] == [r["skill_id"] for r in want["ranking"]]
        assert got.selected == want["selected"]
        assert [r.score for r in got.ranking] == pytest.approx([r["score"] for r in want["ranking"]], abs=1e-4)


def test_a_request_of_more_parts_than_a_task_statement_has_routes_whole(fused):
    """A paste of many steps costs one encoding per part and is no task statement: it is routed as the engine does."""
    steps = "\n".join(f"{n}. The web container and the database container number {n} cannot reach each other by "
                      "service name in our compose project." for n in range(1, MAX_PARTS + 6))
    assert len(need_parts(task_parts(steps))) > MAX_PARTS
    fewer = "\n".join(steps.splitlines()[:4])
    assert 1 < len(need_parts(task_parts(fewer))) <= MAX_PARTS
    routed_whole: list[str] = []

    def whole(texts: list[str]):
        routed_whole.extend(texts)
        return fused.route(texts, top_k=5)

    got = route_by_parts(fused, [fewer, steps], top_k=5, route_whole=whole)
    assert routed_whole == [steps]
    assert got[1].as_dict() == fused.route([steps], top_k=5)[0].as_dict()


def test_the_merge_puts_each_parts_best_skill_in_the_top_k(fused):
    parts = need_parts(task_parts(LONG))
    assert len(parts) == 4 and not any(p.startswith(("Background", "Constraints")) for p in parts)
    steps = [p for p in parts if p[0].isdigit()]  # the three needs; the fourth part is the ticket's title
    best = {r.ranking[0].skill_id for r in fused.route(steps, top_k=1)}  # each step's best skill, routed alone
    assert best == NEEDS
    (merged,) = route_by_parts(fused, [LONG], top_k=10)
    assert {r.skill_id for r in merged.ranking[:len(NEEDS)]} == NEEDS
    assert merged.signals_used == tuple(fused.fusion.signals) and 1 <= len(merged.selected) <= len(parts)


def test_the_router_routes_a_long_request_by_its_parts_and_a_short_one_as_the_engine(fused):
    """What ``route``, ``serve`` and ``Router.route`` answer: the merged ranking for a long task statement, the
    engine's own for a request of one part (abstention included there)."""
    router = Router(fused)
    (long_,) = router.route([LONG], top_k=10)
    assert long_.as_dict() == route_by_parts(fused, [LONG], top_k=10)[0].as_dict()
    assert long_.as_dict() != fused.route([LONG], top_k=10)[0].as_dict()
    assert {r.skill_id for r in long_.ranking[:len(NEEDS)]} == NEEDS
    assert [r.as_dict() for r in router.route(SHORT, top_k=5)] == [r.as_dict() for r in fused.route(SHORT, top_k=5)]


def test_the_merge_lifts_only_the_parts_best_skills(fused):
    """A skill no part chose keeps the whole request's fused score: the merge adds evidence, it does not reorder
    the rest."""
    best = {r.ranking[0].skill_id for r in fused.route(need_parts(task_parts(LONG)), top_k=1)}  # title's too
    whole = {r.skill_id: r.score for r in fused.route([LONG], top_k=10)[0].ranking}
    (merged,) = route_by_parts(fused, [LONG], top_k=10)
    for r in merged.ranking:
        if r.skill_id in best:
            assert r.score >= whole[r.skill_id] - 1e-6
        else:
            assert r.score == pytest.approx(whole[r.skill_id], abs=1e-6)


def test_while_only_bm25_is_indexed_a_long_request_routes_as_the_whole(fused, toy):
    router, _, _, _, folder, root = toy
    fusion, cut = load_router_model(folder)
    lexical = Engine(bundled_minilm(), cache_dir=root / "cache", fitted=FittedRouting(fusion, cut), signals=SIGNALS)
    lexical.start_index(router.skills, encoders="skip")
    (answer,) = route_by_parts(lexical, [LONG], top_k=5)
    assert answer.signals_used == ("bm25",) and answer.as_dict() == lexical.route([LONG], top_k=5)[0].as_dict()


def test_a_request_of_five_parts_loads_each_parts_best_skill(fused):
    """The cut alone loads at most its cap of three; a request routed by five need parts loads each part's best
    skill (as each part routed alone ranks it first) where up to five may be loaded, and the first four by default."""
    parts = need_parts(task_parts(FIVE))
    assert len(parts) == 5
    assert {r.ranking[0].skill_id for r in fused.route(parts, top_k=1)} == FIVE_NEEDS
    (five,) = route_by_parts(fused, [FIVE], top_k=10, most=PARTS_MAX)
    assert fused.selection.cap == 3 and len(five.selected) == 5 and set(five.selected) == FIVE_NEEDS
    (routed,) = Router(fused).route([FIVE], top_k=10)  # what a user gets: the part-wise path
    assert routed.selected == five.selected[:PARTS_MOST] and PARTS_MOST > fused.selection.cap
    (cut_alone,) = route_by_parts(fused, [FIVE], top_k=10, most=fused.selection.cap, part_probability=1.0)
    assert [r.as_dict() for r in cut_alone.ranking] == [r.as_dict() for r in routed.ranking]
    assert 1 <= len(cut_alone.selected) <= 3 and cut_alone.selected == routed.selected[:len(cut_alone.selected)]


def test_a_request_of_many_parts_loads_at_most_six(fused):
    """Ten need parts, each asking for a toy skill, every part's best skill passing (probability 0): six loaded,
    whatever more is asked."""
    steps = [p.split(". ", 1)[1] for p in FIVE.splitlines()[2:]] + [
        "Rewrite our local git history with an interactive rebase and squash the fixup commits into one.",
        "Post a markdown alert to our DingTalk group through the robot webhook when the nightly build fails.",
        "Extract the amounts and the tax from these photos of VAT invoices for the expense claim of the trip.",
        "Download the daily prices of a Shanghai-listed stock, compute the 20-day moving average, plot candles.",
        "Turn the markdown post of the release into rich text we can paste into the WeChat official account editor."]
    many = "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1))
    assert len(need_parts(task_parts(many))) == 10
    (routed,) = route_by_parts(fused, [many], top_k=10, cap=10, most=10, part_probability=0.0)
    assert len(routed.selected) == PARTS_MAX == 6
    (lower,) = route_by_parts(fused, [many], top_k=10, cap=4, most=10, part_probability=0.0)
    assert lower.selected == routed.selected[:4]
