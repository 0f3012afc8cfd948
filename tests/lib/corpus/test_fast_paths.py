"""The corpus stage's fast paths give exactly what the plain code they replace gives.

Each fast path (compiled sketching, vectorised banding, compiled union-find, regex front-matter
split, byte-level script counts, byte-level whitespace collapse, buffered-read replacement) is
checked against a straightforward reference (written here, or for the MinHash arithmetic in
``minhash_reference.py``), on inputs chosen to hit the edges:
CJK next to Latin and accents, every Unicode whitespace character, lone surrogates, documents
shorter than a shingle, empty documents, chunks arriving out of order.
"""
import os
import random
import sys
import unicodedata
from itertools import combinations, pairwise

import minhash_reference as ref
import numpy as np
import pytest

from skill_assets.lib.common import hashing
from skill_assets.lib.core.frontmatter import SkillParseError, _split_front_matter
from skill_assets.lib.common.language import _CJK_OR_WORD, SAMPLE_CHARS, script_counts, strip_code
from skill_assets.lib.core.skill_files import _read_up_to
from skill_assets.lib.corpus.dedup import DedupConfig, near_duplicate_pairs
from skill_assets.lib.corpus.minhash import MinHasher, Utf8Chunk, lsh_pair_array, shingle_hashes, sketch_chunks

PIECES = ["alpha", "Beta", "GAMMA", "x1_y", "数据", "清洗", "工作", "é", "ü", "—", "→", "😀", "日本語", "한국어",
          "\uf900", "\u3400", "\u33ff", "\u4dc0", " ", "  ", "\n", "\t", ".", ",", "`", "```", "_", "0", "Σ"]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = ["", "a", "a b c d", "a b c d e", "数据清洗工作", "x" * 70, "é数a b"]
    for _ in range(n):
        length = rng.choice([0, 1, 3, 4, 6, 20, 200, 1500])
        out.append("".join(rng.choice(PIECES) + rng.choice(["", " ", "\n"]) for _ in range(length)))
    return out


@pytest.mark.parametrize("size", [3, 5])
def test_compiled_sketch_matches_the_python_reference(size):
    texts = _texts(1, 600)
    sigs, sets = ref.sketch(texts, size)
    sk = sketch_chunks([texts[:250], texts[250:]], size, MinHasher(64, 1))
    assert np.array_equal(sk.signatures, sigs)
    for i in range(len(texts)):
        assert sk.sets[sk.set_starts[i] : sk.set_ends[i]].tolist() == sets[i], repr(texts[i][:60])
    sh, off = shingle_hashes(texts, size)
    assert sh.dtype == np.uint64 and len(off) == len(texts) + 1
    for i, text in enumerate(texts):
        assert sh[off[i] : off[i + 1]].tolist() == ref.shingles(text, size), repr(text[:60])


def test_utf8_chunks_in_any_order_give_the_same_sketches_and_pairs():
    rng = random.Random(2)
    base = _texts(3, 80)
    texts = [t for t in base for _ in range(rng.randrange(1, 4))]  # exact and near copies next to each other
    texts = [t if rng.random() < 0.5 else t.replace("alpha", "omega", 1) for t in texts]
    order = list(range(len(texts)))
    rng.shuffle(order)
    chunks = []
    for i in range(0, len(order), 37):
        places = order[i : i + 37]
        chunk = Utf8Chunk.from_texts([texts[p] for p in places])
        chunks.append(Utf8Chunk(np.array(places, dtype=np.int64), chunk.data, chunk.offsets))
    in_order = sketch_chunks([texts], 5, MinHasher(64, 1))
    shuffled = sketch_chunks(iter(chunks), 5, MinHasher(64, 1))
    assert np.array_equal(in_order.signatures, shuffled.signatures)
    for i in range(len(texts)):
        assert np.array_equal(in_order.sets[in_order.set_starts[i] : in_order.set_ends[i]],
                              shuffled.sets[shuffled.set_starts[i] : shuffled.set_ends[i]])
    assert near_duplicate_pairs(iter(chunks), DedupConfig()) == near_duplicate_pairs(texts, DedupConfig())
    with pytest.raises(ValueError):
        sketch_chunks(chunks[:-1] + [chunks[0]], 5, MinHasher(64, 1))  # a place twice, one never


def _reference_lsh(signatures, bands, max_bucket_pairs=20):
    rows = signatures.shape[1] // bands
    pairs = set()
    for b in range(bands):
        buckets: dict[bytes, list[int]] = {}
        for i, row in enumerate(signatures[:, b * rows : (b + 1) * rows]):
            buckets.setdefault(row.tobytes(), []).append(i)
        for members in buckets.values():
            pairs.update(combinations(members, 2) if len(members) <= max_bucket_pairs else pairwise(members))
    return pairs


@pytest.mark.parametrize("bands, max_bucket_pairs", [(4, 20), (8, 3), (2, 1), (1, 20)])
def test_vectorised_banding_matches_bucket_loops(bands, max_bucket_pairs):
    sigs = np.random.default_rng(bands).integers(0, 3, size=(400, 8)).astype(np.uint32)
    expected = _reference_lsh(sigs, bands, max_bucket_pairs)
    arr = lsh_pair_array(sigs, bands, max_bucket_pairs)
    assert arr.tolist() == sorted(map(list, expected)) and arr.dtype == np.int64
    assert lsh_pair_array(np.zeros((0, 8), dtype=np.uint32), bands).shape == (0, 2)


