"""The dataset card (``README.md``) of the curated benchmark, generated from its files.

Every count in the card is computed here from ``requests.jsonl`` and ``rejections.jsonl``, so the
card cannot drift from the data; the super-domain counts come from the ``skill_clusters`` of a
pipeline run over the same corpus (``bench/curated_card.py`` reads them from its DuckDB file),
and the taxonomy figures from running the project's rejection rules on the hand labels.
Agreement of the second pass is left to the review loop, in a marked block it fills.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from skill_assets.lib.common.language import DIRECTIONS
from skill_assets.lib.evaluation.curated_benchmark import SPLITS, STYLES, CuratedRejection
from skill_assets.lib.retrieval.requests import Request

#: the block the review loop replaces with the agreement figures (exact-set and per-skill)
AGREEMENT_START, AGREEMENT_END = "<!-- agreement:start -->", "<!-- agreement:end -->"


@dataclass(frozen=True)
class SuperDomain:
    """A skill's super-domain in a pipeline run: its number, its c-TF-IDF keywords and its kept skills."""

    id: int
    keywords: str
    size: int


@dataclass(frozen=True)
class RuleScores:
    """The taxonomy rules' labels against the hand labels: micro-F1 and per-class precision / recall / F1."""

    micro_f1: float
    n: int
    per_class: dict[str, tuple[int, float, float, float]]  # label -> (hand-labelled n, P, R, F1)
    ruleset_version: str


def score_rules(rejections: Sequence[CuratedRejection], classify: Callable[[str], str], classes: Iterable[str],
                ruleset_version: str) -> RuleScores:
    """Single-label classes with ``unknown`` among them, so micro-P = micro-R = micro-F1 = accuracy
    (as ``tests/lib/taxonomy/test_rules_quality.py`` measures it on the rules' own test set)."""
    tp, fp, fn = Counter(), Counter(), Counter()
    for r in rejections:
        predicted = classify(r.rationale)
        if predicted == r.label:
            tp[predicted] += 1
        else:
            fp[predicted] += 1
            fn[r.label] += 1
    support = Counter(r.label for r in rejections)
    per_class = {}
    for label in classes:
        p = tp[label] / (tp[label] + fp[label]) if tp[label] + fp[label] else 0.0
        rec = tp[label] / (tp[label] + fn[label]) if tp[label] + fn[label] else 0.0
        per_class[label] = (support[label], p, rec, 2 * p * rec / (p + rec) if p + rec else 0.0)
    return RuleScores(sum(tp.values()) / len(rejections) if rejections else 0.0, len(rejections), per_class,
                      ruleset_version)


