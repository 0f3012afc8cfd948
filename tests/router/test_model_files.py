"""Damaged and hostile router model folders: refused in one line, in the same process, before LightGBM reads them.

Each case starts from a copy of the shipped router folder (with a LambdaRank fusion fitted here in place of
its own, for the booster cases, whatever kind the shipped fusion is) and breaks one file the way a torn copy
or an attacker would. Before the checks, ``route --fusion`` died with SIGSEGV (a truncated booster),
SIGABRT (a split on feature 999999), spun at 100 % CPU (a node pointing to itself) or printed a
traceback (a truncated card, an unknown kind, a bad lexical folder). Each runs as a real
``skill-assets route`` subprocess, so a crash shows as a signal exit, not a passing test.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skill_assets.lib.retrieval.abstention import ABSTENTION_FILE
from skill_assets.lib.retrieval.defaults import SHIPPED_DIR
from skill_assets.lib.retrieval.fusion import (BOOSTER_FILE, MODEL_FILE, PAIRS, Candidates, FusionModel,
                                               feature_names, fit_lambdarank)
from skill_assets.lib.retrieval.model_files import ModelFileError, checked_booster_text

pytestmark = pytest.mark.timeout(600)


def _booster(folder: Path) -> Path:
    return folder / BOOSTER_FILE


def truncated_booster(folder: Path) -> None:
    text = _booster(folder).read_text()
    _booster(folder).write_text(text[: len(text) // 3])


def split_on_a_missing_feature(folder: Path) -> None:
    text = _booster(folder).read_text()
    _booster(folder).write_text(re.sub(r"(?m)^split_feature=\d+", "split_feature=999999", text, count=1))


def node_pointing_to_itself(folder: Path) -> None:
    text = _booster(folder).read_text()
    _booster(folder).write_text(re.sub(r"(?m)^left_child=\S+", "left_child=0", text, count=1))


def leaf_used_twice(folder: Path) -> None:
    text = _booster(folder).read_text()
    _booster(folder).write_text(re.sub(r"(?m)^right_child=(\S+) (\S+)", r"right_child=\1 -1", text, count=1))


def lying_tree_sizes(folder: Path) -> None:
    text = _booster(folder).read_text()
    _booster(folder).write_text(re.sub(r"(?m)^tree_sizes=.*$", "tree_sizes=" + " ".join(["99999999"] * 300), text))


def truncated_card(folder: Path) -> None:
    text = (folder / MODEL_FILE).read_text()
    (folder / MODEL_FILE).write_text(text[: len(text) // 2])


def unknown_kind(folder: Path) -> None:
    body = json.loads((folder / MODEL_FILE).read_text())
    (folder / MODEL_FILE).write_text(json.dumps({**body, "kind": "perceptron"}))


def unknown_reading_in_card(folder: Path) -> None:
    body = json.loads((folder / MODEL_FILE).read_text())
    (folder / MODEL_FILE).write_text(json.dumps({**body, "card": {**body["card"], "dense_reading": "telepathy"}}))


def document_cap_out_of_range(folder: Path) -> None:
    body = json.loads((folder / MODEL_FILE).read_text())
    (folder / MODEL_FILE).write_text(json.dumps({**body, "card": {**body["card"], "document_tokens": 10 ** 9}}))


def bad_lexical_folder(folder: Path) -> None:
    (folder / "lexical" / MODEL_FILE).write_text('{"kind": "linear", "feature_set": 3, "signals": ["bm25"], '
                                                 '"depth": 50, "coef": [1.0, "x"], "intercept": 0}')


def damaged_selection(folder: Path) -> None:
    body = json.loads((folder / "selection.json").read_text())
    (folder / "selection.json").write_text(json.dumps({**body, "coef": [[1.0, 2.0]]}))


def damaged_abstention(folder: Path) -> None:
    body = json.loads((folder / ABSTENTION_FILE).read_text())
    (folder / ABSTENTION_FILE).write_text(json.dumps({**body, "coef": body["coef"][:-1]}))


BOOSTER_CASES = (truncated_booster, split_on_a_missing_feature, node_pointing_to_itself, leaf_used_twice)
CASES = {f.__name__: f for f in (*BOOSTER_CASES, truncated_card, unknown_kind, unknown_reading_in_card,
                                  document_cap_out_of_range, bad_lexical_folder,
                                  damaged_selection, damaged_abstention)}


@pytest.fixture(scope="module")
def boosted(tmp_path_factory) -> Path:
    """A copy of the shipped router folder whose fusion is a LambdaRank fitted here (40 requests of random
    features, over the shipped fusion's signals): the booster's checks are tested whatever kind ships."""
    folder = tmp_path_factory.mktemp("boosted") / "router"
    shutil.copytree(SHIPPED_DIR, folder)
    shipped = FusionModel.load(SHIPPED_DIR)
    rng = np.random.default_rng(0)
    width, n = len(feature_names(shipped.signals)), 30
    cands = [Candidates(np.arange(n), rng.normal(size=(n, width)).astype(np.float32),
                        rng.integers(0, len(PAIRS), n), bool(rng.integers(2)),
                        rng.normal(size=(n, len(shipped.signals))).astype(np.float32)) for _ in range(40)]
    model = fit_lambdarank(cands, [(c.features[:, 0] > 0.5).astype(np.int64) for c in cands], shipped.signals,
                           20, 7, shipped.depth)
    model.card = shipped.card
    model.save(folder)
    return folder


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_damaged_router_folder_is_refused_in_one_line(case, tmp_path, boosted):
    folder = tmp_path / "router"
    shutil.copytree(boosted if CASES[case] in BOOSTER_CASES else SHIPPED_DIR, folder)
    CASES[case](folder)
    pool = tmp_path / "pool" / "one"
    pool.mkdir(parents=True)
    (pool / "SKILL.md").write_text("---\nname: one\ndescription: a skill\n---\nbody\n")
    done = subprocess.run([sys.executable, "-m", "skill_assets.router.cli", "route", "--pool", str(pool.parent),
                           "--query", "anything", "--fusion", str(folder), "--cache-dir", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    errors = [line for line in done.stderr.splitlines() if line.startswith("skill-assets route: error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert str(folder) in errors[0]


def test_a_booster_passes_and_predicts_as_lightgbm_reads_the_file(boosted):
    import lightgbm

    model = FusionModel.load(boosted).ready()
    direct = lightgbm.Booster(model_file=str(_booster(boosted)))
    x = np.random.default_rng(0).normal(size=(64, direct.num_feature())).astype(np.float32)
    assert np.array_equal(model.booster.predict(x, num_threads=1), direct.predict(x, num_threads=1))


def test_stored_tree_offsets_are_never_what_lightgbm_jumps_by(tmp_path, boosted):
    """``tree_sizes`` (byte offsets LightGBM seeks by) is dropped before LightGBM reads the text: a lying one
    changes nothing, where it could send the native reader past the end of the buffer."""
    folder = tmp_path / "router"
    shutil.copytree(boosted, folder)
    lying_tree_sizes(folder)
    model, shipped = FusionModel.load(folder).ready(), FusionModel.load(boosted).ready()
    x = np.random.default_rng(1).normal(size=(32, shipped.booster.num_feature())).astype(np.float32)
    assert np.array_equal(model.booster.predict(x, num_threads=1), shipped.booster.predict(x, num_threads=1))


def test_a_booster_over_other_features_is_refused(boosted):
    with pytest.raises(ModelFileError, match="max_feature_idx"):
        checked_booster_text(_booster(boosted), 12)
