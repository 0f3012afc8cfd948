import random

import minhash_reference as ref
import numpy as np
import pytest

from skill_assets.lib.common.hashing import content_hash, digest, jaccard, normalise_name, word_tokens
from skill_assets.lib.corpus.dedup import (
    DedupCandidate,
    DedupConfig,
    dedup_candidates,
    deduplicate,
    file_operation_rule,
    keep_order_key,
    near_duplicate_pairs,
    row_texts,
)
from skill_assets.lib.corpus.minhash import (
    MinHasher,
    Sketches,
    _char_budget_parts,
    lsh_pair_array,
    shingle_hashes,
    sketch_chunks,
)

VOCAB = (
    "container image volume network service port config build deploy cluster node pod secret token cache "
    "queue worker retry timeout schema table index query commit branch merge rebase patch release tag log "
    "metric trace alert dashboard budget invoice ledger customer order refund payment report chart model "
    "dataset feature label train evaluate tune prompt agent tool route skill vector embed rank filter"
).split()


def _prose(seed: int, n_words: int = 300) -> str:
    rng = random.Random(seed)
    sentences, words = [], 0
    while words < n_words:
        n = rng.randint(8, 14)
        sentences.append(" ".join(rng.choice(VOCAB) for _ in range(n)).capitalize() + ".")
        words += n
    return " ".join(sentences)


def _row(skill_id: str, name: str, description: str, body: str, source: str | None = None) -> dict:
    return {
        "skill_id": skill_id,
        "source": source or skill_id.split("/")[0],
        "name": name,
        "description": description,
        "body": body,
        "name_hash": digest(normalise_name(name)),
        "content_hash": content_hash(description, body),
    }


def deduplicate_rows(rows: list[dict], source_order: list[str]) -> tuple[list[dict], list[dict]]:
    """``deduplicate`` over rows held in memory, as ``raw_skills`` rows; the kept skills come back as their rows."""
    kept, dups = deduplicate(dedup_candidates(rows), source_order, texts_for=row_texts(rows))
    by_id = {r["skill_id"]: r for r in rows}
    return [by_id[s.skill_id] for s in kept], dups


def _check_partition(rows, kept, dups):
    kept_ids = [r["skill_id"] for r in kept]
    dup_ids = [d["duplicate_skill_id"] for d in dups]
    assert sorted(kept_ids + dup_ids) == sorted(r["skill_id"] for r in rows)
    assert len(set(kept_ids + dup_ids)) == len(rows)
    for d in dups:
        assert d["kept_skill_id"] in kept_ids


def _reword_one_sentence(body: str) -> str:
    sentences = body.split(". ")
    # the reworded sentence is shorter, so the original stays the most complete body
    return ". ".join(sentences[:5] + ["Reworded briefly here"] + sentences[6:])


def test_layers():
    body = _prose(1)
    desc = "Debug docker compose stacks that fail to start"
    edited = _reword_one_sentence(body)
    assert abs(len(edited.split()) - len(body.split())) < 15 and 250 <= len(body.split()) <= 320
    assert len(edited) < len(body)
    rows = [
        _row("a/compose", "docker-compose-debugging", desc, body),
        _row("b/compose", "docker-compose-debugging", desc, body),  # exact copy (a mirror)
        _row("c/renamed", "compose-troubleshooter", desc, body.replace(". ", ".\r\n")),  # renamed, CRLF
        _row("d/edited", "compose-fixer", desc, edited),  # one sentence reworded
        _row("e/other", "ledger-reconciliation", "Reconcile ledgers", _prose(2)),
        _row("f/third", "unrelated", "Another skill", _prose(3)),
    ]
    kept, dups = deduplicate_rows(rows, source_order=["a", "b", "c", "d", "e", "f"])
    _check_partition(rows, kept, dups)
    layer = {d["duplicate_skill_id"]: d["layer"] for d in dups}
    target = {d["duplicate_skill_id"]: d["kept_skill_id"] for d in dups}
    assert {r["skill_id"] for r in kept} == {"a/compose", "e/other", "f/third"}
    assert layer == {"b/compose": "name_and_content", "c/renamed": "content", "d/edited": "near_duplicate"}
    assert set(target.values()) == {"a/compose"}
    near = next(d for d in dups if d["layer"] == "near_duplicate")
    assert 0.7 <= near["similarity"] < 1.0
    assert all(d["similarity"] == 1.0 for d in dups if d["layer"] != "near_duplicate")


def test_name_case_and_spacing_count_as_same_name():
    body, desc = _prose(4), "d"
    rows = [_row("a/x", "Docker Compose Debugging", desc, body), _row("b/x", "docker compose_debugging", desc, body)]
    kept, dups = deduplicate_rows(rows, source_order=["a", "b"])
    assert [r["skill_id"] for r in kept] == ["a/x"]
    assert [d["layer"] for d in dups] == ["name_and_content"]


