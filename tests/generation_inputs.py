"""A tiny store for the generation stage: synthetic skills and the combinations ``llm_records`` reads."""
from pathlib import Path

from skill_assets.lib.common import store as store_lib
from skill_assets.lib.common.tables import frame


def synthetic_skills(n: int) -> list[dict]:
    """``skills`` rows s0..s{n-1}, English, no duplicates."""
    return [{"skill_id": f"s{i}", "source": "t", "path": f"s{i}/SKILL.md", "name": f"skill-{i}",
             "description": f"does thing {i}", "body": f"How to do thing {i}. " * 10, "language": "en",
             "content_hash": f"h{i}", "n_duplicates": 0} for i in range(n)]


def single_skill_combinations(n: int) -> list[dict]:
    """``skill_combinations`` rows en2en-0..: one train combination of one skill per synthetic skill."""
    return [{"combination_id": f"en2en-{j}", "pool": "train", "direction": "en2en", "k": 1, "skill_ids": [f"s{j}"],
             "neighbourhood": "any", "style": "task_direct"} for j in range(n)]


def write_generation_inputs(db: Path, skills: list[dict], combinations: list[dict]) -> Path:
    store_lib.replace_table(db, "skills", frame("skills", skills))
    store_lib.replace_table(db, "skill_combinations", frame("skill_combinations", combinations))
    return db
