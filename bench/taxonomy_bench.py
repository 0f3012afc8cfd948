"""The rejection taxonomy on the held-out test split, and its speed on 100,000 rationales.

Classifies ``--n`` distinct rationales (the train and dev texts with a numbered clause appended, so no
two are equal) on ``--workers`` processes and times it, with the load average when it ends (the machine
is shared); then scores the shipped classifier (settled rules, then the model and its confidence floor)
on the held-out test split (``benchmarks/rationales/heldout_test.jsonl``), overall, per language and per
style. That file is scored once, with the final model; ``--speed-only`` reruns the timing alone. Writes the table into the
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


def _cpu_s(texts: list[str]) -> float:
    """CPU seconds this process spent classifying ``texts`` (what other jobs on the machine cannot inflate)."""
    started = time.process_time()
    classify_rationales(texts)
    return time.process_time() - started


def _speed(texts: list[str], workers: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds summed over the workers)."""
    chunks = [texts[i:i + CHUNK] for i in range(0, len(texts), CHUNK)]
    started = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            cpu = sum(pool.map(_cpu_s, chunks))
    else:
        cpu = sum(_cpu_s(c) for c in chunks)
    return time.perf_counter() - started, cpu


def _row(name: str, s: dict) -> str:
    recall = " / ".join(f"{s['recall'].get(c, float('nan')):.2f}" for c in CLASSES)
    kept = "–" if s["unknown_kept"] is None else f"{s['unknown_kept']:.2f}"
    return (f"| {name} | {s['n']} | {s['micro_f1']:.3f} | {s['macro_f1']:.3f} | {s['coverage']:.3f} | "
            f"{s['precision']:.3f} | {kept} | {recall} |")


def _section(tables: dict[str, dict], rule_share: float, model_share: float, speed: dict) -> str:
    head = ("| test rows | n | micro-F1 | macro-F1 | coverage | precision | reason-less kept unknown | recall: "
            + " / ".join(CLASSES) + " |\n|---|---|---|---|---|---|---|---|")
    rows = "\n".join(_row(name, s) for name, s in tables.items())
    load = " / ".join(f"{x:.1f}" for x in speed["loadavg"])
    return (f"The SKIP-rationale classifier (`classify_rationale`: settled rules, then the char n-gram model with "
            f"its dev-calibrated confidence floor {speed['floor']}) on the held-out test split "
            f"(`benchmarks/rationales/heldout_test.jsonl`: written by hand after the model was final, committed "
            f"before this, scored once), {os.cpu_count()} cores shared with other jobs.\n\n```bash\n"
            f".venv/bin/python bench/taxonomy_bench.py\n```\n\n{head}\n{rows}\n\n"
            f"micro-F1 (right labels over all rows with a real hand label, `unknown` counted wrong), macro-F1 (mean "
            f"F1 of the eight classes), coverage (rows given a real label) and precision (right over labelled) are "
            f"over the rows with a real hand label. Of the test rows, {rule_share:.1%} were labelled by a rule and "
            f"{model_share:.1%} by the model. `rules (bare)` is the first-hit rule set on the raw text, as before "
            f"this classifier. Speed: {speed['n']:,} distinct rationales in {speed['wall_s']:.1f} s on "
            f"{speed['workers']} processes ({speed['per_s']:,.0f}/s; load average {load} over 1 / 5 / 15 min "
            f"when it ended), {speed['cpu_s']:.1f} CPU seconds in all ({speed['cpu_s_per_worker']:.1f} per "
            f"process).\n")


def _scores(rows: list) -> tuple[dict, list]:
    labels = classify_rationales([r.rationale for r in rows])
    pred = [x.label for x in labels]
    tables = {}
    groups = [("all", lambda r: True), ("English", lambda r: r.lang == "en"), ("Chinese", lambda r: r.lang == "zh")]
    groups += [(f"style: {st}", lambda r, st=st: r.style == st) for st in sorted({r.style for r in rows})]
    for name, keep in groups:
        idx = [i for i, r in enumerate(rows) if keep(r)]
        tables[name] = _with_precision(taxonomy_scores([rows[i].label for i in idx], [pred[i] for i in idx],
                                                       [rows[i].lang for i in idx])["all"],
                                       [rows[i].label for i in idx], [pred[i] for i in idx])
    bare = [match_rules(r.rationale).label for r in rows]
    tables["all, rules (bare)"] = _with_precision(taxonomy_scores([r.label for r in rows], bare,
                                                                  [r.lang for r in rows])["all"],
                                                  [r.label for r in rows], bare)
    return tables, labels


def _with_precision(figures: dict, gold: list[str], pred: list[str]) -> dict:
    given = [(g, p) for g, p in zip(gold, pred) if p != "unknown"]
    return figures | {"precision": round(sum(g == p for g, p in given) / len(given), 4) if given else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/RESULTS.md")
    parser.add_argument("--speed-only", action="store_true", help="time only: do not read or score the test split")
    args = parser.parse_args()
    rows = labelled_rationales()
    pool = [r.rationale for r in rows if r.split != "test"]
    texts = [f"{pool[i % len(pool)]} ({i // len(pool) + 1})" for i in range(args.n)]
    model = shipped_model()  # loaded before the clock starts, as a serving process would
    wall, cpu = _speed(texts, args.workers)
    speed = {"n": args.n, "workers": args.workers, "wall_s": round(wall, 2), "per_s": round(args.n / wall),
             "cpu_s": round(cpu, 2), "cpu_s_per_worker": round(cpu / args.workers, 2),
             "loadavg": [round(x, 2) for x in os.getloadavg()], "floor": model.floor}
    if args.speed_only:
        print(json.dumps({"model_version": model.version, **{f"speed_{k}": v for k, v in speed.items()}}))
        return
    test = [r for r in rows if r.split == "test"]
    tables, labels = _scores(test)
    rule_share = sum(x.method == "rule" for x in labels) / len(labels)
    model_share = sum(x.method == "model" for x in labels) / len(labels)
    if not args.no_write:
        write_section("taxonomy-bench", _section(tables, rule_share, model_share, speed))
    a, en, zh = tables["all"], tables["English"], tables["Chinese"]
    print(json.dumps({"test_n": a["n"], "micro_f1": a["micro_f1"], "macro_f1": a["macro_f1"],
                      "coverage": a["coverage"], "precision": a["precision"], "min_class_recall": min(a["recall"].values()),
                      "recall": a["recall"], **{f"{k}_{m}": t[m] for k, t in (("en", en), ("zh", zh))
                                                for m in ("n", "micro_f1", "macro_f1", "coverage")},
                      "en_recall": en["recall"], "zh_recall": zh["recall"],
                      "rule_share": round(rule_share, 4), "model_share": round(model_share, 4),
                      "model_version": model.version, **{f"speed_{k}": v for k, v in speed.items()}},
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