def test_whitespace_padding_does_not_make_a_copy_longer():
    body, desc = _prose(1), "d"
    rows = [_row("b/padded", "n", desc, body.replace(" ", "   ") + "\n\n\n"), _row("a/orig", "n", desc, body)]
    kept, dups = deduplicate_rows(rows, source_order=["a", "b"])
    assert [r["skill_id"] for r in kept] == ["a/orig"]
    assert dups[0]["duplicate_skill_id"] == "b/padded" and dups[0]["layer"] == "name_and_content"


def test_keep_policy_longest_then_source_order_then_id():
    desc = "Same description"
    base = _prose(5)
    rows = [
        _row("z/short", "n", desc, base[:-60]),  # truncated copy, near-duplicate
        _row("y/long", "n", desc, base),
    ]
    kept, dups = deduplicate_rows(rows, source_order=["z", "y"])
    assert [r["skill_id"] for r in kept] == ["y/long"]
    assert dups[0]["duplicate_skill_id"] == "z/short"

    # equal bodies: the earlier source in configured order wins, then the smaller skill id
    rows = [_row("late/x", "n", desc, base), _row("early/x", "n", desc, base)]
    kept, _ = deduplicate_rows(rows, source_order=["late", "early"])
    assert [r["skill_id"] for r in kept] == ["late/x"]
    kept, _ = deduplicate_rows(rows, source_order=["early", "late"])
    assert [r["skill_id"] for r in kept] == ["early/x"]
    rows = [_row("s/b", "n", desc, base), _row("s/a", "n", desc, base)]
    kept, dups = deduplicate_rows(rows, source_order=[])
    assert [r["skill_id"] for r in kept] == ["s/a"]
    assert dups == [{"duplicate_skill_id": "s/b", "kept_skill_id": "s/a", "layer": "name_and_content", "similarity": 1.0}]


def test_keep_order_key_unknown_source_ranks_last():
    rank = {"a": 0, "b": 1}
    r1 = DedupCandidate("1", "zzz", "n", "name-hash", "content-hash", body_chars=2)
    r2 = DedupCandidate("2", "b", "n", "name-hash", "content-hash", body_chars=2)
    assert sorted([r1, r2], key=lambda r: keep_order_key(r, rank)) == [r2, r1]


def test_candidates_carry_the_rows_keys_and_measure_a_body_without_its_length():
    row = _row("a/1", "Docker Compose", "d", "  Body   text \r\n")
    assert dedup_candidates([row, {**row, "skill_id": "a/2", "body_chars": 99}]) == [
        DedupCandidate("a/1", "a", "Docker Compose", row["name_hash"], row["content_hash"], body_chars=9),
        DedupCandidate("a/2", "a", "Docker Compose", row["name_hash"], row["content_hash"], body_chars=99)]
    assert row_texts([row])(["a/1"]) == ["d\n  Body   text \r\n"]


def test_different_skills_not_merged():
    rows = [_row(f"s/{i}", f"skill-{i}", f"description {i}", _prose(100 + i)) for i in range(12)]
    kept, dups = deduplicate_rows(rows, source_order=["s"])
    assert dups == []
    assert len(kept) == 12


def test_chains_point_at_a_kept_skill_and_partition_holds_at_scale():
    rng = random.Random(7)
    rows = []
    for fam in range(6):
        body = _prose(200 + fam)
        words = body.split()
        for copy in range(rng.randint(1, 4)):
            variant = list(words)
            for _ in range(copy):  # a few single-word edits per copy
                variant[rng.randrange(len(variant))] = "edited"
            name = f"family-{fam}" if copy % 2 == 0 else f"renamed-{fam}-{copy}"
            rows.append(_row(f"src{copy}/fam{fam}", name, "desc", " ".join(variant)))
        rows.append(_row(f"mirror/fam{fam}", f"family-{fam}", "desc", body))
    kept, dups = deduplicate_rows(rows, source_order=["src0", "src1", "src2", "src3", "mirror"])
    _check_partition(rows, kept, dups)
    # one kept skill per family
    assert len(kept) == 6
    assert len({r["skill_id"].split("/")[1] for r in kept}) == 6


def test_near_duplicate_chain_is_resolved_to_final_keep():
    # A exact copy folded in layer 1 into a row that is then folded as a near-duplicate
    desc = "d"
    base = _prose(9)
    shorter = base.rsplit(" ", 3)[0]
    rows = [
        _row("a/1", "same", desc, shorter),
        _row("b/1", "same", desc, shorter),  # exact copy of a/1 (name+content)
        _row("c/1", "other", desc, base),  # longer near-duplicate: kept
    ]
    kept, dups = deduplicate_rows(rows, source_order=["a", "b", "c"])
    assert [r["skill_id"] for r in kept] == ["c/1"]
    assert {d["duplicate_skill_id"]: d["kept_skill_id"] for d in dups} == {"a/1": "c/1", "b/1": "c/1"}
    assert {d["duplicate_skill_id"]: d["layer"] for d in dups} == {"b/1": "name_and_content", "a/1": "near_duplicate"}


