"""The shared GitHub skills corpus beside the repository, as every bench reads it.

Its SKILL.md files are read by the router's own pool loader (``load_pool``: any-case file names, the
same size limits and reason codes a user's pool gets), so a bench measures the pool a user would
have; nothing is copied into the repository.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skill_assets.lib.retrieval.pools import Skill, load_pool

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "github-skills" / "repos"


def add_pool_arguments(ap: argparse.ArgumentParser) -> None:
    """``--corpus`` and ``--pool-size``, as every bench over the padded pool takes them (``corpus_pool``)."""
    ap.add_argument("--corpus", default=str(CORPUS), help="folder of SKILL.md files (default: the shared corpus)")
    ap.add_argument("--pool-size", type=int, default=10_000, help="skills in the pool, padded with variants")


def corpus_pool(corpus: Path, size: int) -> tuple[list[Skill], int, int]:
    """(every skill of ``corpus`` padded with variants to ``size`` skills, skills read, files rejected); exits
    with status 2, naming the folder, where no skill is read."""
    base, rejected = load_pool(corpus)
    if not base:
        print(f"no parsable SKILL.md under {corpus}", file=sys.stderr)
        raise SystemExit(2)
    return build_pool(base, size), len(base), len(rejected)


def build_pool(base: list[Skill], size: int) -> list[Skill]:
    """``base`` then variants ``<id>~v<r>`` (name suffixed, body paragraphs rotated) up to ``size`` skills."""
    pool = list(base[:size])
    r = 1
    while len(pool) < size:
        for s in base:
            if len(pool) >= size:
                break
            paras = s.body.split("\n\n")
            k = r % len(paras) if len(paras) > 1 else 0
            body = "\n\n".join(paras[k:] + paras[:k]) + f"\n\n(variant {r})"
            pool.append(Skill(f"{s.id}~v{r}", f"{s.name}-v{r}", s.description, body, s.source))
        r += 1
    return pool
