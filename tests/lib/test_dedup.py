import random

import numpy as np
import pytest

from skill_assets.lib.dedup import DedupConfig, deduplicate, file_operation_rule, keep_order_key
from skill_assets.lib.hashing import content_hash, digest, normalise_name
from skill_assets.lib.minhash import MinHasher, jaccard, lsh_candidate_pairs, shingle_hashes, shingles, word_tokens

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


def _check_partition(rows, kept, dups):
    kept_ids = [r["skill_id"] for r in kept]
    dup_ids = [d["duplicate_skill_id"] for d in dups]
    assert sorted(kept_ids + dup_ids) == sorted(r["skill_id"] for r in rows)
    assert len(set(kept_ids + dup_ids)) == len(rows)
    for d in dups:
        assert d["kept_skill_id"] in kept_ids


def test_layers_and_keep_policy():
    body = _prose(1)
    desc = "Debug docker compose stacks that fail to start"
    sentences = body.split(". ")
    edited = ". ".join(sentences[:5] + ["Rewrite this one sentence entirely with brand new phrasing here"] + sentences[6:])
    assert abs(len(edited.split()) - len(body.split())) < 15
    rows = [
        _row("a/compose", "docker-compose-debugging", desc, body),
        _row("b/compose", "Docker Compose Debugging", desc, body.replace(" ", "  ") + "  "),  # fork: same normalised
        _row("c/renamed", "compose-troubleshooter", desc, body.replace(". ", ".\r\n")),  # renamed, CRLF
        _row("d/edited", "compose-fixer", desc, edited),
        _row("e/other", "ledger-reconciliation", "Reconcile ledgers", _prose(2)),
        _row("f/third", "unrelated", "Another skill", _prose(3)),
    ]
    kept, dups = deduplicate(rows, source_order=["a", "b", "c", "d", "e", "f"])
    _check_partition(rows, kept, dups)
    layer = {d["duplicate_skill_id"]: d["layer"] for d in dups}
    target = {d["duplicate_skill_id"]: d["kept_skill_id"] for d in dups}
    # the b copy has the longest raw body (double spaces) so it is the one kept
    assert {r["skill_id"] for r in kept} == {"b/compose", "e/other", "f/third"}
    assert layer == {"a/compose": "name_and_content", "c/renamed": "content", "d/edited": "near_duplicate"}
    assert set(target.values()) == {"b/compose"}
    near = next(d for d in dups if d["layer"] == "near_duplicate")
    assert 0.7 <= near["similarity"] < 1.0
    assert all(d["similarity"] == 1.0 for d in dups if d["layer"] != "near_duplicate")


def test_keep_policy_longest_then_source_order_then_id():
    desc = "Same description"
    base = _prose(5)
    rows = [
        _row("z/short", "n", desc, base[:-60]),  # truncated copy, near-duplicate
        _row("y/long", "n", desc, base),
    ]
    kept, dups = deduplicate(rows, source_order=["z", "y"])
    assert [r["skill_id"] for r in kept] == ["y/long"]
    assert dups[0]["duplicate_skill_id"] == "z/short"

    # equal bodies: the earlier source in configured order wins, then the smaller skill id
    rows = [_row("late/x", "n", desc, base), _row("early/x", "n", desc, base)]
    kept, _ = deduplicate(rows, source_order=["late", "early"])
    assert [r["skill_id"] for r in kept] == ["late/x"]
    kept, _ = deduplicate(rows, source_order=["early", "late"])
    assert [r["skill_id"] for r in kept] == ["early/x"]
    rows = [_row("s/b", "n", desc, base), _row("s/a", "n", desc, base)]
    kept, dups = deduplicate(rows, source_order=[])
    assert [r["skill_id"] for r in kept] == ["s/a"]
    assert dups == [{"duplicate_skill_id": "s/b", "kept_skill_id": "s/a", "layer": "name_and_content", "similarity": 1.0}]


def test_keep_order_key_unknown_source_ranks_last():
    rank = {"a": 0, "b": 1}
    r1 = {"body": "xx", "source": "zzz", "skill_id": "1"}
    r2 = {"body": "xx", "source": "b", "skill_id": "2"}
    assert sorted([r1, r2], key=lambda r: keep_order_key(r, rank)) == [r2, r1]


def test_different_skills_not_merged():
    rows = [_row(f"s/{i}", f"skill-{i}", f"description {i}", _prose(100 + i)) for i in range(12)]
    kept, dups = deduplicate(rows, source_order=["s"])
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
    kept, dups = deduplicate(rows, source_order=["src0", "src1", "src2", "src3", "mirror"])
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
    kept, dups = deduplicate(rows, source_order=["a", "b", "c"])
    assert [r["skill_id"] for r in kept] == ["c/1"]
    assert {d["duplicate_skill_id"]: d["kept_skill_id"] for d in dups} == {"a/1": "c/1", "b/1": "c/1"}
    assert {d["duplicate_skill_id"]: d["layer"] for d in dups} == {"b/1": "name_and_content", "a/1": "near_duplicate"}


def test_empty_and_single_inputs():
    assert deduplicate([], source_order=[]) == ([], [])
    row = _row("a/1", "n", "d", "body")
    assert deduplicate([row], source_order=["a"]) == ([row], [])


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


# ---- minhash -------------------------------------------------------------------------------


def test_word_tokens_and_shingles():
    assert word_tokens("Hello,  WORLD!\r\nFoo_bar") == ["hello", "world", "foo_bar"]
    assert word_tokens("数据 clean") == ["数", "据", "clean"]
    assert shingles("a b c", size=5) == {"a b c"}
    assert shingles("", size=5) == set()
    assert shingles("a b c d e f", size=5) == {"a b c d e", "b c d e f"}


def test_jaccard():
    assert jaccard(set(), set()) == 1.0
    assert jaccard({"a"}, set()) == 0.0
    assert jaccard({"a", "b", "c"}, {"b", "c", "d"}) == pytest.approx(0.5)


def test_shingle_hashes_are_stable_crc32():
    import zlib

    h = shingle_hashes(["abc", "def"])
    assert h.dtype == np.uint64
    assert list(h) == [zlib.crc32(b"abc"), zlib.crc32(b"def")]


def test_minhash_estimates_jaccard():
    hasher = MinHasher(num_perm=256, seed=3)
    a = shingles(_prose(11, 400))
    words = _prose(11, 400).split()
    b = shingles(" ".join(words[: len(words) * 3 // 4] + _prose(12, 100).split()))
    true = jaccard(a, b)
    sa, sb = hasher.signature(shingle_hashes(a)), hasher.signature(shingle_hashes(b))
    est = float(np.mean(sa == sb))
    assert abs(est - true) < 0.1
    # same set → identical signature; deterministic by seed
    assert np.array_equal(sa, MinHasher(256, 3).signature(shingle_hashes(a)))
    assert not np.array_equal(sa, MinHasher(256, 4).signature(shingle_hashes(a)))
    # all values fit below the Mersenne prime
    assert int(sa.max()) < (1 << 61) - 1
    empty = hasher.signature(shingle_hashes(set()))
    assert empty.shape == (256,) and np.all(empty == np.iinfo(np.uint64).max)


def test_lsh_candidate_pairs():
    sigs = np.array(
        [[1, 2, 3, 4], [1, 2, 9, 9], [7, 7, 3, 4], [5, 6, 8, 8]], dtype=np.uint64
    )
    assert lsh_candidate_pairs(sigs, bands=2) == {(0, 1), (0, 2)}
    assert lsh_candidate_pairs(sigs, bands=1) == set()