def test_empty_and_single_inputs():
    assert deduplicate_rows([], source_order=[]) == ([], [])
    row = _row("a/1", "n", "d", "body")
    assert deduplicate_rows([row], source_order=["a"]) == ([row], [])


@pytest.mark.parametrize(
    "name, rule",
    [
        ("pdf", "pdf_handler"),
        ("PDF", "pdf_handler"),
        (" pdf-tools ", "pdf_handler"),
        ("pdf_processing", "pdf_handler"),
        ("docx", "docx_handler"),
        ("word-documents", "docx_handler"),
        ("xlsx", "xlsx_handler"),
        ("spreadsheets", "xlsx_handler"),
        ("pptx", "pptx_handler"),
        ("slides", "pptx_handler"),
        ("docker-compose-debugging", None),
        ("pdf-invoice-extractor", None),
        ("excel-formula-wizard", None),
        ("", None),
    ],
)
def test_file_operation_rule(name, rule):
    assert file_operation_rule(name) == rule


# ---- near-duplicate layer and minhash ------------------------------------------------------


def test_near_duplicate_pairs_direct():
    base = _prose(30)
    texts = [base, _reword_one_sentence(base), _prose(31), base.rsplit(" ", 40)[0], ""]
    pairs = near_duplicate_pairs(texts, DedupConfig())
    assert {(d, k) for d, k, _ in pairs} == {(1, 0), (3, 0)}
    for _, _, sim in pairs:
        assert 0.7 <= sim < 1.0
    assert near_duplicate_pairs([base], DedupConfig()) == []
    # a stricter threshold drops the edited copy but keeps nothing it should not
    strict = near_duplicate_pairs(texts, DedupConfig(jaccard_threshold=0.99))
    assert strict == []


def test_word_tokens():
    assert word_tokens("Hello,  WORLD!\r\nFoo_bar") == ["hello", "world", "foo_bar"]
    assert word_tokens("数据 clean") == ["数", "据", "clean"]


def test_jaccard():
    assert jaccard(set(), set()) == 1.0
    assert jaccard({"a"}, set()) == 0.0
    assert jaccard({"a", "b", "c"}, {"b", "c", "d"}) == pytest.approx(0.5)
    # the sketches' merge over sorted sets: documents 0 = {1, 2, 3}, 1 = {2, 3, 4}, 2 = {1, 2, 3}, 3 = {}, 4 = {}
    sets = np.array([1, 2, 3, 2, 3, 4, 1, 2, 3], dtype=np.uint32)
    sk = Sketches(np.zeros((5, 4), dtype=np.uint32), sets, np.array([0, 3, 6, 9, 9]), np.array([3, 6, 9, 9, 9]))
    assert sk.jaccard(0, 1) == pytest.approx(0.5) == sk.jaccard(1, 0)
    assert sk.jaccard(0, 2) == 1.0
    assert sk.jaccard(3, 4) == 1.0
    assert sk.jaccard(0, 3) == 0.0 == sk.jaccard(3, 0)


def test_shingle_hashes_counts_and_offsets():
    texts = ["a b c d e f", "x y z", "", "A  B\tC D E F", "数据清洗工作", "one"]
    sh, offsets = shingle_hashes(texts, size=5)
    assert offsets.tolist() == [0, 2, 3, 3, 5, 7, 8]
    assert len(sh) == 8 and sh.dtype == np.uint64
    # tokenisation is case- and whitespace-insensitive
    assert sh[0:2].tolist() == sh[3:5].tolist()
    # order matters inside a shingle
    sh2, _ = shingle_hashes(["b a c d e f", "a b c d e g"], size=5)
    assert sh2[0] != sh[0] and sh2[2] == sh[0] and sh2[3] != sh[1]
    # the same corpus hashes the same way every time
    again, off2 = shingle_hashes(texts, size=5)
    assert again.tolist() == sh.tolist() and off2.tolist() == offsets.tolist()
    assert [len(x) for x in shingle_hashes([], 5)] == [0, 1]
    with pytest.raises(ValueError):
        shingle_hashes(["a"], size=99)
    with pytest.raises(ValueError):
        sketch_chunks([["a"]], 99, MinHasher())


def test_shingle_sets_give_exact_jaccard():
    # 12 tokens with size 3 → 10 shingles each; one token changed in the middle alters 3 shingles
    a = " ".join(f"w{i}" for i in range(12))
    b = a.replace("w6", "zz")
    sh, off = shingle_hashes([a, b], size=3)
    assert ref.jaccard(sh[off[0]:off[1]].tolist(), sh[off[1]:off[2]].tolist()) == pytest.approx(7 / 13)
    assert sketch_chunks([[a, b]], 3, MinHasher()).jaccard(0, 1) == pytest.approx(7 / 13)


