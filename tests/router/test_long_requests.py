"""Long requests keep their signal: a task statement of thousands of characters whose one relevant
paragraph comes last still routes to the right skill, through every signal (real models)."""
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bilingual_pool import write_pool  # noqa: E402

from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.retrieval.chunking import best_piece, chunk_embeddings, text_chunks  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.router import load_pool  # noqa: E402

#: about 3,000 characters of project context that names no skill's topic
PREAMBLE = " ".join(
    f"Week {i}: the team met on Monday, reviewed the roadmap, agreed on priorities for the quarter, "
    f"and wrote notes about hiring, budgets and the offsite." for i in range(1, 21))
TAIL = ("Now the actual problem: my docker compose containers cannot reach each other by service name, "
        "the web service gets connection refused from the db service on the bridge network.")


def test_text_chunks_cut_at_boundaries_and_keep_everything():
    text = PREAMBLE + "\n\n" + TAIL
    chunks = text_chunks(text, 600)
    assert len(text) > 3000 and all(len(c) <= 600 for c in chunks)
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "").replace("\n", "")
    assert chunks[-1].endswith("bridge network.")
    assert text_chunks("short request", 600) == ["short request"]


def test_a_long_text_scores_by_its_best_piece():
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.array([[1.0, 0.0] if "a" in t else [0.0, 1.0] for t in texts], dtype=np.float32)

    matrix = np.array([[1.0, 0.0], [0.0, 1.0], [2 ** -0.5, 2 ** -0.5]], dtype=np.float32)
    emb, starts = chunk_embeddings(["a" * 10 + ". " + "b" * 10, "b"], encode, max_chars=11)
    scores = best_piece(emb @ matrix.T, starts)
    assert len(calls) == 1 and len(calls[0]) == 3   # one encode call for every piece of every text
    np.testing.assert_allclose(scores, [[1.0, 1.0, 2 ** -0.5], [0.0, 1.0, 2 ** -0.5]], atol=1e-6)


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    root = tmp_path_factory.mktemp("long")
    skills, _ = load_pool(write_pool(root / "pool"))
    r = Engine(bundled_minilm(), cache_dir=root / "cache", signals=SIGNALS)
    r.index(skills)
    return r


def test_every_signal_finds_the_skill_named_at_the_end_of_a_long_request(router):
    long_request = PREAMBLE + "\n\n" + TAIL
    scores = router.signal_scores([long_request])
    for signal in SIGNALS:
        best = router.ids[int(np.argmax(scores[signal][0]))]
        assert best == "devops/docker-compose-networking", signal


def test_the_bi_encoder_would_lose_it_if_the_request_were_cut_at_its_window(router):
    """The point of chunking: the same request truncated to the encoder's window has no docker in it."""
    long_request = PREAMBLE + "\n\n" + TAIL
    truncated = router.dense.encode([long_request])[0] @ router.dense.matrix.T   # sentence-transformers cuts at 256 tokens
    chunked = router.dense.scores([long_request])[0]
    row = router.ids.index("devops/docker-compose-networking")
    assert router.ids[int(np.argmax(truncated))] != "devops/docker-compose-networking"
    assert chunked[row] > truncated[row] + 0.1