def _reference_near_duplicates(texts, config):
    """The union-find over verified candidate pairs, in Python, on the Python reference's sketches."""
    sigs, sets = ref.sketch(texts, config.shingle_size, config.num_perm, config.seed)
    n = len(texts)
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def jac(a, b):
        return ref.jaccard(sets[a], sets[b])

    for a, b in sorted(_reference_lsh(sigs, config.bands)):
        if (sigs[a] == sigs[b]).mean() < config.jaccard_threshold - config.estimate_margin:
            continue
        ra, rb = find(a), find(b)
        if ra != rb and jac(a, b) >= config.jaccard_threshold:
            parent[max(ra, rb)] = min(ra, rb)
    return [(i, find(i), jac(i, find(i))) for i in range(n) if find(i) != i]


def test_compiled_union_find_matches_the_python_one():
    rng = random.Random(5)
    words = [f"w{i}" for i in range(400)]
    texts = []
    for _ in range(60):
        doc = [rng.choice(words) for _ in range(rng.randrange(3, 300))]
        texts.append(" ".join(doc))
        for _ in range(rng.randrange(0, 4)):
            copy = list(doc)
            for _ in range(rng.randrange(0, 6)):
                copy[rng.randrange(len(copy))] = "edit"
            texts.append(" ".join(copy))
    texts += ["", ""]  # two empty documents are the same (Jaccard 1.0), as before
    rng.shuffle(texts)
    for config in (DedupConfig(), DedupConfig(jaccard_threshold=0.9), DedupConfig(shingle_size=3, bands=8)):
        assert near_duplicate_pairs(texts, config) == _reference_near_duplicates(texts, config)


def _reference_split(text):
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillParseError("missing_front_matter", "")
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    raise SkillParseError("unterminated_front_matter", "")


def test_front_matter_split_matches_splitting_every_line():
    def outcome(split, text):
        try:
            return split(text)
        except SkillParseError as exc:
            return exc.code

    rng = random.Random(6)
    pieces = ["---", "...", " --- ", "\t...\x0b", "----", "-- -", "..", "a: b", "", " ", "\u2028---", "---\u00a0",
              "\x1c", "x---", "--- x", "\u3000...", "\x85", "body"]
    for _ in range(20_000):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randrange(0, 7))) + rng.choice(["", "\n"])
        assert outcome(_split_front_matter, text) == outcome(_reference_split, text), repr(text)


def _reference_script_counts(text):
    tokens = _CJK_OR_WORD.findall(strip_code(text[: SAMPLE_CHARS * 2])[:SAMPLE_CHARS])
    cjk = sum(1 for t in tokens if len(t) == 1 and t >= "\u3400")
    return cjk, len(tokens) - cjk


def test_script_counts_match_the_token_list_count():
    rng = random.Random(7)
    texts = _texts(8, 300) + ["\ud800abc", "ab\udfff数", "`数` 数 ```数``` a", "a" * 9000, "数" * 5000 + "abc"]
    for _ in range(3000):
        texts.append("".join(rng.choice(["a", "Z", " ", "数", "`", "```", "\n", "é", "\uf900", "\u33ff", "\u3400",
                                         "\u9fff", "\ufaff", "\ufb00", "1", "_", "\ud800"])
                             for _ in range(rng.randrange(0, 60))))
    for text in texts:
        assert script_counts(text) == _reference_script_counts(text), repr(text[:60])


def _reference_normalise(text):
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def test_normalise_text_long_and_short_match_split_and_join():
    whitespace = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    pool = whitespace + list("aZé数😀İẞﬁ①\u0301\x00\x7f\x80\uffffΣς") + ["\ud800", "\udfff", "ΑΣ ", "word", "Word"]
    rng = random.Random(9)
    long_texts = 0
    for trial in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 3000 if trial % 5 == 0 else 40)))
        if trial % 3 == 0:
            text = text * (1 + hashing.FAST_COLLAPSE_CHARS // (len(text) + 1))
        assert hashing.normalise_text(text) == _reference_normalise(text), repr(text[:60])
        long_texts += len(text) >= hashing.FAST_COLLAPSE_CHARS
    assert long_texts > 300
    assert hashing.normalise_text("  A\r\n\u3000b\u2028 " * 1000) == " ".join(["a b"] * 1000)


def test_read_up_to_matches_a_buffered_read(tmp_path):
    path = tmp_path / "f"
    for size in (0, 1, 10, 4096, 70_000):
        path.write_bytes(os.urandom(size))
        for limit in (1, 11, 4097, 70_001, 200_000):
            for hint in (0, size, size // 2, size + 5):
                fd = os.open(path, os.O_RDONLY)
                try:
                    got = _read_up_to(fd, limit, hint)
                finally:
                    os.close(fd)
                with open(path, "rb") as fh:
                    assert got == fh.read(limit)


def test_jaccard_of_sketch_sets_is_the_exact_shingle_jaccard():
    a = " ".join(f"w{i}" for i in range(40))
    b = a.replace("w20", "zz")
    sk = sketch_chunks([[a, b]], 3, MinHasher(64, 1))
    # 38 shingles each, the 3 that hold w20 differ: 35 shared of 41
    assert ref.jaccard(ref.shingles(a, 3), ref.shingles(b, 3)) == pytest.approx(35 / 41)
    assert sk.jaccard(0, 1) == pytest.approx(35 / 41)
    assert sk.jaccard(0, 0) == 1.0
