"""Router model files are data from wherever a user or a store points: checked before anything reads them.

A router folder (``fusion.json``, ``lambdarank.txt``, ``selection.json``) may be damaged (a torn
copy, a disk that filled) or written to do harm. LightGBM trusts its text format: a truncated
booster crashed the process (SIGSEGV), a split on a feature the model does not have aborted it, and
a node that points back to itself spun forever. So every file is checked here, in Python, against
what the code that reads it needs, and refused with one ``ModelFileError`` line naming the file.
A booster reaches LightGBM only once every tree is a well-formed binary tree over the features the
fusion computes, and without its ``tree_sizes`` header line (byte offsets LightGBM jumps by).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

#: a router folder's files are kilobytes to a few megabytes; anything far larger is not one
MAX_MODEL_FILE_BYTES = 64 * 1024 * 1024


class ModelFileError(ValueError):
    """A model file that cannot be used as it is; the message names the file and what is wrong, in one line."""


def read_text(path: Path) -> str:
    """The file's text, refused when missing, too large or not UTF-8."""
    if not path.is_file():
        raise ModelFileError(f"{path}: missing")
    size = path.stat().st_size
    if size > MAX_MODEL_FILE_BYTES:
        raise ModelFileError(f"{path}: {size} bytes, larger than any router model file "
                             f"({MAX_MODEL_FILE_BYTES} bytes)")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path}: unreadable ({type(exc).__name__})") from None


def read_json_object(path: Path) -> dict:
    """A JSON object from ``path``; a truncated or foreign file is refused."""
    try:
        body = json.loads(read_text(path))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ModelFileError(f"{path}: not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(body, dict):
        raise ModelFileError(f"{path}: not a JSON object")
    return body


def number_list(path: Path, key: str, value: object, length: int | None = None) -> list[float]:
    """``value`` as a list of finite numbers (of ``length`` where given), else ModelFileError."""
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                              and math.isfinite(v) for v in value):
        raise ModelFileError(f"{path}: {key} must be a list of finite numbers")
    if length is not None and len(value) != length:
        raise ModelFileError(f"{path}: {key} has {len(value)} values, the model needs {length}")
    return [float(v) for v in value]


def _ints(path: Path, tree: int, key: str, fields: dict[str, str], count: int) -> list[int]:
    try:
        values = [int(v) for v in fields.get(key, "").split()]
    except ValueError:
        raise ModelFileError(f"{path}: tree {tree}: {key} holds a non-integer") from None
    if len(values) != count:
        raise ModelFileError(f"{path}: tree {tree}: {key} has {len(values)} values, needs {count}")
    return values


def _floats(path: Path, tree: int, key: str, fields: dict[str, str], count: int, finite: bool) -> None:
    try:
        values = [float(v) for v in fields.get(key, "").split()]
    except ValueError:
        raise ModelFileError(f"{path}: tree {tree}: {key} holds a non-number") from None
    if len(values) != count or (finite and not all(map(math.isfinite, values))):
        raise ModelFileError(f"{path}: tree {tree}: {key} needs {count} {'finite ' if finite else ''}numbers")


def _check_tree(path: Path, tree: int, fields: dict[str, str], n_features: int) -> None:
    """One tree: leaves, numeric splits on known features, and children that form one binary tree from node 0."""
    try:
        leaves = int(fields.get("num_leaves", ""))
    except ValueError:
        raise ModelFileError(f"{path}: tree {tree}: num_leaves missing or not an integer") from None
    if leaves < 1:
        raise ModelFileError(f"{path}: tree {tree}: {leaves} leaves")
    if fields.get("num_cat", "0").strip() != "0" or fields.get("is_linear", "0").strip() != "0":
        raise ModelFileError(f"{path}: tree {tree}: categorical or linear trees are not router models")
    _floats(path, tree, "leaf_value", fields, leaves, finite=True)
    if leaves == 1:
        return
    nodes = leaves - 1
    features = _ints(path, tree, "split_feature", fields, nodes)
    if any(not 0 <= f < n_features for f in features):
        raise ModelFileError(f"{path}: tree {tree}: a split on feature {max(features, key=abs)}, the model has "
                             f"{n_features} features")
    if any(d & 1 or not 0 <= d < 16 for d in _ints(path, tree, "decision_type", fields, nodes)):
        raise ModelFileError(f"{path}: tree {tree}: a categorical or unknown decision type")
    _floats(path, tree, "threshold", fields, nodes, finite=False)
    left, right = (_ints(path, tree, key, fields, nodes) for key in ("left_child", "right_child"))
    seen_nodes, seen_leaves, stack = {0}, set(), [0]
    while stack:  # every node and leaf reached exactly once from the root: no cycle, no sharing, nothing loose
        node = stack.pop()
        for child in (left[node], right[node]):
            if child >= 0:
                if child >= nodes or child in seen_nodes:
                    raise ModelFileError(f"{path}: tree {tree}: node {node} points to node {child}: not a tree")
                seen_nodes.add(child)
                stack.append(child)
            else:
                leaf = ~child
                if leaf >= leaves or leaf in seen_leaves:
                    raise ModelFileError(f"{path}: tree {tree}: node {node} points to leaf {leaf}: not a tree")
                seen_leaves.add(leaf)
    if len(seen_nodes) != nodes or len(seen_leaves) != leaves:
        raise ModelFileError(f"{path}: tree {tree}: nodes or leaves not reachable from the root")


def checked_booster_text(path: Path, n_features: int) -> str:
    """The LightGBM text model at ``path`` after checking it is a single-output model over exactly ``n_features``
    features whose every tree is well formed (``_check_tree``), ending in ``end of trees``; returned without its
    ``tree_sizes`` line, so LightGBM reads the trees one after another instead of jumping by stored offsets."""
    text = read_text(path)
    head, sep, rest = text.partition("\nTree=")
    if not text.startswith("tree\n") or not sep or "\nend of trees" not in rest:
        raise ModelFileError(f"{path}: not a complete LightGBM model (truncated, or another format)")
    header = dict(line.split("=", 1) for line in head.splitlines()[1:] if "=" in line)
    expect = {"num_class": "1", "num_tree_per_iteration": "1", "max_feature_idx": str(n_features - 1),
              "objective": "lambdarank"}
    for key, value in expect.items():
        if header.get(key, "").split(" ")[0] != value:
            raise ModelFileError(f"{path}: {key}={header.get(key)!r}, a router booster over {n_features} features "
                                 f"has {value}")
    for key in ("feature_names", "feature_infos"):
        if key in header and len(header[key].split()) != n_features:
            raise ModelFileError(f"{path}: {key} lists {len(header[key].split())} features, needs {n_features}")
    trees_text = rest.split("\nend of trees", 1)[0]
    blocks = ("Tree=" + trees_text).split("\nTree=")
    for i, block in enumerate(blocks):
        lines = block.strip().splitlines()
        if not lines or lines[0].strip() not in (f"Tree={i}", str(i)):
            raise ModelFileError(f"{path}: tree {i} is out of order or unnamed")
        _check_tree(path, i, dict(line.split("=", 1) for line in lines[1:] if "=" in line), n_features)
    return "\n".join(line for line in text.split("\n") if not line.startswith("tree_sizes="))
