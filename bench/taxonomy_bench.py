"""The rejection taxonomy on the held-out test split, and its speed on 100,000 rationales.

Scores the shipped classifier (settled rules, then the model and its confidence floor) once on the
test split of the labelled rationales (``lib/taxonomy/labelled.py``), overall, per source and per
language; then classifies ``--n`` distinct rationales (the labelled texts with a numbered clause
appended, so no two are equal) on ``--workers`` processes and times it. Writes the table into the
``taxonomy-bench`` section of ``docs/RESULTS.md`` (``bench/results_doc.py``) and ends with one JSON line of figures.

    .venv/bin/python bench/taxonomy_bench.py            # --n 100000 --workers 2
"""
from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

from results_doc import write_section

from skill_assets.lib.taxonomy.classify import classify_rationales, shipped_model
from skill_assets.lib.taxonomy.labelled import labelled_rationales
from skill_assets.lib.taxonomy.rules import match_rules
from skill_assets.lib.taxonomy.scoring import CLASSES, taxonomy_scores

CHUNK = 5000


def _labels(texts: list[str]) -> list[str]:
    return [x.label for x in classify_rationales(texts)]


def _speed(texts: list[str], workers: int) -> float:
    chunks = [texts[i:i + CHUNK] for i in range(0, len(texts), CHUNK)]
    started = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(_labels, chunks))
    else:
        for c in chunks:
            _labels(c)
    return time.perf_counter() - started


def _row(name: str, s: dict) -> str:
    recall = " / ".join(f"{s['recall'].get(c, float('nan')):.2f}" for c in CLASSES)
    kept = "–" if s["unknown_kept"] is None else f"{s['unknown_kept']:.2f}"
    return (f"| {name} | {s['n']} | {s['micro_f1']:.3f} | {s['macro_f1']:.3f} | {s['coverage']:.3f} | {kept} | "
            f"{recall} |")


def _section(tables: dict[str, dict], rule_share: float, model_share: float, speed: dict) -> str:
    head = ("| test rows | n | micro-F1 | macro-F1 | coverage | reason-less kept unknown | recall: "
            + " / ".join(CLASSES) + " |\n|---|---|---|---|---|---|---|")
    rows = "\n".join(_row(name, s) for name, s in tables.items())
    return (f"The SKIP-rationale classifier (`classify_rationale`: settled rules, then the char n-gram model with "
            f"its confidence floor) on the held-out test split of the labelled rationales, {os.cpu_count()} cores "
            f"shared with other jobs.\n\n```bash\n.venv/bin/python bench/taxonomy_bench.py\n```\n\n{head}\n{rows}\n\n"
            f"micro-F1 and coverage are over the rows with a real hand label; the reason-less rows (hand label "
            f"`unknown`) are counted apart. Of the test rows, {rule_share:.1%} were labelled by a rule and "
            f"{model_share:.1%} by the model. `rules (bare)` is the first-hit rule set on the raw text, as before "
            f"this classifier. Speed: {speed['n']:,} distinct rationales in {speed['wall_s']:.1f} s on "
            f"{speed['workers']} processes ({speed['per_s']:,.0f}/s).\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/RESULTS.md")
    args = parser.parse_args()
    rows = labelled_rationales()
    test = [r for r in rows if r.split == "test"]
    labels = classify_rationales([r.rationale for r in test])
    pred = [x.label for x in labels]
    tables = {}
    for name, keep in (("all", lambda r: True), ("English", lambda r: r.lang == "en"),
                       ("Chinese", lambda r: r.lang == "zh"), ("curated (hand-labelled benchmark)",
                                                                lambda r: r.source == "curated"),
                       ("written for the classifier", lambda r: r.source == "written")):
        idx = [i for i, r in enumerate(test) if keep(r)]
        tables[name] = taxonomy_scores([test[i].label for i in idx], [pred[i] for i in idx],
                                       [test[i].lang for i in idx])["all"]
    tables["all, rules (bare)"] = taxonomy_scores([r.label for r in test], [match_rules(r.rationale).label
                                                                           for r in test], [r.lang for r in test])["all"]
    rule_share = sum(x.method == "rule" for x in labels) / len(labels)
    model_share = sum(x.method == "model" for x in labels) / len(labels)
    pool = [r.rationale for r in rows]
    texts = [f"{pool[i % len(pool)]} ({i // len(pool) + 1})" for i in range(args.n)]
    shipped_model()  # loaded before the clock starts, as a serving process would
    wall = _speed(texts, args.workers)
    speed = {"n": args.n, "workers": args.workers, "wall_s": round(wall, 2), "per_s": round(args.n / wall)}
    if not args.no_write:
        write_section("taxonomy-bench", _section(tables, rule_share, model_share, speed))
    a = tables["all"]
    print(json.dumps({"test_n": a["n"], "micro_f1": a["micro_f1"], "macro_f1": a["macro_f1"],
                      "coverage": a["coverage"], "unknown_kept": a["unknown_kept"], "min_class_recall": min(a["recall"].values()),
                      "recall": a["recall"], "en_micro_f1": tables["English"]["micro_f1"],
                      "zh_micro_f1": tables["Chinese"]["micro_f1"],
                      "curated_micro_f1": tables["curated (hand-labelled benchmark)"]["micro_f1"],
                      "rule_share": round(rule_share, 4), "model_share": round(model_share, 4),
                      "model_version": shipped_model().version, **{f"speed_{k}": v for k, v in speed.items()}}))


if __name__ == "__main__":
    main()
