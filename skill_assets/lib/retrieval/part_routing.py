"""Route a long request by its parts as well as whole, so that every need it states can reach the top k.

A task statement needs two to six skills for distinct parts, and one query over all of it ranks the skills of the
part that dominates its words and loses the others (issue 33). Here the whole request and each of its need parts
(``task_parts.need_parts(task_parts(...))``) are scored with every signal and fused by the engine's own fusion,
and the rankings are merged by a coverage-aware noisy-OR:

    P(s) = 1 - (1 - P_whole(s)) * prod over the parts p whose best candidate is s of (1 - P_p(s))

over the whole request's first ``CANDIDATES`` fused skills, where ``P`` is the fused score read as a probability by
the selection cut's Platt scaling (what the cut itself reads). Each part adds evidence to one skill only, its best
among the whole's candidates, so a part's best skill rises by that part's own confidence and a skill many parts
merely mention does not crowd it out. The whole's candidates bound the merge: on the long-task dev split a part's
best skill from the whole pool was a needed one for 43 % of the parts where the whole ranked it in its first 50,
and for 2 % elsewhere (setup sentences find an unrelated skill with confidence). The merged probability is mapped
back to the fused-score scale (the inverse Platt), so the ranking's scores and the cut's reading of them mean what
they mean on the whole-request path; the skills past the candidates follow in the whole's order.

Chosen on the dev splits (the long-task dev split, 65 tasks, and the short dev sets, which must not get worse).
Against the whole request alone (Hit@1 / NDCG@10 / Set-Compat / FC@10 47.7 / 48.5 / 13.8 / 33.8 on long dev,
BM25 38.5 / 37.4 / 13.8 / 27.7), scored while it was built: reciprocal-rank fusion of the whole's and every part's
ranking (at best 47.7 / 51.5 / 20.0 / 36.9, and below the whole at its usual constant 60), a greedy
facility-location cover of the parts (50.8 / 53.4 / 10.8 / 40.0: it covers the setup parts too), a max over the
parts' per-signal z-scores fused once, merged with the whole (61.5 / 55.1 / 12.3 / 36.9), and this merge
(56.9 / 57.2 / 16.9 / 41.5; 63.1 / 58.3 / 18.5 / 41.5 with the setup parts left out). A part's weight in the
noisy-OR of 0.5 instead of 1 was lower on long dev, 1.5 a task higher there but a request lower on curated dev's
Set-Compat, and a part's best three skills instead of one lower; ``bench/long_tasks.py --choose`` scores the
candidate depth and the setup parts again. The short dev sets route as before or better
(their requests of several parts are a few percent).

How many of the merged skills are loaded is the selection cut's (``SelectionCut.select_by_parts``): a request of
more need parts than the cut's cap may load each part's best skill, up to four.

The abstention reads the whole request, as it reads a short one (``Pipeline.route``): where no skill fits it, the
merged answer selects none and says why, its ranking kept. Small talk or an errand list written in numbered items is
routed by its parts and would otherwise load a skill per item; of the 161 long-task train and dev statements, none
abstains (each names needs the pool serves, and its best scores say so).

A request of one part, an engine without a fusion, or one whose encoders' indexes are still building, routes
exactly as ``Engine.route`` does. Merged rankings are not reranked: the cross-encoder reads the head of one text,
and a long statement is past what it reads.

Latency: issue 33 asks 150 ms p50 for a 600-word request over 10,000 skills on 2 cores;
``bench/long_request_latency.py`` measures about 0.86 s on a quiet machine, nearly all of it the bi-encoder reading
the whole (about 1,060 tokens, in pieces) and the need parts (about 900) in fp32: 0.71 s there, on the one thread a
request runs on (``threads.request_threads``; measured alone, numpy four pieces a call: 0.75 s on one thread, 0.47 on
both cores; torch one piece a call: 0.89 and 0.65). Both cores are not taken for a long request: with two other BLAS
jobs on the two cores the same encoding took 5.3 s on two threads, 2.0 on one, and no default reads the load first.
Ways to read less were measured on long dev (part-wise Hit@1 / Set-Compat / FC@10 55.4 / 18.5 / 46.2 as shipped; BM25
38.5 / 13.8 / 27.7) and left out, since each lowers the coverage the issue asks first (Set-Compat and FC@10): the
whole's dense row as the best of its parts' rows, so the whole is not read again, 55.4 / 15.4 / 44.6; a static
request encoder (a token vector table over the bi-encoder's vocabulary, fitted by cosine regression to the
bi-encoder's vectors of 41,803 pieces of corpus text; validation cosine 0.88; about 1 ms a request) for the whole and
its parts, 52.3 / 15.4 / 40.0, and the same table from model2vec's distillation of the bi-encoder alone, 60.0 / 12.3
/ 38.5; int8 dynamic quantisation of the bi-encoder's linear layers read the request's pieces at cosine 0.87-0.93 to
fp32 and was not routed.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.multilingual import DESCRIPTION_READING
from skill_assets.lib.retrieval.pipeline import Pipeline
from skill_assets.lib.retrieval.pool_index import PoolIndex
from skill_assets.lib.retrieval.results import Fused, RankedSkill, RoutedRequest
from skill_assets.lib.retrieval.selection import PART_PROBABILITY, PARTS_MOST
from skill_assets.lib.retrieval.task_parts import need_parts, task_parts

#: how many of the whole request's fused skills the parts may lift: the fusion's own candidate depth
CANDIDATES = 50
#: the most parts a request is routed by: the hand-written task statements have at most 13 need parts and a 600-word
#: one 24; a paste of many more (a 20,000-character log made about 60) is no task statement the merge was chosen on,
#: and scoring each part costs one encoding (that paste took 44 s of wall time by parts), so it is routed whole
MAX_PARTS = 24


def route_by_parts(engine: Engine, queries: list[str], top_k: int = 20, cap: int | None = None,
                   candidates: int = CANDIDATES, setup_parts: bool = False, most: int = PARTS_MOST,
                   part_probability: float = PART_PROBABILITY,
                   route_whole: Callable[[list[str]], list[RoutedRequest]] | None = None,
                   checkpoint: Callable[[], None] = lambda: None) -> list[RoutedRequest]:
    """``Engine.route`` for requests that may be long task statements: each request of several parts is scored
    whole and part by part and merged (the module's docstring); every other request (one part, or more than
    ``MAX_PARTS``) is routed by ``route_whole`` (default ``engine.route``; ``Router.route``, which routes through
    here, passes the engine's own).

    ``candidates`` (how many of the whole's skills the parts may lift), ``setup_parts`` (keep the parts a section
    label marks as setting, which ``need_parts`` leaves out), and ``most`` and ``part_probability`` (how many skills
    it loads: ``SelectionCut.select_by_parts``) are what ``bench/long_tasks.py`` varies; the defaults are the
    settings chosen on dev. The whole requests and all their parts are scored in one call per signal (each
    encoder reads them a few pieces a call: ``dense.QUERY_GROUP``); ``checkpoint()`` is called between those calls
    and the stages (``serve``)."""
    if top_k < 1:
        raise ValueError("top_k must be >= 1")
    route_whole = route_whole or (lambda texts: engine.route(texts, top_k=top_k, cap=cap))
    split = {i: task_parts(q) for i, q in enumerate(queries)}
    split = {i: parts if setup_parts else need_parts(parts) for i, parts in split.items() if len(parts) > 1}
    split = {i: parts for i, parts in split.items() if len(parts) <= MAX_PARTS}
    pool, pipeline = engine.pool, engine.pipeline  # one index for the whole call, whatever a build publishes meanwhile
    if not split or pipeline.fusion is None or not pipeline.is_complete(pool):
        return route_whole(queries)
    out: dict[int, RoutedRequest] = {}
    if whole_only := [i for i in range(len(queries)) if i not in split]:
        out.update(zip(whole_only, route_whole([queries[i] for i in whole_only])))
    texts = [t for i, parts in split.items() for t in (queries[i], *parts)]
    scores = pipeline.scores(pool, texts, pipeline.fusion.signals, checkpoint)
    fused = pipeline.fused(pool, texts, scores, checkpoint)
    rows, merged, row = [], [], 0  # each whole request's row in ``texts`` (its parts' rows follow it), its answer
    for i, parts in split.items():
        rows.append(row)
        merged.append(_merged(pipeline, queries[i], fused[row], fused[row + 1:row + 1 + len(parts)], top_k, cap,
                              candidates, pool, most, part_probability))
        row += 1 + len(parts)
    abstention = pipeline.fitted.abstention
    if abstention:
        merged = abstention.apply([queries[i] for i in split], [fused[r] for r in rows], merged, pool,
                                  scores[DESCRIPTION_READING][rows], checkpoint)
    out.update(zip(split, merged))
    return [out[i] for i in range(len(queries))]


def route_as_user(engine: Engine, queries: list[str], top_k: int = 20, rerank_depth: int = 20,
                  use_reranker: bool = True, cap: int | None = None,
                  checkpoint: Callable[[], None] = lambda: None) -> list[RoutedRequest]:
    """How a user's requests are routed (``Router.route``, the evaluation's ``router:default``): a long task
    statement of several need parts whole and part by part, merged (over the shipped router, on the long-task dev
    split, 65 tasks: Set-Compat 10.8 -> 20.0, FC@10 36.9 -> 46.2, Hit@1 53.8 -> 52.3, one task; the short dev sets
    within one request); a request of one part exactly as ``Engine.route`` routes it."""
    return route_by_parts(engine, queries, top_k, cap, checkpoint=checkpoint, route_whole=lambda texts: engine.route(
        texts, top_k, rerank_depth, use_reranker, cap, checkpoint))


def _merged(pipeline: Pipeline, query: str, whole: Fused, parts: Sequence[Fused], top_k: int, cap: int | None,
            candidates: int, pool: PoolIndex, most: int, part_probability: float) -> RoutedRequest:
    """One request's merged ranking and selection (the noisy-OR of the module's docstring)."""
    cut = pipeline.fitted.selection
    head = [int(j) for j in whole.order[:candidates]]
    row_of = {int(whole.cands.rows[j]): j for j in head}
    miss = {j: 1.0 - cut.platt.probability(float(whole.scores[j])) for j in head}  # P(no evidence serves s)
    lifted: set[int] = set()  # the parts' best skills
    for part in parts:
        best = next((int(k) for k in part.order if int(part.cands.rows[k]) in row_of), None)
        if best is not None:
            j = row_of[int(part.cands.rows[best])]
            miss[j] *= 1.0 - cut.platt.probability(float(part.scores[best]))
            lifted.add(j)
    merged = sorted(((cut.platt.fused_score(1.0 - miss[j]), -n, j) for n, j in enumerate(head)), reverse=True)
    order = [j for _, _, j in merged] + [int(j) for j in whole.order[candidates:]]
    scores = {j: s for s, _, j in merged} | {int(j): float(whole.scores[j]) for j in whole.order[candidates:]}
    names = pipeline.fusion.signals
    ranked = [RankedSkill(pool.ids[whole.cands.rows[j]], scores[j],
                          {**{n: round(float(whole.cands.raw[j, i]), 6) for i, n in enumerate(names)},
                           "fused": round(scores[j], 6)})
              for j in order[:top_k]]
    selected = cut.select_by_parts([(pool.ids[whole.cands.rows[j]], scores[j]) for j in order], pool.cosine,
                                   query, {pool.ids[whole.cands.rows[j]] for j in lifted}, len(parts), cap, most,
                                   part_probability)
    return RoutedRequest(ranked, selected, tuple(names))
