"""``skill-assets``: materialize the asset graph from scripts and CI, and run the users' SQL.

Dagster runs one partitions definition per run, so ``materialize`` walks the selected assets in
topological order and cuts them into consecutive runs: unpartitioned stretches run once,
partitioned ones once per requested partition that their definition has (default: ``r3`` for the
model variants, every direction for ``llm_records``).
Runs are recorded in the Dagster instance at $DAGSTER_HOME (default: ``dagster_home`` beside the
DuckDB file), so ``dagster dev`` afterwards shows their lineage, metadata and the report.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from skill_assets.router.cli import add_route_parser, add_serve_parser

DEFAULT_PARTITION = "r3"


def _dagster_home(db: str) -> Path:
    home = Path(os.environ.get("DAGSTER_HOME") or Path(db).resolve().parent / "dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def plan_runs(selection: list[str] | None = None) -> list[tuple[list, object]]:
    """[(asset keys, partitions definition or None)] in an order that respects dependencies."""
    import dagster as dg

    from skill_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = graph.toposorted_asset_keys
    if selection:
        chosen = dg.AssetSelection.from_string(" or ".join(selection)).resolve(graph)
        keys = [k for k in keys if k in chosen]
    runs: list[tuple[list, object]] = []
    for key in keys:
        pdef = graph.get(key).partitions_def
        if runs and runs[-1][1] == pdef:
            runs[-1][0].append(key)
        else:
            runs.append(([key], pdef))
    return runs


def partition_keys_for(pdef, requested: list[str] | None) -> list[str]:
    """The partitions to run for one partitioned stretch.

    The requested keys that this definition has; if none, ``r3`` where it exists (the model
    variants) and otherwise every key (``llm_records``' directions: generation covers all of them).
    """
    available = pdef.get_partition_keys()
    chosen = [p for p in requested or [] if p in available]
    if chosen:
        return chosen
    return [DEFAULT_PARTITION] if DEFAULT_PARTITION in available else available


def _run_config_for(keys: list, config: dict) -> dict:
    """Keep only the op config of ops in this run (Dagster rejects config for ops outside it)."""
    from skill_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    ops = {graph.get(k).assets_def.op.name for k in keys}
    return {"ops": {op: cfg for op, cfg in config.get("ops", {}).items() if op in ops}}


def materialize(selection: list[str] | None, config_path: str | None, partitions: list[str] | None) -> int:
    import dagster as dg

    from skill_assets.definitions import defs

    db = os.environ.get("SKILL_ASSETS_DB", "data/skill_assets.duckdb")
    _dagster_home(db)
    config = yaml.safe_load(Path(config_path).read_text()) if config_path else {}
    assets = list(defs.assets or []) + list(defs.asset_checks or [])
    runs = plan_runs(selection)
    known = {p for _, pdef in runs if pdef is not None for p in pdef.get_partition_keys()}
    if unknown := sorted(set(partitions or []) - known):
        print(f"unknown partition(s) {unknown}; the selected assets have {sorted(known)}", file=sys.stderr)
        return 2
    with dg.DagsterInstance.get() as instance:
        for keys, pdef in runs:
            names = ", ".join(k.to_user_string() for k in keys)
            keys_to_run = [None]
            if pdef is not None:
                keys_to_run = partition_keys_for(pdef, partitions)
            for partition in keys_to_run:
                print(f"materializing {names}" + (f" [{partition}]" if partition else ""), flush=True)
                result = dg.materialize(assets, selection=keys, instance=instance, resources=defs.resources,
                                        partition_key=partition, run_config=_run_config_for(keys, config),
                                        raise_on_error=False)
                if not result.success:
                    print(f"run {result.run_id} failed while materializing {names}", file=sys.stderr)
                    return 1
                failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
                for e in failed:
                    print(f"check failed: {e.asset_check_key.asset_key.to_user_string()}:{e.check_name}",
                          file=sys.stderr)
                if failed:
                    return 1
    print(f"done: tables in {db}", flush=True)
    return 0


def run_sql(path: str) -> int:
    from skill_assets.lib.common.store import connect

    sql = Path(path).read_text()
    db = os.environ.get("SKILL_ASSETS_DB", "data/skill_assets.duckdb")
    with connect(db, read_only=True) as con:
        df = con.execute(sql).pl()
    import polars as pl

    with pl.Config(tbl_rows=200, tbl_cols=20, fmt_str_lengths=80, tbl_hide_dataframe_shape=True):
        print(df)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skill-assets", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("materialize", help="materialize assets (default: the whole graph)")
    m.add_argument("--select", action="append", help="Dagster asset selection, e.g. 'key:skills+' (repeatable)")
    m.add_argument("--config", help="YAML run config ({ops: {op_name: {config: {...}}}})")
    m.add_argument("--partition", action="append", help="partition key for partitioned assets (repeatable)")
    s = sub.add_parser("sql", help="run a SQL file against the store (read-only) and print the result")
    s.add_argument("file")
    add_route_parser(sub)
    add_serve_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "materialize":
        return materialize(args.select, args.config, args.partition)
    if args.command in ("route", "serve"):
        return args.func(args)
    return run_sql(args.file)


if __name__ == "__main__":
    raise SystemExit(main())
