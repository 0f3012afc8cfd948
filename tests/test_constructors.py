"""Issue 35's bound on constructors: no class in the package is built from more than ``MOST_ARGUMENTS`` arguments.

A record of nine or more fields is several ideas side by side (a request's ids beside how it was written, an answer's
text beside what it cost); the ideas that belong together are a small record of their own. What counts is what a
caller passes: an explicit ``__init__``'s parameters besides ``self``, or the fields of a dataclass or a
``NamedTuple`` (less ``ClassVar``s and ``field(init=False)``). Read from the source, like ``test_layers.py``: nothing
is imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "skill_assets"
MOST_ARGUMENTS = 8


def _is_dataclass(node: ast.ClassDef) -> bool:
    names = [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
    return any(n in ("dataclass", "dataclasses.dataclass") for n in names)


def _is_named_tuple(node: ast.ClassDef) -> bool:
    return any(ast.unparse(b) in ("NamedTuple", "typing.NamedTuple") for b in node.bases)


def _is_init_field(statement: ast.stmt) -> bool:
    """Whether a class-body statement is a field the generated constructor takes."""
    if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
        return False
    if "ClassVar" in ast.unparse(statement.annotation):
        return False
    value = statement.value
    return not (isinstance(value, ast.Call) and ast.unparse(value.func) in ("field", "dataclasses.field")
                and any(k.arg == "init" and ast.unparse(k.value) == "False" for k in value.keywords))


def constructor_width(node: ast.ClassDef) -> int | None:
    """How many arguments building ``node`` takes: its ``__init__``'s besides ``self`` (``*args`` and ``**kwargs``
    one each), else its dataclass or ``NamedTuple`` fields; None for a class that defines neither."""
    init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is not None:
        a = init.args
        return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg) - 1
    if _is_dataclass(node) or _is_named_tuple(node):
        return sum(_is_init_field(s) for s in node.body)
    return None


def wide_constructors(path: Path) -> dict[str, int]:
    """``path:Class`` → constructor width, for each class of ``path`` over ``MOST_ARGUMENTS``."""
    where = path.relative_to(REPO).as_posix()
    return {f"{where}:{node.name}": width for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ClassDef) and (width := constructor_width(node) or 0) > MOST_ARGUMENTS}


def test_no_class_takes_more_than_eight_arguments():
    found = {name: width for path in sorted(PACKAGE.rglob("*.py")) for name, width in wide_constructors(path).items()}
    assert found == {}


@pytest.mark.parametrize(("source", "width"), [
    ("@dataclass\nclass A:\n" + "".join(f"    f{i}: int = 0\n" for i in range(9)), 9),
    ("@dataclasses.dataclass(frozen=True)\nclass A:\n    a: int\n    b: ClassVar[int] = 0\n"
     "    c: list = field(default_factory=list)\n    d: int = field(init=False, default=0)\n", 2),
    ("class A(NamedTuple):\n" + "".join(f"    f{i}: int\n" for i in range(9)), 9),
    ("class A:\n    def __init__(self, a, b=1, *rest, c, **more):\n        pass\n", 5),
    ("@dataclass\nclass A:\n    a: int\n    def __init__(self, a, b):\n        pass\n", 2),
    ("class A:\n    x: int = 0\n", None),
])
def test_the_width_counts_what_a_caller_passes(source, width):
    """The check is not vacuous: made-up classes are measured as their constructors take arguments."""
    (node,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)]
    assert constructor_width(node) == width
