"""``skill-assets materialize``: the asset graph from scripts and CI, as runs the Dagster UI shows.

Dagster runs one partitions definition per run, so the selected assets are walked in
topological order and cut into consecutive runs: unpartitioned stretches run once, partitioned
ones once per requested partition that their definition has (default: ``r3`` for the model
variants, every direction for ``llm_records``). Runs are recorded in the Dagster instance at
$DAGSTER_HOME (default: ``dagster_home`` beside the DuckDB file).

What a script needs from it besides: a bad ``--select`` is one line with the valid form, not a
traceback; a selection that cuts a multi-asset (``key:skills+`` leaves ``skill_duplicates`` out
of ``deduplicated_skills``) takes the whole multi-asset; a run whose every generator request
FAILED exits non-zero with the reasons instead of printing "done"; and runs left ``STARTED`` by a
killed process (tagged with its token) are marked failed at the next start.
"""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import yaml

from skill_assets.lib.models.model_registry import DEFAULT_VARIANT
from skill_assets.lib.common.processes import process_token, token_alive
from skill_assets.lib.common.store import resolve_db

DEFAULT_PARTITION = DEFAULT_VARIANT
PROCESS_TAG = "skill_assets/process"
HOST_TAG = "skill_assets/host"
SELECTION_HELP = ("use Dagster's asset selection syntax, e.g. --select 'key:skills+' (skills and everything "
                  "downstream), --select 'group:corpus', --select 'key:llm_records' --partition en2en")


class SelectionError(ValueError):
    """A ``--select`` that does not parse or selects nothing; the message is one line."""


def _dagster_home(db: str) -> Path:
    home = Path(os.environ.get("DAGSTER_HOME") or Path(db).resolve().parent / "dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def _parses(text: str) -> bool:
    import dagster as dg

    try:
        dg.AssetSelection.from_string(text)
    except Exception:  # noqa: BLE001 - Dagster raises several types for a bad string
        return False
    return True


def _as_dagster_selection(text: str) -> str:
    """``text``, or the union of its space-separated parts where only they parse (``'key:a key:b'``).

    Dagster's syntax unites with ``or``; the space-separated list is the form people (and this
    README) write, so it means the same instead of being refused.
    """
    parts = text.split()
    if len(parts) > 1 and not _parses(text) and all(_parses(p) for p in parts):
        return " or ".join(f"({p})" for p in parts)
    return text


def selected_keys(graph, selection: list[str]) -> set:
    """Asset keys of ``selection``, widened to whole multi-assets that cannot run in part."""
    import dagster as dg

    text = " or ".join(f"({_as_dagster_selection(s)})" for s in selection)
    try:
        chosen = set(dg.AssetSelection.from_string(text).resolve(graph))
    except Exception as exc:  # noqa: BLE001 - Dagster raises several types for a bad string
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SelectionError(f"invalid --select {' '.join(selection)!r}: {first}; {SELECTION_HELP}") from None
    if not chosen:
        raise SelectionError(f"--select {' '.join(selection)!r} selects no asset; {SELECTION_HELP}")
    for key in list(chosen):
        assets_def = graph.get(key).assets_def
        if not assets_def.can_subset:
            chosen |= set(assets_def.keys)
    return chosen


def plan_runs(selection: list[str] | None = None) -> list[tuple[list, object]]:
    """[(asset keys, partitions definition or None)] in an order that respects dependencies."""
    from skill_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = graph.toposorted_asset_keys
    if selection:
        chosen = selected_keys(graph, selection)
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


def configured_resources(resources: dict, overrides: dict) -> dict:
    """``resources`` with the run config's ``resources: {name: {config: {field: value}}}`` applied.

    This is how a run config sets the LLM endpoint's timeout, concurrency and retries (or any other
    resource field) for one ``materialize``; an unknown resource or field is a ``ValueError`` that
    names the valid ones.
    """
    out = dict(resources)
    for name, section in (overrides or {}).items():
        if name not in out:
            raise ValueError(f"run config: unknown resource {name!r}; resources are {sorted(out)}")
        fields = (section or {}).get("config", {}) if isinstance(section, dict) else None
        if not isinstance(fields, dict):
            raise ValueError(f"run config: resources.{name} takes {{config: {{field: value}}}}")
        resource = out[name]
        known = type(resource).model_fields
        if unknown := sorted(set(fields) - set(known)):
            raise ValueError(f"run config: resources.{name} has no field {unknown}; fields are {sorted(known)}")
        current = {k: getattr(resource, k) for k in known}
        out[name] = type(resource)(**{**current, **fields})
    return out


def mark_stale_runs(instance) -> list[str]:
    """Mark failed the runs this host's CLI started whose process is gone (killed); return their ids."""
    import dagster as dg

    stale = []
    active = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=active, tags={HOST_TAG: socket.gethostname()})):
        token = run.tags.get(PROCESS_TAG, "")
        if token and not token_alive(token):
            instance.report_run_failed(run, message=f"process {token} that ran it is gone (killed?); "
                                                    "marked failed by the next skill-assets materialize")
            stale.append(run.run_id)
    return stale


