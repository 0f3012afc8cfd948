"""Training data with the curated benchmark: its train split joins the pipeline's queries, its dev split
picks the checkpoint, and nothing of its test split is seen.

Used when the run's corpus holds the curated skills (the README's real-corpus run): curated ids
are raw skill ids there, mapped to the pipeline's kept skills through ``skill_duplicates`` (a
folded copy trains as its kept skill). What the test split may not leak into, in kept-skill space:

- a training or dev query (pipeline or curated) whose ground truth touches a curated test skill,
  or a copy folded into the same kept skill, is dropped, and the drops are counted;
- those skills leave the training pool too, so they are never mined as negatives or ranked in
  held-out selection.

Curated train and dev skills the pipeline put in its own test pool join the training pool (the
count is reported): the hand-written requests are the training signal that matters, and the
pipeline's own test split is then not skill-disjoint from training for those skills.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.core.skill_groups import mapped_groups
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.requests import Request, UnresolvedSkillIds, unresolved
from skill_assets.lib.training.training_queries import TrainingQuery


@dataclass
class TrainingData:
    """Queries and skills one model trains on, and ``card``: which queries those are (for the model card)."""

    train: list[TrainingQuery]
    dev: list[TrainingQuery]
    skills: list[Skill]
    card: dict = field(default_factory=dict)


def corpus_holds_curated(requests: Sequence[Request], raw_ids: set[str]) -> bool:
    """True when every curated ground-truth id is a raw skill of the run, False when none is (another corpus,
    e.g. the demo's); a corpus holding only some is an error naming the missing ids, since training on part
    of the benchmark while its test split points at skills the run lacks would go unnoticed otherwise."""
    missing = unresolved(requests, raw_ids)
    every_id = {sid for r in requests for sid in r.gt}
    if not missing:
        return bool(every_id)
    if len(missing) == len(every_id):
        return False
    raise UnresolvedSkillIds(missing, "of this run's corpus (raw_skills); set the training config `curated: false` "
                                      "to train without the curated benchmark")


def pipeline_only(train: list[TrainingQuery], dev: list[TrainingQuery], skills: list[Skill], reason: str
                  ) -> TrainingData:
    """The pipeline's own queries, unchanged, with the card saying why the curated benchmark is not used."""
    return TrainingData(train, dev, skills, {
        "train_sources": {"pipeline": len(train)},
        "dev_source": "benchmark_queries dev split" if dev else "a held-out share of the train queries",
        "curated": reason})


def with_curated(pipeline_train: list[TrainingQuery], pipeline_dev: list[TrainingQuery],
                 train_pool_skills: list[Skill], all_skills: Mapping[str, Skill], requests: Sequence[Request],
                 kept_of: Mapping[str, str], data_version: str) -> TrainingData:
    """The pipeline's train queries plus the curated train split, the curated dev split for selection.

    ``all_skills``: every kept skill by id, ``kept_of``: raw id → kept id (a kept skill maps to itself),
    ``train_pool_skills``: the pipeline's training pool.
    """
    mapped = {r.id: mapped_groups(r.groups, kept_of.__getitem__) for r in requests}
    test_skills = {sid for r in requests if r.split == "test" for group in mapped[r.id] for sid in group}

    def clean(queries: list[TrainingQuery]) -> tuple[list[TrainingQuery], int]:
        kept = [q for q in queries if not test_skills & set(q.skill_ids)]
        return kept, len(queries) - len(kept)

    def as_queries(split: str) -> list[TrainingQuery]:
        return [TrainingQuery(f"curated:{r.id}", r.query, tuple(s for g in mapped[r.id] for s in g),
                              groups=mapped[r.id], direction=r.direction, k=r.k)
                for r in requests if r.split == split]

    pipeline, dropped_pipeline = clean(pipeline_train)
    curated_train, dropped_train = clean(as_queries("train"))
    dev, dropped_dev = clean(as_queries("dev"))
    pool_ids = {s.id for s in train_pool_skills}
    needed = {sid for q in curated_train + dev for sid in q.skill_ids}
    skills = [s for s in train_pool_skills if s.id not in test_skills]
    skills += [all_skills[sid] for sid in sorted(needed - pool_ids)]
    return TrainingData(pipeline + curated_train, dev, skills, {
        "train_sources": {"pipeline": len(pipeline), "curated_train": len(curated_train)},
        "dev_source": "curated dev split",
        "curated": f"used (data {data_version})",
        "dropped_touching_curated_test": {"pipeline_train": dropped_pipeline, "curated_train": dropped_train,
                                          "curated_dev": dropped_dev},
        "pipeline_dev_unused": len(pipeline_dev),
        "curated_skills_from_pipeline_test_pool": len(needed - pool_ids),
        "curated_test_skills_out_of_training_pool": len(test_skills & pool_ids)})


def curated_data_version(requests: Sequence[Request]) -> str:
    """Hash of every request's id, split and ground truth: changes whenever what a model could see changes."""
    return digest(repr(sorted((r.id, r.split, r.query, r.groups) for r in requests)))[:12]
