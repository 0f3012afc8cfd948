"""Several ``--pool`` roots in precedence order: a name held by an earlier root shadows the later skill, which is
listed on stderr and never routed; ids stay unique (an id an earlier root holds gets the root's position)."""
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bilingual_pool import write_pool, write_skill  # noqa: E402

from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.retrieval.pools import PoolError, load_pools  # noqa: E402
from skill_assets.router.cli import main as route_main  # noqa: E402

DOCKER = "devops/docker-compose-networking"  # the user root's skill named docker-compose-networking
CSV = "data/pandas-csv-cleaning"
DOCKER_QUERY = "my docker compose containers cannot reach each other"


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> tuple[Path, Path]:
    """(a project root, a user root): the project's "Docker Compose_Networking" is the user's
    docker-compose-networking once names are normalised; the project's CSV folder has the user's id, another name."""
    base = tmp_path_factory.mktemp("roots")
    project = base / "project"
    write_skill(project, "net/compose", "Docker Compose_Networking",
                "Our project's rules for Docker Compose networks: one user-defined network, services reached by name.",
                "# Compose networks here\n\nPut every service on the `backend` network and call peers by service name; "
                "containers that cannot reach each other are almost always on the default bridge.\n")
    write_skill(project, CSV, "team-csv-conventions", "How this team names CSV exports and their columns.",
                "# CSV conventions\n\nFiles are named `<table>-<date>.csv`, UTF-8, with a header row.\n")
    return project, write_pool(base / "user")


def test_same_name_skills_across_roots_are_loaded_once_by_precedence(roots):
    project, user = roots
    load = load_pools([project, user], log=lambda msg: None)
    ids = [s.id for s in load.skills]
    assert "net/compose" in ids and DOCKER not in ids and len(ids) == len(set(ids)) == 11
    (shadowed,) = load.shadowed
    assert (shadowed.skill.id, shadowed.kept.id) == (DOCKER, "net/compose")
    assert str(shadowed) == (f"docker-compose-networking: {user / DOCKER / 'SKILL.md'} (shadowed by "
                             f"{project / 'net/compose' / 'SKILL.md'})")
    # an id the first root holds, for a skill of another name: both routed, the later one under its root's position
    by_id = {s.id: s for s in load.skills}
    assert (by_id[CSV].name, by_id[f"2:{CSV}"].name) == ("team-csv-conventions", "pandas-csv-cleaning")

    reverse = load_pools([user, project], log=lambda msg: None)
    by_id = {s.id: s for s in reverse.skills}
    assert DOCKER in by_id and "net/compose" not in by_id
    assert [(s.skill.id, s.kept.id) for s in reverse.shadowed] == [("net/compose", DOCKER)]
    assert (by_id[CSV].name, by_id[f"2:{CSV}"].name) == ("pandas-csv-cleaning", "team-csv-conventions")
    # one root: ids exactly as before, nothing shadowed
    single = load_pools([user], log=lambda msg: None)
    assert not single.shadowed and {s.id for s in single.skills} == {s.id for s in load_pools([user]).skills}


def test_a_prefixed_id_that_still_collides_is_an_error_naming_both_places(tmp_path):
    write_skill(tmp_path / "a", "x", "first", "d", "b")
    write_skill(tmp_path / "a", "2:x", "second", "d", "b")
    write_skill(tmp_path / "b", "x", "third", "d", "b")
    with pytest.raises(PoolError, match=r"duplicate skill id '2:x': .*a/2:x/SKILL.md and .*b/x/SKILL.md"):
        load_pools([tmp_path / "a", tmp_path / "b"], log=lambda msg: None)


def test_route_over_two_roots_routes_a_same_name_skill_once_and_names_it_on_stderr(roots, tmp_path, capsys):
    project, user = roots
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "docker", "query": DOCKER_QUERY}) + "\n"
                       + json.dumps({"id": "csv", "query": "load a messy csv with pandas and drop duplicates"}) + "\n")
    out = tmp_path / "run.jsonl"
    rc = route_main(["route", "--pool", str(project), "--pool", str(user), "--queries", str(queries), "--out",
                     str(out), "--embedder", bundled_minilm(), "--cache-dir", str(tmp_path / "cache"),
                     "--top-k", "20"])
    assert rc == 0
    runs = {line["id"]: line for line in map(json.loads, out.read_text().splitlines())}
    for run in runs.values():
        ranked = [r["skill_id"] for r in run["ranking"]]
        assert len(ranked) == len(set(ranked)) == 11 and DOCKER not in ranked
    assert runs["docker"]["ranking"][0]["skill_id"] == "net/compose"  # the project's skill, not the user's copy
    assert runs["csv"]["ranking"][0]["skill_id"] == f"2:{CSV}"  # the user's CSV skill, under its root's position
    err = capsys.readouterr().err.splitlines()
    head = err.index("1 skill(s) left out: an earlier --pool root holds a skill of the same name, which is routed "
                     "instead:")
    assert err[head + 1] == (f"  docker-compose-networking: {user / DOCKER / 'SKILL.md'} (shadowed by "
                             f"{project / 'net/compose' / 'SKILL.md'})")
