"""``skill-assets route --query`` over real skills: a warm start (pool manifest, cached indexes) answers exactly as
the cold start did, parsing no file and encoding no document. Real subprocesses, the shipped router."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from skill_assets.lib.core.skill_files import walk_skill_paths
from skill_assets.lib.retrieval import pool_manifest

SKILLS = 40
QUERIES = ("my docker compose containers cannot reach each other", "把几个 PDF 文件合并成一个")


def route(pool, cache, *how: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "skill_assets.cli", "route", *how, "--pool", str(pool),
                           "--cache-dir", str(cache)], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_a_warm_route_answers_as_the_cold_one_without_parsing_or_encoding(shared_corpus, tmp_path):
    pool = tmp_path / "pool"
    for path in [p for p in walk_skill_paths(shared_corpus) if isinstance(p, str)][:SKILLS]:
        copy = pool / os.path.relpath(path, shared_corpus)
        copy.parent.mkdir(parents=True)
        shutil.copyfile(path, copy)
    time.sleep(pool_manifest.RACY_SECONDS)  # the copies are settled: their manifest entries are kept
    queries, cache = tmp_path / "queries.jsonl", tmp_path / "cache"
    queries.write_text("".join(json.dumps({"id": i, "query": q}, ensure_ascii=False) + "\n"
                               for i, q in enumerate(QUERIES)), encoding="utf-8")
    cold = route(pool, cache, "--queries", str(queries), "--out", str(tmp_path / "cold.jsonl"))
    assert f"({SKILLS} files parsed, 0 unchanged since the last read)" in cold.stderr
    assert re.search(r"indexed in [0-9.]+s \(0 cached, [1-9][0-9]* encoded\)", cold.stderr), cold.stderr
    warm = route(pool, cache, "--queries", str(queries), "--out", str(tmp_path / "warm.jsonl"))
    assert f"(0 files parsed, {SKILLS} unchanged since the last read)" in warm.stderr
    assert f"({SKILLS} cached, 0 encoded)" in warm.stderr
    answers = (tmp_path / "warm.jsonl").read_text(encoding="utf-8")
    assert answers == (tmp_path / "cold.jsonl").read_text(encoding="utf-8") and len(answers.splitlines()) == 2
    one = route(pool, cache, "--query", QUERIES[0])
    best = json.loads(answers.splitlines()[0])["ranking"][0]["skill_id"]
    assert f"(0 files parsed, {SKILLS} unchanged since the last read)" in one.stderr
    [first] = [line for line in one.stdout.splitlines() if line.split()[:1] == ["1"]]
    assert best[:59] in first  # a table cell is cut at 60 characters


def test_a_route_that_fails_still_says_why_in_one_line_and_exits_2(tmp_path):
    """The command line ends without the interpreter's teardown (``end_process``): the status and the last line
    written must still come out."""
    done = subprocess.run([sys.executable, "-m", "skill_assets.cli", "route", "--query", "docker", "--pool",
                           str(tmp_path / "missing"), "--cache-dir", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == f"skill-assets route: error: skill pool {tmp_path / 'missing'} does not exist"
