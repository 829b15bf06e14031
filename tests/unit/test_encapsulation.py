"""No module touches another's private attributes: `x._name` where `x` is not `self`, `cls`
or `super()` and no code in the same module defines `_name` (nor `from kafpy.m import _name`)
is a leak of another class's or module's internals: add a public method or property to it."""

from __future__ import annotations

import ast
from pathlib import Path

import kafpy

ROOT = Path(kafpy.__file__).parent

# the standard library's and namedtuple's own underscore conventions, public API by contract
ALLOWED = frozenset({
    "_replace", "_asdict", "_fields", "_field_defaults", "_make",  # namedtuple
    "_getframe", "_current_frames", "_exit",  # sys, os
    "_name_", "_value_", "_missing_", "_generate_next_value_",  # enum
    "_asyncio_future_blocking",  # asyncio's Future protocol
})  # fmt: skip


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_names(tree: ast.Module) -> set[str]:
    """Every private name the module itself defines: its functions, methods and classes,
    names assigned at module or class level (dataclass fields, slots), and attributes it
    assigns to itself (`self._x = ...`). Local variables and parameters do not count."""
    names: set[str] = set()
    bodies: list[list[ast.stmt]] = [tree.body]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            bodies.append(node.body)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store | ast.Del)
            and _is_own(node.value)
        ):
            names.add(node.attr)
    for body in bodies:
        for stmt in body:
            targets: list[ast.expr] = []
            if isinstance(stmt, ast.Assign):
                targets = stmt.targets
            elif isinstance(stmt, ast.AnnAssign):
                targets = [stmt.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
                if isinstance(target, ast.Name) and target.id == "__slots__":
                    names.update(
                        c.value
                        for c in ast.walk(stmt)
                        if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    )
    return {n for n in names if _is_private(n)}


def _is_own(value: ast.expr) -> bool:
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


def private_accesses(root: Path = ROOT) -> list[str]:
    """Each `x._name` reaching into another module's internals, as `path:line: expr._name`,
    and each import of another kafpy module's private name."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        defined = _defined_names(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and _is_private(node.attr)
                and node.attr not in ALLOWED
                and node.attr not in defined
                and not _is_own(node.value)
            ):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom) and (
                node.level or "kafpy" in (node.module or "")
            ):
                found.extend(
                    f"{path.relative_to(root.parent)}:{node.lineno}: from {node.module} import {a.name}"
                    for a in node.names
                    if _is_private(a.name)
                )
    return sorted(found, key=lambda e: (e.split(":")[0], int(e.split(":")[1])))


def test_no_private_attribute_of_another_module_is_touched() -> None:
    assert private_accesses() == []


def test_accesses_are_found(tmp_path: Path) -> None:
    root = tmp_path / "kafpy"
    (root / "admin").mkdir(parents=True)
    (root / "admin" / "tool.py").write_text(
        "class A:\n"
        "    def __init__(self, log):\n"
        "        self._own = 1\n"
        "        self._other = log._segments\n"
        "    def same(self, other: 'A') -> int:\n"
        "        return other._own + super()._base() + self._inherited\n"
        "    def __eq__(self, o):\n"
        "        return o.__dict__ == self.__dict__ and point._replace(x=1)\n"
        "from kafpy.storage.log import _helper\n"
    )
    assert private_accesses(root) == [
        "kafpy/admin/tool.py:4: log._segments",
        "kafpy/admin/tool.py:9: from kafpy.storage.log import _helper",
    ]
