"""The real pool and long requests the long-request tests route: shared-corpus skills, long-task dev statements.

Kept small so that a test indexes it in seconds: the skills the chosen statements need plus every ``STRIDE``-th
skill of the corpus. Documents are embedded in fp32 (``embedder_backend="torch"``), so the rankings do not depend on
whether this CPU runs bf16."""
from __future__ import annotations

from pathlib import Path

from skill_assets.lib.evaluation.curated_benchmark import LONG_TASK_MAX_GROUPS, LONG_TASK_REQUESTS, load_requests
from skill_assets.lib.retrieval.pools import Skill, load_pool
from skill_assets.lib.retrieval.requests import Request

STRIDE = 60
#: long-task dev statements per direction (``<skill language>2<request language>``): English and Chinese requests
PER_DIRECTION = {"en2en": 2, "en2zh": 2, "zh2zh": 1, "zh2en": 1}


def long_requests() -> list[Request]:
    """The first dev statements of each direction, in file order."""
    dev = [r for r in load_requests(LONG_TASK_REQUESTS, max_groups=LONG_TASK_MAX_GROUPS) if r.split == "dev"]
    return [r for d, n in PER_DIRECTION.items() for r in [r for r in dev if r.direction == d][:n]]


def long_request_pool(corpus: Path, requests: list[Request]) -> list[Skill]:
    """Every skill the requests need (and their copies) plus every ``STRIDE``-th corpus skill, in corpus order."""
    skills, _ = load_pool(corpus)
    needed = {sid for r in requests for group in r.groups for sid in group}
    return [s for i, s in enumerate(skills) if s.id in needed or i % STRIDE == 0]