def _table(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _share(n: int, total: int) -> str:
    return f"{n} ({100 * n / total:.0f}%)" if total else "0"


def count_tables(requests: Sequence[Request]) -> dict[str, str]:
    """Markdown tables of the requests by direction × split, k, style and language."""
    total = len(requests)
    by = Counter((r.direction, r.split) for r in requests)
    directions = _table(["direction", *SPLITS, "all"],
                        [[d, *(by[d, s] for s in SPLITS), sum(by[d, s] for s in SPLITS)] for d in DIRECTIONS]
                        + [["all", *(sum(by[d, s] for d in DIRECTIONS) for s in SPLITS), total]])
    ks = Counter(r.k for r in requests)
    copies = Counter(r.k for r in requests if any(len(g) > 1 for g in r.groups))
    k_table = _table(["k (skills needed)", "requests", "with a copy group"],
                     [[k, _share(ks[k], total), copies[k]] for k in sorted(ks)])
    styles = Counter(r.writing.style for r in requests)
    style_table = _table(["style", "requests"], [[s, _share(styles[s], total)] for s in STYLES if styles[s]])
    return {"directions": directions, "k": k_table, "styles": style_table}


def super_domain_table(requests: Sequence[Request], domain_of: Mapping[str, SuperDomain]) -> str:
    """Needed skills (each request's groups, by the group's first skill) per super-domain of the run, and requests
    touching it; a super-domain no request needs is listed with zeros, so a reader sees what was left out."""
    skills, touching = Counter(), Counter()
    domains = {d.id: d for d in domain_of.values()}
    unplaced = 0
    for r in requests:
        seen = set()
        for group in r.groups:
            domain = domain_of.get(group[0])
            if domain is None:
                unplaced += 1
                continue
            skills[domain.id] += 1
            seen.add(domain.id)
        for d in seen:
            touching[d] += 1
    rows = [[d, domains[d].keywords, f"{domains[d].size:,}", skills[d], touching[d]] for d in sorted(domains)]
    if unplaced:
        rows.append(["–", "not in the run's skill_clusters", "–", unplaced, "–"])
    return _table(["super-domain", "keywords (c-TF-IDF)", "kept skills in the corpus", "needed skills",
                   "requests touching it"], rows)


def rejection_table(rejections: Sequence[CuratedRejection]) -> str:
    by = Counter((r.label, r.lang) for r in rejections)
    labels = sorted({r.label for r in rejections})
    return _table(["taxonomy class (hand label)", "en rationales", "zh rationales", "all"],
                  [[lab, by[lab, "en"], by[lab, "zh"], by[lab, "en"] + by[lab, "zh"]] for lab in labels]
                  + [["all", sum(by[lab, "en"] for lab in labels), sum(by[lab, "zh"] for lab in labels),
                      len(rejections)]])


def rules_section(scores: RuleScores) -> str:
    rows = [[label, n, f"{p:.3f}", f"{r:.3f}", f"{f:.3f}"] for label, (n, p, r, f) in scores.per_class.items()]
    return (f"The project's rejection-taxonomy rules (`lib/taxonomy/rules.py`, ruleset {scores.ruleset_version}), "
            f"tuned on their own test set, run blind on these {scores.n} hand-labelled rationales: "
            f"**micro-F1 {scores.micro_f1:.3f}** (one label per rationale, `unknown` counted as a class, so "
            "micro-F1 = accuracy), measured before any rule change.\n\n"
            + _table(["class", "hand-labelled", "precision", "recall", "F1"], rows))


def render_card(requests: Sequence[Request], rejections: Sequence[CuratedRejection],
                domain_of: Mapping[str, SuperDomain], rules: RuleScores, run: str, n_review: int) -> str:
    """The whole card, its sections in reading order. ``run`` names the pipeline run the super-domains come
    from; ``n_review`` counts ``review.jsonl`` lines (the second pass)."""
    n_test = sum(r.split == "test" for r in requests)
    copies = sum(len(g) > 1 for r in requests for g in r.groups)
    return "\n".join([_intro(len(requests), len(rejections), n_review), _method_section(copies),
                      _counts_section(requests, domain_of, run), _rejections_section(rejections, rules),
                      _limits_section(n_test)])


def _intro(n_requests: int, n_rejections: int, n_review: int) -> str:
    """What the benchmark is and the files that hold it."""
    return f"""# Curated skill-routing benchmark

{n_requests} requests and {n_rejections} SKIP decisions written **by hand by the skill-assets team** over
real skills: the SKILL.md files of 33 public GitHub repositories (`../shared/corpus/github-skills`, pinned in
`sources.yaml`). English and Chinese, four directions, one to three skills per request. This folder holds only
what the team wrote (requests, decisions, labels, skill ids), never a copy of a skill.

_Generated by `bench/curated_card.py` from the files beside it; do not edit by hand._

## Files

| file | one line per | fields |
|---|---|---|
| `requests.jsonl` | request | `id`, `query`, `lang`, `direction`, `k`, `gt` (every acceptable skill id), `gt_groups` (one group per needed skill: the skill written for, then every interchangeable copy), `style`, `split`, `topic`, `writer` |
| `rejections.jsonl` | SKIP decision on a 2–3-skill set | `id`, `skills`, `direction`, `rationale`, `lang`, `label` (taxonomy class, by hand), `writer` |
| `review.jsonl` | test request, second pass | `id`, `writer_gt_groups`, `reviewer_gt_groups`, `reviewer`, `resolution`, `final_gt_groups`, `why` ({n_review} lines) |
| `sources.yaml` | repository | the 33 repositories as git sources at the commits of the corpus's `MANIFEST.jsonl` |

A skill id is `<owner>__<repo>/<skill folder inside the repository>`. The same id names the same skill whether
the pool is the shared folder (`$SKILL_ASSETS_CURATED_POOL=../shared/corpus/github-skills/repos`; for the
pipeline a sources file with `subfolders: true` over it, see `shared_folder_sources.yaml`) or the repositories
rebuilt from `sources.yaml` (`SKILL_ASSETS_SOURCES_FILE=skill_assets/benchmarks/curated/sources.yaml`, or the
same file as `$SKILL_ASSETS_CURATED_POOL`). A ground-truth id the pool lacks is an error naming it.
"""


def _method_section(copies: int) -> str:
    """How the requests, copy groups, rejections, splits and second pass were made; ``copies`` counts the
    groups with more than one member."""
    return f"""## How it was written

- **Requests**: each writer read the skills in full before writing for them, and wrote the way people write to
  an assistant: 8–300 words (Chinese: characters), some terse, some with a pasted error, log or config; spread
  evenly over R3-Skill's six styles and over the corpus's topic areas, not only the easy ones; no skill name,
  close synonym or translation of one, no copied sentence. Direction = skill language → request language.
- **Multi-skill requests** (k = 2, 3) combine skills of one neighbourhood that complement each other: remove
  any listed skill and part of the request goes unserved.
- **Copies**: where the corpus holds interchangeable copies of a skill (forks, mirrors, near-identical
  versions, translations), the group lists every copy that serves that part equally well ({copies} groups
  have more than one member), so a router is not punished for returning a copy. Scoring collapses a ranking
  onto the groups: a ranked copy counts as its group, once. Pool skills whose document is identical to a
  listed one join its group at scoring time.
- **Rejections**: SKIP decisions on 2–3-skill sets from the same neighbourhoods, English and Chinese
  rationales, each labelled with its rejection-taxonomy class by hand before the rules were run on them.
- **Splits by skill**: requests sharing any ground-truth id (copies included) go to one split together, so no
  ground-truth skill of a test request is a ground-truth skill of a train or dev request; about 60 / 10 / 30 %.
  The test split was written and committed before any tuning and is never changed to suit a system.
- **Checks**: the project's own query audit (`lib/generation/query_audit.py`: duplicates, name leakage,
  language, length 8–300) passes on every request; `tests/benchmarks/test_curated_files.py` asserts the counts
  below and that every id resolves in the shared corpus.
- **Second pass**: for every test request, someone who did not write it read only the request and, searching
  the corpus, picked the skills it needs; disagreements with the writer were resolved by a third look
  (`review.jsonl`).
"""


def _counts_section(requests: Sequence[Request], domain_of: Mapping[str, SuperDomain], run: str) -> str:
    """The count tables and the needed skills by super-domain of ``run``, all computed from the requests."""
    tables = count_tables(requests)
    return f"""## Counts

By direction and split (en2zh: a Chinese request for English skills):

{tables['directions']}

By number of skills needed:

{tables['k']}

By style:

{tables['styles']}

By super-domain of the needed skills ({run}; a request needing two skills of one super-domain counts once
under "requests touching it"):

{super_domain_table(requests, domain_of)}
"""


def _rejections_section(rejections: Sequence[CuratedRejection], rules: RuleScores) -> str:
    """The hand labels by class and language, then the taxonomy rules' blind score against them."""
    return f"""## Rejections

{rejection_table(rejections)}

{rules_section(rules)}
"""


def _limits_section(n_test: int) -> str:
    """How far the figures can be trusted: the second pass's agreement (a block the review loop fills) and
    the benchmark's limitations."""
    return f"""## Agreement of the second pass

{AGREEMENT_START}
_To be filled in by the review loop from `review.jsonl`: exact-set agreement (reviewer's groups = writer's
groups) and per-skill agreement over the {n_test} test requests._
{AGREEMENT_END}

## Limitations

- Small: {n_test} test requests, fewer per direction and per k; every figure needs its interval, and a slice
  under 30 requests cannot rank systems.
- Written by one team in a short time; topic choice, phrasing and what counts as "interchangeable" reflect its
  writers. The Chinese side rests on the corpus's few Chinese skills, so zh2en and zh2zh reuse them heavily.
- Ground truth is the set a request needs, not a graded judgement; skills the writers did not consider may also
  serve a request, so absolute scores are lower bounds.
- Rebuilt from `sources.yaml`, the repositories hold more files than the shared folder (symbolic links and
  skills with a non-open license were left out there), so the pool and its duplicates differ slightly; the
  ids here resolve in both.
"""