def test_minhash_signatures_estimate_jaccard():
    base = _prose(11, 400).split()
    a = " ".join(base)
    b = " ".join(base[: len(base) * 3 // 4] + _prose(12, 100).split())
    true = ref.jaccard(ref.shingles(a), ref.shingles(b))
    assert 0.4 < true < 0.8
    sign = lambda seed: sketch_chunks([[a, b, ""]], 5, MinHasher(num_perm=256, seed=seed)).signatures
    sigs = sign(3)
    assert sigs.shape == (3, 256) and sigs.dtype == np.uint32
    est = float(np.mean(sigs[0] == sigs[1]))
    assert abs(est - true) < 0.1
    assert np.all(sigs[2] == np.iinfo(np.uint32).max)  # empty document
    # deterministic by seed, different across seeds
    assert np.array_equal(sigs, sign(3))
    assert not np.array_equal(sigs[0], sign(4)[0])


def test_minhash_sketch_of_a_document_does_not_depend_on_its_batch():
    texts = [_prose(40 + i, 60) for i in range(7)] + [""] + [_prose(50, 30), "short text"]
    hasher = MinHasher(num_perm=32, seed=2)
    whole = sketch_chunks([texts], 5, hasher)
    assert len({tuple(row) for row in whole.signatures.tolist()}) == len(texts)
    for i, t in enumerate(texts):
        alone = sketch_chunks([[t]], 5, hasher)
        assert np.array_equal(alone.signatures[0], whole.signatures[i])
        assert np.array_equal(alone.sets, whole.sets[whole.set_starts[i] : whole.set_ends[i]])


def test_lsh_candidate_pairs():
    def lsh_candidate_pairs(signatures, bands, max_bucket_pairs=20):
        return set(map(tuple, lsh_pair_array(signatures, bands, max_bucket_pairs).tolist()))

    sigs = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [7, 7, 3, 4], [5, 6, 8, 8]], dtype=np.uint32)
    assert lsh_candidate_pairs(sigs, bands=2) == {(0, 1), (0, 2)}
    assert lsh_candidate_pairs(sigs, bands=1) == set()
    assert lsh_candidate_pairs(sigs, bands=4) == {(0, 1), (0, 2)}
    sigs[3, 2] = 3  # row 3 now shares band 2 with rows 0 and 2
    assert lsh_candidate_pairs(sigs, bands=4) == {(0, 1), (0, 2), (0, 3), (2, 3)}
    # big buckets emit a chain of consecutive members rather than all pairs
    same = np.zeros((6, 4), dtype=np.uint32)
    assert lsh_candidate_pairs(same, bands=2, max_bucket_pairs=3) == {(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)}
    assert len(lsh_candidate_pairs(same, bands=2)) == 15
    # a bucket of exactly max_bucket_pairs members still emits all its pairs
    assert lsh_candidate_pairs(same[:3], bands=2, max_bucket_pairs=3) == {(0, 1), (0, 2), (1, 2)}


def test_near_duplicate_similarity_is_a_measured_jaccard():
    rng = random.Random(0)
    a = [f"w{rng.randrange(5000)}" for _ in range(400)]
    mid = list(a)
    for i in range(0, 400, 40):
        mid[i] = f"x{i}"
    far = list(mid)
    for i in range(20, 400, 40):
        far[i] = f"y{i}"
    texts = [" ".join(a), " ".join(far), " ".join(mid)]  # 'far' links to 'a' only through 'mid'
    jac = lambda i, j: ref.jaccard(ref.shingles(texts[i]), ref.shingles(texts[j]))
    assert jac(0, 1) < 0.7 <= min(jac(0, 2), jac(1, 2))
    pairs = {d: (k, sim) for d, k, sim in near_duplicate_pairs(texts, DedupConfig())}
    assert set(pairs) == {1, 2} and pairs[1][0] == 0 and pairs[2][0] == 0
    assert pairs[2][1] == pytest.approx(jac(0, 2))
    assert pairs[1][1] == pytest.approx(jac(0, 1))  # measured to the kept skill, below the threshold


def test_char_budget_parts_cover_the_texts_in_order():
    texts = ["ab", "cde", "", "f" * 9, "g", "hi", "j" * 4]
    parts = list(_char_budget_parts(texts, budget=5))
    assert [p for p, _ in parts] == [["ab", "cde", ""], ["f" * 9], ["g", "hi"], ["j" * 4]]  # a longer text alone
    assert [first for _, first in parts] == [0, 3, 4, 6]
    assert list(_char_budget_parts([], budget=5)) == []