def all_failed_summary(result, partition: str | None) -> list[str]:
    """One line per asset whose every record FAILED in this run (e.g. a dead or refusing LLM endpoint)."""
    lines = []
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        meta = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
        records, failed = meta.get("records"), meta.get("decisions/FAILED")
        if isinstance(records, int) and records > 0 and failed == records:
            reasons = ", ".join(f"{k.split('/', 1)[1]}: {v}" for k, v in sorted(meta.items())
                                if k.startswith("failed/"))
            where = mat.asset_key.to_user_string() + (f" [{partition}]" if partition else "")
            lines.append(f"{where}: all {records} records FAILED ({reasons}; stop: {meta.get('stop_reason', '?')}); "
                         "check the endpoint and key (SKILL_ASSETS_LLM_BASE_URL, SKILL_ASSETS_LLM_API_KEY)")
    return lines


def materialize(selection: list[str] | None, config_path: str | None, partitions: list[str] | None) -> int:
    import dagster as dg

    from skill_assets.definitions import defs

    db = str(resolve_db())
    _dagster_home(db)
    try:
        config = (yaml.safe_load(Path(config_path).read_text()) or {}) if config_path else {}
        resources = configured_resources(defs.resources, config.get("resources", {}))
        runs = plan_runs(selection)
    except (OSError, yaml.YAMLError, SelectionError, ValueError) as exc:
        print(f"skill-assets materialize: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    assets = list(defs.assets or []) + list(defs.asset_checks or [])
    known = {p for _, pdef in runs if pdef is not None for p in pdef.get_partition_keys()}
    if unknown := sorted(set(partitions or []) - known):
        print(f"unknown partition(s) {unknown}; the selected assets have {sorted(known)}", file=sys.stderr)
        return 2
    tags = {PROCESS_TAG: process_token(), HOST_TAG: socket.gethostname()}
    with dg.DagsterInstance.get() as instance:
        for run_id in mark_stale_runs(instance):
            print(f"marked run {run_id} failed: the process that ran it is gone", file=sys.stderr)
        for keys, pdef in runs:
            names = ", ".join(k.to_user_string() for k in keys)
            all_failed: list[str] = []
            for partition in partition_keys_for(pdef, partitions) if pdef is not None else [None]:
                print(f"materializing {names}" + (f" [{partition}]" if partition else ""), flush=True)
                result = dg.materialize(assets, selection=keys, instance=instance, resources=resources,
                                        partition_key=partition, run_config=_run_config_for(keys, config),
                                        raise_on_error=False, tags=tags)
                if not result.success:
                    print(f"run {result.run_id} failed while materializing {names}", file=sys.stderr)
                    return 1
                failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
                for e in failed:
                    print(f"check failed: {e.asset_check_key.asset_key.to_user_string()}:{e.check_name}",
                          file=sys.stderr)
                if failed:
                    return 1
                all_failed += all_failed_summary(result, partition)
            if all_failed:
                print("\n".join(all_failed), file=sys.stderr)
                return 1
    print(f"done: tables in {db}", flush=True)
    return 0
