"""Snapshot of the asset graph: an accidental change to keys, deps, partitions or checks fails here.

After an intended change: SKILL_ASSETS_UPDATE_SNAPSHOT=1 pytest tests/test_defs.py
"""
import json
import os
import warnings
from pathlib import Path

import dagster as dg

from skill_assets.definitions import defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "defs.json"
FILE_ASSETS = {"benchmark_release"}  # assets that are folders of files, not tables


def graph_spec() -> dict:
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        pdef = node.partitions_def
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": pdef.get_partition_keys() if pdef is not None else None,
            "checks": sorted(c.name for c in node.check_keys),
            "kinds": sorted(node.kinds),
            "automated": node.automation_condition is not None,
        }
    return {"assets": assets, "jobs": sorted(j.name for j in defs.jobs or []),
            "schedules": sorted(s.name for s in defs.schedules or [])}


def test_definitions_load_and_validate():
    dg.Definitions.validate_loadable(defs)


def test_asset_graph_matches_snapshot():
    spec = graph_spec()
    if os.environ.get("SKILL_ASSETS_UPDATE_SNAPSHOT") or not SNAPSHOT.exists():
        SNAPSHOT.write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n")
    assert spec == json.loads(SNAPSHOT.read_text())


def test_every_table_asset_is_documented():
    """docs/ARCHITECTURE.md lists every table and every column of the table contract."""
    from skill_assets.lib.common.tables import TABLES

    doc = (Path(__file__).parent.parent / "docs" / "ARCHITECTURE.md").read_text()
    graph_keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert set(TABLES) == graph_keys - FILE_ASSETS
    for table in TABLES.values():
        assert f"### `{table.name}`" in doc
        for column in table.columns:
            assert f"| `{column.name}` |" in doc, f"{table.name}.{column.name} missing from ARCHITECTURE.md"


def test_report_follows_its_parents_without_waiting_for_external_benchmarks():
    graph = defs.resolve_asset_graph()
    report = dg.AssetKey("benchmark_report")
    instance = dg.DagsterInstance.ephemeral()
    selection = dg.AssetSelection.assets(report)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, asset_selection=selection)
        for parent in graph.get(report).parent_keys:
            if parent == dg.AssetKey("external_metrics"):
                continue  # no external benchmark materialized
            pdef = graph.get(parent).partitions_def
            for key in (pdef.get_partition_keys() if pdef else [None]):
                instance.report_runless_asset_event(dg.AssetMaterialization(parent, partition=key))
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, asset_selection=selection,
                                                   cursor=result.cursor)
    assert result.get_num_requested(report) == 1
