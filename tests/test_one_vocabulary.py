"""Issue 35's "one vocabulary": no function in ``skill_assets/lib`` reads a skill out of a dict it was handed.

A skill crosses a module boundary as a typed record (``Skill``, ``ClusteredSkill``, ``DedupCandidate``): a
function that subscripts ``"skill_id"`` on one of its parameters, or on the items of a parameter it iterates,
takes skills as dicts keyed ``skill_id``. The store's rows become records in one reader per record
(``READERS``), and only there may a row be read by key. The scan sees direct iteration only (``for s in
skills``, ``[s["skill_id"] for s in skills]``), which is how every such function was written; it is a
ratchet, not a proof.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIB = REPO / "skill_assets" / "lib"

#: the one place each kind of store row becomes a record: (module, function)
READERS = {
    ("skill_assets/lib/retrieval/store_skills.py", "skills_from_rows"),
    ("skill_assets/lib/neighbourhoods/clustered.py", "clustered_skills"),
    ("skill_assets/lib/corpus/dedup.py", "dedup_candidates"),
    ("skill_assets/lib/corpus/dedup.py", "row_texts"),
}


def dict_skill_reads(source: str) -> list[tuple[str, int]]:
    """(function, line) of each ``x["skill_id"]`` where ``x`` is a parameter or an item iterated out of one."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        read = set(params)
        for node in ast.walk(fn):
            loops = [(g.target, g.iter) for g in getattr(node, "generators", [])]
            if isinstance(node, ast.For | ast.AsyncFor):
                loops.append((node.target, node.iter))
            read |= {target.id for target, it in loops
                     if isinstance(it, ast.Name) and it.id in params and isinstance(target, ast.Name)}
        found += [(fn.name, node.lineno) for node in ast.walk(fn)
                  if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in read
                  and isinstance(node.slice, ast.Constant) and node.slice.value == "skill_id"]
    return found


def test_the_scan_finds_a_skill_dict_parameter_and_passes_a_record():
    assert dict_skill_reads("def f(skills):\n    return [s['skill_id'] for s in skills]\n") == [("f", 2)]
    assert dict_skill_reads("def f(skill):\n    return skill['skill_id']\n") == [("f", 2)]
    assert dict_skill_reads("def f(skills):\n    for s in skills:\n        print(s['skill_id'])\n") == [("f", 3)]
    assert dict_skill_reads("def f(skills):\n    return [s.skill_id for s in skills]\n") == []
    # a table row the function builds itself is not a skill it was handed
    assert dict_skill_reads("def f(ids):\n    rows = [{'skill_id': i} for i in ids]\n    return rows[0]['skill_id']\n") == []


def test_no_lib_function_takes_skills_as_dicts_outside_the_readers():
    offenders: dict[str, list[str]] = {}
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        reads = [(fn, line) for fn, line in dict_skill_reads(path.read_text(encoding="utf-8"))
                 if (rel, fn) not in READERS]
        if reads:
            offenders[rel] = [f"{fn} (line {line})" for fn, line in reads]
    assert not offenders
